"""``judgelab batch-import DIR``: the providers' batch output files into the call cache.

Reads every ``*.jsonl`` in ``DIR/results/`` (or the files named), each one of:

* an OpenAI Batch API output or error file: one line per request,
  ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``, where a
  success's ``body`` is the chat completion the live API returns, and a failure has ``response``
  null and ``error`` ``{"code", "message"}`` (or a non-200 ``status_code``);
* Anthropic Message Batches results: one line per request, ``{"custom_id", "result"}`` with
  ``result.type`` ``succeeded`` (``result.message``: a Messages API message), ``errored``
  (``result.error``: an error response), ``canceled`` or ``expired``.

Each answer is stored under its ``custom_id``, the call-cache key the export wrote, as a live
answer is stored (:func:`judgelab.judges.runner.answered_call`): an OpenAI body is read by the judge's
own chat-completion parser (:meth:`~judgelab.judges.openai_backend.OpenAIJudge.parse_completion`),
an Anthropic message's text blocks are the text and its thinking blocks the reasoning (kept as a
think block, as a live reasoning field is), tokens from the usage, the cost at the batch price.
Every failure (an error line, a non-200 status, an errored, canceled or expired request) is
recorded in the cache's failures table, never stored as an answer, so the next run asks it again.

Nothing is half-imported: every line of every file is read and checked first -- JSON, one of the
two formats (not mixed within a file), a ``custom_id`` that this export wrote, an answer body of
the documented shape -- and the first fault stops the import with one line naming the file and
line, before anything is written; then the answers go into the cache in one transaction.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgelab.batch import MANIFEST, META, RESULTS_DIR
from judgelab.batch.export import BATCH_FORMAT, batch_judge, request_from_payload
from judgelab.cache import CachedCall
from judgelab.io import InputError
from judgelab.records import JudgeRequest, RawAnswer

#: ``result.type`` of an Anthropic results line that carries no answer.
ANTHROPIC_FAILED = ("errored", "canceled", "expired")


@dataclass
class ImportSummary:
    """What an import read and stored."""

    files: int = 0
    lines: int = 0
    answers: int = 0
    stored: int = 0
    failures: int = 0
    by_judge: dict[str, dict[str, int]] = field(default_factory=dict)

    def count(self, judge: str, what: str) -> None:
        row = self.by_judge.setdefault(judge, {"answers": 0, "failures": 0})
        row[what] += 1


def _fault(path: Path, lineno: int, what: str) -> InputError:
    return InputError(f"{path}:{lineno}: {what}; nothing was imported")


def read_export(batch_dir: Path) -> tuple[dict[str, Any], dict[str, tuple[str, dict[str, Any]]]]:
    """The export's ``batch.json`` and its manifest: custom_id -> (judge, request payload)."""
    meta_path = batch_dir / META
    if not meta_path.is_file():
        raise InputError(f"{batch_dir}: no {META} here: not a folder that judgelab plan --batch-dir wrote")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{meta_path}: not JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != BATCH_FORMAT:
        raise InputError(f"{meta_path}: not a judgelab batch export (format {BATCH_FORMAT!r} expected)")
    manifest: dict[str, tuple[str, dict[str, Any]]] = {}
    path = batch_dir / MANIFEST
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                row = json.loads(line)
                manifest[str(row["custom_id"])] = (str(row["judge"]), dict(row["request"]))
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{path}:{lineno}: not a line judgelab wrote ({type(exc).__name__}: {exc})") from None
    return meta, manifest


#: The two output formats (names as the messages say them).
OPENAI, ANTHROPIC = "OpenAI", "Anthropic"


def _line_format(obj: Any) -> str | None:
    """:data:`OPENAI` or :data:`ANTHROPIC` for an output line of either provider, else None (a batch
    *input* line, with ``method``/``body`` or ``params``, is neither)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("custom_id"), str):
        return None
    if "result" in obj and isinstance(obj["result"], dict) and not ({"response", "error", "params"} & set(obj)):
        return ANTHROPIC
    if ("response" in obj or "error" in obj) and not ({"result", "method", "body", "params"} & set(obj)):
        return OPENAI
    return None


def _openai_error(obj: Mapping[str, Any]) -> str | None:
    """The failure an OpenAI output/error line reports, or None for an answer."""
    err = obj.get("error")
    if err is not None:
        if isinstance(err, dict):
            message = err.get("message")
            return f"batch error {err.get('code') or 'unknown'}" + (f": {message}" if message else " (no message)")
        return f"batch error: {err}"
    resp = obj.get("response")
    if isinstance(resp, dict) and resp.get("status_code") != 200:
        body = resp.get("body")
        inner = body.get("error", body) if isinstance(body, dict) else body
        message = inner.get("message") if isinstance(inner, dict) else inner
        return f"HTTP {resp.get('status_code')}: {message or 'no message'}"
    return None


def _openai_answer(obj: Mapping[str, Any], judge: Any, req: JudgeRequest) -> RawAnswer | str:
    """The answer of a successful OpenAI line (the judge's own parser), or a failure's message.
    ``ValueError``: the line has no chat completion where one belongs."""
    failed = _openai_error(obj)
    if failed is not None:
        return failed
    resp = obj.get("response")
    if not isinstance(resp, dict) or not isinstance(resp.get("body"), dict):
        raise ValueError("no response.body (a chat completion) and no error")
    try:
        return judge.parse_completion(json.dumps(resp["body"]), req)
    except ValueError as exc:
        if "error in response body" in str(exc):  # a server's error said with status 200: a failure
            return str(exc)
        raise


def _anthropic_answer(obj: Mapping[str, Any], req: JudgeRequest) -> RawAnswer | str:
    """The answer of a ``succeeded`` Anthropic line (text blocks as the text, thinking blocks as the
    reasoning), or a failure's message.  ``ValueError``: the line is not of the documented shape."""
    result = obj["result"]
    kind = result.get("type")
    if kind in ANTHROPIC_FAILED:
        if kind != "errored":
            return f"batch request {kind}"
        err = result.get("error")
        inner = err.get("error", err) if isinstance(err, dict) else err
        if isinstance(inner, dict):
            return f"errored: {inner.get('type') or 'error'}: {inner.get('message') or ''}".strip()
        return f"errored: {inner}"
    if kind != "succeeded":
        raise ValueError(f"result.type {kind!r} is none of succeeded, {', '.join(ANTHROPIC_FAILED)}")
    message = result.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        raise ValueError("a succeeded result without a message and its content blocks")
    blocks = [b for b in message["content"] if isinstance(b, dict)]
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    thinking = "".join(str(b.get("thinking", "")) for b in blocks if b.get("type") == "thinking")
    usage = message.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    t_in, t_out = usage.get("input_tokens"), usage.get("output_tokens")
    # no usage: the rule of thumb the OpenAI parser uses (characters / 4)
    t_in = int(t_in) if isinstance(t_in, int) else len(req.prompt_text()) // 4
    t_out = int(t_out) if isinstance(t_out, int) else len(text) // 4
    stop = message.get("stop_reason")
    return RawAnswer(text=text, tokens_in=t_in, tokens_out=t_out, latency_s=0.0,
                     finish_reason=None if stop is None else str(stop),
                     reasoning=thinking if thinking.strip() else None)


def result_files(batch_dir: Path, files: Sequence[str | Path] = ()) -> list[Path]:
    """The output files to read: those named, else every ``*.jsonl`` in ``DIR/results/``."""
    if files:
        return [Path(f) for f in files]
    found = sorted((batch_dir / RESULTS_DIR).glob("*.jsonl"))
    if not found:
        raise InputError(f"{batch_dir / RESULTS_DIR}: no *.jsonl output files; save the providers' batch output "
                         f"files there (or name them after {batch_dir})")
    return found


def import_batches(batch_dir: Path, *, files: Sequence[str | Path] = (), cache: str | None = None) -> ImportSummary:
    """Read and check every output file, then store the answers and record the failures in the
    call cache (``cache``, default: the one the export's plan counted against)."""
    from judgelab.cache import CallCache
    from judgelab.judges.runner import answered_call

    meta, manifest = read_export(batch_dir)
    location = cache or meta.get("cache")
    if not location:
        raise InputError(f"{batch_dir / META}: no call cache recorded (a server URL with a password is not "
                         f"written); name it with --cache")
    judges: dict[str, Any] = {}
    answers: dict[str, tuple[CachedCall, dict[str, Any]]] = {}
    failures: dict[str, tuple[str, str]] = {}
    summary = ImportSummary()
    for path in result_files(batch_dir, files):
        summary.files += 1
        fmt: str | None = None
        try:
            fh = path.open(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror})") from None
        with fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except ValueError as exc:
                    raise _fault(path, lineno, f"not JSON ({exc})") from None
                kind = _line_format(obj)
                if kind is None:
                    raise _fault(path, lineno, "not a line of a batch output file (OpenAI: id, custom_id, response, "
                                               "error; Anthropic: custom_id, result)")
                if fmt is not None and kind != fmt:
                    raise _fault(path, lineno, f"an {kind} line in a file of {fmt} lines")
                fmt = kind
                key = obj["custom_id"]
                if key not in manifest:
                    raise _fault(path, lineno, f"custom_id {key[:80]!r} is no call this export wrote "
                                               f"({batch_dir / MANIFEST})")
                name, payload = manifest[key]
                if name not in judges:
                    entry = meta.get("judges", {}).get(name)
                    if entry is None:
                        raise InputError(f"{batch_dir / META}: no entry for judge {name!r} of the manifest")
                    judges[name] = batch_judge(entry)
                judge = judges[name]
                req = request_from_payload(payload)
                if judge.key(req) != key:  # the manifest's request must be the call the key names
                    raise _fault(path, lineno, f"custom_id {key!r} is not the key of its manifest request for "
                                               f"judge {name!r} ({batch_dir / MANIFEST} was changed)")
                try:
                    got = _openai_answer(obj, judge, req) if kind == OPENAI else _anthropic_answer(obj, req)
                except ValueError as exc:
                    raise _fault(path, lineno, f"not an {kind} batch output line ({exc})") from None
                summary.lines += 1
                if isinstance(got, str):
                    failures.setdefault(key, (name, got))
                    continue
                if key not in answers:
                    cost = judge.spec.price.batch_cost(got.tokens_in, got.tokens_out)
                    answers[key] = (answered_call(judge, key, req, got, cost_usd=cost), req.payload())
    kept = {k: v for k, v in failures.items() if k not in answers}  # answered in another file: not a failure
    with CallCache(location) as store:
        summary.stored = store.put_many(answers.values())
        store.record_failures((k, n, judges[n].spec.backend, judges[n].spec.model, e) for k, (n, e) in kept.items())
    summary.answers, summary.failures = len(answers), len(kept)
    for call, _ in answers.values():
        summary.count(call.judge, "answers")
    for name, _ in kept.values():
        summary.count(name, "failures")
    return summary


def cmd_batch_import(args: argparse.Namespace) -> int:
    summary = import_batches(Path(args.batch_dir), files=args.files or (), cache=args.cache)
    print(f"{summary.files} files, {summary.lines} lines: {summary.answers} answers "
          f"({summary.stored} new in the cache, {summary.answers - summary.stored} there already), "
          f"{summary.failures} failures recorded (asked again by the next run)")
    for judge, row in sorted(summary.by_judge.items()):
        print(f"  {judge}: {row['answers']} answers, {row['failures']} failures")
    return 0


def add_command(sub: Any) -> None:
    """Register ``batch-import`` on the ``judgelab`` subcommand parser."""
    p = sub.add_parser("batch-import", help="store the providers' batch output files (OpenAI Batch API, Anthropic "
                                            "Message Batches) in the call cache; see judgelab plan --batch-dir")
    p.add_argument("batch_dir", help="the folder judgelab plan --batch-dir wrote")
    p.add_argument("files", nargs="*", help="output files to read (default: every *.jsonl in BATCH_DIR/results/)")
    p.add_argument("--cache", help="call cache to fill (default: the one the plan counted against, in BATCH_DIR/"
                                   "batch.json)")
    p.set_defaults(fn=cmd_batch_import)
