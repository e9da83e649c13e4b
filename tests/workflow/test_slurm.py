"""The SLURM profile on a real scheduler: a one-node SLURM on localhost (scripts/slurm-localhost.sh).

A small target (two judges' verdicts on one audit pair set: one local job, two submitted
jobs) runs through ``--profile profiles/slurm-venv``.  The test checks that the judge jobs
went through ``sbatch`` (job ids in Snakemake's log), that SLURM itself reports them
COMPLETED (``squeue --states=all``: there is no accounting, and MinJobAge keeps finished
jobs visible), that they ran in the CPU partition, that the pairs job stayed local
(a localrule), and that the outputs are those of a local run.  Skipped, with the script's
reason, where the cluster cannot be started (not root, no slurm-wlm/munge: see
scripts/install-services.sh).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import REPO
from tests.workflow.test_pipeline import copy_workflow

pytestmark = pytest.mark.slow



def _snakemake() -> str:
    exe = Path(sys.executable).with_name("snakemake")
    return str(exe) if exe.exists() else "snakemake"


def _cluster_up() -> bool:
    if shutil.which("sinfo") is None:
        return False
    p = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], capture_output=True, text=True, timeout=30)
    return p.returncode == 0 and bool(re.search(r"idle|mix|alloc", p.stdout))


@pytest.fixture(scope="module")
def cluster():
    """A running one-node cluster; stopped afterwards only if this test started it."""
    was_up = _cluster_up()
    if not was_up:
        p = subprocess.run(["bash", str(REPO / "scripts" / "slurm-localhost.sh")], capture_output=True, text=True,
                           timeout=240)
        if p.returncode != 0 or not _cluster_up():
            pytest.skip(f"no local SLURM cluster: scripts/slurm-localhost.sh exited {p.returncode}: "
                        f"{(p.stderr or p.stdout).strip()[-400:]}")
    yield
    if not was_up:
        subprocess.run(["bash", str(REPO / "scripts" / "slurm-localhost.sh"), "stop"], capture_output=True,
                       timeout=120)


def _workdir(tmp_path: Path) -> Path:
    return copy_workflow(tmp_path / "wf", extra=("profiles",))


def _targets() -> tuple[str, list[str], list[str]]:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    pairset = next(iter(cfg["orders"]["datasets"]))
    sims = [j["name"] for j in yaml.safe_load((REPO / "config" / "judges" / "simulated.yaml").read_text())["judges"]
            if j["backend"] == "simulated"][:2]
    return pairset, sims, [f"results/orders/verdicts/{pairset}/{j}.parquet" for j in sims]


def _run(wd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "JUDGELAB_PROGRESS": "0"}
    env.setdefault("JUDGELAB_DATA", str(REPO.parent / "shared" / "data"))
    return subprocess.run([_snakemake(), *args], cwd=wd, env=env, capture_output=True, text=True, timeout=900)


def test_small_target_runs_through_sbatch_and_completes(cluster, tmp_path):
    wd = _workdir(tmp_path)
    _pairset, judges, targets = _targets()
    # the first check 5 s after submission instead of the profile's 20 s: a short test
    proc = _run(wd, "--profile", "profiles/slurm-venv", "--slurm-init-seconds-before-status-checks", "5", *targets)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-5000:]
    for t in targets:
        assert (wd / t).exists(), t

    # submitted: one SLURM job per judge job, the pairs job stayed on this host
    ids = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    assert len(ids) == len(judges), log[-3000:]
    assert re.search(r"^localrule orders_pairs:", log, re.M), "the pairs job should be a localrule"
    assert not re.search(r"^rule orders_pairs:", log, re.M)
    # completed, according to SLURM (squeue keeps finished jobs for MinJobAge seconds)
    q = subprocess.run(["squeue", "--states=all", "--noheader", "--format=%i|%T|%P", "--jobs", ",".join(ids)],
                       capture_output=True, text=True, timeout=30)
    assert q.returncode == 0, q.stderr
    states = {ln.split("|")[0]: ln.split("|")[1:] for ln in q.stdout.split()}
    assert set(states) == set(ids), q.stdout
    assert all(s == ["COMPLETED", "cpu"] for s in states.values()), states

    # same verdicts as a local run of the same target
    local = _workdir(tmp_path / "local")
    p2 = _run(local, "--cores", "2", *targets)
    assert p2.returncode == 0, (p2.stdout + p2.stderr)[-3000:]
    for t in targets:
        a = pd.read_parquet(wd / t).drop(columns=["latency_s"], errors="ignore")
        b = pd.read_parquet(local / t).drop(columns=["latency_s"], errors="ignore")
        pd.testing.assert_frame_equal(a, b)
