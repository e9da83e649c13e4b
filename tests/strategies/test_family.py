"""Paper 003's statistical design as config: the Holm family, the modelled strategies, per-judge
S3 ensembles, and bias CIs that resample whole questions.

Each test would fail with the former behaviour: Holm over every comparison of a data set (m = 48
with the control and S2/S3/S6/S7), mixed models on all nine strategies, one shared S3 ensemble
per family pattern, and row-resampled intervals on mirrored style pairs (too narrow by ~sqrt 2).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.stats.bias import bias_score
from judgelab.stats.mcnemar import holm
from judgelab.strategies.aggregate import cross_family_members
from judgelab.strategies.analysis import bias_table, in_family, mcnemar_table, mixed_table

JUDGES = ["claude", "flash", "gpt", "llama", "pro"]
STRATS = ["B0", "S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8"]
PAPER_FAMILY = {"strategies": ["S1", "S4", "S5", "S8"], "judges": None, "exclude_judges": ["ctl"]}


def strategy_verdicts(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """Five judges and a control, nine strategies, correctness drawn per instance."""
    rng = np.random.default_rng(seed)
    rows = []
    for judge in [*JUDGES, "ctl"]:
        for k, strat in enumerate(STRATS):
            p = 0.55 + 0.03 * k
            for i in range(n):
                rows.append({"dataset": "mtbench", "judge": judge, "strategy": strat, "pair_id": f"p{i}",
                             "correct": bool(rng.random() < p), "simulated": True})
    return pd.DataFrame(rows)


def test_holm_family_is_the_papers_twenty_comparisons():
    sv = strategy_verdicts()
    out = mcnemar_table(sv, family=PAPER_FAMILY)
    assert len(out) == 6 * 8  # every comparison is still reported ...
    fam = out[out["in_family"]]
    assert len(fam) == 20 and set(out["m"]) == {20}  # ... but corrected over m = 20
    assert set(fam["strategy"]) == {"S1", "S4", "S5", "S8"} and "ctl" not in set(fam["judge"])
    assert out.loc[~out["in_family"], "p_holm"].isna().all()
    assert not out.loc[~out["in_family"], "holm_significant"].any()
    expected, _ = holm(fam["p"].to_numpy(), 0.05)
    assert fam["p_holm"].to_numpy() == pytest.approx(expected)
    # the former behaviour, every comparison in the family, is still there when asked for
    everything = mcnemar_table(sv, family=None)
    assert set(everything["m"]) == {48} and everything["in_family"].all()
    assert (fam["p_holm"].to_numpy() <= everything.loc[fam.index, "p_holm"].to_numpy() + 1e-12).all()


def test_in_family_filters_judges_and_strategies():
    j = pd.Series(["a", "a", "b", "ctl"])
    s = pd.Series(["S1", "S2", "S1", "S1"])
    assert in_family(j, s, {"strategies": ["S1"], "judges": None, "exclude_judges": ["ctl"]}).tolist() == [
        True, False, True, False]
    assert in_family(j, s, {"strategies": None, "judges": ["a"]}).tolist() == [True, True, False, False]
    assert in_family(j, s, None).all()


def test_mixed_models_fit_only_the_modelled_strategies():
    sv = strategy_verdicts(n=40)
    sv = sv[sv["judge"].isin(["claude", "ctl"])]
    out = mixed_table(sv, strategies=["B0", "S1", "S4", "S5", "S8"], family=PAPER_FAMILY, n_nodes=8)
    assert set(out["strategy"]) == {"S1", "S4", "S5", "S8"}
    assert set(out["n_obs"]) == {40 * 5}  # 400 x 5 in the paper; here 40 x 5
    assert set(out.loc[out["in_family"], "judge"]) == {"claude"} and set(out["m"]) == {4}
    with pytest.raises(ValueError, match="must include the reference level B0"):
        mixed_table(sv, strategies=["S1", "S5"])


def test_explicit_s3_ensembles_per_judge():
    judges = [("pro", "google"), ("flash", "google"), ("claude", "anthropic"), ("gpt", "openai"), ("llama", "meta")]
    auto = cross_family_members(judges, 3)
    assert auto["pro"] == ["pro", "claude", "gpt"] and auto["flash"] == ["flash", "claude", "gpt"]
    named = cross_family_members(judges, 3, explicit={"pro": ["claude", "llama"], "gpt": ["gpt", "flash", "llama"]})
    assert named["pro"] == ["pro", "claude", "llama"]  # the judge itself comes first
    assert named["gpt"] == ["gpt", "flash", "llama"]
    assert named["flash"] == auto["flash"]  # judges not named keep the automatic ensemble
    with pytest.raises(ValueError, match=r"strategies/ensembles/pro: 'mistral' not judges of this panel"):
        cross_family_members(judges, 3, explicit={"pro": ["claude", "mistral"]})


def mirrored_style_set(n_questions: int = 80, seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each question has a STYLE pair and its position-mirrored STYLE_BA pair; the judge's
    preference is a property of the question, so the two halves of a question agree."""
    rng = np.random.default_rng(seed)
    pairs, sv = [], []
    for q in range(n_questions):
        likes_markdown = rng.random() < 0.7
        for half, side in (("STYLE", "A"), ("STYLE_BA", "B")):
            pid = f"q{q}-{half}"
            pairs.append({"pair_id": pid, "subset": "", "target_side": side, "origin_a": "", "origin_b": "",
                          "question_id": f"q{q}"})
            verdict = side if likes_markdown else ("B" if side == "A" else "A")
            sv.append({"judge": "j", "family": "x", "simulated": True, "strategy": "B0", "pair_id": pid,
                       "bias_type": half, "verdict": verdict, "correct": True, "category": "t"})
    return pd.DataFrame(sv), pd.DataFrame(pairs)


def test_style_bias_interval_resamples_questions_not_rows():
    sv, pairs = mirrored_style_set()
    row = bias_table(sv, pairs, n_resamples=2000).set_index("measure").loc["style"]
    df = sv.merge(pairs[["pair_id", "target_side", "question_id"]], on="pair_id")
    by_rows = bias_score(df["verdict"].to_numpy(object), df["target_side"].to_numpy(object), n_resamples=2000)
    width, naive = row["ci_high"] - row["ci_low"], by_rows.ci_high - by_rows.ci_low
    assert row["value"] == pytest.approx(by_rows.b)
    # perfectly dependent halves: the honest interval is sqrt(2) wider than the row bootstrap
    assert width / naive == pytest.approx(np.sqrt(2), rel=0.15)
