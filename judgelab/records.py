"""Request and response records shared by every judge backend.

A :class:`JudgeRequest` is everything that determines a judge's answer: the chat
messages, what kind of output is expected (pairwise verdict, 1-5 score, yes/no
label or free text) and in which raw format.  Its :meth:`JudgeRequest.key` is the
cache key, so two requests that would produce the same answer share one call.

``slots`` and ``truth`` are side channels.  ``slots`` holds the candidate texts as
they were placed into the prompt (``{"A": ..., "B": ...}`` or ``{"response": ...}``)
so analyses can map verdicts back to responses.  ``truth`` holds what only the
experimenter knows (gold label, latent quality, the true 1-5 score); real backends
never see it, the simulated panel reads it as its "competence" signal.  Neither is
part of the key for real backends, because they do not change the answer.
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any


class OutputKind(str, enum.Enum):
    """What a judge is asked to produce."""

    PAIRWISE = "pairwise"  # verdict A / B / tie
    SCORE = "score"  # an integer 1-5, written in some score-ID scheme
    LABEL = "label"  # yes / no (e.g. "<think>...</think> Yes")
    TEXT = "text"  # free generation: answers, rewrites, reasoning traces


#: Output-limit classes of a request (``JudgeRequest.task``); each has a ``max_tokens`` limit
#: set per judge (``output_limits``) or for all judges (top-level ``output_limits``).
#: ``verdict``: a short answer (JSON verdict, letter, score, label); ``cot``: free reasoning
#: before the verdict; ``generation``: answers, rewrites, references; ``reasoning``: a
#: reasoning teacher's trace (paper 001's teachers think for thousands of tokens).
OUTPUT_TASKS = ("verdict", "cot", "generation", "reasoning")
DEFAULT_OUTPUT_LIMITS = {"verdict": 1024, "cot": 4096, "generation": 2048, "reasoning": 8192}


class CallStatus(str, enum.Enum):
    """Outcome of one call, counted in every summary table.

    ``ok`` and ``fallback`` carry a parsed value (``fallback`` means the expected
    format was not found but a fallback rule recovered a value); ``unparsed`` and
    ``refusal`` are answers without a usable value; ``error`` means no answer (API
    error, timeout) and is never cached, so the next run retries it.
    """

    OK = "ok"
    FALLBACK = "fallback"
    UNPARSED = "unparsed"
    REFUSAL = "refusal"
    ERROR = "error"

    @property
    def has_value(self) -> bool:
        return self in (CallStatus.OK, CallStatus.FALLBACK)


def canonical_json(obj: Any) -> str:
    """Stable JSON used for hashing: sorted keys, no whitespace, UTF-8 kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


#: UTF-8 JSON of long strings a key hashes again and again (a pair's texts, in each order, for
#: each judge): each is escaped and encoded once.  Bounded: emptied when full (the bound holds
#: the answers of a paper-size uda tournament, 500 prompts x 10 models, and the judges' own).
_TEXT_JSON: dict[str, bytes] = {}
_TEXT_JSON_MAX = 32768
_TEXT_JSON_MIN_CHARS = 200
_JSON_SCALARS = (int, float, bool, type(None))
#: json's encoder of a str with ``ensure_ascii=False`` (its C one where built): what
#: ``json.dumps(text, ensure_ascii=False)`` returns, without building an encoder per call
_json_str = json.encoder.encode_basestring


def _text_json(text: str) -> bytes:
    """``canonical_json(text)`` of a string as UTF-8 (json's own string encoder, which
    ``json.dumps`` calls for a str), remembered for long ones."""
    if len(text) < _TEXT_JSON_MIN_CHARS:
        return _json_str(text).encode("utf-8")
    out = _TEXT_JSON.get(text)
    if out is None:
        if len(_TEXT_JSON) >= _TEXT_JSON_MAX:
            _TEXT_JSON.clear()
        out = _TEXT_JSON[text] = _json_str(text).encode("utf-8")
    return out


def _json_scalar(obj: Any) -> bytes:
    """``canonical_json`` of a number, bool or None: what json's encoder writes for each
    (``float.__repr__``, and NaN / Infinity spelled as it spells them)."""
    if obj is None:
        return b"null"
    if obj is True:
        return b"true"
    if obj is False:
        return b"false"
    if type(obj) is float and (obj != obj or obj in (math.inf, -math.inf)):
        return b"NaN" if obj != obj else (b"Infinity" if obj > 0 else b"-Infinity")
    return repr(obj).encode("ascii")


def canonical_json_utf8(obj: Any) -> bytes:
    """``canonical_json(obj).encode("utf-8")``, the same bytes, made quickly for the small
    mappings of texts a request key hashes (its slots and truth): long strings are escaped
    once per text (:func:`_text_json`).

    Anything but str-keyed dicts, lists and JSON scalars of exactly those types (a subclass, a
    numpy number, a non-string key) is left to :func:`canonical_json` whole, so the output never
    differs (``tests/judges/test_request_keys.py`` checks it on generated objects)."""
    parts: list[bytes] = []
    if _texts_json(obj, parts):
        return b"".join(parts)
    return canonical_json(obj).encode("utf-8")


#: ``"key":`` in UTF-8 of the keys of the mappings a key hashes (a request's slots and truth
#: have a handful of keys, written for every request); bounded, emptied when full
_KEY_JSON: dict[str, bytes] = {}
_KEY_JSON_MAX = 4096


def _texts_json(obj: Any, out: list[bytes]) -> bool:
    t = type(obj)
    if t is str:
        out.append(_text_json(obj))
    elif t is dict:
        # sorted first, as json sorts them (mixed int and str keys raise its TypeError); a key
        # other than a str is left to json, which writes it as a string
        sep = b"{"
        for k in sorted(obj):
            if type(k) is not str:
                return False
            kj = _KEY_JSON.get(k)
            if kj is None:
                if len(_KEY_JSON) >= _KEY_JSON_MAX:
                    _KEY_JSON.clear()
                kj = _KEY_JSON[k] = (_json_str(k) + ":").encode("utf-8")
            out.append(sep)
            out.append(kj)
            sep = b","
            v = obj[k]
            if type(v) is str:  # (the common value, without a call)
                out.append(_text_json(v))
            elif not _texts_json(v, out):
                return False
        out.append(b"}" if sep == b"," else b"{}")
    elif t is list:
        out.append(b"[")
        for i, v in enumerate(obj):
            if i:
                out.append(b",")
            if not _texts_json(v, out):
                return False
        out.append(b"]")
    elif t in _JSON_SCALARS:
        out.append(_json_scalar(obj))
    else:
        return False
    return True


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def key_prefix(identity_utf8: bytes) -> Any:
    """A SHA-256 fed the part of a request key (:meth:`JudgeRequest.key`) before the request's
    payload: ``{"judge":`` the judge's identity (``identity_utf8``: its ``canonical_json`` in UTF-8)
    ``,"request":``.  With sorted keys, the key's object is written in that order."""
    return hashlib.sha256(b'{"judge":' + identity_utf8 + b',"request":')


@dataclass(frozen=True)
class Message:
    role: str
    content: str

    @property
    def content_utf8(self) -> bytes:
        """``content`` in UTF-8, encoded once per message (kept beside the fields, not one of them:
        equality, ``asdict`` and the payload are unchanged).  A simulated judge hashes every prompt
        it answers, and a plan asks the same messages of each judge of a study (a paper-size uda
        tournament: ten judges, 45,000 pairs), so a long prompt is encoded once, not per judge.
        (Kept by hand rather than by ``functools.cached_property``, which takes a lock on each
        first read before Python 3.12: a plan reads the UTF-8 of some 200,000 new messages.)"""
        got: bytes | None = self.__dict__.get("_content_utf8")
        if got is None:
            got = self.__dict__["_content_utf8"] = self.content.encode("utf-8")
        return got


@dataclass
class JudgeRequest:
    """One question to one judge.

    ``fmt`` names the raw answer format the prompt asks for (``json``, ``brackets``,
    ``letter``, ``output_ab`` for pairwise; ``result`` for scores; ``think`` for
    labels) and ``score_ids`` the score-ID scheme (``numeric``, ``letter``,
    ``roman``).  ``params`` are per-request sampling overrides (e.g. the
    temperatures of an ensemble); they are merged over the judge's own sampling
    parameters and are part of the key.  ``meta`` is free bookkeeping (item id,
    presentation order, strategy) carried to the output tables, not hashed.

    Output control travels with the request, set by whoever writes the prompt:
    ``task`` (one of :data:`OUTPUT_TASKS`; ``None`` = ``generation`` for text
    requests, ``verdict`` otherwise) picks the judge's ``max_tokens`` limit, and
    ``json_mode`` says the prompt asks for a JSON object *only*, so a backend may
    switch on its JSON mode (never for CoT-then-JSON, ``[[A]]`` prompts or
    generation).  Both enter the key only when set, so older keys stay valid.
    """

    messages: list[Message]
    kind: OutputKind = OutputKind.PAIRWISE
    fmt: str = "json"
    score_ids: str = "numeric"
    params: dict[str, Any] = field(default_factory=dict)
    slots: dict[str, str] = field(default_factory=dict)
    truth: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    task: str | None = None
    json_mode: bool = False

    def __post_init__(self) -> None:
        if type(self.kind) is not OutputKind:  # (the Enum call costs more than the rest of this check)
            self.kind = OutputKind(self.kind)
        if self.task is not None and self.task not in OUTPUT_TASKS:
            raise ValueError(f"unknown request task {self.task!r}; known: {', '.join(OUTPUT_TASKS)}")
        self.json_mode = bool(self.json_mode)
        self.messages = [m if isinstance(m, Message) else Message(**m) for m in self.messages]
        if not self.messages:
            raise ValueError("a JudgeRequest needs at least one message")

    @property
    def output_task(self) -> str:
        """The output-limit class: ``task`` if set, else by kind (text: generation)."""
        if self.task is not None:
            return self.task
        return "generation" if self.kind is OutputKind.TEXT else "verdict"

    def payload(self) -> dict[str, Any]:
        """The part of the request that determines a real model's answer."""
        body: dict[str, Any] = {
            # {role, content} of each message: what asdict gives, at a fraction of its cost
            # (a plan builds tens of thousands of payloads; tests/workflow/test_plan.py checks the equality)
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
            "kind": self.kind.value,
            "fmt": self.fmt,
            "score_ids": self.score_ids,
            "params": self.params,
        }
        if self.task is not None:
            body["task"] = self.task
        if self.json_mode:
            body["json_mode"] = True
        return body

    def key(self, identity: dict[str, Any], *, include_truth: bool = False,
            payload_utf8: bytes | None = None, identity_utf8: bytes | None = None,
            slots_utf8: bytes | None = None, judge_prefix: Any = None, truth_utf8: bytes | None = None) -> str:
        """Cache key: hash of the backend identity (backend, model, sampling) and payload.

        The hash is of ``canonical_json({"judge": identity, "request": payload[, "slots",
        "truth"]})`` in UTF-8, fed to SHA-256 part by part: with sorted keys that object's JSON
        is its members' JSON in this order, so the payload's JSON (``payload_utf8``, which a
        plan also hashes on its own and shares between judges) is made once, not per use
        (``tests/judges/test_request_keys.py`` checks the equality with the whole object's hash);
        ``identity_utf8``: the identity's JSON likewise, when the caller has it, and ``slots_utf8``
        the slots' (``canonical_json_utf8(slots)``: a plan's judges share a pair's slots).
        ``judge_prefix``: a SHA-256 already fed what comes before the payload (:func:`key_prefix` of
        this ``identity``), copied rather than fed again: a judge keys each of its requests with one
        identity.  ``truth_utf8``: the truth's JSON (``canonical_json_utf8(truth)``), when the caller
        has it (the judges a plan asks one request share its truth).
        """
        if judge_prefix is None:
            h = key_prefix(canonical_json(identity).encode("utf-8") if identity_utf8 is None else identity_utf8)
        else:
            h = judge_prefix.copy()
        h.update(canonical_json(self.payload()).encode("utf-8") if payload_utf8 is None else payload_utf8)
        if include_truth:
            h.update(b',"slots":')
            h.update(canonical_json_utf8(self.slots) if slots_utf8 is None else slots_utf8)
            h.update(b',"truth":')
            h.update(canonical_json_utf8(self.truth) if truth_utf8 is None else truth_utf8)
        h.update(b"}")
        return h.hexdigest()

    def prompt_text(self) -> str:
        return "\n\n".join(m.content for m in self.messages)

    def to_dict(self) -> dict[str, Any]:
        d = self.payload()
        d.update(slots=self.slots, truth=self.truth, meta=self.meta)
        return d


@dataclass
class RawAnswer:
    """What a backend returns for one request, before parsing."""

    text: str | None
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    logprobs: dict[str, float] | None = None  # answer-token -> logprob (logit modes)
    error: str | None = None  # set when no answer was obtained
    finish_reason: str | None = None
    #: reasoning a server returns beside the answer (``reasoning_content`` of DeepSeek and
    #: vLLM's reasoning parsers); the runner keeps it in the cached text as a think block
    reasoning: str | None = None


def join_reasoning(text: str | None, reasoning: str | None) -> str | None:
    """The answer text with separately returned reasoning put back in front as
    ``<think>...</think>``, the form the label parser and the rbd traces read.  Text that
    already has a think block, or no reasoning, is returned unchanged."""
    if not reasoning or not reasoning.strip() or text is None:
        return text
    if "</think>" in text.lower():
        return text
    return f"<think>\n{reasoning.strip()}\n</think>\n{text}"


@dataclass
class JudgeResponse:
    """A parsed answer with its provenance; one row of every verdict table."""

    key: str
    judge: str
    backend: str
    model: str
    kind: str
    raw_text: str | None
    value: Any
    status: CallStatus
    parse_method: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    logprobs: dict[str, float] | None = None
    error: str | None = None
    cached: bool = False
    simulated: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if type(self.status) is not CallStatus:
            self.status = CallStatus(self.status)

    def row(self) -> dict[str, Any]:
        """Flat dict for a table (meta keys are prefixed ``meta_``)."""
        d = {k: v for k, v in asdict(self).items() if k not in ("meta", "logprobs")}
        d["status"] = self.status.value
        d["value"] = None if self.value is None else str(self.value)
        d["logprobs"] = None if self.logprobs is None else canonical_json(self.logprobs)
        for k, v in self.meta.items():
            d[f"meta_{k}"] = v
        return d
