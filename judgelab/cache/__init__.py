"""The persistent call cache: one SQLite file (WAL mode) shared by every job.

Why SQLite: parallel Snakemake jobs (and SLURM jobs on a shared file system that
supports locking) write to it at once; WAL lets readers proceed while one writer
commits, and ``busy_timeout`` turns lock contention into waiting instead of
errors.  Every answered call is committed as soon as its batch finishes, so a run
killed with SIGKILL loses only the calls in flight.

What is stored:

* ``calls`` -- one row per answered request, keyed by :meth:`JudgeRequest.key`, with the
  full request kept for audit (zlib-compressed JSON: prompts dominate the file's size;
  read it back with :func:`decode_request` or :meth:`CallCache.request`).
  The *raw* text is stored, not only the parsed value: parsing happens on read, so
  a better parser applies to old answers without asking again.  Unparsable answers
  and refusals are answers and are cached; errors (no answer) are not.
* ``failures`` -- every error, for the reports; the request is retried next run.
* ``runs`` -- one row per judge per runner invocation: requested, cache hits, new
  calls, failures.  This is what ``judgelab cache-stats`` and the call summary
  table report.

Backends.  ``cache:`` in the config (and every ``CallCache(location)`` call) is either
a file path -- this SQLite cache -- or a URL whose scheme names a registered backend,
e.g. ``postgresql://host/db`` (:mod:`judgelab.cache.postgres`).  SQLite's WAL mode
needs every process on one host (its shared-memory index does not work over NFS,
Lustre or GPFS), so a cluster whose jobs run on more than one node needs a server
backend.  ``CallCache(url)`` returns the registered subclass, so the many call sites
that open a cache from the config need not know which backend they get; every
backend keeps the same contract (first answer wins, one transaction per batch,
failures kept apart from answers).  Register a new one with
:func:`register_cache_backend`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    kind TEXT NOT NULL,
    request_json TEXT NOT NULL,
    raw_text TEXT,
    logprobs_json TEXT,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    latency_s REAL NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    finish_reason TEXT,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    judge TEXT NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    error TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    judge TEXT NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    label TEXT,
    requested INTEGER NOT NULL,
    hits INTEGER NOT NULL,
    new_calls INTEGER NOT NULL,
    failures INTEGER NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_judge ON calls(judge);
"""

_CHUNK = 500  # SQLite's host-parameter limit is 999 on old builds


@dataclass
class CachedCall:
    key: str
    judge: str
    backend: str
    model: str
    kind: str
    raw_text: str | None
    logprobs: dict[str, float] | None
    tokens_in: int
    tokens_out: int
    latency_s: float
    cost_usd: float
    finish_reason: str | None


# URL scheme -> "module:Class" of a CallCache subclass; imported on first use so that
# the SQLite path needs no database driver.
CACHE_BACKENDS: dict[str, str] = {
    "postgresql": "judgelab.cache.postgres:PostgresCallCache",
    "postgres": "judgelab.cache.postgres:PostgresCallCache",
}


def register_cache_backend(scheme: str, target: str) -> None:
    """Make ``CallCache("<scheme>://...")`` open ``target`` ("module:Class", a CallCache subclass)."""
    CACHE_BACKENDS[scheme.lower()] = target


def cache_scheme(location: str | os.PathLike[str]) -> str | None:
    """The URL scheme of a cache location, or None for a file path (the SQLite cache)."""
    if not isinstance(location, str) or "://" not in location:
        return None
    return location.split("://", 1)[0].lower()


def cache_backend(location: str | os.PathLike[str]) -> type[CallCache]:
    """The class that opens ``location``; a clear error for an unknown URL scheme."""
    scheme = cache_scheme(location)
    if scheme is None:
        return CallCache
    if scheme not in CACHE_BACKENDS:
        raise ValueError(
            f"cache {_redact(str(location))!r}: unknown cache backend {scheme!r}"
            f" (known: a file path for SQLite, or {', '.join(s + '://' for s in sorted(CACHE_BACKENDS))})"
        )
    import importlib

    module, _, name = CACHE_BACKENDS[scheme].partition(":")
    return getattr(importlib.import_module(module), name)


def _redact(url: str) -> str:
    """A URL with any password replaced by ***, for messages and logs."""
    import re

    return re.sub(r"(://[^/:@]*:)[^/@]*@", r"\1***@", url)


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """A cache method whose damaged-file error is :meth:`CallCache._readable`'s one line: random
    bytes inside a valid file pass the open and fail only at the first query that meets them."""
    import functools

    @functools.wraps(method)
    def wrapper(self: CallCache, *args: Any, **kwargs: Any) -> Any:
        with self._readable():
            return method(self, *args, **kwargs)

    return wrapper


class CallStore(Protocol):
    """What :func:`judgelab.judges.runner.run_requests` reads and writes: :class:`CallCache` on disk, or
    :class:`judgelab.workflow.calls.PlanCache` in memory for ``judgelab plan``."""

    def get_many(self, keys: Sequence[str]) -> dict[str, CachedCall]: ...

    def put_many(self, calls: Iterable[tuple[CachedCall, dict[str, Any]]]) -> int: ...

    def record_failures(self, failures: Iterable[tuple[str, str, str, str, str]]) -> None: ...

    def record_run(
        self, *, judge: str, backend: str, model: str, label: str | None, requested: int,
        hits: int, new_calls: int, failures: int, started_at: float,
    ) -> None: ...


class CallCache:
    """SQLite-backed cache of judge calls. Safe to open from many processes on one host.

    ``CallCache("postgresql://...")`` (any registered URL scheme) returns that backend
    instead; see :data:`CACHE_BACKENDS`.
    """

    def __new__(cls, path: str | os.PathLike[str] = "", *args: Any, **kwargs: Any) -> CallCache:
        if cls is CallCache:
            backend = cache_backend(path)
            if backend is not CallCache:
                return super().__new__(backend)
        return super().__new__(cls)

    def __init__(self, path: str | os.PathLike[str], *, timeout_s: float = 120.0) -> None:
        self.path = Path(path)
        self.location = str(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None)
        with self._readable():
            self._conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
            # Switching a new file to WAL needs an exclusive lock and SQLite reports BUSY at
            # once (without its busy handler) when another process is doing the same; retry.
            _retry_busy(lambda: self._conn.execute("PRAGMA journal_mode=WAL"), timeout_s)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            _retry_busy(lambda: self._write(lambda c: _exec_script(c, SCHEMA)), timeout_s)

    @contextmanager
    def _readable(self) -> Iterator[None]:
        """A damaged file (not SQLite, truncated, malformed pages) is an error naming the file and
        the remedy, never a bare ``DatabaseError`` (a locked one stays an ``OperationalError``)."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError | sqlite3.ProgrammingError | sqlite3.IntegrityError
                          | sqlite3.DataError | sqlite3.NotSupportedError):
                raise  # a lock, or a fault of the caller's values: not damage to the file
            from judgelab.io import InputError

            self._conn.close()
            raise InputError(f"{self.path}: not a readable call cache ({exc}); move it aside "
                             f"(mv {self.path} {self.path}.damaged) and rerun: a new cache is started, and the "
                             f"calls stored in the damaged one are asked again") from None

    # -- plumbing -----------------------------------------------------------------
    def _write(self, fn) -> Any:
        """Run ``fn(conn)`` in one IMMEDIATE transaction (takes the write lock up front,
        so concurrent writers queue on busy_timeout instead of failing on upgrade)."""
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            out = fn(c)
        except BaseException:
            c.execute("ROLLBACK")
            raise
        c.execute("COMMIT")
        return out

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads --------------------------------------------------------------------
    @_guarded
    def get(self, key: str) -> CachedCall | None:
        row = self._conn.execute(_SELECT + " WHERE key = ?", (key,)).fetchone()
        return _to_call(row) if row else None

    @_guarded
    def get_many(self, keys: Sequence[str]) -> dict[str, CachedCall]:
        out: dict[str, CachedCall] = {}
        uniq = list(dict.fromkeys(keys))
        for i in range(0, len(uniq), _CHUNK):
            chunk = uniq[i : i + _CHUNK]
            q = _SELECT + f" WHERE key IN ({','.join('?' * len(chunk))})"
            for row in self._conn.execute(q, chunk):
                call = _to_call(row)
                out[call.key] = call
        return out

    @_guarded
    def __contains__(self, key: str) -> bool:
        return self._conn.execute("SELECT 1 FROM calls WHERE key = ?", (key,)).fetchone() is not None

    @_guarded
    def __len__(self) -> int:
        return self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def iter_calls(self, judge: str | None = None) -> Iterator[CachedCall]:
        q, args = _SELECT, tuple[str, ...]()
        if judge is not None:
            q, args = q + " WHERE judge = ?", (judge,)
        with self._readable():
            rows = self._conn.execute(q, args)
        while True:
            with self._readable():
                row = rows.fetchone()
            if row is None:
                return
            yield _to_call(row)

    # -- writes -------------------------------------------------------------------
    @_guarded
    def put_many(self, calls: Iterable[tuple[CachedCall, dict[str, Any]]]) -> int:
        """Store answered calls (with their request dicts); first answer wins."""
        now = time.time()
        rows = [
            (
                c.key, c.judge, c.backend, c.model, c.kind,
                encode_request(req),
                c.raw_text,
                None if c.logprobs is None else json.dumps(c.logprobs),
                c.tokens_in, c.tokens_out, c.latency_s, c.cost_usd, c.finish_reason, now,
            )
            for c, req in calls
        ]
        if not rows:
            return 0

        def fn(conn: sqlite3.Connection) -> int:
            cur = conn.executemany(
                "INSERT OR IGNORE INTO calls (key, judge, backend, model, kind, request_json,"
                " raw_text, logprobs_json, tokens_in, tokens_out, latency_s, cost_usd,"
                " finish_reason, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )
            return cur.rowcount

        return self._write(fn)

    @_guarded
    def record_failures(self, failures: Iterable[tuple[str, str, str, str, str]]) -> None:
        """Record ``(key, judge, backend, model, error)`` tuples."""
        now = time.time()
        rows = [(*f, now) for f in failures]
        if rows:
            self._write(
                lambda c: c.executemany(
                    "INSERT INTO failures (key, judge, backend, model, error, created_at)"
                    " VALUES (?,?,?,?,?,?)",
                    rows,
                )
            )

    @_guarded
    def record_run(
        self, *, judge: str, backend: str, model: str, label: str | None, requested: int,
        hits: int, new_calls: int, failures: int, started_at: float,
    ) -> None:
        self._write(
            lambda c: c.execute(
                "INSERT INTO runs (judge, backend, model, label, requested, hits, new_calls,"
                " failures, started_at, finished_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (judge, backend, model, label, requested, hits, new_calls, failures,
                 started_at, time.time()),
            )
        )

    @_guarded
    def request(self, key: str) -> dict[str, Any] | None:
        """The stored request of a call (for audits), or None if the key is not cached."""
        row = self._conn.execute("SELECT request_json FROM calls WHERE key = ?", (key,)).fetchone()
        return None if row is None else decode_request(row[0])

    # -- reports ------------------------------------------------------------------
    def stats(self) -> list[dict[str, Any]]:
        """Per-judge totals: stored calls, tokens, cost, failures, and run counters."""
        with self._readable():
            return self._stats()

    def _stats(self) -> list[dict[str, Any]]:
        stored = {
            r[0]: r
            for r in self._conn.execute(
                "SELECT judge, backend, model, COUNT(*), SUM(tokens_in), SUM(tokens_out),"
                " SUM(cost_usd) FROM calls GROUP BY judge"
            )
        }
        fails = dict(self._conn.execute("SELECT judge, COUNT(*) FROM failures GROUP BY judge"))
        runs = {
            r[0]: r
            for r in self._conn.execute(
                "SELECT judge, SUM(requested), SUM(hits), SUM(new_calls) FROM runs GROUP BY judge"
            )
        }
        out = []
        for judge in sorted(set(stored) | set(fails) | set(runs)):
            s = stored.get(judge)
            r = runs.get(judge)
            out.append(
                {
                    "judge": judge,
                    "backend": s[1] if s else None,
                    "model": s[2] if s else None,
                    "stored_calls": s[3] if s else 0,
                    "tokens_in": int(s[4] or 0) if s else 0,
                    "tokens_out": int(s[5] or 0) if s else 0,
                    "cost_usd": float(s[6] or 0.0) if s else 0.0,
                    "failures": fails.get(judge, 0),
                    "requested": int(r[1]) if r else 0,
                    "hits": int(r[2]) if r else 0,
                    "new_calls": int(r[3]) if r else 0,
                }
            )
        return out


_SELECT = (
    "SELECT key, judge, backend, model, kind, raw_text, logprobs_json, tokens_in,"
    " tokens_out, latency_s, cost_usd, finish_reason FROM calls"
)


def _to_call(row: tuple) -> CachedCall:
    return CachedCall(
        key=row[0], judge=row[1], backend=row[2], model=row[3], kind=row[4], raw_text=row[5],
        logprobs=None if row[6] is None else json.loads(row[6]), tokens_in=row[7],
        tokens_out=row[8], latency_s=row[9], cost_usd=row[10], finish_reason=row[11],
    )


def encode_request(req: dict[str, Any]) -> bytes:
    return zlib.compress(json.dumps(req, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8"), 6)


def decode_request(blob: bytes | str) -> dict[str, Any]:
    """Inverse of :func:`encode_request`; plain JSON text (older caches) is read as is."""
    if isinstance(blob, str):
        return json.loads(blob)
    return json.loads(zlib.decompress(blob).decode("utf-8"))


def _retry_busy(fn, timeout_s: float) -> Any:
    """Call ``fn`` until it stops failing with 'database is locked' (bounded by timeout_s)."""
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(0.2, delay * 2)


def _exec_script(conn: sqlite3.Connection, script: str) -> None:
    # executescript() would COMMIT our open transaction; run statements one by one.
    for stmt in script.split(";"):
        if stmt.strip():
            conn.execute(stmt)
