"""Cue shares read against gold: a judge's length share is compared with gold's own share on the same
verdicts, and tested against what errors blind to length give (planted worlds, tests/helpers/card_worlds.py);
the raw share stays as a descriptive row; on LLMBar Natural, LLaMA2's length row is its excess over gold."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from judgelab.bias_card.card import CardSettings, card_view, judge_card
from judgelab.stats.gold_excess import excess_over_gold
from tests.helpers.card_worlds import gold_length_world

S = CardSettings(n_resamples=20, views=("lenient",))
WORLDS = 200


def _rows(t) -> dict[str, dict]:
    return {r["metric"]: r for r in judge_card(t, S)}


@pytest.fixture(scope="module")
def agreeing():
    """A judge that always agrees with gold, on logs where gold picks the longer answer 60 % of the time."""
    rng = np.random.default_rng(11)
    return [_rows(gold_length_world(rng, gold_longer=0.6)) for _ in range(WORLDS)]


@pytest.fixture(scope="module")
def cue_blind():
    """A judge that errs on 20 % of presentations whatever the lengths (same logs)."""
    rng = np.random.default_rng(12)
    return [_rows(gold_length_world(rng, gold_longer=0.6, err_gold_longer=0.2, err_gold_shorter=0.2))
            for _ in range(WORLDS)]


def test_a_judge_that_always_agrees_with_gold_is_never_detected(agreeing):
    status = [w["length_preference"]["status"] for w in agreeing]
    assert np.mean([x != "detected" for x in status]) >= 0.95
    assert all(x == "not estimable" for x in status)  # no error at all: nothing to read a cue in
    assert all(w["length_preference"]["estimate"] == 0.0 for w in agreeing)  # judge share == gold share
    assert all(w["length_preference"]["reason"].startswith("no error against gold") for w in agreeing)
    # the raw share is gold's own balance (about 0.6) and is descriptive, never a finding
    raw = np.array([w["length_share_raw"]["estimate"] for w in agreeing])
    assert raw.mean() == pytest.approx(0.6, abs=0.02)
    assert all(w["length_share_raw"]["status"] == "descriptive" for w in agreeing)
    # what the old reading (the raw share against 0.5) would have called a length bias in most worlds
    assert np.mean([w["length_share_raw"]["ci_low"] > 0.5 for w in agreeing]) > 0.5


def test_errors_blind_to_length_are_not_detected(cue_blind):
    """A noisy judge moves its share toward 0.5 (excess 0.2 * (1 - 2 * 0.6) = -0.04 on average): the row's
    null is that expectation, so the judge is not read as preferring the shorter answer."""
    assert np.mean([w["length_preference"]["status"] != "detected" for w in cue_blind]) >= 0.95
    assert np.mean([w["length_error_share"]["status"] != "detected" for w in cue_blind]) >= 0.95
    est = np.array([w["length_preference"]["estimate"] for w in cue_blind])
    null = np.array([w["length_preference"]["null_value"] for w in cue_blind])
    assert est.mean() == pytest.approx(-0.04, abs=0.01) and null.mean() == pytest.approx(-0.04, abs=0.01)
    # the excess's own interval covers the population excess (-0.04)
    cover = np.mean([w["length_preference"]["ci_low"] <= -0.04 <= w["length_preference"]["ci_high"]
                     for w in cue_blind])
    assert cover >= 0.92
    # the conditional form: 40 % of a length-blind judge's errors pick the longer (gold is the shorter in 40 %)
    share = np.array([w["length_error_share"]["estimate"] for w in cue_blind])
    assert share.mean() == pytest.approx(0.4, abs=0.02)


def test_a_planted_excess_of_a_tenth_is_detected_at_the_stated_power():
    """Errors where gold is the shorter 0.1 + d, where gold is the longer 0.1: the excess beyond length-blind
    errors is 2 g (1 - g) d = 0.1 at g = 0.6.  The card's printed MDE (at the family's Bonferroni level)
    implies a power for that effect; the simulated detection rate reaches it."""
    rng = np.random.default_rng(13)
    d = 0.1 / (2 * 0.6 * 0.4)
    worlds = [_rows(gold_length_world(rng, n_pairs=160, gold_longer=0.6, err_gold_longer=0.1,
                                      err_gold_shorter=0.1 + d)) for _ in range(WORLDS)]
    rows = [w["length_preference"] for w in worlds]
    detected = np.mean([r["status"] == "detected" for r in rows])
    effect = np.array([r["estimate"] - r["null_value"] for r in rows])
    assert effect.mean() == pytest.approx(0.1, abs=0.01)
    # the power the card states for a 0.1 effect: MDE = (z_a' + z_power) se at the family's level a' = alpha / m
    implied = []
    for r in rows:
        m = r["test_family"].count(",") + 1
        za = norm.ppf(1 - S.alpha / (2 * m))
        se = r["mde"] / (za + norm.ppf(S.power))
        implied.append(norm.cdf(0.1 / se - za))
    implied_power = float(np.mean(implied))
    assert 0.6 <= implied_power <= 0.95  # a world sized so that power is informative
    assert detected >= implied_power - 0.07, (detected, implied_power)
    mde = np.mean([r["mde"] for r in rows])
    assert mde < 0.1 + 0.02 and detected >= S.power - 0.07  # about the stated power at about the MDE
    assert np.mean([r["estimate"] > 0 for r in rows]) > 0.95


def test_excess_over_gold_by_hand():
    # 10 verdicts, 2 items: gold longer in 6; errors: 2 toward the longer (gold shorter), 1 away
    gc = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0], bool)
    jc = np.array([1, 1, 1, 1, 1, 0, 1, 1, 0, 0], bool)
    items = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    ex = excess_over_gold(jc, gc, items)
    assert ex["estimate"] == pytest.approx(jc.mean() - gc.mean()) == pytest.approx(0.1)
    assert (ex["errors_to_cue"], ex["errors_away"], ex["gold_share"]) == (2, 1, 0.6)
    assert ex["null"] == pytest.approx(0.3 * (1 - 2 * 0.6))
    # the test's se: e_s - e_l linearised per item under the pooled error rate 0.3, times 2 g (1 - g)
    err = (jc != gc).astype(float)
    w = np.where(gc, -(err - 0.3) / 6, (err - 0.3) / 4)
    u = np.array([w[items == k].sum() for k in (0, 1)])
    assert ex["se"] == pytest.approx(2 * 0.6 * 0.4 * math.sqrt((u ** 2).sum()))
    dd = jc.astype(float) - gc - 0.1
    v = np.array([dd[items == k].sum() for k in (0, 1)])
    assert ex["se_excess"] == pytest.approx(math.sqrt((v ** 2).sum()) / 10)
    # and the excess beyond the null is 2 g (1 - g) (e_s - e_l)
    assert ex["estimate"] - ex["null"] == pytest.approx(2 * 0.6 * 0.4 * (2 / 4 - 1 / 6))


@pytest.mark.shared_data
def test_llmbar_llama2_length_row_is_the_excess_over_gold(data_root):
    from judgelab.bias_card import bias_card
    from judgelab.verdict_import import import_verdicts, preset_mapping

    files = sorted((data_root / "llmbar_judge_outputs/Natural/evaluators").glob("*/*/result.json"))
    c = card_view(bias_card(import_verdicts(files, preset_mapping("llmbar")), CardSettings(n_resamples=200)))
    row = c.loc[("LLaMA2-Vanilla", "length_preference")]
    raw = c.loc[("LLaMA2-Vanilla", "length_share_raw")]
    assert raw["estimate"] == pytest.approx(0.743, abs=5e-4) and raw["status"] == "descriptive"
    assert "0.586 of these pairs have gold on the longer side" in row["note"]
    assert row["estimate"] == pytest.approx(0.743 - 0.586, abs=2e-3)
    assert row["ci_low"] < row["estimate"] < row["ci_high"]
    assert row["ci_low"] > 0 and row["ci_high"] < 0.3
    assert row["status"] == "detected" and row["p_adjusted"] < 0.05
    # the judge that reads 0.586 by agreeing with gold is not what is detected: GPT-4 (raw 0.61) is not
    assert c.loc[("GPT-4-Vanilla", "length_preference"), "status"] != "detected"
