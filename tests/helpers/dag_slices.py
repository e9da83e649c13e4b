"""Small simulated slices of the DAG, each built once per test run and read by every test file that needs it.

Several test files check different things of one small slice (the rbd tables and the rbd figures'
stamps, say).  Run by each of them, the slice's jobs -- about a second of interpreter start-up each,
plus the study's own work -- are paid once per file; built here, once per run.  The slice lives in a
folder of the run's temporary root (with pytest-xdist: the folder that holds every worker's
``popen-gwN``, so the files of one run share it whichever worker they run on), under a file lock: the
first test to ask builds it, one asking meanwhile on another worker waits for it, the rest read it.
The users read the outputs only; a test that changes a slice must work on a copy of its own.

The folder's name carries a hash of the slice's config and targets, so two slices never share one by
accident; the code is the run's own (a new run has a new root).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from filelock import FileLock

from tests.workflow.test_pipeline import copy_workflow, run_sm

DONE = ".slice-built"


def slice_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's folder for shared slices: the parent of an xdist worker's base temp, else the base temp."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "dag-slices"
    root.mkdir(parents=True, exist_ok=True)
    return root


def built_slice(tmp_path_factory: pytest.TempPathFactory, name: str, config: dict, targets: list[str]) -> Path:
    """A scratch workflow in which ``snakemake TARGETS --configfile slice.yaml`` (``config``) has run.

    Built by the first caller of the run (under a lock, so a second worker waits rather than builds
    it again); a failed build leaves no mark, and the next caller tries again (and fails the same)."""
    key = hashlib.sha256(json.dumps([config, targets], sort_keys=True).encode()).hexdigest()[:12]
    wd = slice_root(tmp_path_factory) / f"{name}-{key}"
    with FileLock(f"{wd}.lock"):
        if not (wd / DONE).exists():
            if wd.exists():
                shutil.rmtree(wd)
            copy_workflow(wd)
            (wd / "slice.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
            run_sm(wd, *targets, "-q", "--configfile", "slice.yaml")
            (wd / DONE).touch()
    return wd


# -- the rbd slice: Tables 2-5, Fig. 6 and every rbd figure ----------------------------------------
# (tests/rbd/test_tables_dag.py reads the tables, tests/plots/test_figure_stamps_topk_rbd.py the figures)


def _detector(name: str, size: str, seed: int, recall: float) -> dict:
    return {"prompting": "rbd", "size": size, "judge": {
        "name": name, "backend": "simulated", "model": f"simulated/{name}-like", "family": "deepseek",
        "sampling": {"temperature": 0.0, "seed": seed},
        "options": {"profile": {"label_recall": recall, "label_specificity": 0.9}}}}


RBD = {
    "n_items": 24, "max_eval_items": 12,
    "sets": ["verbosity", "position", "bandwagon", "sentiment", "llmbar_verbosity", "llmbar_bandwagon"],
    "loop_sets": ["verbosity", "position", "bandwagon", "sentiment", "llmbar_verbosity", "llmbar_bandwagon"],
    "evaluators": ["sim-gpt-4o", "sim-llama-3.3-70b"], "detector_test_size": 8,
    "detectors": [_detector("sim-big", "14B", 41, 0.9), _detector("sim-small", "1.5B", 42, 0.5)],
    "loop": {"max_iterations": 2, "detectors": ["sim-big", "sim-small"]},
    "tables": {"feedback": {"evaluators": ["sim-gpt-4o"]}},
}
RBD_TABLES = ("table3", "table3_wide", "table4", "table4_wide", "table5", "table5_wide", "fig6_sizes")
RBD_FIGURES = ["bias_existence", "loop", "behaviour", "detectors", "detector_sizes"]


def rbd_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    targets = [*(f"results/rbd/tables/{t}.csv" for t in RBD_TABLES), "results/rbd/loop/table2.csv",
               *(f"results/rbd/figures/{f}.png" for f in RBD_FIGURES)]
    return built_slice(tmp_path_factory, "rbd", {"rbd": RBD}, targets)


# -- the topk slice: paper 002's grid settings (Table 1, LLMBar) and every topk figure -------------
# (tests/topk/test_paper_grid.py reads the tables, tests/plots/test_figure_stamps_topk_rbd.py the figures;
# the focus judge's ablation, allocation and probe settings kept small for the figures)

TOPK = {"topk": {
    "n_oracles": 3, "oracles_per_judge": {"sim-gpt-4o": 1, "sim-unbiased": 2}, "seeds": [0], "budgets": [60],
    "strategies": ["aware/topk", "naive/topk"], "focus_judge": "sim-gpt-4o", "focus_strategies": [],
    "ablation_budget": 60, "allocation_budget": 60, "n_anchors": 5, "probes": {"n_per_topic": 1},
    "model": {"n_samples": 200, "lam_b_sweep": [0.1]},
    "llmbar": {"datasets": {"llmbar_natural": "llmbar/Natural"}, "judges": ["sim-gpt-4o"], "n_folds": 2},
    "synthetic": {"n_oracles": 2, "seeds": [0], "strategies": ["aware/topk"],
                  "scenarios": {"biased": {"c": [1.0], "kappa": 0.5}}},
}}
TOPK_FIGURES = ["recall_vs_budget", "naive_vs_true", "allocation", "ablation", "judges_recall_vs_c", "frontier"]


def topk_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    targets = ["results/topk/tables/table1_judges.csv", "results/topk/llmbar/summary.csv",
               *(f"results/topk/figures/{f}.png" for f in TOPK_FIGURES)]
    return built_slice(tmp_path_factory, "topk", TOPK, targets)
