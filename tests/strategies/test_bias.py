"""Bias scores on the controlled set recover the biases planted in the default simulated panel.

For every judge of ``config/judges/simulated.yaml`` (run at temperature 0 so that the ordered
logit is the whole model), over several judge seeds, B0 and S5 (chain of thought, whose planted
style effects differ) are run on the 375-pair controlled set.  For each bias measure the exact
expected score is computed from the judge's own ordered-logit probabilities for the cues it
reads in each presented pair (a call that came back unparsed or refused counts for neither side,
as in the estimator).  Checks:

* the bootstrap 95% CIs cover that expected value (>= 90% of all intervals: they are 95%
  intervals, and 0.90 leaves room for binomial noise over ~150 intervals);
* the sign is recovered wherever the expected |b| >= 0.3;
* on the STYLE pairs, whose only cue is markdown (position cancels across STYLE / STYLE_BA), the
  mean estimate over seeds is the planted b within sampling error, including CoT's lower style
  bias for Claude (0.68 -> 0.49, paper 003);
* the unbiased control's CIs cover 0 (>= 90% of its intervals).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.datasets.pairs import pair_from_row
from judgelab.judges import make_judge
from judgelab.judges.simulated import SimulatedJudge, pairwise_probs
from judgelab.strategies import StrategySettings
from judgelab.strategies.aggregate import aggregate_strategies
from judgelab.strategies.analysis import bias_table
from judgelab.strategies.run import pairwise_requests, plan_calls, query_strategies, role_templates_for
from tests.conftest import REPO
from tests.strategies.test_data import build_controlled

SEEDS = (11, 12, 13)
STRATS = ("B0", "S5")
MEASURES = ("position", "verbosity", "style", "self_preference", "model_preference")
SETTINGS = StrategySettings()


def panel(seed: int) -> list[SimulatedJudge]:
    entries = yaml.safe_load((REPO / "config/judges/simulated.yaml").read_text())["judges"]
    out = []
    for e in entries:
        e = {**e, "sampling": {"temperature": 0.0, "seed": seed}}
        out.append(make_judge(JudgeSpec.from_dict(e)))
    return out


def expected_scores(judge: SimulatedJudge, pairs: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """Per (strategy, pair): P(A) - P(B) in the stored frame, 0 where the call gave no verdict."""
    plist = [pair_from_row(r, where="t") for r in pairs.to_dict("records")]
    plan = plan_calls(STRATS, SETTINGS)
    status = calls.set_index(["call_id", "pair_id"])["status"]
    rows = []
    for req in pairwise_requests(plist, plan, role_templates_for(judge), {}):
        prompt = req.prompt_text()
        z, _ = judge.preference_logit(req, prompt)
        pa, _, pb = pairwise_probs(z, judge.decision_params(prompt)[2])
        ok = status[(req.meta["call_id"], req.meta["pair_id"])] in ("ok", "fallback")
        d = (pa - pb) if req.meta["order"] == "AB" else (pb - pa)
        for s in plan[req.meta["call_id"]][1]:
            rows.append({"strategy": s, "pair_id": req.meta["pair_id"], "pa_minus_pb": d if ok else 0.0})
    return pd.DataFrame(rows)


def _target_sign(measure: str, sub: pd.DataFrame, family: str) -> np.ndarray:
    if measure == "position":
        return np.ones(len(sub))
    if measure in ("verbosity", "style"):
        return np.where(sub["target_side"] == "A", 1.0, -1.0)
    if measure == "self_preference":
        return np.where(sub["origin_a"] == family, 1.0, -1.0)
    return np.where(sub["origin_a"] == "google", 1.0, -1.0)


def _subset(measure: str, pairs: pd.DataFrame, family: str) -> pd.DataFrame:
    if measure == "position":
        return pairs[pairs["bias_type"] == "POSITION"]
    if measure == "verbosity":
        return pairs[(pairs["subset"] == "expansion") & (pairs["target_side"] != "")]
    if measure == "style":
        return pairs[pairs["bias_type"].isin(["STYLE", "STYLE_BA"])]
    mo = pairs[pairs["bias_type"] == "MODEL_ORIGIN"]
    if measure == "self_preference":
        return mo[(mo["origin_a"] != mo["origin_b"]) & ((mo["origin_a"] == family) | (mo["origin_b"] == family))]
    return mo[mo["subset"] == "original"]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> pd.DataFrame:
    tmp = tmp_path_factory.mktemp("bias")
    pairs = build_controlled(tmp, seed=7)
    rows = []
    for seed in SEEDS:
        with CallCache(tmp / f"c{seed}.sqlite") as cache:
            for judge in panel(seed):
                calls = query_strategies(judge, pairs, cache, dataset="controlled", strategies=STRATS,
                                         settings=SETTINGS, max_error_rate=None)
                sv = aggregate_strategies(calls, pairs, {judge.name: list(STRATS)}, SETTINGS)
                est = bias_table(sv, pairs, n_resamples=1000, seed=seed).set_index(["strategy", "measure"])
                exp = expected_scores(judge, pairs, calls).set_index(["strategy", "pair_id"])["pa_minus_pb"]
                for s in STRATS:
                    for m in MEASURES:
                        sub = _subset(m, pairs, judge.spec.family)
                        if sub.empty:
                            continue
                        e = float(np.mean(exp.loc[s].loc[sub["pair_id"]].to_numpy() * _target_sign(m, sub, judge.spec.family)))
                        r = est.loc[(s, m)]
                        planted = judge.profile.biases.get("markdown", 0.0)
                        style = judge.profile.prompt_styles.get("cot")
                        if s == "S5" and style is not None and "markdown" in style.biases:
                            planted = style.biases["markdown"]
                        rows.append({"seed": seed, "judge": judge.name, "strategy": s, "measure": m, "b": r["value"],
                                     "lo": r["ci_low"], "hi": r["ci_high"], "expected": e, "n": r["n"],
                                     "planted_markdown": planted})
    return pd.DataFrame(rows)


def test_cis_cover_the_expected_bias_of_every_judge(results):
    cover = (results["lo"] <= results["expected"]) & (results["expected"] <= results["hi"])
    assert len(results) >= 150
    assert cover.mean() >= 0.90, results[~cover]


def test_signs_are_recovered_where_the_bias_is_clear(results):
    clear = results[results["expected"].abs() >= 0.3]
    assert len(clear) >= 30
    assert (np.sign(clear["b"]) == np.sign(clear["expected"])).all(), clear


def test_style_bias_equals_the_planted_markdown_score(results):
    style = results[(results["measure"] == "style") & (results["judge"] != "sim-unbiased")]
    mean = style.groupby(["judge", "strategy"]).agg(b=("b", "mean"), planted=("planted_markdown", "first"))
    # SE of one estimate on 100 pairs is <= 0.1; of the mean over three seeds <= 0.06
    assert ((mean["b"] - mean["planted"]).abs() < 0.15).all(), mean
    # CoT lowers Claude's style bias as planted (paper 003: 0.68 -> 0.49)
    assert mean.loc[("sim-claude-sonnet-4", "S5"), "b"] < mean.loc[("sim-claude-sonnet-4", "B0"), "b"]


def test_unbiased_control_cis_cover_zero(results):
    ctl = results[results["judge"] == "sim-unbiased"]
    assert len(ctl) >= 20 and (ctl["expected"].abs() < 1e-12).all()
    cover = (ctl["lo"] <= 0) & (0 <= ctl["hi"])
    assert cover.mean() >= 0.90, ctl[~cover]
