"""While a plan runs its jobs, what earlier jobs left is frozen out of the cycle collector's passes,
and every object is handed back to it when the jobs end, however they end: a garbage cycle made
meanwhile is collected then."""

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
