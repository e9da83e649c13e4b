"""A cue preference is a finding only where the log's design separates it from answer quality.

Real files: AlpacaEval's vicuna-7b annotations (one model against one baseline, one order, no
gold; the alpaca-7b file the issue names is not in the shared data, vicuna-7b is the same
design) read "not identified" for length and markdown; LLMBar Natural (gold, both orders) keeps
its rows identified.  Planted logs: a judge that only follows quality, on a design where the
better model also writes longer answers, shows a large length "preference" that is no bias; the
card calls it not identified without a control, and with a model term the controlled
coefficient returns to zero.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.bias_card import CardSettings, bias_card
from judgelab.bias_card.card import card_view, judge_card
from judgelab.bias_card.rows_cue import CONFOUNDED
from judgelab.verdict_import import import_verdicts, preset_mapping
from tests.helpers.bias_card_logs import Call, both_orders, table

FAST = CardSettings(n_resamples=100, views=("lenient",))
CUES = ("length_preference", "markdown_preference", "self_preference", "length_controlled", "markdown_controlled")


def quality_only_log(models: dict[str, float], n_items: int = 120, seed: int = 0, gold: bool = False) -> pd.DataFrame:
    """One baseline (quality 0) against each model of ``models`` (name -> quality), one order.

    Each model writes answers whose length grows with its quality (words ~ 20 + 30 quality +
    noise); the judge picks by quality alone (logit = quality + noise), never by length.
    """
    rng = np.random.default_rng(seed)
    calls, meta = [], []
    for m, q in models.items():
        for i in range(n_items):
            wa = max(3, int(40 + rng.normal(0, 8)))
            wb = max(3, int(40 + 30 * q + rng.normal(0, 8)))
            picks_b = rng.random() < 1 / (1 + np.exp(-(2.0 * q + rng.normal(0, 0.5))))
            g = ("B" if picks_b else "A") if gold else ""
            calls.append(Call(f"q{i}", f"{m}-{i}", "AB", "B" if picks_b else "A", gold=g,
                              response_a=" ".join(["w"] * wa), response_b=" ".join(["w"] * wb)))
            meta.append(m)
    t = table(calls)
    t["model_a"] = "baseline"
    t["model_b"] = meta
    return t


def _rows(t: pd.DataFrame, s: CardSettings = FAST) -> dict[str, dict]:
    return {r["metric"]: r for r in judge_card(t, s)}


def test_quality_read_as_length_is_not_identified_without_a_control():
    """One better, longer model against one baseline: P(picks longer) is far above 0.5 and its
    test rejects, yet no row is detected; each says it is confounded with answer quality."""
    rows = _rows(quality_only_log({"strong": 1.0}))
    lp = rows["length_preference"]
    assert lp["estimate"] > 0.7 and lp["p_value"] < 1e-6  # the descriptive share is kept
    for m in ("length_preference", "length_controlled"):
        assert rows[m]["status"] == "not identified" and not rows[m]["identified"]
        assert rows[m]["note"].startswith(CONFOUNDED)
        assert "2 model(s) behind the responses, no model term" in rows[m]["note"]


def test_a_model_term_identifies_the_controlled_rows_and_absorbs_quality():
    """Three models of different quality against one baseline: the regression holds a strength per
    model, so the length coefficient of a judge that ignores length is near zero (not detected);
    the shares, which have no model term, stay not identified."""
    t = quality_only_log({"weak": -0.5, "mid": 0.5, "strong": 1.2}, n_items=150)
    rows = _rows(t)
    lc = rows["length_controlled"]
    assert lc["identified"] and lc["status"] in ("not detected", "underpowered")
    assert "quality controlled by model term (4 models)" in lc["note"]
    assert "model strength (2 free terms)" in lc["note"]  # 4 models, less the reference and the intercept
    assert rows["length_preference"]["status"] == "not identified"
    # the same log read without the model term would call quality a length bias
    t1 = t[t["model_b"] == "strong"]
    assert _rows(t1)["length_controlled"]["estimate"] > lc["estimate"] + 0.3


def test_gold_identifies_the_cue_rows_and_the_gold_term_absorbs_quality():
    """With gold (here the quality the judge follows), the length coefficient controls for it."""
    rows = _rows(quality_only_log({"strong": 1.0}, gold=True))
    for m in ("length_preference", "length_controlled"):
        assert rows[m]["identified"] and rows[m]["note"].endswith("quality controlled by gold labels")
    assert rows["length_controlled"]["status"] != "detected"


def test_declared_controlled_pairs_identify_the_shares():
    t = quality_only_log({"strong": 1.0})
    rows = _rows(t, CardSettings(n_resamples=100, views=("lenient",), controlled_pairs=True))
    assert rows["length_preference"]["identified"] and rows["length_preference"]["status"] == "detected"
    assert rows["length_preference"]["note"].endswith("quality controlled by controlled pairs")


def test_no_cue_row_is_detected_without_a_control_whatever_the_judge():
    """Property: over random judges on logs without gold, controlled pairs or a model term, no cue
    row ever reaches 'detected' (the headline)."""
    rng = np.random.default_rng(3)
    for _ in range(10):
        calls = [c for i in range(30) for c in both_orders(
            f"q{i}", f"p{i}", *rng.choice(["A", "B", "tie", ""], 2), gold="",
            response_a=" ".join(["w"] * int(rng.integers(1, 40))),
            response_b="# h\n- " + " ".join(["w"] * int(rng.integers(1, 40))))]
        t = table(calls)
        t["family_b"] = "openai"
        rows = _rows(t)
        for m in CUES:
            assert rows[m]["status"] != "detected", (m, rows[m])
            assert not rows[m]["identified"]


@pytest.mark.shared_data
def test_alpaca_eval_one_model_one_baseline_is_not_identified(data_root):
    """vicuna-7b vs gpt4_1106_preview (AlpacaEval 2.0 annotations, 805 rows): the judge picks the
    longer, more formatted answer in ~90 % of decisive verdicts, but the longer answer is the
    baseline's, which is simply better; the card keeps the shares and detects nothing."""
    f = data_root / "alpaca_eval/results/vicuna-7b/weighted_alpaca_eval_gpt4_turbo/annotations.json"
    c = card_view(bias_card(import_verdicts([f], preset_mapping("alpaca_eval")), FAST))
    for m in ("length_preference", "markdown_preference", "length_controlled", "markdown_controlled",
              "self_preference"):
        assert c.loc[m, "status"] == "not identified", m
        assert c.loc[m, "note"].startswith(CONFOUNDED), m
    assert c.loc["length_preference", "estimate"] > 0.85 and c.loc["markdown_preference", "estimate"] > 0.8
    assert not (c["status"] == "detected").any() or set(c.index[c["status"] == "detected"]) <= {
        "accuracy_AB", "accuracy_BA", "accuracy_average"}


@pytest.mark.shared_data
def test_llmbar_natural_gold_both_orders_stays_identified(data_root):
    files = sorted((data_root / "llmbar_judge_outputs/Natural/evaluators").glob("*/*/result.json"))
    assert files
    c = card_view(bias_card(import_verdicts(files, preset_mapping("llmbar")), FAST))
    for m in ("length_preference", "markdown_preference", "length_controlled", "markdown_controlled"):
        rows = c.xs(m, level="metric")
        assert rows["identified"].all(), m
        assert (rows["status"] != "not identified").all(), m
    # LLaMA2 prefers the longer response beyond what gold explains: a finding the design supports
    assert c.loc[("LLaMA2-Vanilla", "length_preference"), "status"] == "detected"
    assert c.loc[("LLaMA2-Vanilla", "length_controlled"), "status"] == "detected"
