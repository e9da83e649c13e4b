"""Every job of every shipped judge set, planned through the SLURM profile, asks for what it runs.

Each ``config/judges/*.yaml`` is planned (``snakemake -n -F``, every job of the DAG) with
``--profile profiles/slurm-venv``; the resources Snakemake prints for each job are then put
through the SLURM executor plugin's own partition choice (``get_best_partition`` with
``profiles/slurm/partitions.yaml``) and GPU flags (``set_gres_string``), as the plugin does
at submission.  A job that asks for a GPU must land in the GPU partition with ``--gpus=N``
and the GPU tier's memory and time; a job that does not must land in the CPU partition
with no GPU flag.  Planning needs no SLURM installation.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from tests.conftest import REPO

pytestmark = pytest.mark.slow

JUDGE_SETS = sorted(p.stem for p in (REPO / "config" / "judges").glob("*.yaml"))
PROFILES = ["slurm", "slurm-venv"]
# what "enough" means for a GPU job (vLLM loads an 8B model in minutes, answers for hours)
MIN_GPU_MEM_MB, MIN_GPU_RUNTIME = 32000, 240


def _snakemake() -> str:
    exe = Path(sys.executable).with_name("snakemake")
    return str(exe) if exe.exists() else "snakemake"


def _parse_jobs(out: str) -> list[dict]:
    """(rule, wildcards, resources) of every job block in a dry run's output."""
    jobs, cur = [], None
    for line in out.splitlines():
        m = re.match(r"^(local)?rule (\w+):$", line)
        if m:
            cur = {"rule": m.group(2), "wildcards": "", "resources": {}}
            jobs.append(cur)
        elif cur is not None and line.startswith("    wildcards: "):
            cur["wildcards"] = line.split(": ", 1)[1]
        elif cur is not None and line.startswith("    resources: "):
            for item in line.split(": ", 1)[1].split(", "):
                k, _, v = item.partition("=")
                cur["resources"][k] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return jobs


@cache
def _plan(judge_set: str) -> tuple[int, str, list[dict]]:
    """Plan a shipped judge set by name, or any judge-set file by absolute path."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "JUDGELAB_PROGRESS": "0"}
    env.setdefault("JUDGELAB_DATA", str(REPO.parent / "shared" / "data"))
    path = judge_set if os.path.isabs(judge_set) else f"config/judges/{judge_set}.yaml"
    proc = subprocess.run(
        [_snakemake(), "-n", "-F", "--nolock", "--profile", "profiles/slurm-venv", "--configfile", path],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    out = proc.stdout + proc.stderr
    return proc.returncode, out, _parse_jobs(out)


@pytest.fixture(scope="module")
def plan_all():
    """Plan the sets two at a time (each plan is one single-threaded DAG build)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(_plan, JUDGE_SETS))


class _Job(SimpleNamespace):
    """Just enough of a Snakemake job for the plugin's partition and GRES functions."""


def _as_job(job: dict) -> _Job:
    res = dict(job["resources"])
    return _Job(name=job["rule"], resources=_Resources(res), threads=int(res.get("_cores", 1)),
                is_group=lambda: False)


class _Resources(dict):
    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError as exc:
            raise AttributeError(k) from exc


@pytest.fixture(scope="module")
def plugin():
    slurm = pytest.importorskip("snakemake_executor_plugin_slurm")
    from snakemake_executor_plugin_slurm.partitions import get_best_partition, read_partition_file
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    partitions = read_partition_file(REPO / "profiles" / "slurm" / "partitions.yaml")
    logger = SimpleNamespace(info=lambda *a, **k: None, debug=lambda *a, **k: None, warning=lambda *a, **k: None)
    return SimpleNamespace(module=slurm, partition=lambda job: get_best_partition(partitions, job, logger),
                           gres=set_gres_string)


def test_every_shipped_judge_set_is_found():
    assert {"simulated", "api", "vllm-open"} <= set(JUDGE_SETS)


@pytest.mark.parametrize("judge_set", JUDGE_SETS)
def test_gpu_jobs_go_to_the_gpu_partition_with_a_gpu_request(judge_set, plugin, plan_all):
    rc, out, jobs = _plan(judge_set)
    assert rc == 0, f"planning {judge_set} through the profile failed:\n{out[-3000:]}"
    assert len(jobs) > 20, out[-2000:]
    gpu_jobs = [j for j in jobs if int(j["resources"].get("gpu", 0) or 0) > 0]
    for job in jobs:
        what = f"{judge_set}: {job['rule']}[{job['wildcards']}] {job['resources']}"
        res = job["resources"]
        shim = _as_job(job)
        partition = plugin.partition(shim)
        gres = plugin.gres(shim)
        if job in gpu_jobs:
            assert partition == "gpu", what
            assert f"--gpus={res['gpu']}" in gres, what
            assert res["mem_mb"] >= MIN_GPU_MEM_MB and res["runtime"] >= MIN_GPU_RUNTIME, what
            assert res["cpus_per_task"] >= 2, what
        else:
            assert partition == "cpu", what
            assert "gpu" not in gres, what
        assert "slurm_partition" not in res, f"a fixed partition bypasses the routing: {what}"
    vllm = any(e.get("backend") == "vllm" for e in yaml.safe_load((REPO / "config" / "judges" /
                                                                     f"{judge_set}.yaml").read_text())["judges"])
    if vllm:
        assert gpu_jobs, f"{judge_set} configures vLLM judges but plans no GPU job"
        # every job that runs a vLLM judge (a rule with judge resources, the judge its wildcard) has its GPU
        names = {e["name"] for e in yaml.safe_load((REPO / "config" / "judges" / f"{judge_set}.yaml").read_text())[
            "judges"] if e.get("backend") == "vllm"}
        wildcards = lambda j: dict(w.split("=", 1) for w in j["wildcards"].split(", ") if "=" in w)  # noqa: E731
        vllm_jobs = [j for j in jobs if "gpu" in j["resources"] and wildcards(j).get("judge") in names]
        assert vllm_jobs and all(j in gpu_jobs for j in vllm_jobs)


def test_vllm_open_sends_every_study_to_the_gpus():
    """The issue's case: with vLLM judges, GPU jobs of every study, not the audit only."""
    rc, out, jobs = _plan("vllm-open")
    assert rc == 0, out[-3000:]
    gpu_rules = {j["rule"] for j in jobs if int(j["resources"].get("gpu", 0) or 0) > 0}
    for rule in ("orders_query", "strategies_query", "uda_query", "topk_query",
                 "rbd_evaluate", "rbd_loop", "scoring_query", "strategies_generate"):
        assert rule in gpu_rules, sorted(gpu_rules)
    assert sum(int(j["resources"].get("gpu", 0) or 0) > 0 for j in jobs) >= 40


def test_transformers_judges_on_cuda_get_a_gpu_and_on_cpu_the_model_tier(plugin, tmp_path):
    """local-cpu.yaml (transformers judges, device cpu) as shipped: no GPU, the model tier;
    the same set with device cuda: every job of those judges goes to the GPU partition."""
    rc, out, jobs = _plan("local-cpu")
    assert rc == 0, out[-3000:]
    shipped = yaml.safe_load((REPO / "config" / "judges" / "local-cpu.yaml").read_text())
    names = [j["name"] for j in shipped["judges"] if j["backend"] == "transformers"]
    assert names
    # the jobs that run these judges (declare gpu); others with a judge wildcard only read tables
    of_judges = [j for j in jobs if any(f"judge={n}" in j["wildcards"] for n in names) and "gpu" in j["resources"]]
    assert of_judges and all(j["resources"]["gpu"] == 0 and j["resources"]["mem_mb"] >= 16000 for j in of_judges)

    cuda = tmp_path / "local-cuda.yaml"
    cuda.write_text((REPO / "config" / "judges" / "local-cpu.yaml").read_text().replace("device: cpu", "device: cuda"))
    rc, out, jobs = _plan(str(cuda))
    assert rc == 0, out[-3000:]
    of_judges = [j for j in jobs if any(f"judge={n}" in j["wildcards"] for n in names) and "gpu" in j["resources"]]
    assert len(of_judges) >= 2
    for job in of_judges:
        shim = _as_job(job)
        assert job["resources"]["gpu"] == 1, job
        assert plugin.partition(shim) == "gpu" and "--gpus=1" in plugin.gres(shim), job


@pytest.mark.parametrize("profile", PROFILES)
def test_profiles_share_every_setting_but_the_deployment(profile):
    cfg = yaml.safe_load((REPO / "profiles" / profile / "config.yaml").read_text())
    assert cfg["executor"] == "slurm"
    assert cfg["slurm-status-command"] == "squeue"  # works without accounting
    assert "slurm_partition" not in cfg["default-resources"]
    assert (REPO / "profiles" / profile / cfg["slurm-partition-config"]).resolve() == \
        (REPO / "profiles" / "slurm" / "partitions.yaml").resolve()
    assert cfg.get("software-deployment-method") == ("conda" if profile == "slurm" else None)
    other = yaml.safe_load((REPO / "profiles" / ("slurm-venv" if profile == "slurm" else "slurm") /
                            "config.yaml").read_text())
    drop = {"software-deployment-method", "slurm-partition-config"}
    assert {k: v for k, v in cfg.items() if k not in drop} == {k: v for k, v in other.items() if k not in drop}
