"""A `snakemake` run checks the API keys of the judges its jobs call, before the first job starts.

The check reads the jobs of the requested targets only (``api_keys=needs_keys(...)`` inputs of
the judge-calling rules, ``onstart`` in the Snakefile): a judge set may name judges whose keys
this run does not need, and a target that uses only a simulated judge runs without any key.  A
dry run needs no key and warns.  Each run here builds one small audit slice (two pairs) in a
scratch copy of the workflow.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO
from tests.workflow.test_pipeline import copy_workflow, snakemake_bin

USED_KEY = "JL_TEST_KEY_USED"  # read by the two judges the targets below call
UNUSED_KEY = "JL_TEST_KEY_UNUSED"  # read by a configured judge no target calls
KEY_LINE = re.compile(r"^judgelab: (error|warning): environment variable (\w+) is not set "
                      r"\(options\.api_key_env of ([^)]*)\)", re.M)
NEEDS_KEY = ["results/orders/verdicts/mine/needs-key.parquet", "results/orders/verdicts/mine/needs-key-too.parquet"]
SIMULATED = "results/orders/verdicts/mine/sim-judge.parquet"


def _judge(name: str, var: str) -> str:
    # a port nothing listens on: were the check missing, the job would fail on the connection instead
    return (f"  - {{name: {name}, backend: openai, model: m, "
            f"options: {{api_key_env: {var}, base_url: 'http://127.0.0.1:9/v1'}}}}\n")


@pytest.fixture()
def workdir(tmp_path: Path, data_root: Path) -> Path:
    wd = copy_workflow(tmp_path / "wf")
    (wd / "pairs.jsonl").write_text(
        '{"pair_id": "1", "prompt": "q", "response_a": "a", "response_b": "bb", "expected_verdict": "A"}\n'
        '{"pair_id": "2", "prompt": "r", "response_a": "cc", "response_b": "d", "expected_verdict": "B"}\n'
    )
    (wd / "keys.yaml").write_text(
        # the other studies' default roles stay simulated / substituted here, on purpose
        "allow_simulated_roles: true\nstrategies: {controlled: {missing_generator: substitute}}\n"
        "orders:\n  datasets:\n"
        "    mine: {loader: pairs, source: " + str(wd / "pairs.jsonl") + "}\n"
        "    mine2: {loader: pairs, source: " + str(wd / "pairs.jsonl") + "}\n"
        "judges:\n"
        + _judge("needs-key", USED_KEY) + _judge("needs-key-too", USED_KEY) + _judge("unused-key", UNUSED_KEY)
        + "  - {name: sim-judge, backend: simulated, model: simulated/x, family: x, sampling: {seed: 1}}\n"
    )
    return wd


def _run(wd: Path, *args: str, **env_extra: str) -> subprocess.CompletedProcess:
    """``snakemake --cores 1 --configfile keys.yaml ARGS`` in ``wd``, with neither key variable set
    unless ``env_extra`` sets it."""
    env = {k: v for k, v in os.environ.items() if k not in (USED_KEY, UNUSED_KEY)}
    env.update(JUDGELAB_PROGRESS="0", HF_HUB_OFFLINE="1", **env_extra)
    env.setdefault("JUDGELAB_DATA", str(REPO.parent / "shared" / "data"))
    return subprocess.run([snakemake_bin(), "--cores", "1", "--configfile", "keys.yaml", *args], cwd=wd, env=env,
                          capture_output=True, text=True)


def _files(wd: Path) -> list[str]:
    return sorted(str(p.relative_to(wd)) for p in (wd / "results").rglob("*") if p.is_file()) \
        if (wd / "results").exists() else []


@pytest.mark.slow
def test_a_missing_key_of_a_used_judge_stops_the_run_before_any_job(workdir: Path):
    proc = _run(workdir, "--", *NEEDS_KEY, SIMULATED)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]
    lines = KEY_LINE.findall(proc.stderr)
    # one line for the variable, naming both judges that read it; the unused judge's variable is not asked for
    assert lines == [("error", USED_KEY, "needs-key, needs-key-too")], proc.stderr[-3000:]
    assert UNUSED_KEY not in out
    assert "Traceback" not in out and "Error in rule" not in out
    # no job started: not the pairs job the verdicts need, not the simulated judge's job
    assert not re.search(r"^(local)?rule \w+:", proc.stdout + proc.stderr, re.M), out[-3000:]
    assert _files(workdir) == []


@pytest.mark.slow
def test_targets_whose_judges_need_no_key_run(workdir: Path):
    proc = _run(workdir, "--", SIMULATED)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert len(pd.read_parquet(workdir / SIMULATED)) == 4  # two pairs, both orders
    assert not KEY_LINE.findall(proc.stderr)
    # verdicts of a keyed judge made earlier (here: a copy), older than the pairs they were made from;
    # `--touch` calls no judge, so it needs no key to mark them up to date
    made = workdir / NEEDS_KEY[0]
    shutil.copy(workdir / SIMULATED, made)
    before = (workdir / "results/orders/pairs/mine.parquet").stat().st_mtime - 100
    os.utime(made, (before, before))
    proc = _run(workdir, "--touch", "--", NEEDS_KEY[0])
    assert proc.returncode == 0 and made.stat().st_mtime > before + 100, (proc.stdout + proc.stderr)[-3000:]
    # a target already made asks for no key: only the jobs that will run are checked
    simulated_too = SIMULATED.replace("/mine/", "/mine2/")
    proc = _run(workdir, "--", NEEDS_KEY[0], simulated_too)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert (workdir / simulated_too).exists() and not KEY_LINE.findall(proc.stderr)


@pytest.mark.slow
def test_a_dry_run_warns_and_needs_no_key(workdir: Path):
    both_sets = [*NEEDS_KEY, *(t.replace("/mine/", "/mine2/") for t in NEEDS_KEY)]
    proc = _run(workdir, "-n", "--", *both_sets, SIMULATED)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "This was a dry-run" in proc.stdout + proc.stderr
    lines = KEY_LINE.findall(proc.stderr)
    # each variable and judge once, though each judge has a job on both pair sets
    assert sorted(lines) == [("warning", USED_KEY, "needs-key"), ("warning", USED_KEY, "needs-key-too")], \
        proc.stderr[-3000:]
    assert _files(workdir) == []
    # with the key set, nothing to warn about
    proc = _run(workdir, "-n", "--", *NEEDS_KEY, **{USED_KEY: "not-a-real-key"})
    assert proc.returncode == 0 and not KEY_LINE.findall(proc.stderr), proc.stderr[-3000:]


def _rule_blocks() -> list[tuple[str, str]]:
    """(rule name, text) of every rule in rules/*.smk."""
    blocks = []
    for f in sorted((REPO / "rules").glob("*.smk")):
        for block in re.split(r"(?m)^(?=rule |checkpoint )", f.read_text(encoding="utf-8"))[1:]:
            blocks.append((block.split()[1].rstrip(":"), block))
    return blocks


def test_every_rule_that_calls_a_judge_declares_its_keys():
    # the run's check sees a judge only through the rule's api_keys input: a judge-calling rule without
    # one would meet a missing key in its job again; the judges are the ones its resources name
    calling = 0
    for name, block in _rule_blocks():
        res = re.search(r"\*\*job_resources\((.*)\),\n", block)
        keys = re.search(r"^        api_keys=needs_keys\((.*)\),\n", block, re.M)
        judges = res.group(1) if res else ""
        if not judges or re.fullmatch(r"(gpu=.*|model=True)", judges):  # a model, no judge entry: no key
            assert keys is None, name
            continue
        calling += 1
        assert keys is not None, f"rule {name} calls judges ({judges}) but declares no api_keys=needs_keys(...)"
        assert keys.group(1) == judges, name
        assert block.index("api_keys=") < block.index("\n    output:"), f"rule {name}: api_keys is not an input"
    # the judge-calling rules are found at all (one per step: audit, strategies, scoring, topk, uda, rbd),
    # and they are exactly the rules whose conda env comes from their judges' traits
    with_env = sum(bool(re.search(r"^    conda:\n        env_for\(", block, re.M)) for _, block in _rule_blocks())
    assert calling >= 15 and calling == with_env, (calling, with_env)


def test_the_documented_line_is_the_one_a_run_prints():
    from judgelab.workflow.roles import JobKeys, key_lines

    line = key_lines({"OPENAI_API_KEY": ["gpt-4o-mini"]}, JobKeys.ADVICE)[0]
    assert f"judgelab: error: {line}\n" in (REPO / "docs" / "config.md").read_text(encoding="utf-8")
