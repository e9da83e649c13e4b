"""The top-k study end to end on small inputs: items, panel oracles, probes, gate, LLMBar, statistics.

* item pools meet the paper's construction (theta = #true - #false, exactly k fully-correct
  items, balanced verbosity uncorrelated with quality, same facts in both forms);
* a simulated judge's oracle, collected through the cache, gives back the bias it plants:
  with the panel's own length scale the Laplace interval covers c_verb, with the binary
  verbosity covariate it covers the documented mapping, two covariates at once included;
* isolated probes detect a planted verbosity bias (Wilson CI excludes 1/2, covers the exact
  planted probability) and none for the unbiased control;
* the trusted-anchor gate turns correction on for a spurious covariate, off for a
  legitimate one;
* the paired t-test reproduces Student's sleep data; Spearman a hand-computed value;
* LLMBar external validity runs on the real data (skipped without it).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab.cache import CallCache
from judgelab.config import ConfigError, JudgeSpec
from judgelab.datasets.features import text_features, word_count
from judgelab.io import InputError
from judgelab.judges import make_judge
from judgelab.judges.pairwise import judge_pairs
from judgelab.ranking.bias_aware import fit_bias_aware
from judgelab.simworld.topk import SyntheticJudge, synthetic_oracle
from judgelab.topk.experiment import TopkSettings, evaluate_full, single_threaded_blas
from judgelab.topk.gate import anchor_pairs, gate
from judgelab.topk.items import PoolDesign, build_items, load_banks
from judgelab.topk.oracle import collect_oracle, planted_bias, pool_oracles, study_judge_entry
from judgelab.topk.probes import planted_probabilities, probe_pairs, probe_summary
from judgelab.topk.stats import paired_comparison, spearman
from tests.conftest import REPO

BANKS = REPO / "data" / "topk" / "statements.json"


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with single_threaded_blas():
        yield


def sim_judge(name: str, biases: dict, **profile):
    entry = {"name": name, "backend": "simulated", "model": "sim", "family": "meta",
             "sampling": {"temperature": 0.1, "seed": 3}, "options": {"profile": {"biases": biases, **profile}}}
    return make_judge(JudgeSpec.from_dict(study_judge_entry(entry, {"temperature": 0.0})))


def test_banks_are_neutral_so_length_is_the_only_cue():
    banks = load_banks(BANKS)
    assert len(banks.topics) >= 5
    for bank in banks.topics:
        assert len(bank.true) == len(bank.false) == 12
        for s in bank.true + bank.false:
            f = text_features(s)
            assert f.sentiment == 0 and f.markdown == 0, s
    for c in banks.clauses:
        assert text_features(c).sentiment == 0


def test_malformed_bank_names_file_and_topic(tmp_path):
    data = json.loads(BANKS.read_text())
    data["topics"][1]["false"] = data["topics"][1]["false"][:11]
    bad = tmp_path / "banks.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"banks.json topic 'the Sun': 'false' must list exactly 12"):
        load_banks(bad)
    with pytest.raises(ConfigError, match="other_true_counts"):
        PoolDesign(other_true_counts=(6,))


def test_pools_follow_the_paper_construction():
    items = build_items(load_banks(BANKS), PoolDesign(), n_oracles=5, seed=7)
    again = build_items(load_banks(BANKS), PoolDesign(), n_oracles=5, seed=7)
    pd.testing.assert_frame_equal(items, again)
    for _, pool in items.groupby("oracle"):
        assert len(pool) == 30 and pool["top_k"].sum() == 5
        assert (pool["theta"] == pool["n_true"] - pool["n_false"]).all()
        assert (pool.loc[pool["top_k"], "theta"] == 6).all() and (pool.loc[~pool["top_k"], "theta"] <= 4).all()
        assert pool["verbose"].sum() == 15
        assert abs(np.corrcoef(pool["theta"], pool["verbose"])[0, 1]) < 0.12
        assert pool["statements"].nunique() == 30
    banks = load_banks(BANKS)
    row = items[items["verbose"] == 1].iloc[0]
    bank = next(b for b in banks.topics if b.topic == row["topic"])
    for sid in json.loads(row["statements"]):
        stmt = (bank.true if sid[0] == "T" else bank.false)[int(sid[1:])]
        assert stmt.rstrip(".") in row["text"]  # same facts, elaborated
    ratio = items.loc[items["verbose"] == 1, "words"].mean() / items.loc[items["verbose"] == 0, "words"].mean()
    assert 2.3 < ratio < 3.3  # about the verbosity reference contrast (2.8x)


@pytest.fixture(scope="module")
def panel_run(tmp_path_factory):
    """A verbosity- and position-biased simulated judge on 3 pools of 16 items, both cue
    covariate sets; the oracle goes through the call cache."""
    items = build_items(load_banks(BANKS), PoolDesign(n_items=16, k=4, format_contrast=True), n_oracles=3, seed=11)
    judge = sim_judge("topk-test", {"verbosity": 0.45, "position": 0.3, "markdown": 0.5}, competence=2.0)
    cache_path = tmp_path_factory.mktemp("c") / "calls.sqlite"
    with CallCache(cache_path) as cache:
        table = collect_oracle(judge, items, cache, quality_scale=0.2)
    with CallCache(cache_path) as cache:
        again = collect_oracle(judge, items, cache, quality_scale=0.2)
        runs = cache.stats()
    return items, judge, table, again, runs


def test_oracle_table_is_a_verdict_table_and_cached(panel_run):
    _, _, table, again, runs = panel_run
    assert len(table) == 3 * 16 * 15  # every ordered pair of every pool
    assert set(table["status"]) <= {"ok", "fallback", "unparsed", "refusal", "error"}
    assert table["simulated"].all() and (table["template"] == "ab_letter").all()
    ab = table[table["order"] == "AB"]
    assert (ab["first_item"] < ab["second_item"]).all()
    pd.testing.assert_frame_equal(table.drop(columns=["cost_usd", "latency_s"]),
                                  again.drop(columns=["cost_usd", "latency_s"]))
    assert sum(r["new_calls"] for r in runs) == len(table)  # the second collection asked nothing
    # generated verdicts carry no margin: the soft label is the hard one
    pd.testing.assert_series_equal(table["y_soft"], table["y"], check_names=False)


def test_panel_judge_bias_is_recovered_with_its_own_length_scale(panel_run):
    items, judge, table, _, _ = panel_run
    for cov in (["log2_length", "markdown"], ["verbosity", "markdown"]):
        planted = planted_bias(judge, items, cov)
        assert planted["c[markdown]"] > 0 and planted["kappa"] > 0
        covered = {k: 0 for k in planted}
        for pool in pool_oracles(table, items, cov, "meta"):
            fit = fit_bias_aware(pool.full_comparisons(), pool.n_items, pool.X, covariate_names=cov)
            for name, value in planted.items():
                lo, hi = fit.interval(name)
                covered[name] += int(lo <= value <= hi)
        # 3 pools x 3 parameters: allow one miss at 95%
        assert sum(covered.values()) >= 8, (cov, covered, planted)


def test_panel_bias_aware_beats_naive_on_a_biased_judge(panel_run):
    items, _, table, _, _ = panel_run
    settings = TopkSettings(k=4, lam_b_sweep=(0.1,), k_values=(4,))
    naive, aware = [], []
    for pool in pool_oracles(table, items, ["verbosity", "markdown"], "meta"):
        r = evaluate_full(pool, settings).recall
        naive.append(r.loc[r["estimator"] == "naive", "recall"].iloc[0])
        aware.append(r.loc[r["estimator"] == "aware", "recall"].iloc[0])
    assert np.mean(aware) > np.mean(naive)


def test_probes_detect_planted_verbosity_and_not_in_the_control(tmp_path):
    pairs = probe_pairs(load_banks(BANKS), n_per_topic=12, n_statements=6, seed=0)
    rows = []
    with CallCache(tmp_path / "c.sqlite") as cache:
        for judge in (sim_judge("verbose-judge", {"verbosity": 0.6}), sim_judge("control", {})):
            v = judge_pairs(judge, pairs, cache, template="ab_letter")
            planted = {judge.name: planted_probabilities(judge, pairs, "ab_letter")}
            rows.append(probe_summary(v, planted))
    s = pd.concat(rows).set_index(["judge", "probe"])
    vb = s.loc[("verbose-judge", "verbosity")]
    assert vb["ci_low"] > 0.5 and vb["ci_low"] <= vb["planted_p"] <= vb["ci_high"]
    for probe in ("verbosity", "markdown", "position"):
        c = s.loc[("control", probe)]
        assert c["ci_low"] <= 0.5 <= c["ci_high"] and c["planted_p"] == pytest.approx(0.5)


def test_gate_enables_on_spurious_and_disables_on_legitimate_covariates():
    settings = TopkSettings(lam_b_sweep=(0.1,), k_values=(5,))
    rates = {}
    for legit in (False, True):
        enabled = []
        for o in range(10):
            pool = synthetic_oracle(SyntheticJudge(c=(1.5,), kappa=0.3, legitimate=legit), o, seed=40)
            r = evaluate_full(pool, settings).recall
            enabled.append(bool(r.loc[r["estimator"] == "gated", "gate_enabled"].iloc[0]))
        rates[legit] = np.mean(enabled)
    assert rates[False] >= 0.7 and rates[True] <= 0.3, rates
    theta = np.array([3.0, 2.0, 2.0, 1.0])
    anchors = anchor_pairs(theta, 10, np.random.default_rng(0))
    assert len(anchors) == 5 and (theta[anchors[:, 0]] > theta[anchors[:, 1]]).all()  # tied pair never drawn
    assert gate(theta, -theta, anchors).enabled is False and gate(-theta, theta, anchors).enabled is True


def test_paired_t_matches_students_sleep_data():
    # Cushny & Peebles' sleep data (Student 1908); R: t.test(extra ~ group, data = sleep, paired = TRUE)
    g1 = np.array([0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0])
    g2 = np.array([1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4])
    r = paired_comparison(g1, g2, n_resamples=5000)
    assert r["t"] == pytest.approx(-4.0621, abs=1e-4) and r["p"] == pytest.approx(0.002833, abs=1e-6)
    assert r["delta"] == pytest.approx(-1.58)
    assert r["ci_low"] < -1.58 < r["ci_high"] < 0  # bootstrap CI (R's t CI: [-2.46, -0.70])
    # Spearman's rho with a tie: Pearson's r of the mid-ranks (1..5 vs 1, 2, 3.5, 5, 3.5)
    s = spearman(np.array([1, 2, 3, 4, 5]), np.array([5, 6, 7, 8, 7]))
    assert s["rho"] == pytest.approx(np.corrcoef([1, 2, 3, 4, 5], [1, 2, 3.5, 5, 3.5])[0, 1], abs=1e-12)


def test_llmbar_external_validity_on_real_pairs(data_root, tmp_path):
    from judgelab.topk.llmbar import external_validity
    from judgelab.topk.pipeline import llmbar_pairs

    cfg = {"llmbar": {"datasets": {"llmbar_neighbor": "llmbar/Adversarial/Neighbor"}}}
    pairs = llmbar_pairs(cfg)
    assert len(pairs) == 134 and (pairs["category"] == "llmbar_neighbor").all()
    judge = sim_judge("longer-lover", {"verbosity": 0.7}, competence=1.0)
    from judgelab.datasets.pairs import pair_from_row

    plist = [pair_from_row(r, where=str(i)) for i, r in enumerate(pairs.to_dict("records"))]
    with CallCache(tmp_path / "c.sqlite") as cache:
        v = judge_pairs(judge, plist, cache, template="ab_letter")
    row = external_validity(v, pairs, seed=0)
    assert row["n_pairs"] == 134 and row["gold_longer"] < 0.3  # Neighbor: gold is rarely the longer output
    assert row["prefers_longer"] > row["gold_longer"] + 0.2
    assert row["corrected_acc"] > row["raw_acc"] + 0.1  # modelling the spurious length recovers gold
    # issue 13: the features-only control (length/markdown differences, no judge) sits beside it;
    # on Neighbor length alone predicts gold, so the correction must be judged against it
    assert row["features_acc"] > 0.75 and row["feat_ci_low"] < row["features_acc"] < row["feat_ci_high"]
    assert row["delta_vs_features"] == pytest.approx(row["corrected_acc"] - row["features_acc"])
    assert 0.0 <= row["p_vs_features"] <= 1.0
    assert row["beats_features"] == (row["delta_vs_features"] > 0 and row["p_vs_features"] < 0.05)
    # the control is a judge-free model: a judge that flips a coin changes nothing in it
    coin = v.assign(verdict=np.where(np.random.default_rng(0).random(len(v)) < 0.5, "A", "B"))
    assert external_validity(coin, pairs, seed=0)["features_acc"] == row["features_acc"]


@pytest.mark.slow
def test_other_judge_sets_plan_the_topk_rules(tmp_path, data_root):
    """The study's rules alone (common + topk), planned for the vLLM judge set."""
    wd = tmp_path / "wf"
    wd.mkdir()
    for part in ["rules", "config", "workflow_scripts", "report", "envs", "judgelab", "data", "pyproject.toml"]:
        src = REPO / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, wd / part)
    (wd / "Snakefile").write_text(
        'from snakemake.utils import validate\n'
        'configfile: "config/judges/simulated.yaml"\nconfigfile: "config/config.yaml"\n'
        'validate(config, "config/schema.yaml")\n'
        'include: "rules/common.smk"\ninclude: "rules/plans.smk"\ninclude: "rules/topk.smk"\n'
        'rule all:\n    input:\n        STUDY_OUTPUTS["topk"],\n    default_target: True\n'
    )
    exe = Path(sys.executable).with_name("snakemake")
    proc = subprocess.run([str(exe) if exe.exists() else "snakemake", "-n", "--cores", "1", "--configfile",
                           "config/judges/vllm-open.yaml"], cwd=wd, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    for rule in ("topk_items", "topk_query", "topk_evaluate", "topk_llmbar_pairs", "topk_llmbar_replay",
                 "topk_synthetic", "topk_tables", "topk_figures", "topk_rank"):
        assert rule in out, rule


def test_documented_panel_mapping():
    # the elaborated form is ~2.8x longer, the verbosity reference contrast: c ~ the b-score's coefficient
    from judgelab.judges.simulated import REFERENCE_CONTRASTS, coefficient_for_bias

    items = build_items(load_banks(BANKS), PoolDesign(), n_oracles=5, seed=1)
    judge = sim_judge("m", {"verbosity": 0.4, "position": 0.1})
    p = planted_bias(judge, items, ["verbosity"])
    ref = coefficient_for_bias(0.4, 0.4, REFERENCE_CONTRASTS["verbosity"]) * REFERENCE_CONTRASTS["verbosity"]
    assert p["c[verbosity]"] == pytest.approx(ref, rel=0.1)
    assert p["kappa"] == pytest.approx(coefficient_for_bias(0.1, 0.4, 1.0))
    assert math.isclose(word_count("a b c"), 3)


def test_gate_threshold_is_exactly_as_good_as_naive():
    # 40 anchors (better, worse); the bias-aware ranking gets one more anchor wrong than the
    # naive one (agreement 0.975 vs 1.0): the gate must stay off; a tie enables it
    theta = np.arange(41, dtype=float)
    anchors = np.column_stack([np.arange(1, 41), np.arange(0, 40)])
    naive = theta.copy()
    aware = theta.copy()
    aware[[20, 21]] = aware[[21, 20]]  # flips exactly the anchor (21, 20)
    d = gate(naive, aware, anchors)
    assert d.agree_naive == 1.0 and d.agree_aware == pytest.approx(39 / 40)
    assert d.enabled is False and d.n_anchors == 40
    assert gate(naive, naive.copy(), anchors).enabled is True
    worse_naive = naive.copy()
    worse_naive[[20, 21]] = worse_naive[[21, 20]]
    assert gate(worse_naive, aware, anchors).enabled is True  # equal agreement: correction on


def test_anchor_pairs_and_agreement_edge_cases():
    theta = np.array([0.0, 1.0, 1.0, 2.0, 3.0, 5.0])
    rng = np.random.default_rng(0)
    n_labelled = 14  # 15 pairs, one tie (items 1 and 2) carries no label
    a = anchor_pairs(theta, 100, rng)
    assert len(a) == n_labelled and len({tuple(r) for r in a.tolist()}) == n_labelled  # drawn without replacement
    assert (theta[a[:, 0]] > theta[a[:, 1]]).all()
    few = anchor_pairs(theta, 4, np.random.default_rng(1))
    assert few.shape == (4, 2) and len({tuple(r) for r in few.tolist()}) == 4
    # the draw is the generator's: same seed same anchors, another seed other anchors
    np.testing.assert_array_equal(anchor_pairs(theta, 4, np.random.default_rng(1)), few)
    assert any(not np.array_equal(anchor_pairs(theta, 4, np.random.default_rng(s)), few) for s in range(2, 6))
    from judgelab.topk.gate import anchor_agreement

    anchors = np.array([[3, 0], [4, 1], [5, 2]])
    assert anchor_agreement(theta, anchors) == 1.0
    assert anchor_agreement(-theta, anchors) == 0.0
    tied = np.array([1.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    assert anchor_agreement(tied, anchors) == pytest.approx(0.5)  # every anchor tied: each counts half
    assert anchor_agreement(np.array([0, 0, 0, 1.0, 2.0, -1.0]), anchors) == pytest.approx((1 + 1 + 0) / 3)
    assert np.isnan(anchor_agreement(theta, np.zeros((0, 2), dtype=int)))
    assert anchor_agreement(theta, anchors[:1]) == 1.0 and anchor_agreement(-theta, anchors[:1]) == 0.0
    d = gate(theta, -theta, anchors)
    assert (d.agree_naive, d.agree_aware, d.enabled) == (1.0, 0.0, False)
