"""Stamps from typed provenance, for the topk and rbd figures: a simulated slice of the DAG
stamps every figure it draws; a real judge's tables draw figures with no stamp.

The simulated slices run the study's rules in a scratch copy of the workflow (Snakemake, the
simulated panel; ``slow``): the slices of :mod:`tests.helpers.dag_slices`, built once per test run
and shared with the tests of the studies' tables (``tests/topk/test_paper_grid.py``,
``tests/rbd/test_tables_dag.py``).  The real-judge side runs the study's own table and figure code on
a judge entry whose backend is a real one (``openai``; its answers are made offline, no key
and no network: the figure code sees only the typed tables the rules write), each table written
and read back through :func:`judgelab.io.write_table` / :func:`~judgelab.io.read_table` with the
rule's provenance, as the DAG does.  A full real-model (SmolLM2) run of these two studies'
figures needs thousands of generated calls (topk's LLMBar subsets, rbd's reasoning evaluators):
``tests/workflow/test_real_judge_slices.py`` covers their cheap targets.

The one figure a real topk run still stamps is ``recall_vs_budget``: it draws the synthetic
Bradley-Terry simulator's curves beside the judges' (so it says simulated, by design).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml

from judgelab.io import read_table, write_table
from judgelab.plots.stamp import STAMP_TEXT, figure_stamp
from judgelab.workflow import provenance
from tests.conftest import REPO
from tests.helpers.dag_slices import RBD_FIGURES, TOPK_FIGURES, rbd_slice, topk_slice

TOPK_SMALL = {
    "n_oracles": 1, "items": {"n_items": 8, "k": 2}, "k_values": [2], "seeds": [0], "budgets": [10, 20],
    "strategies": ["aware/topk", "naive/topk"], "focus_judge": "sim-llama-3.3-70b", "focus_strategies": [],
    "ablation_budget": 20, "allocation_budget": 20, "n_anchors": 5,
    "model": {"n_samples": 100, "lam_b_sweep": [0.1], "refit_every": 8}, "probes": {"n_per_topic": 1},
    "synthetic": {"n_oracles": 2, "seeds": [0], "strategies": ["aware/topk"],
                  "scenarios": {"biased": {"c": [1.0], "kappa": 0.5}}},
    "llmbar": {"n_folds": 2}, "rank": {"pools": {}},
}  # the real judge's in-process run below; the simulated slices are tests/helpers/dag_slices.py's


def _merged(base: dict, over: dict) -> dict:
    """Snakemake's config merge: mappings merge key by key, anything else replaces."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def _stamps(folder: Path) -> dict[str, str | None]:
    return {p.stem: figure_stamp(p) for p in sorted(folder.glob("*.png"))}


# -- simulated slices of the DAG ------------------------------------------------------------------


@pytest.mark.slow
def test_topk_simulated_slice_stamps_every_figure(tmp_path_factory, data_root):
    """The topk slice of tests/helpers/dag_slices.py, built once for this test and tests/topk/test_paper_grid.py."""
    wd = topk_slice(tmp_path_factory)
    assert _stamps(wd / "results/topk/figures") == dict.fromkeys(sorted(TOPK_FIGURES), STAMP_TEXT)


@pytest.mark.slow
def test_rbd_simulated_slice_stamps_every_figure(tmp_path_factory, data_root):
    """The rbd slice of tests/helpers/dag_slices.py, built once for this test and tests/rbd/test_tables_dag.py."""
    wd = rbd_slice(tmp_path_factory)
    assert _stamps(wd / "results/rbd/figures") == dict.fromkeys(sorted(RBD_FIGURES), STAMP_TEXT)


# -- a real judge's tables -------------------------------------------------------------------------

REAL = {"name": "real-judge", "backend": "openai", "model": "gpt-4o-mini", "family": "openai",
        "sampling": {"temperature": 0.0, "seed": 0}}


def _round_trip(df: pd.DataFrame, path: Path, entries: list[dict]) -> pd.DataFrame:
    write_table(df, path, provenance=provenance("abc123", 0, entries))
    return read_table(path)


def test_topk_figures_of_a_real_judge_are_not_stamped(tmp_path):
    from judgelab.cache import CallCache
    from judgelab.config import JudgeSpec
    from judgelab.judges import make_judge
    from judgelab.topk.oracle import collect_oracle
    from judgelab.topk.pipeline import evaluate_judge, make_figures, make_items, study_tables, synthetic_tables

    cfg = _merged(yaml.safe_load((REPO / "config/config.yaml").read_text())["topk"], TOPK_SMALL)
    cfg["banks"] = str(REPO / cfg["banks"])
    cfg["focus_judge"] = REAL["name"]
    items, _ = make_items(cfg, 0)
    answerer = make_judge(JudgeSpec(name="offline", backend="simulated", model="sim", family="openai"))
    with CallCache(tmp_path / "c.sqlite") as cache:
        oracle = collect_oracle(answerer, items, cache, template=cfg["template"],
                                quality_scale=float(cfg["quality_scale"]))
    ev = evaluate_judge(oracle.assign(simulated=False), items, REAL, cfg, 0, focus=True)
    ev = {k: _round_trip(v, tmp_path / f"{k}.parquet", [REAL]) for k, v in ev.items()}
    assert not ev["budget"]["simulated"].any() and not ev["scores"]["simulated"].any()
    syn = synthetic_tables(cfg, 0)["budget"]
    syn = _round_trip(syn, tmp_path / "syn.parquet", []).assign(simulated=True)  # the rule's flag: the simulator
    tables = study_tables(ev["recall"], ev["params"], ev["budget"], cfg, 0)
    judges = _round_trip(tables["table1_judges"], tmp_path / "table1_judges.csv", [REAL])
    frontier = _round_trip(tables["frontier"], tmp_path / "frontier.csv", [REAL])
    out = tmp_path / "figures"
    out.mkdir()
    make_figures(budgets=[ev["budget"]], synthetic=syn, scores=ev["scores"], allocation=ev["allocation"],
                 judges=judges, frontier=frontier, cfg=cfg, focus=REAL["name"], config_hash="abc123",
                 outputs={f: str(out / f"{f}.png") for f in TOPK_FIGURES})
    expected = dict.fromkeys(sorted(TOPK_FIGURES), "none") | {"recall_vs_budget": STAMP_TEXT}  # the simulator's curves
    assert _stamps(out) == expected


def test_rbd_figures_of_a_real_judge_are_not_stamped(tmp_path):
    from judgelab.plots.rbd import behaviour_figure, bias_existence_figure, detector_figure, loop_figure
    from judgelab.rbd.detector import detector_metrics
    from judgelab.rbd.evaluate import evaluation_summary
    from judgelab.rbd.loop import behaviour, table2

    det = {"name": "real-detector", "backend": "openai", "model": "gpt-4o-mini", "family": "openai"}
    labels = pd.DataFrame([{"set": "verbosity", "item_id": f"i{i}", "judge": REAL["name"], "split": "test",
                            "bias_type": "verbosity", "answer_format": "ab", "label_rule": "eq1", "verdict_D": 0,
                            "verdict_bias": i % 2, "gold_D": 0, "gold_bias": 0, "correct_D": True,
                            "correct_bias": i % 2 == 0, "status_D": "ok", "status_bias": "ok",
                            "b": "yes" if i % 2 else "no"} for i in range(6)])
    evaluation = _round_trip(evaluation_summary(labels, {REAL["name"]: False}), tmp_path / "evaluation.csv", [REAL])
    items = pd.DataFrame([{"judge": REAL["name"], "detector": det["name"], "set": "position", "item_id": f"i{i}",
                           "bias_type": "position", "verdict_D": 0, "gold_D": 0, "initial": [0, 1], "gold": [0, 0]}
                          for i in range(4)])
    traj = pd.DataFrame([{"judge": REAL["name"], "detector": det["name"], "prompting": "rbd", "set": "position",
                          "item_id": f"i{i}", "bias_type": "position", "iteration": 1, "verdict_before": [0, 1],
                          "truth": "yes", "detector_label": "yes", "detector_status": "ok", "flagged": True,
                          "revision_status": "ok", "verdict_after": [0, 0] if i % 2 else [0, 1],
                          "detector_tokens_out": 5, "detector_latency_s": 0.1, "detector_cost_usd": 0.0,
                          "revision_cost_usd": 0.0} for i in range(4)])
    entries = [REAL, det]
    t2 = _round_trip(table2(items, traj, 1), tmp_path / "table2.csv", entries)
    beh = _round_trip(behaviour(items, traj), tmp_path / "behaviour.csv", entries)
    preds = pd.DataFrame([{"detector": det["name"], "prompting": "rbd", "subset": s, "bias_type": "verbosity",
                           "truth": t, "pred": p, "status": "ok", "simulated": False}
                          for s in ("test", "diag_verbosity") for t, p in (("yes", "yes"), ("no", "no"), ("no", "yes"))])
    metrics = _round_trip(detector_metrics(preds), tmp_path / "metrics.csv", [det])
    out = tmp_path / "figures"
    out.mkdir()
    bias_existence_figure(evaluation, str(out / "bias_existence.png"))
    loop_figure(t2, str(out / "loop.png"), detector=det["name"])
    behaviour_figure(beh, str(out / "behaviour.png"), detector=det["name"])
    detector_figure(metrics, {}, str(out / "detectors.png"))
    from judgelab.plots.rbd import detector_sizes_figure
    from judgelab.rbd.tables import size_gains

    sizes = size_gains(t2, {"8B": det["name"]}, max_iterations=1, bias_sets={})
    detector_sizes_figure(_round_trip(sizes, tmp_path / "fig6_sizes.csv", entries), str(out / "detector_sizes.png"))
    assert _stamps(out) == dict.fromkeys(sorted(RBD_FIGURES), "none")
