"""What a job writes depends on its parameters, never on the process environment.

Three facts once travelled through environment variables: the rule a plan counts a call under,
the simulated inputs a figure is stamped with, and a test's request to kill ``judgelab audit``
mid-write.  Now the plan's cache carries its rule (:class:`judgelab.workflow.calls.PlanCache`),
a rule script reads its inputs' simulated roles (:func:`judgelab.workflow.simulated_inputs_of`)
and passes them to each figure function, and the kill is injected from outside the package
(``tests/bias_card/test_output_sets.py``).  Each test below sets the old variable to a decoy value, so it
fails if the code reads the environment instead of its parameter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.io import write_table
from judgelab.judges.base import Judge
from judgelab.judges.runner import PLAN_LOG_ENV, run_requests
from judgelab.plots.stamp import INPUTS_STAMP_TEXT, figure_stamp
from judgelab.records import JudgeRequest, Message, RawAnswer
from judgelab.workflow import provenance
from judgelab.workflow.calls import PlanCache
from tests.conftest import REPO
from tests.orders.test_order_summary import table


class _Answering(Judge):
    """Answers every request with a 4-token verdict (a stand-in's role in a plan)."""

    def answer(self, requests):
        return [RawAnswer(text="[[A]]", tokens_in=1, tokens_out=4) for _ in requests]


def _requests(ids) -> list[JudgeRequest]:
    return [JudgeRequest(messages=[Message("user", f"pair {i}: which output is better?")], fmt="brackets")
            for i in ids]


def test_the_plan_log_names_the_rule_the_plan_cache_carries(tmp_path, monkeypatch):
    log = tmp_path / "plan-calls.jsonl"
    monkeypatch.setenv(PLAN_LOG_ENV, str(log))
    monkeypatch.setenv("JUDGELAB_RULE", "decoy_rule")  # the old channel: must be ignored
    judge = _Answering(JudgeSpec.from_dict({"name": "j", "backend": "answeringtest", "model": "m"}))
    with PlanCache() as cache:
        cache.plan_rule = "orders_query"
        run_requests(judge, _requests(range(3)), cache, progress=False)
        cache.plan_rule = "uda_query"
        run_requests(judge, _requests(range(3, 5)), cache, progress=False)
    with CallCache(tmp_path / "calls.sqlite") as disk:  # a cache that is no plan's: no rule to name
        run_requests(judge, _requests([9]), disk, progress=False)
    rules = [json.loads(line)["rule"] for line in log.read_text().splitlines()]
    assert rules == ["orders_query"] * 3 + ["uda_query"] * 2 + [""]


def _summary(tmp_path: Path) -> Path:
    """An audit summary table as ``orders_summary`` writes it, of a real judge whose gold labels
    came from a simulated judge (the table's ``simulated_inputs`` column names it)."""
    from judgelab.stats.agreement import order_summary

    s = order_summary(table([(f"p{i}", o, "A", "ok") for i in range(4) for o in ("AB", "BA")], judge="real"),
                      by=("judge", "simulated"))
    s["dataset"] = "set"
    real = {"name": "real", "backend": "openai", "model": "m"}
    gold = {"name": "sim-gold", "backend": "simulated", "model": "sim", "role": "orders.gold"}
    path = tmp_path / "summary.csv"
    write_table(s, path, provenance=provenance("abc", 0, [real, gold]))
    return path


#: Runs one rule script as Snakemake does (a process of its own, a ``snakemake`` object in the
#: script's globals, the script's folder on ``sys.path``): ``argv`` = script, input, output.
DRIVER = """
import os, runpy, sys
from types import SimpleNamespace

script, table, figure = sys.argv[1:]
job = SimpleNamespace(input=[table], output=[figure], log=[], rule="figure", params=SimpleNamespace(),
                      wildcards=SimpleNamespace())
sys.path.insert(0, os.path.dirname(script))
runpy.run_path(script, init_globals={"snakemake": job}, run_name="__main__")
"""


def test_a_figure_rule_stamps_the_simulated_inputs_its_tables_name(tmp_path):
    """The audit figure's rule script: its input table names a simulated gold judge, so the
    figure carries the inputs stamp (the script passes them to the figure function)."""
    summary = _summary(tmp_path)
    assert set(pd.read_csv(summary)["simulated_inputs"]) == {"orders.gold=sim-gold"}
    png = tmp_path / "accuracy.png"
    done = subprocess.run([sys.executable, "-c", DRIVER, str(REPO / "workflow_scripts" / "orders_figure.py"),
                           str(summary), str(png)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO), "JUDGELAB_SIMULATED_INPUTS": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    assert figure_stamp(png) == INPUTS_STAMP_TEXT


def test_a_figure_function_stamps_what_its_caller_names_and_nothing_else(tmp_path, monkeypatch):
    from judgelab.plots.orders import accuracy_figure

    monkeypatch.setenv("JUDGELAB_SIMULATED_INPUTS", "orders.gold=decoy")  # must be ignored
    s = pd.read_csv(_summary(tmp_path))
    accuracy_figure(s, str(tmp_path / "plain.png"))
    accuracy_figure(s, str(tmp_path / "named.png"), simulated_inputs="orders.gold=sim-gold")
    assert figure_stamp(tmp_path / "plain.png") == "none"
    assert figure_stamp(tmp_path / "named.png") == INPUTS_STAMP_TEXT


def test_no_module_of_the_package_reads_the_old_variables():
    """The three variables are gone from the package and its rule scripts (a test hook in
    production code, or a fact read from the environment, would come back through them)."""
    old = ("JUDGELAB_RULE", "JUDGELAB_SIMULATED_INPUTS", "JUDGELAB_KILL_AT")
    hits = [f"{p.relative_to(REPO)}: {name}" for folder in ("judgelab", "workflow_scripts", "rules")
            for p in sorted((REPO / folder).rglob("*")) if p.suffix in (".py", ".smk")
            for name in old if name in p.read_text(encoding="utf-8")]
    assert hits == []
