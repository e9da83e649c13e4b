"""A judge-calling step is one rule whose conda env comes from the judges' backend traits.

A backend with a conda env of its own is its class plus ``envs/<name>.yaml``: registered from
outside the package through the ``judgelab.backends`` entry point, with every vLLM judge and role
of ``config/judges/vllm-open.yaml`` turned into it, the whole default DAG plans, and exactly the
jobs that run its judges run in its env (built once, in a fresh process, from a scratch copy of
the workflow holding the toy env file).  ``judgelab check-config`` refuses such a judge when the
env file is missing, and the rules' ``conda:`` refuses it the same way under ``--use-conda``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from judgelab import config as config_module
from judgelab.config import ConfigError
from judgelab.workflow import resources
from tests.conftest import REPO

TOY = "toyenv"  # the backend's name and its conda env's name

TOY_MODULE = f'''
"""A toy backend whose jobs need a library of their own: its own conda env."""
from judgelab.judges import BACKENDS
from judgelab.judges.base import Judge
from judgelab.records import RawAnswer


@BACKENDS.register("{TOY}")
class ToyEnvJudge(Judge):
    loads_weights = True
    conda_env = "{TOY}"

    def answer(self, requests):
        return [RawAnswer(error="toy backend: no model") for _ in requests]
'''

#: Builds the whole default DAG in this process (nothing runs) and writes, as JSON, every job's
#: rule, wildcards and conda env file, whether each rule's ``conda:`` is a function, and the
#: rules `judgelab plan` has a call planner for.
DAG_SCRIPT = '''
import json, os, sys
from pathlib import Path

from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

from judgelab.workflow.calls import rule_calls

wd, configfile, out = map(Path, sys.argv[1:4])
with SnakemakeApi(OutputSettings()) as api:
    wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                      config_settings=ConfigSettings(configfiles=[configfile]),
                      snakefile=wd / "Snakefile", workdir=wd)
    wf.dag(DAGSettings(forceall=True))
    w = wf._workflow
    w._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
    w._build_dag()
    jobs = [{"rule": j.rule.name, "wildcards": dict(j.wildcards_dict),
             "conda": os.path.normpath(j.conda_env_spec.file.get_path_or_uri(secret_free=True))
             if j.conda_env_spec else None}
            for j in w.dag.jobs]
    rules = {r.name: callable(r.conda_env) for r in w.rules}
out.write_text(json.dumps({"jobs": jobs, "rules": rules, "planners": sorted(rule_calls())}))
'''

#: The rules that call a judge: each declares the API keys of its judges (rules/common.smk).
_RULE = re.compile(r"^rule (\w+):\n(.*?)(?=^\S|\Z)", re.M | re.S)


def _rule_blocks() -> dict[str, str]:
    return {m[1]: m[2] for p in sorted((REPO / "rules").glob("*.smk"))
            for m in _RULE.finditer(p.read_text(encoding="utf-8"))}


def _judge_calling(blocks: dict[str, str]) -> dict[str, str]:
    return {name: body for name, body in blocks.items() if "api_keys=needs_keys(" in body}


def _install_toy(site: Path) -> None:
    """A site folder holding the toy module and the dist-info that declares its entry point."""
    site.mkdir(parents=True)
    (site / "toyenv_backend.py").write_text(TOY_MODULE)
    info = site / "toyenv_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyenv-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[judgelab.backends]\n{TOY} = toyenv_backend\n")


def _workflow_copy(root: Path) -> Path:
    """The workflow with its own ``envs/`` and ``judgelab/`` (the env files are found beside the
    package, judgelab.config.ENVS_DIR, and beside the rules), the rest linked to this checkout."""
    wd = root / "wf"
    wd.mkdir(parents=True)
    for part in ("judgelab", "rules", "envs"):
        shutil.copytree(REPO / part, wd / part)
    shutil.copy2(REPO / "Snakefile", wd / "Snakefile")
    for part in ("config", "workflow_scripts", "report", "data", "pyproject.toml"):
        (wd / part).symlink_to(REPO / part)
    return wd


def _env(wd: Path, site: Path) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "JUDGELAB_PROGRESS": "0",
           "PYTHONPATH": os.pathsep.join([str(wd), str(site)])}
    env.setdefault("JUDGELAB_DATA", str(REPO.parent / "shared" / "data"))
    return env


def _toy_judge_set(root: Path) -> Path:
    """config/judges/vllm-open.yaml with every vLLM judge and role on the toy backend."""
    text = (REPO / "config" / "judges" / "vllm-open.yaml").read_text(encoding="utf-8")
    assert text.count("backend: vllm") >= 4
    judges = root / "toy-judges.yaml"
    judges.write_text(text.replace("backend: vllm", f"backend: {TOY}"), encoding="utf-8")
    return judges


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The scratch workflow with the toy env file, the toy judge set, and its DAG (built once)."""
    root = tmp_path_factory.mktemp("backend-env")
    site, wd = root / "site", _workflow_copy(root)
    _install_toy(site)
    (wd / "envs" / f"{TOY}.yaml").write_text("channels: [conda-forge]\ndependencies:\n  - python=3.11\n")
    judges = _toy_judge_set(root)
    out = root / "dag.json"
    proc = subprocess.run([sys.executable, "-c", DAG_SCRIPT, str(wd), str(judges), str(out)], cwd=wd,
                          env=_env(wd, site), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    names = [d["name"] for d in config_module.load_yaml(judges)["judges"]]
    return SimpleNamespace(wd=wd, site=site, judges=judges, names=names, **json.loads(out.read_text()))


@pytest.mark.slow
def test_a_backend_with_its_own_env_plans_every_target(toy):
    rules = {j["rule"] for j in toy.jobs}
    assert "all" in rules  # the default target and every input of it: no MissingInputException
    # every study's judge-querying step is planned for the toy judges
    for rule in ("orders_query", "strategies_query", "strategies_generate", "scoring_query", "topk_query",
                 "uda_query", "rbd_evaluate", "rbd_loop"):
        asked = {j["wildcards"].get("judge") for j in toy.jobs if j["rule"] == rule}
        assert asked & set(toy.names), (rule, asked)


@pytest.mark.slow
def test_the_jobs_of_its_judges_and_only_those_run_in_its_env(toy):
    env_dir = toy.wd / "envs"
    toy_env = str(env_dir / f"{TOY}.yaml")
    calling = set(_judge_calling(_rule_blocks()))
    by_env: dict[str, set[str]] = {}
    for job in toy.jobs:
        if job["conda"] is not None:
            by_env.setdefault(job["conda"], set()).add(job["rule"])
        judge = job["wildcards"].get("judge", job["wildcards"].get("answerer"))
        if job["rule"] in calling and judge in toy.names:  # a judge-calling step of a toy judge
            assert job["conda"] == toy_env, job
        elif job["rule"] not in calling:  # a step that runs no judge: its own fixed env
            assert job["conda"] != toy_env, job
    assert set(by_env) <= {str(env_dir / f"{e}.yaml") for e in ("core", "train", "judges", TOY)}, sorted(by_env)
    # the replayed real judges (recorded verdicts) keep the default env, in the same rule family
    replay = [j for j in toy.jobs if j["rule"] == "topk_llmbar_replay"]
    assert replay and {j["conda"] for j in replay} == {str(env_dir / "judges.yaml")}
    # roles set to the toy backend (scoring gold and generators, rbd writers) run in its env too
    assert {"scoring_gold", "scoring_responses", "rbd_set_generated"} <= by_env[toy_env]
    # a step that runs no judge never does
    assert not by_env[toy_env] & {"orders_summary", "rbd_train", "uda_embed", "call_summary"}


@pytest.mark.slow
def test_every_judge_calling_rule_takes_its_env_from_the_traits(toy):
    calling = _judge_calling(_rule_blocks())
    assert len(calling) >= 15, sorted(calling)
    # in the workflow as Snakemake holds it: a function exactly for the judge-calling rules
    assert {name for name, fn in toy.rules.items() if fn} == set(calling)
    # and every planner of `judgelab plan` names a rule of the workflow
    assert set(toy.planners) <= set(toy.rules), sorted(set(toy.planners) - set(toy.rules))


def test_one_rule_per_step_and_its_conda_is_the_trait_function():
    blocks = _rule_blocks()
    assert not [n for n in blocks if n.endswith("_vllm")]
    workflow_text = "\n".join(p.read_text(encoding="utf-8") for p in [REPO / "Snakefile",
                                                                       *(REPO / "rules").glob("*.smk")])
    assert "_vllm" not in workflow_text
    for name, body in _judge_calling(blocks).items():
        judges = re.search(r"\*\*job_resources\((.*)\),\n", body)
        conda = re.search(r"conda:\n\s+(.*)\n", body)
        assert judges and conda, name
        # the env of the same judges the job's resources come from
        assert conda[1] == f"env_for({judges[1]})", (name, conda[1])
    # no rule names a judge env by hand: judges.yaml and vllm.yaml come only through the traits
    assert not re.search(r"envs/(judges|vllm)\.yaml", workflow_text)


def test_check_config_refuses_a_judge_whose_env_file_is_missing(tmp_path):
    site, wd = tmp_path / "site", _workflow_copy(tmp_path)
    _install_toy(site)
    judges = _toy_judge_set(tmp_path)
    cmd = [sys.executable, "-m", "judgelab.cli", "check-config", "--offline", "--configfile", str(judges)]
    proc = subprocess.run(cmd, cwd=wd, env=_env(wd, site), capture_output=True, text=True, timeout=300)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("judgelab: error: ") and "judges[0] (llama-3.1-8b)" in lines[0], lines
    assert str(wd / "envs" / f"{TOY}.yaml") in lines[0] and "does not exist" in lines[0], lines
    # the same config with the env file is accepted
    (wd / "envs" / f"{TOY}.yaml").write_text("dependencies: [python=3.11]\n")
    proc = subprocess.run(cmd, cwd=wd, env=_env(wd, site), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "config OK" in proc.stdout, proc.stderr[-3000:]


def test_the_rules_conda_refuses_a_missing_env_file_and_names_the_judge(tmp_path, monkeypatch):
    """What a ``--use-conda`` run meets: the rule's ``conda:`` function raises one line."""
    monkeypatch.setattr(config_module, "ENVS_DIR", tmp_path)
    (tmp_path / "judges.yaml").write_text("dependencies: []\n")
    specs: dict[str, Any] = {"a": {"name": "a", "backend": "openai", "model": "m"},
                             "b": {"name": "b", "backend": "vllm", "model": "m"}}
    env = resources.job_conda_env(specs, lambda w: w.judge)
    assert env(SimpleNamespace(judge="a")) == "../envs/judges.yaml"
    with pytest.raises(ConfigError, match=r"^judge \(b\): backend 'vllm' runs its jobs in conda env 'vllm', "
                                          rf"but {re.escape(str(tmp_path / 'vllm.yaml'))} does not exist$"):
        env(SimpleNamespace(judge="b"))
    (tmp_path / "vllm.yaml").write_text("dependencies: []\n")
    assert env(SimpleNamespace(judge="b")) == "../envs/vllm.yaml"
    # and the check of a config names the key
    with pytest.raises(ConfigError, match=r"^config: judges\[1\] \(x\): backend 'vllm'"):
        (tmp_path / "vllm.yaml").unlink()
        config_module.check_judge_envs({"judges": [specs["a"], {**specs["b"], "name": "x"}]})
