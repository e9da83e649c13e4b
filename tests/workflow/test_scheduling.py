"""Snakemake's scheduler loop wakes once per reason, not once per second per finished job
(:mod:`judgelab.workflow.scheduling`).

The unit tests drive the patched method on a stand-in scheduler; the workflow test runs a small
Snakefile of sleeping jobs twice, with and without the patch, and counts the loop's passes in
Snakemake's own ``--verbose`` log: the unpatched loop's passes grow with the square of the jobs
(the control), the patched loop's stay within a few per job.
"""

from __future__ import annotations

import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from judgelab.workflow.scheduling import one_pending_reevaluation
from tests.conftest import REPO
from tests.workflow.test_pipeline import snakemake_bin


def stand_in_class():
    class Scheduler:
        originals = 0

        def __init__(self):
            self._open_jobs = threading.Semaphore(0)

        def _schedule_reevalutation(self, delay):  # Snakemake's spelling
            type(self).originals += 1
            threading.Timer(delay, self._open_jobs.release).start()

    return Scheduler


def releases_within(sem: threading.Semaphore, seconds: float) -> int:
    """How many times ``sem`` is released within ``seconds``."""
    n, end = 0, time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if sem.acquire(timeout=left):
            n += 1
    return n


def test_many_wake_up_requests_while_one_is_pending_give_one_wake_up():
    cls = stand_in_class()
    assert one_pending_reevaluation(cls)
    s = cls()
    for _ in range(50):
        s._schedule_reevalutation(0.05)
    assert releases_within(s._open_jobs, 0.4) == 1
    assert cls.originals == 0  # the patched method replaced the original


def test_after_a_wake_up_the_next_request_schedules_again_and_schedulers_are_separate():
    cls = stand_in_class()
    one_pending_reevaluation(cls)
    a, b = cls(), cls()
    a._schedule_reevalutation(0.02)
    b._schedule_reevalutation(0.02)  # another scheduler's pending timer is not a's
    assert releases_within(a._open_jobs, 0.3) == 1
    assert releases_within(b._open_jobs, 0.01) == 1
    a._schedule_reevalutation(0.02)
    assert releases_within(a._open_jobs, 0.3) == 1


def test_the_timer_is_a_daemon_so_a_finished_run_exits_at_once():
    cls = stand_in_class()
    one_pending_reevaluation(cls)
    s = cls()
    before = set(threading.enumerate())
    s._schedule_reevalutation(30)
    (timer,) = set(threading.enumerate()) - before
    assert timer.daemon


def test_a_class_without_the_method_is_left_alone_and_patching_twice_is_once():
    class Other:
        pass

    assert not one_pending_reevaluation(Other)
    assert not hasattr(Other, "_schedule_reevalutation")
    cls = stand_in_class()
    assert one_pending_reevaluation(cls)
    patched = cls._schedule_reevalutation
    assert one_pending_reevaluation(cls)
    assert cls._schedule_reevalutation is patched


def test_a_scheduler_without_the_semaphore_keeps_snakemakes_own_way():
    cls = stand_in_class()
    one_pending_reevaluation(cls)
    s = cls()
    sem = s._open_jobs
    del s._open_jobs
    s._open_jobs_elsewhere = sem
    with pytest.raises(AttributeError):  # the original ran (and fails without its semaphore)
        s._schedule_reevalutation(0.01)
    assert cls.originals == 1


def test_the_installed_snakemake_is_patched():
    assert one_pending_reevaluation()


SNAKEFILE = """
import sys
sys.path.insert(0, {repo!r})
from judgelab.workflow.scheduling import one_pending_reevaluation
if {patch}:
    one_pending_reevaluation()

rule all:
    input: expand("out/{{i}}.txt", i=range({n}))

rule one:
    output: "out/{{i}}.txt"
    shell: "sleep {sleep}; touch {{output}}"
"""


def loop_passes(wd: Path, *, patch: bool, n: int = 30, sleep: float = 0.4) -> int:
    wd.mkdir()
    (wd / "Snakefile").write_text(SNAKEFILE.format(repo=str(REPO), patch=patch, n=n, sleep=sleep))
    proc = subprocess.run([snakemake_bin(), "--cores", "1", "--verbose"], cwd=wd, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(list((wd / "out").iterdir())) == n  # every job ran
    log = proc.stdout + proc.stderr
    return log.count("Waiting for running jobs to complete")


@pytest.mark.slow
def test_the_loop_passes_stay_within_a_few_per_job_where_unpatched_they_grow_with_the_square(tmp_path):
    n = 30
    # the two runs side by side: each is 30 jobs of `sleep 0.4`, so together they take the wall time of one
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(loop_passes, tmp_path / name, patch=patch, n=n)
                for name, patch in (("patched", True), ("control", False))]
        patched, control = (r.result() for r in runs)
    assert patched <= 3 * n, patched
    assert control > 2 * patched, (control, patched)
