"""Snakemake's scheduler loop, woken once per reason instead of once per finished job and second.

Snakemake (9.27 as installed here) limits job submissions with ``--max-jobs-per-timespan`` (default
``100/1s``, always on).  After every pass of its scheduling loop it starts a ``threading.Timer``
that wakes the loop again one timespan later, so that rate-limited jobs get their turn
(``JobScheduler._schedule_reevalutation``).  Each finished job also wakes the loop, and that pass
starts a timer of its own, so the timers form chains that never merge: after ``n`` finished jobs
the loop wakes about ``n`` times a second, each pass checking every ready job's inputs.  The passes
grow with the square of the job count (measured in ``docs/benchmarks.md``, "The scheduler's timers and
the jobs' teardown";
``tests/workflow/test_scheduling.py`` counts them).
Upstream discussion: snakemake/snakemake pull request 3744 ("Do not release lock when job
finished"), open.

:func:`one_pending_reevaluation` keeps at most one such timer pending per scheduler: a pass that
wants a wake-up while one is pending needs none, because the pending one comes within the same
timespan and the loop then starts the next.  So the rate limit still holds and no ready job waits
longer than a timespan; the loop just stops waking for nothing.  The timer is a daemon thread, so
a finished run exits at once instead of waiting for a last wake-up.

Why by hand: Snakemake has no setting that turns the rate limiter or its timers off, and the fix
belongs to Snakemake's scheduler.  The patch touches one private method, so it is applied only
when that method and the semaphore it releases exist; on a Snakemake without them it does nothing
and Snakemake behaves as it always did.
"""

from __future__ import annotations

import threading
from typing import Any

_PATCHED = "_judgelab_one_pending_reevaluation"


def one_pending_reevaluation(scheduler_class: Any = None) -> bool:
    """Make ``scheduler_class`` (Snakemake's ``JobScheduler``) keep at most one re-evaluation timer
    pending per scheduler.  Returns whether the class is patched (now or before); ``False`` when it
    lacks the method this replaces, and then it is left as it was."""
    if scheduler_class is None:
        try:
            from snakemake.scheduling.job_scheduler import JobScheduler
        except ImportError:
            return False
        scheduler_class = JobScheduler
    if getattr(scheduler_class, _PATCHED, False):
        return True
    original = getattr(scheduler_class, "_schedule_reevalutation", None)
    if not callable(original):
        return False

    def schedule_reevaluation(self: Any, delay: float) -> None:
        if not hasattr(self, "_open_jobs"):  # not the scheduler this was written for: its own way
            original(self, delay)
            return
        with _lock_of(self):
            if getattr(self, "_judgelab_reevaluation_pending", False):
                return
            self._judgelab_reevaluation_pending = True

        def wake() -> None:
            with _lock_of(self):
                self._judgelab_reevaluation_pending = False
            self._open_jobs.release()

        timer = threading.Timer(delay, wake)
        timer.daemon = True
        timer.start()

    scheduler_class._schedule_reevalutation = schedule_reevaluation
    setattr(scheduler_class, _PATCHED, True)
    return True


def _lock_of(scheduler: Any) -> threading.Lock:
    """A lock of this scheduler's own for the pending flag (Snakemake's lock is held by the loop
    while it schedules, so the timer must not wait on it); ``dict.setdefault`` makes one atomically."""
    lock: threading.Lock = scheduler.__dict__.setdefault("_judgelab_reevaluation_lock", threading.Lock())
    return lock
