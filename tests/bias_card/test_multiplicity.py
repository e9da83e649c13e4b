"""Multiplicity: each judge's and view's tested rows are one family, their p-values adjusted together
(Holm by default), the status decided on the adjusted one; over null judges the share with any detected
row stays at alpha (family-wise), and without the correction it does not."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower

from judgelab.bias_card.card import CardSettings, finish_rows, judge_card, judge_rows
from judgelab.stats.clustered import _cohen_h
from judgelab.stats.multiplicity import adjust_p_values, family_mde_factor
from tests.helpers.card_worlds import gold_length_world

S = CardSettings(n_resamples=20, views=("lenient",))
N_JUDGES = 500


@pytest.fixture(scope="module")
def null_judges():
    """The rows of 500 judges that pick at random (every tested row's null holds): accuracy 0.5, no order
    or position effect, no length preference beyond gold (gold favours the longer in 60 %)."""
    rng = np.random.default_rng(35)
    return [judge_rows(gold_length_world(rng, n_pairs=40, gold_longer=0.6, err_gold_longer=0.5,
                                         err_gold_shorter=0.5), S)[0] for _ in range(N_JUDGES)]


def _any_detected(rows_per_judge, s: CardSettings) -> float:
    return float(np.mean([any(d["status"] == "detected" for d in finish_rows(rows, s)) for rows in rows_per_judge]))


def test_null_judges_have_a_detected_row_at_most_alpha_of_the_time(null_judges):
    holm = _any_detected(null_judges, S)
    bh = _any_detected(null_judges, dataclasses.replace(S, multiplicity="bh"))
    none = _any_detected(null_judges, dataclasses.replace(S, multiplicity="none"))
    assert holm <= S.alpha + 0.02, holm
    assert bh <= S.alpha + 0.02, bh  # under the global null the FDR is the family-wise rate
    assert none >= 2 * max(holm, 0.01) and none > S.alpha + 0.04, (none, holm)  # the correction matters
    # the family: every tested, estimable, identified row, about seven per null judge
    sizes = [sum(math.isfinite(d["p_adjusted"]) for d in finish_rows(rows, S)) for rows in null_judges]
    assert min(sizes) >= 5


def test_adjusted_p_values_equal_statsmodels():
    p = [0.001, 0.04, 0.03, 0.2, 0.5, 0.012, 0.04]
    assert adjust_p_values(p, "holm") == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert adjust_p_values(p, "bh") == pytest.approx(list(multipletests(p, method="fdr_bh")[1]))
    assert adjust_p_values(p, "none") == p
    assert adjust_p_values([], "holm") == []


def test_the_family_is_the_tested_rows_and_is_named_in_the_card():
    rng = np.random.default_rng(1)
    rows = judge_card(gold_length_world(rng, n_pairs=80, err_gold_longer=0.2, err_gold_shorter=0.4), S)
    fam = [d for d in rows if math.isfinite(d["p_adjusted"])]
    out = [d for d in rows if not math.isfinite(d["p_adjusted"])]
    assert fam and all(d["test"] != "none" and d["estimable"] and d["identified"] for d in fam)
    # outside: descriptive and not estimable rows (no p-value, or none to trust), with no family named
    assert all(d["test_family"] == "" for d in out)
    assert all(d["status"] in ("descriptive", "not estimable", "not identified") for d in out)
    label = fam[0]["test_family"]
    assert label == f"holm over {len(fam)} tests: " + ", ".join(d["metric"] for d in fam)
    assert all(d["test_family"] == label for d in fam)
    # Holm by hand: sorted p times (m, m-1, ...), running maximum
    p = np.array([d["p_value"] for d in fam])
    order = np.argsort(p)
    want = np.minimum(1, np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1)))
    np.testing.assert_allclose(np.array([d["p_adjusted"] for d in fam])[order], want)
    # a detected row is detected on its adjusted p-value
    for d in fam:
        assert (d["status"] == "detected") == (d["p_adjusted"] < S.alpha and not d["ci_low"] <= d["null_value"]
                                               <= d["ci_high"])


def test_a_row_significant_only_before_correction_is_not_detected(null_judges):
    """Some null judge has a row with p < alpha whose Holm-adjusted p is not: detected with none, not with holm."""
    none = dataclasses.replace(S, multiplicity="none")
    found = 0
    for rows in null_judges:
        a, b = finish_rows(rows, S), finish_rows(rows, none)
        for x, y in zip(a, b, strict=True):
            if y["status"] == "detected" and x["p_adjusted"] >= S.alpha:
                assert x["status"] != "detected" and x["p_value"] == y["p_value"] < S.alpha
                found += 1
    assert found > 0


def test_a_corrected_rows_mde_is_at_the_familys_bonferroni_level():
    assert family_mde_factor(1, method=S.multiplicity, alpha=S.alpha, power=S.power) == 1.0
    assert family_mde_factor(8, method="none", alpha=S.alpha, power=S.power) == 1.0
    h1 = NormalIndPower().solve_power(effect_size=None, nobs1=100, alpha=0.05, power=0.8, ratio=0)
    h8 = NormalIndPower().solve_power(effect_size=None, nobs1=100, alpha=0.05 / 8, power=0.8, ratio=0)
    assert family_mde_factor(8, method=S.multiplicity, alpha=S.alpha, power=S.power) == pytest.approx(h8 / h1, rel=1e-3)  # normal approximation: one tail
    rng = np.random.default_rng(2)
    t = gold_length_world(rng, n_pairs=80, err_gold_longer=0.2, err_gold_shorter=0.4)
    holm = {d["metric"]: d for d in judge_card(t, S)}
    raw = {d["metric"]: d for d in judge_card(t, dataclasses.replace(S, multiplicity="none"))}
    m = sum(math.isfinite(d["p_adjusted"]) for d in holm.values())
    for k, d in holm.items():
        if math.isfinite(d["p_adjusted"]):
            assert d["mde"] == pytest.approx(raw[k]["mde"] * family_mde_factor(m, method=S.multiplicity, alpha=S.alpha, power=S.power))
        else:
            assert d["mde"] == raw[k]["mde"] or (math.isnan(d["mde"]) and math.isnan(raw[k]["mde"]))


@pytest.mark.parametrize("n", [2, 3, 10, 57, 1000, 10**6])
@pytest.mark.parametrize(("alpha", "power"), [(0.05, 0.8), (0.2, 0.5), (0.001, 0.99), (0.3, 0.31)])
def test_cohen_h_solves_statsmodels_power_equation(n, alpha, power):
    want = NormalIndPower().solve_power(effect_size=None, nobs1=n, alpha=alpha, power=power, ratio=0)
    assert _cohen_h(n, alpha, power) == pytest.approx(want, rel=2e-3)  # statsmodels stops at its own tolerance


def test_the_multiplicity_setting_reaches_the_cli():
    from judgelab.bias_card.settings import from_args
    from tests.bias_card.test_settings import _audit_parser

    args = _audit_parser().parse_args(["x.jsonl", "--format", "llmbar", "--out", "o", "--multiplicity", "bh"])
    assert from_args(CardSettings, args).multiplicity == "bh"
    with pytest.raises(SystemExit):
        _audit_parser().parse_args(["x.jsonl", "--format", "llmbar", "--out", "o", "--multiplicity", "bonf"])
    with pytest.raises(ValueError, match="card setting multiplicity: must be one of holm, bh, none"):
        CardSettings(multiplicity="bonf")


def test_cohen_h_has_the_stated_power_exactly():
    from scipy.stats import norm

    for n, alpha, power in [(10, 0.05, 0.8), (1000, 0.2, 0.5), (57, 0.001, 0.99)]:
        h, z = _cohen_h(n, alpha, power), norm.ppf(1 - alpha / 2)
        assert norm.cdf(h * n**0.5 - z) + norm.cdf(-h * n**0.5 - z) == pytest.approx(power, abs=1e-9)
