"""The configuration, sets and DAG of paper 001's Tables 3-5 and Fig. 6: defaults that follow the
judge set, names checked, the external benchmarks' sets, and the rules in the default DAG."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from judgelab.config import ConfigError, check_judges, default_config_paths, load_config
from judgelab.io import InputError
from judgelab.rbd.plan import ICL_BASELINE, RbdPlan
from judgelab.rbd.sets import (
    EXTERNAL_VERBOSITY_MIN_RATIO,
    SET_BUILDERS,
    BuildContext,
    load_judgebench_pairs,
)

REAL = {"name": "real-judge", "backend": "openai", "model": "m", "options": {"api_key_env": None}}


def _plan(**rbd_tables) -> RbdPlan:
    cfg = load_config(*default_config_paths())
    cfg["rbd"]["tables"] = {**cfg["rbd"]["tables"], **rbd_tables}
    return RbdPlan(cfg, {s.name: s for s in check_judges(cfg)})


def test_default_tables_follow_the_simulated_panel():
    p = _plan()
    assert p.size_detectors == {"8B": "sim-rbd-8b", "1.5B": "sim-rbd-1.5b", "7B": "sim-rbd-7b",
                                "14B": "sim-rbd-14b"}
    assert p.external_detectors == list(p.size_detectors.values())
    assert p.baseline_evaluator == p.evaluators[0] == p.feedback_evaluators[0]
    assert p.baseline_detector == p.feedback_detector == "sim-rbd-8b"
    assert list(p.baselines) == [ICL_BASELINE, "sim-prometheus2-8x7b", "sim-skywork-critic-70b"]
    assert p.baselines[ICL_BASELINE] == ("prompt", None) and not p.baselines_left_out


@pytest.mark.parametrize(("tables", "key"), [
    ({"external_detectors": ["nope"]}, "rbd.tables.external_detectors"),
    ({"baselines": {"evaluator": "nope"}}, "rbd.tables.baselines.evaluator"),
    ({"baselines": {"detector": "sim-r1-distill-8b-4shot-labels"}}, "rbd.tables.baselines.detector"),
    ({"feedback": {"evaluators": ["nope"]}}, "rbd.tables.feedback.evaluators"),
    ({"baselines": {"judges": [{"backend": "simulated", "model": "m"}]}}, "rbd.tables.baselines.judges[0]"),
])
def test_a_name_given_explicitly_must_exist(tables, key):
    with pytest.raises(ConfigError, match=re.escape(key)):
        _plan(**tables)


def test_a_real_run_leaves_simulated_stand_ins_out_unless_allowed():
    cfg = load_config(*default_config_paths())
    cfg["judges"] = [REAL]
    cfg["rbd"]["evaluators"] = []
    specs = {s.name: s for s in check_judges(cfg)}
    p = RbdPlan(cfg, specs)
    assert p.baseline_evaluator == "real-judge" and list(p.baselines) == [ICL_BASELINE]
    assert p.baselines_left_out == {"sim-prometheus2-8x7b": "rbd.tables.baselines.judges[0]",
                                    "sim-skywork-critic-70b": "rbd.tables.baselines.judges[1]"}
    cfg["allow_simulated_roles"] = ["rbd.tables.baselines.judges[1]"]
    p = RbdPlan(cfg, specs)
    assert list(p.baselines) == [ICL_BASELINE, "sim-skywork-critic-70b"]
    assert list(p.baselines_left_out) == ["sim-prometheus2-8x7b"]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_judgebench_pairs_read_the_label(tmp_path):
    rows = [{"pair_id": "p1", "question": "Q1", "response_A": "a1", "response_B": "b1", "label": "A>B"},
            {"pair_id": "p2", "question": "Q2", "response_A": "a2", "response_B": "b2", "label": "B>A"}]
    pairs = load_judgebench_pairs(_jsonl(tmp_path / "jb.jsonl", rows))
    assert [(p.base_id, p.winner, p.a, p.b) for p in pairs] == [("judgebench-p1", 0, "a1", "b1"),
                                                                ("judgebench-p2", 1, "a2", "b2")]
    bad = [rows[0], {**rows[1], "label": "A=B"}]
    with pytest.raises(InputError, match=r"jb2\.jsonl line 2: label must be"):
        load_judgebench_pairs(_jsonl(tmp_path / "jb2.jsonl", bad))


def test_llmbar_external_sets(data_root):
    ctx = BuildContext(name="llmbar_verbosity", seed=0, n_items=None)
    items = SET_BUILDERS.get("llmbar_verbosity").build(ctx)
    by = {(i.base_id, i.variant): i for i in items}
    bases = {i.base_id for i in items}
    assert len(bases) + ctx.notes["negative output not the longer one"] == 419  # the five LLMBar sets
    for b in bases:
        d, x = by[(b, "D")], by[(b, "D_bias")]
        pos, neg = x.options[x.gold], x.options[1 - x.gold]
        assert len(neg.split()) >= EXTERNAL_VERBOSITY_MIN_RATIO * len(pos.split())  # the length cue is wrong
        assert d.gold == x.gold and d.options[d.gold] == pos  # same gold, same positive output
        assert len(d.options[1 - d.gold].split()) == len(pos.split())  # D: the negative cut, no length cue
        assert d.split == x.split == "test" and x.bias_type == "verbosity" and not x.statement
    ctx = BuildContext(name="llmbar_bandwagon", seed=0, n_items=50)
    items = SET_BUILDERS.get("llmbar_bandwagon").build(ctx)
    bias = [i for i in items if i.variant == "D_bias"]
    assert len(bias) == 50 and all(i.statement_option == 1 - i.gold and i.statement for i in bias)


@pytest.mark.slow
def test_each_table_rule_is_in_the_default_dag(tmp_path, data_root):
    from tests.rbd.test_supervision_data_dag import _planned_rules
    from tests.workflow.test_pipeline import copy_workflow, run_sm

    wd = copy_workflow(tmp_path / "wf")
    proc = run_sm(wd, "-n")
    planned = _planned_rules(proc.stdout + proc.stderr)
    assert planned.get("rbd_paper_tables") == 1 and planned.get("rbd_loop_label_only") == 1
    assert planned.get("rbd_baseline") == 3 and planned.get("rbd_figures") == 1
    text = proc.stdout + proc.stderr
    for table in ("table3", "table3_wide", "table4", "table4_wide", "table5", "table5_wide", "fig6_sizes"):
        assert f"results/rbd/tables/{table}.csv" in text
    assert "results/rbd/figures/detector_sizes.png" in text
