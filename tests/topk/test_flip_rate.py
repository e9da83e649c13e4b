"""The temperature-1 flip rate of paper 002 (judgelab/topk/flips.py, rule topk_flip_rate).

* the estimator is the share of disagreeing repeat pairs, counted by hand on a small table,
  unusable answers left out;
* over many planted worlds (pairs drawn at random, each with its own sampling probability
  p ~ Beta, the judge's planted rate E[2 p (1 - p)]) the clustered Wilson interval covers the planted rate about as often as
  its level says, and the estimate is unbiased;
* a simulated judge sampled at temperature 1 through the judge interface and the call cache:
  every repeat is its own cache key (a rerun asks nothing, and two asks of a pair do differ),
  and the interval covers the planted rate its own model implies for the asked pairs
  (SimulatedJudge.sample_probabilities), checked against a Monte-Carlo of the same model;
* a deterministic judge (no sample noise) has rate 0, an interval [0, u] with u > 0 on one
  unit per pair, a status saying there is no variance, and no p-value column;
* the step writes both tables and the DAG has one flip job per flip judge (the focus judge by default).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from judgelab.cache import CallCache
from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges import make_judge
from judgelab.judges.runner import run_requests
from judgelab.judges.simulated import SimulatedJudge
from judgelab.topk.experiment import single_threaded_blas
from judgelab.topk.flips import (
    FLIP_COLUMNS,
    SUMMARY_COLUMNS,
    collect_flips,
    flip_pairs,
    flip_rate,
    flip_requests,
    flip_summary,
    planted_flip_rate,
)
from judgelab.topk.items import PoolDesign, build_items, load_banks, pools
from judgelab.topk.oracle import study_judge_entry
from judgelab.topk.pipeline import flip_rate_tables
from judgelab.topk.plan import flip_judges
from tests.conftest import REPO

BANKS = REPO / "data" / "topk" / "statements.json"
CFG = {"template": "ab_letter", "quality_scale": 0.2, "sampling": {"temperature": 0.0}, "logit_verdicts": True,
       "flip_rate": {"n_pairs": 80, "repeats": 4, "temperature": 1.0, "alpha": 0.05}}


@pytest.fixture(scope="module")
def items() -> pd.DataFrame:
    with single_threaded_blas():
        return build_items(load_banks(BANKS), PoolDesign(n_items=12, k=3), 2, 0)


def entry(name: str = "sim-flip", **profile) -> dict:
    return {"name": name, "backend": "simulated", "model": "sim", "family": "meta", "sampling": {"seed": 5},
            "options": {"profile": {"biases": {"verbosity": 0.3}, **profile}}}


def test_the_rate_is_the_share_of_disagreeing_repeat_pairs_counted_by_hand():
    # pair x: A A B (3 comparisons, 2 disagree); pair y: B B (1, 0); pair z: A + 2 unusable (none)
    ids = ["x", "x", "x", "y", "y", "z", "z", "z"]
    verdicts = ["A", "A", "B", "B", "B", "A", "", ""]
    out = flip_rate(ids, verdicts)
    assert (out["n_comparisons"], out["n_flipped"], out["n_pairs_usable"]) == (4, 2, 2)
    assert out["flip_rate"] == pytest.approx(0.5)
    assert out["ci_low"] < 0.5 < out["ci_high"] and out["status"] == "ok"
    # ties are a verdict of their own: A, tie, B all differ
    assert flip_rate(["p"] * 3, ["A", "tie", "B"])["flip_rate"] == 1.0


#: pairs answer A with probability p ~ Beta(A_, A_): many near-deterministic pairs, some unsure.  The
#: flip rate of the judge (over pairs drawn at random) is E[2 p (1 - p)] = 2 a b / ((a + b)(a + b + 1)).
A_ = 0.4
PLANTED = 2 * A_ * A_ / ((2 * A_) * (2 * A_ + 1))


def _world(rng: np.random.Generator, k: int, repeats: int) -> tuple[list[int], list[str]]:
    """k pairs drawn at random, each asked ``repeats`` times."""
    p = rng.beta(A_, A_, size=k)
    draws = rng.random((k, repeats)) < p[:, None]
    return np.repeat(np.arange(k), repeats).tolist(), np.where(draws, "A", "B").ravel().tolist()


def test_the_interval_covers_the_planted_rate_at_its_level_over_many_worlds():
    rng = np.random.default_rng(11)
    worlds, covered, errors = 300, 0, []
    for _ in range(worlds):
        ids, verdicts = _world(rng, k=60, repeats=5)
        out = flip_rate(ids, verdicts)
        covered += out["ci_low"] <= PLANTED <= out["ci_high"]
        errors.append(out["flip_rate"] - PLANTED)
    # 95 % nominal: a binomial 99.9 % band around 0.95 for 300 worlds is about [0.90, 0.98]
    lo, hi = proportion_confint(covered, worlds, alpha=0.001, method="wilson")
    assert lo <= 0.95 <= hi, covered / worlds
    assert abs(np.mean(errors)) < 3 * np.std(errors) / np.sqrt(worlds)  # unbiased


def test_a_deterministic_judge_has_rate_zero_an_interval_on_pairs_and_no_p_value(items, tmp_path):
    cfg = {**CFG, "flip_rate": {**CFG["flip_rate"], "n_pairs": 30}}
    with CallCache(tmp_path / "c.sqlite") as cache:
        table, summary = flip_rate_tables(entry(sample_noise=0.0), cfg, items, cache, 0.0, seed=1)
    assert len(table) == 30 * 4 and (table.groupby("pair_id")["verdict"].nunique() == 1).all()
    row = summary.iloc[0]
    assert row["flip_rate"] == 0.0 and row["planted_flip_rate"] == 0.0
    assert row["status"].startswith("no variance")
    assert row["n_effective"] == 30 and row["ci_low"] == 0.0
    expected_hi = proportion_confint(0, 30, alpha=0.05, method="wilson")[1]
    assert row["ci_high"] > 0 and row["ci_high"] >= expected_hi  # t on 29 df is wider than z
    assert not any("p_value" in c or c.startswith("p_") for c in summary.columns)
    assert list(summary.columns) == SUMMARY_COLUMNS


def test_a_sampled_judge_recovers_its_planted_rate_each_repeat_its_own_key(items, tmp_path, monkeypatch):
    e = entry(sample_noise=1.0)
    asked = []
    answer = SimulatedJudge.answer
    monkeypatch.setattr(SimulatedJudge, "answer", lambda self, reqs: asked.extend(reqs) or answer(self, reqs))
    with CallCache(tmp_path / "c.sqlite") as cache:
        table, summary = flip_rate_tables(e, CFG, items, cache, 0.0, seed=2)
        assert table["key"].nunique() == len(table) == len(asked) == 80 * 4  # a distinct cache key per ask
        again, _ = flip_rate_tables(e, CFG, items, cache, 0.0, seed=2)
    assert len(asked) == 80 * 4  # the rerun asks nothing
    pd.testing.assert_series_equal(again["verdict"], table["verdict"])
    row = summary.iloc[0]
    assert row["status"] == "ok" and row["n_flipped"] > 0
    assert 0.0 < row["planted_flip_rate"] < 0.5
    assert row["ci_low"] <= row["planted_flip_rate"] <= row["ci_high"], row.to_dict()
    assert row["ci_low"] <= row["flip_rate"] <= row["ci_high"]


def test_the_planted_rate_is_what_the_judge_samples(items, tmp_path):
    """sample_probabilities against a Monte-Carlo of the judge's own answers: 200 asks of a few pairs
    (noise scale temperature x sample_noise = 0.6 x 2.5, so a scale left out shows)."""
    spec = JudgeSpec.from_dict(study_judge_entry(entry(sample_noise=2.5), {"temperature": 0.0}, False))
    judge = make_judge(spec)
    pairs = flip_pairs(items, 6, seed=3)
    reqs = flip_requests(items, pairs, template="ab_letter", quality_scale=0.2, repeats=200, temperature=0.6)
    with CallCache(tmp_path / "c.sqlite") as cache:
        table = collect_flips(judge, reqs, cache, template="ab_letter")
    for i, pid in enumerate(pd.unique(table["pair_id"])):
        shown = table.loc[table["pair_id"] == pid, "verdict_shown"]
        p_a = judge.sample_probabilities(reqs[i * 200])[0]
        assert abs((shown == "A").mean() - p_a) < 4 * np.sqrt(p_a * (1 - p_a) / 200) + 1e-9, (pid, p_a)
    assert 0 < planted_flip_rate(judge, reqs, table) < 1


def test_flip_judges_default_to_the_focus_judge_and_unknown_names_fail():
    names = ["a", "b", "c"]
    assert flip_judges({"focus_judge": "b"}, names) == ["b"]
    assert flip_judges({"flip_rate": {"judges": ["c", "a"]}}, names) == ["c", "a"]
    assert flip_judges({"flip_rate": {"judges": []}}, names) == []
    with pytest.raises(ConfigError, match=r"topk\.flip_rate\.judges"):
        flip_judges({"flip_rate": {"judges": ["zz"]}}, names)


def test_pairs_are_a_seeded_sample_of_ordered_pairs(items):
    a, b = flip_pairs(items, 25, seed=4), flip_pairs(items, 25, seed=4)
    assert a == b and len(set(a)) == 25 and all(x != y for _, x, y in a)
    assert len(flip_pairs(items, None, seed=0)) == 2 * 12 * 11


def test_a_judge_with_its_own_seed_is_sent_a_new_seed_per_repeat(items):
    """An API judge configured with a seed would answer every repeat alike: ask r gets seed + r;
    a judge without a seed is sent none."""
    pairs = flip_pairs(items, 2, seed=0)
    seeded = flip_requests(items, pairs, template="ab_letter", quality_scale=0.2, repeats=3, temperature=1.0, seed=7)
    assert [r.params["seed"] for r in seeded] == [7, 8, 9, 7, 8, 9]
    plain = flip_requests(items, pairs, template="ab_letter", quality_scale=0.2, repeats=3, temperature=1.0)
    assert all("seed" not in r.params for r in plain) and [r.params["sample"] for r in plain] == [0, 1, 2] * 2


def test_each_flip_row_is_the_cached_answer_to_its_request_in_the_original_frame(items, tmp_path):
    """A row carries its own request's answer as the call cache holds it (asking again through the cache
    returns the same responses and asks nothing), the judge's spec, the ask's pool, items, repeat and
    temperature; its order is AB when the first shown item has the lower index, its verdict is the shown
    one in that frame, and its expected verdict is the item of higher planted quality in that frame."""
    spec = JudgeSpec.from_dict(study_judge_entry(entry(sample_noise=1.5), {"temperature": 0.0}, False))
    judge = make_judge(spec)
    pairs = flip_pairs(items, 12, seed=5)
    reqs = flip_requests(items, pairs, template="ab_letter", quality_scale=0.2, repeats=3, temperature=0.8)
    theta = {int(p["oracle"].iloc[0]): p["theta"].to_numpy(float) for p in pools(items)}
    swap = {"A": "B", "B": "A", "tie": "tie"}
    with CallCache(tmp_path / "c.sqlite") as cache:
        table = collect_flips(judge, reqs, cache, template="ab_letter", label=None)
        answers = run_requests(judge, reqs, cache, label=None)
    assert list(table.columns) == FLIP_COLUMNS and len(table) == len(reqs)
    assert table["verdict"].nunique() >= 2 and (table["order"] == "BA").any() and (table["order"] == "AB").any()
    for row, req, resp in zip(table.to_dict("records"), reqs, answers, strict=True):
        o, a, b = req.meta["oracle"], req.meta["first_item"], req.meta["second_item"]
        assert (row["oracle"], row["first_item"], row["second_item"], row["repeat"]) == (o, a, b, req.meta["repeat"])
        assert row["pair_id"] == f"o{o}:{a}>{b}" and row["category"] == str(o) and row["bias_type"] == "none"
        assert row["temperature"] == 0.8 and row["template"] == "ab_letter"
        assert (row["judge"], row["backend"], row["model"], row["family"], row["simulated"], row["judge_seed"]) == (
            judge.name, spec.backend, spec.model, spec.family, True, int(spec.sampling.get("seed", 0)))
        assert (row["key"], row["status"], row["parse_method"], row["raw_text"]) == (
            resp.key, resp.status.value, resp.parse_method, resp.raw_text or "")
        assert (row["tokens_in"], row["tokens_out"], row["cost_usd"], row["latency_s"]) == (
            resp.tokens_in, resp.tokens_out, resp.cost_usd, resp.latency_s)
        order = "AB" if a < b else "BA"
        assert row["order"] == order and row["verdict_shown"] == resp.value in ("A", "B", "tie")
        assert row["verdict"] == (resp.value if order == "AB" else swap[resp.value])
        lo, hi = min(a, b), max(a, b)
        t_lo, t_hi = theta[o][lo], theta[o][hi]
        assert row["expected_verdict"] == ("A" if t_lo > t_hi else "B" if t_lo < t_hi else "tie")
        assert row["correct"] == (row["verdict"] == row["expected_verdict"])
    assert table["correct"].any() and not table["correct"].all()


def test_the_summary_row_counts_the_answers_and_carries_the_hand_counted_rate():
    """flip_summary on a hand table: answers and unusable answers counted, the run's settings carried,
    the rate and interval those of flip_rate at the given alpha, the planted rate passed through."""
    table = pd.DataFrame({"pair_id": ["x", "x", "x", "y", "y", "z", "z"], "verdict": ["A", "B", "", "B", "B", "A", ""]})
    row = flip_summary(table, judge="j", simulated=False, temperature=0.7, repeats=3, n_pairs=3, alpha=0.2,
                       planted=0.25).iloc[0]
    est = flip_rate(table["pair_id"], table["verdict"], alpha=0.2)
    assert (row["judge"], row["simulated"], row["temperature"], row["repeats"], row["n_pairs"]) == ("j", False, 0.7, 3, 3)
    assert (row["n_answers"], row["n_unusable"], row["n_pairs_usable"]) == (7, 2, 2)
    assert (row["n_comparisons"], row["n_flipped"], row["flip_rate"]) == (2, 1, 0.5)
    assert (row["ci_low"], row["ci_high"], row["alpha"], row["planted_flip_rate"]) == (
        est["ci_low"], est["ci_high"], 0.2, 0.25)
    wider = flip_rate(table["pair_id"], table["verdict"], alpha=0.05)
    assert wider["ci_low"] < row["ci_low"] and row["ci_high"] < wider["ci_high"]
    assert np.isnan(flip_summary(table, judge="j", simulated=True, temperature=1.0, repeats=3,
                                 n_pairs=3).iloc[0]["planted_flip_rate"])


def test_each_ask_shows_its_pools_question_and_items_with_their_planted_truth(items):
    """Ask r of pair (o, a, b): the pool's question in the prompt, item a shown as A and b as B, the
    planted qualities scaled, gold the better slot as shown (tie on equal quality), temperature sent."""
    by_pool = {int(p["oracle"].iloc[0]): p for p in pools(items)}
    pairs = flip_pairs(items, 30, seed=6)
    reqs = flip_requests(items, pairs, template="ab_letter", quality_scale=0.2, repeats=2, temperature=0.9)
    assert [(r.meta["oracle"], r.meta["first_item"], r.meta["second_item"], r.meta["repeat"]) for r in reqs] == [
        (o, a, b, r) for o, a, b in pairs for r in range(2)]
    for req in reqs:
        pool = by_pool[req.meta["oracle"]]
        a, b = req.meta["first_item"], req.meta["second_item"]
        ta, tb = float(pool["theta"].iloc[a]), float(pool["theta"].iloc[b])
        assert req.slots == {"A": pool["text"].iloc[a], "B": pool["text"].iloc[b]}
        assert str(pool["question"].iloc[0]) in req.messages[-1].content
        assert req.truth == {"quality_a": pytest.approx(0.2 * ta), "quality_b": pytest.approx(0.2 * tb),
                             "gold": "A" if ta > tb else "B" if ta < tb else "tie"}
        assert req.params["temperature"] == 0.9
    assert {r.truth["gold"] for r in reqs} >= {"A", "B"}


def test_without_two_usable_answers_or_with_every_ask_disagreeing_the_rate_says_why():
    """No pair with two usable answers: no rate, no interval, a status saying so. Every two asks of every
    pair disagreeing: rate 1, the interval on one unit per pair (as the deterministic judge's at 0,
    mirrored), and a status naming that case, not the deterministic one."""
    none = flip_rate(["x", "x", "y"], ["A", "", "B"])
    assert (none["n_pairs_usable"], none["n_comparisons"], none["n_flipped"]) == (0, 0, 0)
    assert all(np.isnan(none[k]) for k in ("flip_rate", "ci_low", "ci_high", "n_effective"))
    assert none["status"] == "no pair has two usable answers: no flip rate"
    every = flip_rate(["x", "x", "y", "y", "z", "z"], ["A", "B", "B", "tie", "tie", "A"])
    agree = flip_rate(["x", "x", "y", "y", "z", "z"], ["A", "A", "B", "B", "tie", "tie"])
    assert (every["flip_rate"], every["n_effective"], agree["flip_rate"], agree["n_effective"]) == (1.0, 3, 0.0, 3)
    assert every["status"] == "no variance: every two asks disagree; interval on one unit per pair"
    assert agree["status"].startswith("no variance: every pair got the same verdict")
    assert every["ci_high"] == 1.0 and every["ci_low"] == pytest.approx(1 - agree["ci_high"])


def test_the_planted_rate_is_nan_without_a_sampling_model_or_answers(items, tmp_path):
    """A judge that is not simulated (or has no sampling model), an empty table and a table without a usable
    comparison have no planted rate."""
    spec = JudgeSpec.from_dict(study_judge_entry(entry(sample_noise=1.0), {"temperature": 0.0}, False))
    judge = make_judge(spec)
    reqs = flip_requests(items, flip_pairs(items, 3, seed=1), template="ab_letter", quality_scale=0.2,
                         repeats=2, temperature=1.0)
    with CallCache(tmp_path / "c.sqlite") as cache:
        table = collect_flips(judge, reqs, cache, template="ab_letter", label=None)
    assert 0 <= planted_flip_rate(judge, reqs, table) < 1
    assert np.isnan(planted_flip_rate(judge, reqs, table.iloc[:0]))
    assert np.isnan(planted_flip_rate(judge, reqs, table.assign(verdict="")))  # no usable comparison

    class Real:  # a judge of a real backend: no sampling model
        simulated = False

    assert np.isnan(planted_flip_rate(Real(), reqs, table))  # type: ignore[arg-type]
    bare = Real()
    bare.simulated = True
    assert np.isnan(planted_flip_rate(bare, reqs, table))  # type: ignore[arg-type]
