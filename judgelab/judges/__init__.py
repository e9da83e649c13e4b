"""Judge backends behind one interface, looked up by name in :data:`BACKENDS`.

Each backend module registers itself; heavy dependencies (vllm, torch, openai)
are imported only when a backend of that kind is built, so ``judgelab`` imports
on a laptop without them.
"""

from __future__ import annotations

from judgelab.config import JudgeSpec
from judgelab.judges.base import BackendUnavailable, Judge
from judgelab.registry import Registry

BACKENDS: Registry[type[Judge]] = Registry("judge backend")


def make_judge(spec: JudgeSpec) -> Judge:
    """Build the backend named by ``spec.backend``."""
    cls = BACKENDS.get(spec.backend, where=f"judge {spec.name!r}")
    return cls(spec)


# Registration happens at import; these modules import no heavy dependency at top level.
from judgelab.judges import openai_backend as _openai  # noqa: E402,F401
from judgelab.judges import replay as _replay  # noqa: E402,F401
from judgelab.judges import simulated as _simulated  # noqa: E402,F401
from judgelab.judges import transformers_backend as _hf  # noqa: E402,F401
from judgelab.judges import vllm_backend as _vllm  # noqa: E402,F401

__all__ = ["BACKENDS", "BackendUnavailable", "Judge", "make_judge"]
