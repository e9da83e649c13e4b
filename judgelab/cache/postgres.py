"""The call cache on a PostgreSQL server: for clusters whose jobs run on more than one node.

Why a server and not SQLite: SQLite's WAL mode keeps its index in a shared-memory file
that only processes on one host can share, and file locking over NFS, Lustre or GPFS is
not reliable, so jobs on two nodes writing one ``calls.sqlite`` can corrupt it or lose
commits.  A PostgreSQL server serializes writers itself; every job opens its own
connection (``cache: postgresql://host/db`` in the config) and the database can live
anywhere the nodes reach.

Same contract as the SQLite :class:`~judgelab.cache.CallCache` (same tables and columns,
same methods), so the runner and every study use it unchanged:

* nothing asked twice -- ``calls.key`` is the primary key and writes are
  ``INSERT ... ON CONFLICT (key) DO NOTHING``: the first committed answer wins, a second
  writer of the same key (another node, or the same request in two jobs) keeps it;
* a killed job loses nothing committed -- each :meth:`put_many` is one transaction
  (one batch of answers); a job killed mid-batch leaves an open transaction that the
  server rolls back when the connection drops, so only the batch in flight is lost;
* failures are not answers -- they go to ``failures`` only, and are asked again.

Concurrency details.  Rows of one batch are inserted in key order, so two writers of
overlapping batches take their row locks in the same order and cannot deadlock; a
deadlock or serialization error (which the server resolves by aborting one side) is
retried anyway.  The schema is created under a transaction-scoped advisory lock because
``CREATE TABLE IF NOT EXISTS`` is not safe against a concurrent creator in PostgreSQL.
A connection that breaks between batches (server restart, idle timeout on a long GPU
job) is reopened and the write retried once; for answers this is idempotent (ON
CONFLICT), for the ``failures``/``runs`` counters a write whose commit was sent but not
acknowledged could in principle be counted twice.

Credentials: put the password in ``~/.pgpass`` or ``PGPASSWORD``/``PGPASSFILE``, not in
the URL -- the URL is part of the config and so of every rule's params and logs.  libpq's
environment variables (``PGHOST``, ``PGUSER``, ``PGSSLMODE``, ...) apply as usual.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from judgelab.cache import _SELECT, CachedCall, CallCache, _redact, _to_call, decode_request, encode_request

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    kind TEXT NOT NULL,
    request_json BYTEA NOT NULL,
    raw_text TEXT,
    logprobs_json TEXT,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    latency_s DOUBLE PRECISION NOT NULL DEFAULT 0,
    cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
    finish_reason TEXT,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    id BIGSERIAL PRIMARY KEY,
    key TEXT NOT NULL,
    judge TEXT NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    error TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id BIGSERIAL PRIMARY KEY,
    judge TEXT NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    label TEXT,
    requested INTEGER NOT NULL,
    hits INTEGER NOT NULL,
    new_calls INTEGER NOT NULL,
    failures INTEGER NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    finished_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_judge ON calls(judge);
"""

# Arbitrary constant naming the advisory lock that serializes schema creation.
_SCHEMA_LOCK = 0x6A6C_6361  # "jlca"

_INSERT_CALLS = (
    "INSERT INTO calls (key, judge, backend, model, kind, request_json, raw_text, logprobs_json,"
    " tokens_in, tokens_out, latency_s, cost_usd, finish_reason, created_at)"
    " SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::bytea[],"
    " %s::text[], %s::text[], %s::int[], %s::int[], %s::float8[], %s::float8[], %s::text[], %s::float8[])"
    " ON CONFLICT (key) DO NOTHING"
)


def _psycopg():
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the PostgreSQL call cache needs psycopg 3: pip install 'judgelab[slurm]'"
        ) from exc
    return psycopg


class PostgresCallCache(CallCache):
    """:class:`CallCache` on a PostgreSQL server (``postgresql://`` URL). Safe from many hosts."""

    _conn: Any  # a psycopg connection (psycopg is imported on first use)

    def __init__(self, url: str, *, timeout_s: float = 120.0) -> None:
        self.location = url
        self.path = None  # type: ignore[assignment]  # no file: the SQLite-only attribute
        self._timeout_s = timeout_s
        self._conn = self._connect()
        self._write(self._create_schema)

    def _connect(self):
        psycopg = _psycopg()
        try:
            return psycopg.connect(self.location, autocommit=True, connect_timeout=int(max(1, self._timeout_s)))
        except psycopg.OperationalError as exc:
            raise psycopg.OperationalError(f"cannot open the call cache {_redact(self.location)}: {exc}") from exc

    @staticmethod
    def _create_schema(conn) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        for stmt in SCHEMA.split(";"):
            if stmt.strip():
                conn.execute(stmt)

    # -- plumbing -----------------------------------------------------------------
    def _write(self, fn) -> Any:
        """Run ``fn(conn)`` in one transaction; retry on deadlock/serialization aborts and
        (once) on a broken connection, until ``timeout_s`` has passed."""
        psycopg = _psycopg()
        from psycopg import errors

        deadline = time.monotonic() + self._timeout_s
        delay = 0.01
        reconnected = False
        while True:
            try:
                with self._conn.transaction():
                    return fn(self._conn)
            except (errors.DeadlockDetected, errors.SerializationFailure):
                if time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(1.0, delay * 2)
            except psycopg.OperationalError:
                if reconnected or not self._conn.closed:
                    raise
                reconnected = True
                self._conn = self._connect()

    def _read(self, query: str, args: Sequence[Any] = ()) -> list[tuple]:
        psycopg = _psycopg()
        try:
            return self._conn.execute(query, args).fetchall()
        except psycopg.OperationalError:
            if not self._conn.closed:
                raise
            self._conn = self._connect()
            return self._conn.execute(query, args).fetchall()

    def close(self) -> None:
        self._conn.close()

    # -- reads --------------------------------------------------------------------
    def get(self, key: str) -> CachedCall | None:
        rows = self._read(_SELECT + " WHERE key = %s", (key,))
        return _to_call(rows[0]) if rows else None

    def get_many(self, keys: Sequence[str]) -> dict[str, CachedCall]:
        uniq = list(dict.fromkeys(keys))
        if not uniq:
            return {}
        return {r[0]: _to_call(r) for r in self._read(_SELECT + " WHERE key = ANY(%s)", (uniq,))}

    def __contains__(self, key: str) -> bool:
        return bool(self._read("SELECT 1 FROM calls WHERE key = %s", (key,)))

    def __len__(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM calls")[0][0])

    def iter_calls(self, judge: str | None = None) -> Iterator[CachedCall]:
        q, args = _SELECT, tuple[str, ...]()
        if judge is not None:
            q, args = q + " WHERE judge = %s", (judge,)
        for row in self._read(q, args):
            yield _to_call(row)

    def request(self, key: str) -> dict[str, Any] | None:
        rows = self._read("SELECT request_json FROM calls WHERE key = %s", (key,))
        return None if not rows else decode_request(bytes(rows[0][0]))

    # -- writes -------------------------------------------------------------------
    def put_many(self, calls: Iterable[tuple[CachedCall, dict[str, Any]]]) -> int:
        """Store answered calls (with their request dicts); first answer wins."""
        now = time.time()
        first: dict[str, tuple[CachedCall, dict[str, Any]]] = {}
        for c, req in calls:
            first.setdefault(c.key, (c, req))  # duplicates inside one batch: the first wins
        if not first:
            return 0
        ordered = [first[k] for k in sorted(first)]  # one lock order for every writer
        cols: list[list[Any]] = [[] for _ in range(14)]
        for c, req in ordered:
            row = (
                c.key, c.judge, c.backend, c.model, c.kind, encode_request(req), c.raw_text,
                None if c.logprobs is None else json.dumps(c.logprobs),
                c.tokens_in, c.tokens_out, c.latency_s, c.cost_usd, c.finish_reason, now,
            )
            for col, v in zip(cols, row, strict=True):
                col.append(v)
        return self._write(lambda conn: conn.execute(_INSERT_CALLS, cols).rowcount)

    def record_failures(self, failures: Iterable[tuple[str, str, str, str, str]]) -> None:
        """Record ``(key, judge, backend, model, error)`` tuples."""
        now = time.time()
        rows = [(*f, now) for f in failures]
        if rows:
            self._write(
                lambda conn: conn.cursor().executemany(
                    "INSERT INTO failures (key, judge, backend, model, error, created_at)"
                    " VALUES (%s,%s,%s,%s,%s,%s)",
                    rows,
                )
            )

    def record_run(
        self, *, judge: str, backend: str, model: str, label: str | None, requested: int,
        hits: int, new_calls: int, failures: int, started_at: float,
    ) -> None:
        self._write(
            lambda conn: conn.execute(
                "INSERT INTO runs (judge, backend, model, label, requested, hits, new_calls,"
                " failures, started_at, finished_at) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                (judge, backend, model, label, requested, hits, new_calls, failures, started_at, time.time()),
            )
        )

    # -- reports ------------------------------------------------------------------
    def stats(self) -> list[dict[str, Any]]:
        """Per-judge totals: stored calls, tokens, cost, failures, and run counters."""
        stored = {
            r[0]: r
            for r in self._read(
                "SELECT judge, MIN(backend), MIN(model), COUNT(*), SUM(tokens_in), SUM(tokens_out),"
                " SUM(cost_usd) FROM calls GROUP BY judge"
            )
        }
        fails = {r[0]: int(r[1]) for r in self._read("SELECT judge, COUNT(*) FROM failures GROUP BY judge")}
        runs = {
            r[0]: r
            for r in self._read("SELECT judge, SUM(requested), SUM(hits), SUM(new_calls) FROM runs GROUP BY judge")
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
                    "stored_calls": int(s[3]) if s else 0,
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
