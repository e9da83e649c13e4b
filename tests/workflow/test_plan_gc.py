"""While a plan runs its jobs, what earlier jobs left is frozen out of the cycle collector's passes,
no automatic pass runs within a job, a job's garbage cycles are collected when it ends, and every
object is handed back to the collector when the jobs end, however they end, with the collector on
or off as it was: a garbage cycle among frozen objects is collected then."""

from __future__ import annotations

import gc
import weakref

import pytest

from judgelab.workflow.plan import _JobsGC


class Node:
    pass


def test_jobs_are_frozen_and_all_is_unfrozen_after_with_cycles_collected():
    gc.collect()
    with _JobsGC():
        assert gc.get_freeze_count() > 0
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle left by a "job"
        probe = weakref.ref(a)
        _JobsGC.job_done()
        del a, b
        gc.collect()
        assert probe() is not None  # frozen: the collector does not look at it
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert probe() is None


def test_a_failing_job_unfreezes_too():
    with pytest.raises(RuntimeError), _JobsGC():
        _JobsGC.job_done()
        raise RuntimeError("a job failed")
    assert gc.get_freeze_count() == 0


def test_a_jobs_garbage_cycle_waits_for_its_end_and_is_collected_then():
    gc.collect()
    with _JobsGC():
        assert not gc.isenabled()  # no automatic pass walks the job's objects as they pile up
        a, b = Node(), Node()
        a.other, b.other = b, a
        probe = weakref.ref(a)
        del a, b
        for _ in range(3):  # a job's worth of allocations starts no pass
            _ = [[Node()] for _ in range(100_000)]
        assert probe() is not None
        _JobsGC.job_done()  # the job's end: its cycles are collected before the rest is frozen
        assert probe() is None
    assert gc.isenabled()


def test_the_collector_is_left_as_the_caller_had_it():
    gc.disable()
    try:
        with _JobsGC():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), _JobsGC():
        raise RuntimeError("a job failed")
    assert gc.isenabled()
