"""The one interface every judge backend implements.

A backend turns a batch of :class:`JudgeRequest` into :class:`RawAnswer` (text,
tokens, logprobs, or an error).  It does not parse and does not cache: the runner
(:mod:`judgelab.runner`) does both for every backend alike, so a new backend is a
class with :meth:`Judge.answer` and one registry entry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from judgelab.config import ConfigError, JudgeSpec
from judgelab.records import JudgeRequest, RawAnswer


class BackendUnavailable(RuntimeError):
    """The backend's optional dependency or resource is missing (message says how to fix)."""


class Judge(ABC):
    #: True for backends whose answers are synthetic; every output says so.
    simulated: bool = False
    #: True if the backend reads ``request.truth``/``slots`` (then they enter the cache key).
    reads_truth: bool = False
    #: How many requests the runner hands over at once (committed to the cache after each).
    batch_size: int = 64

    def __init__(self, spec: JudgeSpec) -> None:
        self.spec = spec

    @property
    def name(self) -> str:
        return self.spec.name

    def identity(self) -> dict[str, Any]:
        """What, beside the request, determines the answer: part of every cache key."""
        return {
            "backend": self.spec.backend,
            "model": self.spec.model,
            "sampling": self.spec.sampling,
            **self.identity_extra(),
        }

    def identity_extra(self) -> dict[str, Any]:
        return {}

    def key(self, request: JudgeRequest) -> str:
        return request.key(self.identity(), include_truth=self.reads_truth)

    def sampling_for(self, request: JudgeRequest) -> dict[str, Any]:
        """The judge's sampling parameters with the request's overrides on top."""
        return {**self.spec.sampling, **request.params}

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return self.spec.price.cost(tokens_in, tokens_out)

    @abstractmethod
    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        """Answer each request (same order). Errors go into ``RawAnswer.error``."""

    def close(self) -> None:
        """Release resources (HTTP clients, GPU memory); nothing to release by default."""
        return None


def bool_option(options: Mapping[str, Any], key: str, default: bool | None, where: str) -> bool | None:
    """A yes/no backend option (YAML booleans or true/false/yes/no/1/0 strings)."""
    v = options.get(key, default)
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false", "yes", "no", "1", "0"):
        return v.lower() in ("true", "yes", "1")
    raise ConfigError(f"{where}: option {key!r} must be true or false, got {v!r}")
