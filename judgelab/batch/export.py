"""``judgelab plan --batch-dir DIR``: the calls a run still needs, as provider batch input files.

What is written, per judge of the ``openai`` backend (an OpenAI-compatible endpoint; judges of
other backends run on your own hardware and have no provider batch job):

* ``DIR/openai/<judge>-001.jsonl``: OpenAI Batch API input, one line per call,
  ``{"custom_id": KEY, "method": "POST", "url": "/v1/chat/completions", "body": BODY}``, where
  ``BODY`` is exactly the JSON the judge would POST live
  (:meth:`judgelab.judges.openai_backend.OpenAIJudge.wire_body`).  The Batch API takes up to
  50,000 requests and 200 MB per file, and one model per file, so each judge gets its own files,
  split at :data:`OPENAI_MAX_LINES` / :data:`OPENAI_MAX_BYTES`.
* ``DIR/anthropic/<judge>-001.jsonl``: Anthropic Message Batches requests, one
  ``{"custom_id": KEY, "params": PARAMS}`` per line (the items of the ``requests`` list that
  ``POST /v1/messages/batches`` takes: up to 100,000 requests and 256 MB per batch), where
  ``PARAMS`` is the Messages API form of the same body (:func:`anthropic_params`).
* ``DIR/manifest.jsonl``: per call its key, judge and request payload (what ``batch-import``
  checks each answer against), and ``DIR/batch.json``: the call cache the plan counted against and
  each judge's config entry.

``custom_id`` is the call-cache key itself, so an answer finds its call without a lookup table:
the key is a SHA-256 hex digest (:meth:`judgelab.records.JudgeRequest.key`), 64 characters of
``[0-9a-f]``, which fits both providers' rules (Anthropic's ``^[a-zA-Z0-9_-]{1,64}$``; OpenAI's
unique string) -- so no mapping file is needed, and :func:`export_batches` stops if a key ever
did not fit.  Keys are computed by the real judge of each config entry (its identity: backend,
model, sampling, base URL or launcher, output limits), exactly as a live run computes them; the
API key is not needed for that and is never read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from judgelab.batch import ANTHROPIC_DIR, MANIFEST, META, OPENAI_DIR, RESULTS_DIR
from judgelab.config import JudgeSpec
from judgelab.io import InputError
from judgelab.records import JudgeRequest, canonical_json, sha256_hex

#: OpenAI Batch API: "A single batch may include up to 50,000 requests, and a batch input file can
#: be up to 200 MB in size" (platform.openai.com/docs/guides/batch, "Rate limits").
OPENAI_MAX_LINES = 50_000
OPENAI_MAX_BYTES = 200 * 1000 * 1000
#: Anthropic Message Batches: up to 100,000 requests or 256 MB per batch
#: (docs.claude.com/en/docs/build-with-claude/batch-processing, "Batch limitations").
ANTHROPIC_MAX_LINES = 100_000
ANTHROPIC_MAX_BYTES = 256 * 1000 * 1000
#: Anthropic's rule for ``custom_id`` (the Message Batches API reference).
ANTHROPIC_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
BATCH_FORMAT = "judgelab-batch/1"


def check_batch_dir(path: Path) -> None:
    """Refuse a ``--batch-dir`` that exists with anything in it: batch files are written into a new
    (or empty) folder only, so no file judgelab did not write is replaced, and a later import never
    mixes two exports' manifests."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise InputError(f"{path}: exists and is not an empty folder; give --batch-dir a new folder "
                         f"(nothing there was replaced)")


@contextmanager
def _placeholder_key(var: str | None) -> Iterator[None]:
    """Set the judge's API-key variable to a placeholder while its judge is built, if unset: a key
    or a body does not depend on the key, and exporting or importing must work without one."""
    if var is None or os.environ.get(var):
        yield
        return
    os.environ[var] = "unused-by-judgelab-batch"
    try:
        yield
    finally:
        os.environ.pop(var, None)


def has_batch_job(entry: Mapping[str, Any]) -> bool:
    """Whether a judge entry's backend sends chat-completions bodies a provider batch job can carry
    (its judge class has ``wire_body``: the ``openai`` backend, any OpenAI-compatible endpoint) --
    asked of the backend class, not its name."""
    from judgelab.judges import BACKENDS

    name = str(entry.get("backend", ""))
    return name in BACKENDS and callable(getattr(BACKENDS.get(name), "wire_body", None))


def batch_judge(entry: Mapping[str, Any]) -> Any:
    """The real ``openai`` judge of a config entry (built, never asked: no server starts, no key is
    read), for its keys, its request bodies and its answer parsing."""
    from judgelab.judges import make_judge
    from judgelab.judges.openai_backend import OpenAIJudge

    spec = JudgeSpec.from_dict(dict(entry), where=f"judge {entry.get('name')}")
    with _placeholder_key(OpenAIJudge.key_env(spec.options)):
        return make_judge(spec)


def request_from_payload(payload: Mapping[str, Any]) -> JudgeRequest:
    """The request whose :meth:`~judgelab.records.JudgeRequest.payload` is ``payload`` (a cache
    row's stored request): the payload holds every field a non-simulated judge's key and body read."""
    return JudgeRequest(messages=list(payload["messages"]), kind=payload["kind"], fmt=payload["fmt"],
                        score_ids=payload["score_ids"], params=dict(payload.get("params") or {}),
                        task=payload.get("task"), json_mode=bool(payload.get("json_mode", False)))


def anthropic_params(body: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages API form of a chat-completions body: system messages become the top-level
    ``system`` (the Messages API has no system role), ``max_tokens`` (or
    ``max_completion_tokens``) the required ``max_tokens``, ``stop`` the ``stop_sequences``;
    ``temperature``, ``top_p`` and ``top_k`` pass as they are.  What the Messages API has no
    counterpart for is left out: ``seed``, ``presence_penalty``, ``frequency_penalty``,
    ``response_format``, ``logprobs``, ``top_logprobs``."""
    system = [str(m["content"]) for m in body["messages"] if m["role"] in ("system", "developer")]
    params: dict[str, Any] = {
        "model": body["model"],
        "max_tokens": int(body.get("max_tokens") or body.get("max_completion_tokens") or 0),
        "messages": [{"role": m["role"], "content": m["content"]} for m in body["messages"]
                     if m["role"] not in ("system", "developer")],
    }
    if system:
        params["system"] = "\n\n".join(system)
    for key in ("temperature", "top_p", "top_k"):
        if body.get(key) is not None:
            params[key] = body[key]
    stop = body.get("stop")
    if stop:
        params["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    return params


class _Parts:
    """One judge's batch input files of one provider, split where a file would pass the
    provider's request or byte limit: ``<judge>-001.jsonl``, ``<judge>-002.jsonl``, ..."""

    def __init__(self, folder: Path, judge: str, max_lines: int, max_bytes: int) -> None:
        self.folder, self.judge, self.max_lines, self.max_bytes = folder, judge, max_lines, max_bytes
        self.files: list[Path] = []
        self._fh: TextIO | None = None
        self._lines = self._bytes = 0

    def write(self, line: str) -> None:
        size = len(line.encode("utf-8")) + 1
        if self._fh is None or self._lines >= self.max_lines or self._bytes + size > self.max_bytes:
            self.close()
            path = self.folder / f"{self.judge}-{len(self.files) + 1:03d}.jsonl"
            self.folder.mkdir(parents=True, exist_ok=True)
            self._fh = path.open("x", encoding="utf-8")
            self.files.append(path)
            self._lines = self._bytes = 0
        self._fh.write(line + "\n")
        self._lines += 1
        self._bytes += size

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def export_batches(batch_dir: Path, todo: Mapping[str, Sequence[str]], stand_in_cache: Path,
                   entries: Mapping[str, Mapping[str, Any]], cache_path: Path | str, *,
                   progress: bool = True) -> pd.DataFrame:
    """Write the batch files of the calls a plan counts as not yet cached (module docstring).

    ``todo``: per judge, the payload hashes of those calls (:func:`judgelab.workflow.plan.uncached_payloads`);
    ``stand_in_cache``: the plan's stand-in cache (:func:`judgelab.workflow.plan.plan_calls` with
    ``keep_cache``), which holds the payloads; ``entries``: the judges' config entries;
    ``cache_path``: the real call cache the plan compared against (recorded for ``batch-import``).
    Returns one row per judge: ``judge, backend, requests, openai_files, anthropic_files, note``."""
    from judgelab.cache import CallCache

    check_batch_dir(batch_dir)
    rows: list[dict[str, Any]] = []
    judges: dict[str, Any] = {}
    for name, shas in todo.items():
        entry = entries.get(name, {})
        backend = str(entry.get("backend", "unknown"))
        if not shas:
            continue
        if not has_batch_job(entry):
            rows.append({"judge": name, "backend": backend, "requests": 0, "openai_files": 0, "anthropic_files": 0,
                         "note": f"not exported: {len(shas)} calls of backend {backend!r}, which has no provider "
                                 f"batch job (it runs live)"})
            continue
        judges[name] = batch_judge(entry)
    wanted: dict[str, list[str]] = {}
    for name in judges:
        for sha in todo[name]:
            wanted.setdefault(sha, []).append(name)
    batch_dir.mkdir(parents=True, exist_ok=True)
    (batch_dir / RESULTS_DIR).mkdir(exist_ok=True)
    openai = {n: _Parts(batch_dir / OPENAI_DIR, n, OPENAI_MAX_LINES, OPENAI_MAX_BYTES) for n in judges}
    anthropic = {n: _Parts(batch_dir / ANTHROPIC_DIR, n, ANTHROPIC_MAX_LINES, ANTHROPIC_MAX_BYTES) for n in judges}
    done: set[tuple[str, str]] = set()
    try:
        with (batch_dir / MANIFEST).open("x", encoding="utf-8") as manifest:
            if wanted:
                with CallCache(stand_in_cache) as plan_cache:
                    for call in plan_cache.iter_calls():
                        payload = plan_cache.request(call.key)
                        sha = sha256_hex(canonical_json(payload))
                        for name in wanted.get(sha, ()):
                            if (name, sha) in done:
                                continue
                            done.add((name, sha))
                            judge = judges[name]
                            req = request_from_payload(payload)
                            key = judge.key(req)
                            if not ANTHROPIC_CUSTOM_ID.match(key):  # a SHA-256 hex digest always fits
                                raise RuntimeError(f"call key {key!r} does not fit a batch custom_id")
                            body = judge.wire_body(req)
                            openai[name].write(json.dumps({"custom_id": key, "method": "POST",
                                                           "url": "/v1/chat/completions", "body": body},
                                                          ensure_ascii=False))
                            anthropic[name].write(json.dumps({"custom_id": key, "params": anthropic_params(body)},
                                                             ensure_ascii=False))
                            manifest.write(json.dumps({"custom_id": key, "judge": name, "request": payload},
                                                      ensure_ascii=False) + "\n")
    finally:
        for parts in (*openai.values(), *anthropic.values()):
            parts.close()
    missing = sum(1 for sha, names in wanted.items() for n in names if (n, sha) not in done)
    if missing:  # the stand-ins' cache holds every planned call; a gap is a bug, not a user's error
        raise RuntimeError(f"{missing} planned calls have no request in the plan's cache {stand_in_cache}")
    for name in judges:
        rows.append({"judge": name, "backend": str(entries[name]["backend"]), "requests": len(todo[name]),
                     "openai_files": len(openai[name].files), "anthropic_files": len(anthropic[name].files),
                     "note": ""})
    location = str(cache_path)
    meta = {"format": BATCH_FORMAT, "cache": None if "@" in location else location,
            "judges": {n: dict(entries[n]) for n in judges},
            "files": {n: {"openai": [str(p.relative_to(batch_dir)) for p in openai[n].files],
                          "anthropic": [str(p.relative_to(batch_dir)) for p in anthropic[n].files]} for n in judges}}
    (batch_dir / META).write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    table = pd.DataFrame(rows, columns=["judge", "backend", "requests", "openai_files", "anthropic_files", "note"])
    if progress:
        import sys

        print(f"judgelab plan: batch files of {int(table['requests'].sum())} calls written to {batch_dir}",
              file=sys.stderr, flush=True)
    return table


def format_export(table: pd.DataFrame, batch_dir: Path) -> str:
    """What was exported, and the next steps, as text for the command line."""
    if table.empty:
        return f"batch files: none written to {batch_dir} (no call of this run is left to ask)\n"
    lines = [f"batch files in {batch_dir}:", table.to_string(index=False),
             f"submit {batch_dir}/{OPENAI_DIR}/*.jsonl (OpenAI Batch API, endpoint /v1/chat/completions) or "
             f"{batch_dir}/{ANTHROPIC_DIR}/*.jsonl (Anthropic Message Batches: each file's lines are its requests), "
             f"save the output files in {batch_dir}/{RESULTS_DIR}/, then: judgelab batch-import {batch_dir}"]
    return "\n".join(lines) + "\n"
