"""The one interface every judge backend implements.

A backend turns a batch of :class:`JudgeRequest` into :class:`RawAnswer` (text,
tokens, logprobs, or an error).  It does not parse and does not cache: the runner
(:mod:`judgelab.judges.runner`) does both for every backend alike, so a new backend is a
class with :meth:`Judge.answer` and one registry entry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from judgelab.config import ConfigError, JudgeSpec
from judgelab.records import JudgeRequest, RawAnswer, canonical_json, key_prefix
from judgelab.registry import BackendTraits


class BackendUnavailable(RuntimeError):
    """The backend's optional dependency or resource is missing (message says how to fix)."""


class Judge(ABC):
    # -- traits: what rules, resources, plan and studies ask of a backend (never its name);
    # each backend class sets those that differ, :meth:`traits` hands them out
    # (``judgelab.registry.backend_traits``).
    #: True for backends whose answers are synthetic; every output says so.
    simulated: bool = False
    #: True for backends that replay recorded answers (no model runs, no output limits).
    recorded: bool = False
    #: True for backends behind a rate-limited API: each querying job takes one ``api_slots``.
    needs_api_slot: bool = False
    #: True for backends that load model weights into the job's memory.
    loads_weights: bool = False
    #: True for backends that can read a pairwise verdict from next-token logits.
    logit_verdicts: bool = False
    #: The conda env (``envs/<conda_env>.yaml``) of the jobs that run this backend.
    conda_env: str = "judges"
    #: False for an internal pseudo-backend a config's ``judges`` may not name.
    configurable: bool = True
    #: True if the backend reads ``request.truth``/``slots`` (then they enter the cache key).
    reads_truth: bool = False
    #: How many requests the runner hands over at once (committed to the cache after each).
    batch_size: int = 64

    def __init__(self, spec: JudgeSpec) -> None:
        self.spec = spec

    @classmethod
    def gpus(cls, options: Mapping[str, Any]) -> int:
        """GPUs a job running a judge with these options needs: one when ``device`` names
        CUDA (local checkpoints), else none.  Backends that shard a model override it."""
        return 1 if str(options.get("device") or "").startswith("cuda") else 0

    @classmethod
    def weights_in_job(cls, options: Mapping[str, Any]) -> bool:
        """Whether a job running a judge with these options loads model weights itself."""
        return cls.loads_weights

    @classmethod
    def traits(cls, options: Mapping[str, Any] | None = None, name: str = "") -> BackendTraits:
        """This backend's traits for a judge entry with these ``options``."""
        opts = options or {}
        return BackendTraits(
            backend=name, simulated=cls.simulated, recorded=cls.recorded, needs_api_slot=cls.needs_api_slot,
            loads_weights=cls.weights_in_job(opts), gpus=int(cls.gpus(opts)), logit_verdicts=cls.logit_verdicts,
            conda_env=cls.conda_env, configurable=cls.configurable, key_env=cls.key_env(opts),
        )

    @classmethod
    def key_env(cls, options: Mapping[str, Any]) -> str | None:
        """The environment variable a judge with these options reads its key from (None: no key)."""
        return None

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

    def key(self, request: JudgeRequest, payload_utf8: bytes | None = None) -> str:
        """The request's cache key with this judge (``payload_utf8``: the request's payload as
        ``canonical_json`` in UTF-8 when the caller has it already, :meth:`JudgeRequest.key`)."""
        ident = self.identity()
        controls = self.output_controls(request)
        if controls:
            ident = {**ident, "controls": controls}
        return request.key(ident, include_truth=self.reads_truth, payload_utf8=payload_utf8,
                           identity_utf8=self._identity_utf8(ident))

    def keys(self, requests: Sequence[JudgeRequest], payloads_utf8: Sequence[bytes] | None = None,
             slots_utf8: Sequence[bytes | None] | None = None,
             truths_utf8: Sequence[bytes | None] | None = None) -> list[str]:
        """:meth:`key` of each request (``payloads_utf8``: their payloads' JSON, as for :meth:`key`;
        ``slots_utf8`` and ``truths_utf8``: their slots' and truth's JSON, as for
        :meth:`JudgeRequest.key`, read only by a judge that :attr:`reads_truth`), with the judge's identity made once for the batch rather than once per
        request (a plan keys 45,000 requests per judge of a paper-size uda tournament).  A backend
        with its own :meth:`key` is asked request by request."""
        payloads = [None] * len(requests) if payloads_utf8 is None else payloads_utf8
        if type(self).key is not Judge.key:
            return [self.key(r, p) for r, p in zip(requests, payloads, strict=True)]
        ident = self.identity()
        prefix = key_prefix(self._identity_utf8(ident))  # copied for each request without controls
        truth = self.reads_truth
        slots = [None] * len(requests) if slots_utf8 is None or not truth else slots_utf8
        truths = [None] * len(requests) if truths_utf8 is None or not truth else truths_utf8
        out = []
        for r, p, sl, tr in zip(requests, payloads, slots, truths, strict=True):
            controls = self.output_controls(r)
            if controls:
                full = {**ident, "controls": controls}
                out.append(r.key(full, include_truth=truth, payload_utf8=p, identity_utf8=self._identity_utf8(full),
                                 slots_utf8=sl, truth_utf8=tr))
            else:
                out.append(r.key(ident, include_truth=truth, payload_utf8=p, slots_utf8=sl, judge_prefix=prefix,
                                 truth_utf8=tr))
        return out

    def _identity_utf8(self, ident: dict[str, Any]) -> bytes:
        """``canonical_json(ident)`` in UTF-8, remembered for the judge's last identity: a plan keys
        tens of thousands of requests per judge with one identity.  The identity is recognised by
        its ``repr``, which, unlike ``==``, tells 1, 1.0 and True apart, as JSON does."""
        seen = repr(ident)
        memo = self.__dict__.get("_identity_memo")
        if memo is None or memo[0] != seen:
            memo = self.__dict__["_identity_memo"] = (seen, canonical_json(ident).encode("utf-8"))
        return memo[1]

    @property
    def uses_output_controls(self) -> bool:
        """False for backends whose answers ignore output limits (the simulated panel,
        replayed verdicts): their keys stay what they were before output limits existed."""
        return not (self.simulated or self.recorded)

    def output_controls(self, request: JudgeRequest) -> dict[str, Any]:
        """What, beside the request, bounds this answer's output: part of the key (so a
        raised limit asks again instead of reusing a truncated answer)."""
        if not self.uses_output_controls:
            return {}
        out: dict[str, Any] = {"max_tokens": self._max_tokens(request)}
        if self.spec.drop_params:
            out["drop_params"] = sorted(self.spec.drop_params)
        if self.spec.rename_params:
            out["rename_params"] = dict(sorted(self.spec.rename_params.items()))
        return out

    def _limit_key(self, request: JudgeRequest) -> str:
        """``max_completion_tokens`` where the judge or request names its limit so (OpenAI's
        reasoning models), else ``max_tokens``."""
        s = {**self.spec.sampling, **request.params}
        if s.get("max_completion_tokens") is not None and s.get("max_tokens") is None:
            return "max_completion_tokens"
        return "max_tokens"

    def _max_tokens(self, request: JudgeRequest) -> int:
        key = self._limit_key(request)
        if request.params.get(key) is not None:
            return int(request.params[key])
        task = request.output_task
        if task in self.spec.output_limits or self.spec.sampling.get(key) is None:
            return self.spec.output_limit(task)
        return int(self.spec.sampling[key])

    def sampling_for(self, request: JudgeRequest) -> dict[str, Any]:
        """The judge's sampling parameters with the request's overrides on top.

        ``max_tokens`` is the request's task limit (:meth:`JudgeSpec.output_limit`):
        a request's own ``params.max_tokens`` wins, then the judge's ``output_limits``
        for the task, then the judge's ``sampling.max_tokens``, then the default limit
        of the task.  Keys in the judge's ``drop_params`` are removed (models that
        reject them) and ``rename_params`` renames keys (``max_tokens`` ->
        ``max_completion_tokens``).
        """
        s = {**self.spec.sampling, **request.params}
        if self.uses_output_controls:
            s[self._limit_key(request)] = self._max_tokens(request)
        for k in self.spec.drop_params:
            s.pop(k, None)
        for old, new in self.spec.rename_params.items():
            if old in s:
                s[new] = s.pop(old)
        return s

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
