"""A larger alpha never detects less: the bias card's CI level follows alpha (1 - alpha), so both
conditions of a detection (p below alpha, CI excluding the null) loosen together.  Measured on the
LLMBar authors' six Natural evaluators (real verdict files, both orders), where 8 rows have a
p-value between 0.05 and 0.2 that a fixed 95 % CI kept undetected."""

from __future__ import annotations

import dataclasses

import pytest

from judgelab.bias_card import CardSettings, bias_card
from judgelab.verdict_import import import_verdicts, preset_mapping


@pytest.fixture(scope="module")
def natural(data_root):
    files = sorted((data_root / "llmbar_judge_outputs" / "Natural" / "evaluators").glob("*/Vanilla/result.json"))
    assert len(files) == 6
    return import_verdicts(files, preset_mapping("llmbar"))


def _detected(card) -> set[tuple[str, str, str]]:
    d = card[card["status"] == "detected"]
    return set(zip(d["judge"], d["view"], d["metric"], strict=True))


def test_ci_level_is_one_minus_alpha():
    assert CardSettings(alpha=0.2).confidence == pytest.approx(0.8)
    assert CardSettings().confidence == pytest.approx(0.95)


def test_alpha_0_2_detects_more_rows_than_0_05_on_llmbar_natural(natural):
    base = CardSettings(n_resamples=400, seed=0)
    strict = bias_card(natural, base)
    loose = bias_card(natural, dataclasses.replace(base, alpha=0.2))
    d05, d20 = _detected(strict), _detected(loose)
    assert d05 <= d20, d05 - d20  # nothing detected at 0.05 is lost at 0.2
    assert len(d20) > len(d05), (len(d05), len(d20))
    # every tested, estimable, identified row with an adjusted p < 0.2 is detected at 0.2 (the cue rows read
    # against gold also need their interval, which is the excess's own, to exclude the null)
    tested = loose[(loose["test"] != "none") & loose["estimable"] & (loose["status"] != "not identified")]
    below = tested[tested["p_adjusted"] < 0.2]
    excl = ~((below["ci_low"] <= below["null_value"]) & (below["null_value"] <= below["ci_high"]))
    below = below[(below["test"] != "t-cluster") | excl]
    assert len(below)
    assert (below["status"] == "detected").all(), below[["judge", "view", "metric", "p_value", "ci_low", "ci_high"]]
    # and the CI columns are at the stated level: wider at 0.05 than at 0.2
    m = strict.merge(loose, on=["judge", "view", "metric"], suffixes=("_05", "_20"))
    m = m[m["ci_low_05"].notna() & m["ci_low_20"].notna()]
    assert ((m["ci_high_05"] - m["ci_low_05"]) >= (m["ci_high_20"] - m["ci_low_20"]) - 1e-12).all()
