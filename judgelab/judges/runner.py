"""Send requests to a judge through the cache: nothing is ever asked twice.

:func:`run_requests` is the only path from a request to a verdict.  It

1. computes every request's key and looks them all up in the cache;
2. sends the misses (each distinct key once) to the backend in batches, committing
   each batch's answers before the next, so a killed run keeps what it finished;
3. records errors in the cache's failure log -- they are not answers and are asked
   again on the next run;
4. parses every answer (cached or new) with :mod:`judgelab.parsing` and returns one
   :class:`JudgeResponse` per request, in order, with its status.

Reasoning a server returns in a separate field (``RawAnswer.reasoning``) is kept in the
cached text as a leading ``<think>...</think>`` block (:func:`judgelab.records.join_reasoning`),
so rbd teacher traces and label parsing see it; verdicts and scores are read from the
answer after the think block only, so a verdict the model merely considered while
reasoning is never taken for its answer.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from tqdm.auto import tqdm

from judgelab.cache import CachedCall, CallStore
from judgelab.judges.base import Judge
from judgelab.parsing import Parsed, parse, split_think
from judgelab.records import (
    CallStatus,
    JudgeRequest,
    JudgeResponse,
    OutputKind,
    RawAnswer,
    canonical_json,
    canonical_json_utf8,
    join_reasoning,
)

log = logging.getLogger(__name__)


#: Set by ``judgelab plan`` (:mod:`judgelab.workflow.plan`): every distinct new call is logged there.
PLAN_LOG_ENV = "JUDGELAB_PLAN_LOG"


def _plan_rule(cache: CallStore) -> str:
    """The rule a plan log line is counted under: the ``plan_rule`` the plan sets on its cache
    (:class:`judgelab.workflow.calls.PlanCache`) before each job; "" for any other cache.  The
    plan log is the plan's own, so the rule travels with the plan's cache, not through the
    process environment."""
    return str(getattr(cache, "plan_rule", "") or "")


def _prompt_chars(req: JudgeRequest) -> int:
    """``len(req.prompt_text())`` without joining the messages (their lengths and the blank lines
    between them): a plan logs it for every call, and a paper-size plan's prompts are gigabytes."""
    return sum(len(m.content) for m in req.messages) + 2 * (len(req.messages) - 1)


def _plan_log(judge: Judge, label: str | None, rule: str, keys: Sequence[str], planned: Sequence[PlannedPayload],
              todo: dict[str, JudgeRequest], stored: dict[str, CachedCall], errors: dict[str, str]) -> None:
    """Append one JSON line per distinct call this job needs to the plan log (one ``write``
    per job on an ``O_APPEND`` file, so parallel jobs do not interleave lines).

    Every distinct call is logged, also those the stand-in cache already held (``new``
    false): a call two studies share is asked once, by whichever job runs first, but it is
    needed by both, and ``judgelab plan`` counts it under each study that needs it.  ``rule``:
    the job's rule (:func:`_plan_rule`), the log's study column.  What a line says of its
    payload (hash, task, limit, prompt length) is written once per payload
    (:attr:`PlannedPayload.log_fields`), shared by every judge asked it."""
    import json

    lines = []
    seen: set[str] = set()
    # what every line of this job shares, as JSON once; each line adds its own fields
    head = json.dumps({"judge": judge.name, "label": label or "", "rule": rule})[:-1]
    for k, p in zip(keys, planned, strict=True):
        if k in seen:
            continue
        seen.add(k)
        c = stored.get(k)
        lines.append(f'{head}, {p.log_fields}, '
                     f'"tokens_out": {"null" if c is None or k in errors else int(c.tokens_out)}, '
                     f'"new": {"true" if k in todo else "false"}}}')
    if lines:
        fd = os.open(os.environ[PLAN_LOG_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, ("\n".join(lines) + "\n").encode("utf-8"))
        finally:
            os.close(fd)


class PlannedPayload(NamedTuple):
    """What a plan derives from one request payload, alike for every judge asked it
    (:func:`_plan_payload`)."""

    #: ``canonical_json(req.payload())`` in UTF-8: what the cache key hashes (:meth:`JudgeRequest.key`)
    data: bytes
    #: its SHA-256, the plan log's ``payload_sha``
    sha: str
    #: ``req.payload()``, what the stand-ins' cache stores with each answer (one dict shared by the
    #: judges asked it; nothing changes a stored payload)
    payload: dict[str, Any]
    #: the plan log's fields of the payload: ``"payload_sha": ..., "task": ..., "max_tokens_param":
    #: ..., "chars_in": ...`` (:func:`_plan_log`)
    log_fields: str


#: A plan asks the same payload of many judges (each judge of a study judges the same pairs):
#: its :class:`PlannedPayload`, made once per distinct payload (by its fields; bounded, emptied
#: when full: the bound holds one judge's calls of a paper-size uda tournament, 45,000 pairs,
#: so the next judge's same payloads are found).  Only while planning: a run asks each
#: payload of few judges.
_PLAN_PAYLOADS: dict[tuple[Any, ...], PlannedPayload] = {}
_PLAN_PAYLOADS_MAX = 65536


def _params_key(params: dict[str, Any]) -> Any:
    """A request's sampling overrides as a dict key: each value with its type (1 and 1.0 and
    True are one key to a dict, three to JSON); anything else as its JSON."""
    if all(type(v) in (int, float, bool, str, type(None)) for v in params.values()):
        return tuple(sorted((k, type(v).__name__, v) for k, v in params.items()))
    return canonical_json(params)


#: :data:`_PLAN_PAYLOADS` found by the request's list of messages itself (judges' copies of one
#: request share it, e.g. :func:`judgelab.uda.tournament.pair_requests`) and its other payload fields:
#: the list is kept with its entry, so its ``id`` names no other list meanwhile
_PLAN_PAYLOADS_BY_LIST: dict[tuple[Any, ...], tuple[list[Any], PlannedPayload]] = {}


def _plan_payload(req: JudgeRequest) -> PlannedPayload:
    """The :class:`PlannedPayload` of a request, made once per payload."""
    params, messages = req.params, req.messages
    head = (req.kind, req.fmt, req.score_ids, req.task, req.json_mode, _params_key(params) if params else ())
    by_list = _PLAN_PAYLOADS_BY_LIST.get((id(messages), *head))
    if by_list is not None and by_list[0] is messages:
        return by_list[1]
    fields = (*head, tuple([(m.role, m.content) for m in messages]))
    got = _PLAN_PAYLOADS.get(fields)
    if got is None:
        import json

        if len(_PLAN_PAYLOADS) >= _PLAN_PAYLOADS_MAX:
            _PLAN_PAYLOADS.clear()
        payload = req.payload()
        data = canonical_json(payload).encode("utf-8")
        sha = hashlib.sha256(data).hexdigest()
        got = _PLAN_PAYLOADS[fields] = PlannedPayload(
            data, sha, payload,
            f'"payload_sha": "{sha}", "task": "{req.output_task}", '
            f'"max_tokens_param": {json.dumps(params.get("max_tokens"))}, "chars_in": {_prompt_chars(req)}')
    if len(_PLAN_PAYLOADS_BY_LIST) >= _PLAN_PAYLOADS_MAX:
        _PLAN_PAYLOADS_BY_LIST.clear()
    _PLAN_PAYLOADS_BY_LIST[(id(messages), *head)] = (messages, got)
    return got


#: ``canonical_json_utf8`` of recent requests' slots, by their texts (each judge of a study is
#: shown the same pairs: a paper-size uda tournament shows ten judges the same 45,000), made once
#: per distinct slots while planning; bounded like :data:`_PLAN_PAYLOADS`
_PLAN_SLOTS: dict[tuple[tuple[str, str], ...], bytes] = {}


def _plan_slots(slots: dict[str, Any]) -> bytes:
    """``canonical_json_utf8(slots)``, made once per distinct slots.  Slots of texts only (the
    common case: a slot name -> the text shown there) are found by their items; any other value
    is written anew (its JSON is the plain one's by construction)."""
    items = tuple(slots.items())
    for k, v in items:
        if type(k) is not str or type(v) is not str:
            return canonical_json_utf8(slots)
    got = _PLAN_SLOTS.get(items)
    if got is None:
        if len(_PLAN_SLOTS) >= _PLAN_PAYLOADS_MAX:
            _PLAN_SLOTS.clear()
        got = _PLAN_SLOTS[items] = canonical_json_utf8(slots)
    return got


#: ``canonical_json_utf8`` of recent requests' truth, by the dict itself: a study may ask one
#: request object of several judges (rbd's evaluators judge each item's one request, its loop
#: detectors prompted alike one case's), truth included.  Kept with its entry, so its ``id`` names
#: no other dict meanwhile; bounded like :data:`_PLAN_PAYLOADS`.  Only while planning, where nothing
#: changes a request's truth after it is asked (as nothing changes its messages,
#: :data:`_PLAN_PAYLOADS_BY_LIST`).
_PLAN_TRUTHS: dict[int, tuple[dict[str, Any], bytes]] = {}


def _plan_truth(truth: dict[str, Any]) -> bytes:
    """``canonical_json_utf8(truth)``, made once per truth dict asked."""
    got = _PLAN_TRUTHS.get(id(truth))
    if got is None:
        if len(_PLAN_TRUTHS) >= _PLAN_PAYLOADS_MAX:
            _PLAN_TRUTHS.clear()
        got = _PLAN_TRUTHS[id(truth)] = (truth, canonical_json_utf8(truth))
    return got[1]


def answered_call(judge: Judge, key: str, req: JudgeRequest, ans: RawAnswer,
                  cost_usd: float | None = None) -> CachedCall:
    """The cache row of an answer: what a live call stores, and what ``judgelab batch-import``
    stores for a provider's batch answer (:mod:`judgelab.batch`), so both read back alike.
    ``cost_usd``: the price paid (default: the judge's list price for the answer's tokens)."""
    return CachedCall(
        key=key, judge=judge.name, backend=judge.spec.backend, model=judge.spec.model,
        kind=req.kind.value, raw_text=join_reasoning(ans.text, ans.reasoning), logprobs=ans.logprobs,
        tokens_in=ans.tokens_in, tokens_out=ans.tokens_out, latency_s=ans.latency_s,
        cost_usd=judge.cost(ans.tokens_in, ans.tokens_out) if cost_usd is None else cost_usd,
        finish_reason=ans.finish_reason,
    )


class TooManyErrors(RuntimeError):
    """More calls failed than the configured tolerance; nothing is written."""


def _progress_enabled() -> bool:
    return os.environ.get("JUDGELAB_PROGRESS", "1") != "0"


def run_requests(
    judge: Judge,
    requests: Sequence[JudgeRequest],
    cache: CallStore,
    *,
    label: str | None = None,
    progress: bool | None = None,
    max_error_rate: float | None = 0.0,
) -> list[JudgeResponse]:
    """Answer ``requests`` with ``judge``, reusing and filling ``cache``.

    ``max_error_rate``: if more than this share of the distinct new calls failed,
    raise :class:`TooManyErrors` after recording what succeeded (so the rule fails,
    writes nothing, and the next run retries only the failures).  ``None`` never
    raises; error rows are then returned with status ``error``.
    """
    started = time.time()
    planning = bool(os.environ.get(PLAN_LOG_ENV))
    planned: list[PlannedPayload] = []
    if planning:  # a plan logs each payload's hash: its JSON is made once for the key and the hash
        planned = [_plan_payload(r) for r in requests]
        keys = judge.keys(requests, [p.data for p in planned],
                          [_plan_slots(r.slots) for r in requests] if judge.reads_truth else None,
                          [_plan_truth(r.truth) for r in requests] if judge.reads_truth else None)
    else:
        keys = judge.keys(requests)
    stored: dict[str, CachedCall] = cache.get_many(keys)
    todo: dict[str, JudgeRequest] = {}
    #: the payload a new call's cache row stores: the plan's shared one, or the request's own
    todo_payload: dict[str, dict[str, Any]] = {}
    for i, (k, r) in enumerate(zip(keys, requests, strict=True)):
        if k not in stored and k not in todo:
            todo[k] = r
            if planning:
                todo_payload[k] = planned[i].payload
    hits = sum(1 for k in keys if k in stored)
    errors: dict[str, str] = {}
    desc = f"{judge.name}" + (f" [{label}]" if label else "")
    show = _progress_enabled() if progress is None else progress
    log.info("%s: %d requests, %d cached, %d to ask", desc, len(requests), hits, len(todo))
    items = list(todo.items())
    with tqdm(total=len(items), desc=desc, unit="call", disable=not show or not items,
              mininterval=1.0, dynamic_ncols=True) as bar:
        step = max(1, judge.batch_size)
        for i in range(0, len(items), step):
            batch = items[i : i + step]
            answers = judge.answer([r for _, r in batch])
            if len(answers) != len(batch):
                raise RuntimeError(f"backend {judge.spec.backend} returned {len(answers)} answers for {len(batch)} requests")
            good: list[tuple[CachedCall, dict]] = []
            bad = []
            for (k, req), ans in zip(batch, answers, strict=True):
                if ans.error is not None or ans.text is None:
                    err = ans.error or "empty answer (no text)"
                    errors[k] = err
                    bad.append((k, judge.name, judge.spec.backend, judge.spec.model, err))
                    continue
                call = answered_call(judge, k, req, ans)
                good.append((call, todo_payload[k] if planning else req.payload()))
                stored[k] = call
            cache.put_many(good)
            cache.record_failures(bad)
            bar.update(len(batch))
    cache.record_run(
        judge=judge.name, backend=judge.spec.backend, model=judge.spec.model, label=label,
        requested=len(requests), hits=hits, new_calls=len(todo) - len(errors),
        failures=len(errors), started_at=started,
    )
    if errors:
        log.warning("%s: %d of %d new calls failed (first: %s)", desc, len(errors), len(todo),
                    next(iter(errors.values())))
        if max_error_rate is not None and len(errors) > max_error_rate * max(1, len(todo)):
            raise TooManyErrors(
                f"judge {judge.name!r}: {len(errors)} of {len(todo)} calls failed "
                f"(first error: {next(iter(errors.values()))}); answered calls are cached, "
                f"rerun to retry the failed ones"
            )
    if planning:
        _plan_log(judge, label, _plan_rule(cache), keys, planned, todo, stored, errors)
    new_keys = set(todo)
    name, backend, model, simulated = judge.name, judge.spec.backend, judge.spec.model, judge.simulated
    out = []
    for k, req in zip(keys, requests, strict=True):
        if k in errors:
            out.append(JudgeResponse(
                key=k, judge=judge.name, backend=judge.spec.backend, model=judge.spec.model,
                kind=req.kind.value, raw_text=None, value=None, status=CallStatus.ERROR,
                error=errors[k], simulated=judge.simulated, meta=dict(req.meta),
            ))
            continue
        c = stored[k]
        p = parse_answer(req, c.raw_text)
        out.append(JudgeResponse(
            key=k, judge=name, backend=backend, model=model,
            kind=req.kind.value, raw_text=c.raw_text, value=p.value, status=p.status,
            parse_method=p.method, tokens_in=c.tokens_in, tokens_out=c.tokens_out,
            latency_s=c.latency_s, cost_usd=c.cost_usd, logprobs=c.logprobs,
            cached=k not in new_keys, simulated=simulated, meta=dict(req.meta),
        ))
    return out


def parse_answer(req: JudgeRequest, raw_text: str | None) -> Parsed:
    """Parse a cached answer; pairwise verdicts and scores come from the text after a
    ``</think>`` block when there is one (labels parse the block themselves).

    Verdicts, scores and labels are parsed once per distinct (format, text): a judge answers
    many requests in the same words (a plan's stand-ins nearly always), and :class:`Parsed` is
    frozen, so the same one serves each.  Free text is not kept (each is new, and long)."""
    if req.kind is OutputKind.TEXT:
        return parse(req.kind, raw_text, fmt=req.fmt, score_ids=req.score_ids)
    return _parse_verdict(req.kind, req.fmt, req.score_ids, raw_text)


@lru_cache(maxsize=4096)
def _parse_verdict(kind: OutputKind, fmt: str, score_ids: str, raw_text: str | None) -> Parsed:
    text = raw_text
    if text is not None and kind in (OutputKind.PAIRWISE, OutputKind.SCORE) and "</think>" in text.lower():
        text = split_think(text)[1]
    return parse(kind, text, fmt=fmt, score_ids=score_ids)
