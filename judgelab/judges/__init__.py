"""Judge backends behind one interface, looked up by name in :data:`BACKENDS`.

Each backend module registers its class (``@BACKENDS.register("openai")``); the registry
itself sits at the ground floor (:data:`judgelab.registry.BACKENDS`, which declares every
built-in backend by its module), so that the config validation knows the names without
importing this package.  A backend's module is imported when a judge of it is first built:
heavy dependencies (vllm, torch, openai) load only then, and ``judgelab`` imports on a
laptop without them.
"""

from __future__ import annotations

from judgelab.config import JudgeSpec
from judgelab.judges.base import BackendUnavailable, Judge
from judgelab.registry import BACKENDS


def make_judge(spec: JudgeSpec) -> Judge:
    """Build the backend named by ``spec.backend``."""
    cls = BACKENDS.get(spec.backend, where=f"judge {spec.name!r}")
    return cls(spec)


__all__ = ["BACKENDS", "BackendUnavailable", "Judge", "make_judge"]
