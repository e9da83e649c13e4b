"""One definition per workflow step: each rule ``judgelab plan`` runs has one step function, and
the rule's script runs exactly that function.

The structural test reads every ``RULES`` entry (:func:`judgelab.workflow.calls.rule_calls`), finds the
rule's script from its ``script:`` line in ``rules/*.smk`` and parses it (``ast``): the script may
hold nothing but its imports and one ``run_step(snakemake, <step>)`` call, and ``<step>`` must be
the very function object ``RULES`` maps the rule to.  A rule body written a second time (a
``def main`` in the script, or a script calling another function than the plan's) fails it.

The behavioural tests run real rule scripts, as Snakemake would (a job process with a
``snakemake`` object), and compare their outputs with what the scripts wrote before they became
one line -- the table, its provenance columns and the ``judgelab_provenance`` metadata -- computed
here with the library's own functions; and run the same step in a plan's context, which writes
the same rows without provenance and asks the same calls.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

from judgelab.workflow.calls import PlanCache, PlanContext, rule_calls
from tests.conftest import REPO


def rule_scripts() -> dict[str, Path]:
    """Rule name -> the script its ``script:`` line names, for every rule of ``rules/*.smk``."""
    out = {}
    for smk in sorted((REPO / "rules").glob("*.smk")):
        for block in re.split(r"\n(?=rule )", smk.read_text(encoding="utf-8")):
            name = re.match(r"rule (\w+):", block)
            script = re.search(r"\n\s+script:\s*\n?\s*\"([^\"]+)\"", block)
            if name and script:
                out[name.group(1)] = (smk.parent / script.group(1)).resolve()
    return out


def script_step(path: Path) -> tuple[str, str] | str:
    """``(module, function)`` of the step a rule script runs, or why the script is not one line
    ``run_step(snakemake, <step>)`` after its imports (a body of its own, another call)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    imported: dict[str, tuple[str, str]] = {}
    calls = []
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # the docstring
        if isinstance(node, ast.Import) and [a.name for a in node.names] == ["_repo"]:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.update({a.asname or a.name: (node.module, a.name) for a in node.names})
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            calls.append(node.value)
            continue
        return f"line {node.lineno}: {type(node).__name__} -- a rule script holds no code of its own"
    if len(calls) != 1:
        return f"{len(calls)} top-level calls, not one run_step(snakemake, <step>)"
    (call,) = calls
    func = call.func.id if isinstance(call.func, ast.Name) else None
    if imported.get(func or "") != ("judgelab.workflow", "run_step") or call.keywords or len(call.args) != 2 \
            or not all(isinstance(a, ast.Name) for a in call.args) \
            or call.args[0].id != "snakemake":  # type: ignore[attr-defined]
        return f"line {call.lineno}: not run_step(snakemake, <step>)"
    step = call.args[1].id  # type: ignore[attr-defined]
    if step not in imported:
        return f"line {call.lineno}: the step {step!r} is not imported from a module"
    return imported[step]


def mismatch(rule: str, script: Path) -> str | None:
    """Why ``script`` does not run the step ``RULES`` maps ``rule`` to, or None."""
    found, fn = script_step(script), rule_calls()[rule]
    if isinstance(found, str):
        return f"{rule} ({script.name}): {found}"
    if getattr(importlib.import_module(found[0]), found[1]) is not fn:
        return f"{rule} ({script.name}): runs {found[0]}.{found[1]}, RULES has {fn.__module__}.{fn.__name__}"
    return None


def test_every_planned_rule_runs_its_step_function_and_nothing_else():
    scripts, steps = rule_scripts(), rule_calls()
    assert len(steps) > 30
    problems = [f"{rule}: RULES names it, no rule in rules/*.smk has a script for it" if rule not in scripts
                else mismatch(rule, scripts[rule]) for rule in sorted(steps)]
    assert [p for p in problems if p] == []


def test_the_check_sees_a_body_written_twice(tmp_path: Path):
    """Not vacuous: a script in the old shape (its own main), one that runs another function than
    the plan's, and one that calls run_step with something else are each refused."""
    old = tmp_path / "old.py"
    old.write_text('"""x"""\nimport _repo\n\nfrom judgelab.workflow import run_script\n\n\n'
                   'def main(sm):\n    pass\n\n\nrun_script(snakemake, main)\n')
    assert "FunctionDef" in script_step(old)
    other = tmp_path / "other.py"
    other.write_text("import _repo\nfrom judgelab.topk.calls import rank\nfrom judgelab.workflow import run_step\n\n"
                     "run_step(snakemake, rank)\n")
    assert script_step(other) == ("judgelab.topk.calls", "rank")
    assert mismatch("topk_query", other) == ("topk_query (other.py): runs judgelab.topk.calls.rank, "
                                             "RULES has judgelab.topk.calls.query")
    assert mismatch("topk_rank", other) is None
    local = tmp_path / "local.py"
    local.write_text("from judgelab.workflow import run_step\nstep = print\nrun_step(snakemake, step)\n")
    assert "Assign" in script_step(local)
    twice = tmp_path / "twice.py"
    twice.write_text("from judgelab.workflow import run_step\nfrom m import f\nrun_step(snakemake, f)\nf()\n")
    assert "2 top-level calls" in script_step(twice)


# -- the run wrapper writes what the scripts wrote -------------------------------------------------

#: Runs rule scripts as Snakemake does: a process of its own, a ``snakemake`` object in the
#: script's globals (the part of Snakemake's named lists the scripts use: by position, by name, get()).
DRIVER = '''
import json, os, runpy, sys


class Named(list):
    def __init__(self, positional=(), named=None):
        named = dict(named or {})
        super().__init__([*positional, *named.values()])
        self._named = named
        for k, v in named.items():
            setattr(self, k, v)

    def __getitem__(self, key):
        return self._named[key] if isinstance(key, str) else super().__getitem__(key)

    def get(self, key, default=None):
        return self._named.get(key, default)


for job in json.loads(open(sys.argv[1]).read()):
    sm = type("Snakemake", (), {})()
    sm.params, sm.wildcards = Named(named=job["params"]), Named(named=job["wildcards"])
    sm.input, sm.output = Named(job["input"]), Named(job["output"].get("", []), job["output"].get("named"))
    sm.log, sm.rule, sm.threads = Named([job["log"]]), job["rule"], 1
    sys.path.insert(0, os.path.dirname(job["script"]))  # as Snakemake's script preamble does
    runpy.run_path(job["script"], init_globals={"snakemake": sm}, run_name="__main__")
'''

SIM = {"name": "sim-a", "backend": "simulated", "model": "sim-a", "family": "sim",
       "sampling": {"temperature": 0.0, "seed": 3}}
#: a simulated auxiliary role beside the judge: the provenance names it as a simulated input
GOLD = {"name": "sim-gold", "backend": "simulated", "model": "sim-gold", "family": "sim", "role": "orders.gold"}


def _pairs(path: Path) -> None:
    from judgelab.datasets.pairs import Pair, pairs_frame
    from judgelab.io import write_table

    write_table(pairs_frame([Pair(pair_id=f"p{i}", prompt=f"Which is right about {i}?", response_a=f"{i} is even.",
                                  response_b=f"{i} is odd.", expected_verdict="A" if i % 2 == 0 else "B")
                             for i in range(6)]), path)


def _query_job(tmp_path: Path, cache: Path, out: Path) -> dict[str, Any]:
    q = {"judge": SIM, "cache": str(cache), "template": "json_verdict", "orders": ["AB", "BA"],
         "max_error_rate": None, "provenance": {"config_hash": "h123", "seed": 11, "judges": [SIM, GOLD]}}
    return {"script": str(REPO / "workflow_scripts" / "query_pairs.py"), "rule": "orders_query",
            "params": {"q": q}, "wildcards": {"judge": "sim-a", "dataset": "mine"},
            "input": [str(tmp_path / "pairs.parquet")], "output": {"": [str(out)]},
            "log": str(tmp_path / "orders_query.log")}


def _metadata(path: Path) -> dict[str, Any] | None:
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta[b"judgelab_provenance"]) if b"judgelab_provenance" in meta else None


@pytest.fixture(scope="module")
def scripts_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """orders_query's and topk_items' real scripts, run once in a job process each as Snakemake would."""
    from judgelab.config import default_config_paths, load_config

    tmp = tmp_path_factory.mktemp("steps")
    _pairs(tmp / "pairs.parquet")
    topk = load_config(*default_config_paths())["topk"]
    jobs = [_query_job(tmp, tmp / "cache.sqlite", tmp / "new_query.parquet"),
            {"script": str(REPO / "workflow_scripts" / "topk_items.py"), "rule": "topk_items",
             "params": {"cfg": topk, "provenance": {"config_hash": "h123", "seed": 5, "judges": [SIM]}},
             "wildcards": {}, "input": list(topk["banks"]),
             "output": {"named": {"pools": str(tmp / "new_pools.parquet"), "probes": str(tmp / "new_probes.parquet")}},
             "log": str(tmp / "topk_items.log")}]
    (tmp / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    (tmp / "driver.py").write_text(DRIVER, encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "JUDGELAB_PROGRESS": "0"}
    proc = subprocess.run([sys.executable, str(tmp / "driver.py"), str(tmp / "jobs.json")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp


def test_a_judge_calling_script_writes_the_provenance_the_old_script_wrote(scripts_run: Path):
    """query_pairs.py as it was: the judge, its own cache, judge_pairs, then write_table with
    provenance(config_hash, seed, judges).  The one-line script writes the same table, the same
    provenance columns and metadata, asks its calls through the cache the params name, and logs
    to the job's log."""
    from judgelab.cache import CallCache
    from judgelab.config import JudgeSpec
    from judgelab.datasets.pairs import load_pairs
    from judgelab.io import write_table
    from judgelab.judges import make_judge
    from judgelab.judges.pairwise import judge_pairs
    from judgelab.workflow import provenance

    tmp = scripts_run
    q = _query_job(tmp, tmp / "old_cache.sqlite", tmp / "old.parquet")["params"]["q"]
    judge = make_judge(JudgeSpec.from_dict(q["judge"], where="judge sim-a"))
    try:
        with CallCache(q["cache"]) as cache:
            table = judge_pairs(judge, load_pairs(tmp / "pairs.parquet"), cache, template=q["template"],
                                orders=q["orders"], label="mine", max_error_rate=q["max_error_rate"])
    finally:
        judge.close()
    prov = q["provenance"]
    write_table(table, tmp / "old.parquet", provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))

    new, old = pd.read_parquet(tmp / "new_query.parquet"), pd.read_parquet(tmp / "old.parquet")
    assert len(new) == 12 and new.equals(old)
    assert _metadata(tmp / "new_query.parquet") == _metadata(tmp / "old.parquet") is not None
    # the provenance itself, by hand: the judge's rows are its own (simulated), the gold role is an input
    assert set(new["config_hash"]) == {"h123"} and set(new["pipeline_seed"]) == {11}
    assert set(new["judge_ids"]) == {"sim-a,sim-gold"} and set(new["judge_seeds"]) == {"sim-a=3,sim-gold=0"}
    assert set(new["simulated_inputs"]) == {"orders.gold=sim-gold"} and new["simulated"].all()
    with CallCache(tmp / "cache.sqlite") as got, CallCache(tmp / "old_cache.sqlite") as want:
        assert {c.key for c in got.iter_calls()} == {c.key for c in want.iter_calls()} == set(new["key"])
    assert (tmp / "orders_query.log").exists()  # run_script's log, as every rule's


def test_a_data_table_script_names_no_judge_as_before(scripts_run: Path):
    """topk_items.py as it was: ``provenance(config_hash, seed)`` -- no judge columns, though the
    rule's provenance param lists judges."""
    from judgelab.config import default_config_paths, load_config
    from judgelab.io import write_table
    from judgelab.topk.pipeline import make_items
    from judgelab.workflow import provenance

    tmp = scripts_run
    cwd = Path.cwd()
    os.chdir(REPO)  # the banks' paths are relative to the workflow's directory
    try:
        pools, probes = make_items(load_config(*default_config_paths())["topk"], 5)
    finally:
        os.chdir(cwd)
    write_table(pools, tmp / "old_pools.parquet", provenance=provenance("h123", 5))
    write_table(probes, tmp / "old_probes.parquet", provenance=provenance("h123", 5))
    for name in ("pools", "probes"):
        new, old = tmp / f"new_{name}.parquet", tmp / f"old_{name}.parquet"
        assert pd.read_parquet(new).equals(pd.read_parquet(old))
        assert _metadata(new) == _metadata(old) == {"config_hash": "h123", "pipeline_seed": 5}
        assert "judge_ids" not in pd.read_parquet(new).columns


def test_the_plan_runs_the_same_step_without_provenance(scripts_run: Path, tmp_path: Path, monkeypatch):
    """The step the script ran, in a plan's context: the same rows (less the provenance columns),
    the same calls in the plan's cache in memory, no provenance metadata, no cache file."""
    from judgelab.workflow import RunContext

    tmp = scripts_run
    job = _query_job(tmp, tmp_path / "never.sqlite", tmp_path / "planned.parquet")
    planned = SimpleNamespace(params=SimpleNamespace(**job["params"]), wildcards=SimpleNamespace(**job["wildcards"]),
                              input=job["input"], output=job["output"][""], rule=job["rule"])
    with PlanCache() as cache:
        ctx = PlanContext(cache)
        try:
            rule_calls()["orders_query"](planned, ctx)
        finally:
            ctx.close()
        keys = {c.key for c in cache.iter_calls()}
    assert not PlanContext.loads_models and RunContext.loads_models
    got, run = pd.read_parquet(tmp_path / "planned.parquet"), pd.read_parquet(tmp / "new_query.parquet")
    assert _metadata(tmp_path / "planned.parquet") is None and not (tmp_path / "never.sqlite").exists()
    assert got.equals(run[list(got.columns)]) and set(run.columns) - set(got.columns) == {
        "config_hash", "pipeline_seed", "judge_ids", "judge_seeds", "simulated_inputs"}
    assert keys == set(run["key"])


def test_the_run_context_finds_the_cache_and_provenance_where_the_rules_keep_them(tmp_path: Path):
    """``params.cache``, ``params.q["cache"]`` or ``params.g["cache"]`` (the shapes of the rules'
    params), opened only when a step asks for it; a rule without one is named in the error."""
    from judgelab.workflow import RunContext, job_param

    assert job_param(SimpleNamespace(cache="a"), "cache") == "a"
    assert job_param(SimpleNamespace(q={"cache": "b"}), "cache") == "b"
    assert job_param(SimpleNamespace(g={"cache": "c"}, q={"x": 1}), "cache") == "c"
    with pytest.raises(KeyError, match="no 'cache'"):
        job_param(SimpleNamespace(q={"x": 1}), "cache")
    ctx = RunContext(SimpleNamespace(params=SimpleNamespace(g={"cache": str(tmp_path / "g.sqlite")})))
    assert not (tmp_path / "g.sqlite").exists()  # a step that asks no judge opens no cache
    assert len(ctx.cache) == 0 and (tmp_path / "g.sqlite").exists()
    ctx.close()
