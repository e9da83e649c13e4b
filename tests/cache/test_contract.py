"""The SQLite call cache's contract, in one process and in well under a second per test.

:mod:`tests.cache.test_cache` runs the same contract against both backends and across real
processes (SIGKILL, two writers); this file is the fast, in-process complement that
``scripts/mutation.sh`` runs on every mutant of :mod:`judgelab.cache`:

* nothing answered is asked twice (a run interrupted mid-way resumes from its committed
  batches; a batch is stored whole or not at all);
* failures are never answers (an error row never satisfies a lookup);
* the key of a request changes with every field that changes the answer (order of the
  messages, sampling parameters, output format, model, ...), and with nothing else;
* the SQLite file is set up for many writers (WAL, a busy timeout that waits for a lock);
* the backend is chosen from the location (file path or URL scheme), and a password in a
  URL never reaches a message.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

import judgelab.cache as cache_mod
from judgelab.cache import (
    CachedCall,
    CallCache,
    cache_backend,
    cache_scheme,
    decode_request,
    encode_request,
    register_cache_backend,
)
from judgelab.config import JudgeSpec
from judgelab.judges.base import Judge
from judgelab.judges.runner import run_requests
from judgelab.records import JudgeRequest, Message, OutputKind, RawAnswer


def _call(key: str, judge: str = "j1", text: str | None = "[[A]]", **kw) -> CachedCall:
    base = dict(key=key, judge=judge, backend="fake", model="m-" + judge, kind="pairwise", raw_text=text,
                logprobs=None, tokens_in=10, tokens_out=2, latency_s=0.5, cost_usd=0.001, finish_reason="stop")
    base.update(kw)
    return CachedCall(**base)


def _ro(path: Path, query: str) -> list[tuple]:
    """Rows through a second connection: what another job would see."""
    con = sqlite3.connect(path)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


# -- choosing the backend from the location ------------------------------------------------


class _Recording(CallCache):
    """A stand-in backend: records where it was opened, opens nothing."""

    def __init__(self, location, *, timeout_s: float = 120.0) -> None:
        self.location = str(location)
        self.timeout_s = timeout_s

    def close(self) -> None:
        pass


def test_scheme_of_paths_and_urls():
    assert cache_scheme("results/cache/calls.sqlite") is None
    assert cache_scheme(Path("results/calls.sqlite")) is None
    # a PathLike is always a file, even if its text looks like a URL
    assert cache_scheme(Path("odd://name")) is None
    assert cache_scheme("PostgreSQL://host/db") == "postgresql"
    # only the first '://' separates the scheme
    assert cache_scheme("x://host/p://q") == "x"
    assert cache_backend("calls.sqlite") is CallCache
    assert cache_backend(Path("calls.sqlite")) is CallCache
    from judgelab.cache.postgres import PostgresCallCache

    assert cache_backend("postgresql://h/db") is PostgresCallCache
    assert cache_backend("POSTGRES://h/db") is PostgresCallCache


def test_unknown_scheme_is_a_clear_error_without_the_password():
    with pytest.raises(ValueError) as e:
        cache_backend("mysql://alice:s3cret@dbhost:3306/calls")
    msg = str(e.value)
    assert "unknown cache backend 'mysql'" in msg
    assert "s3cret" not in msg and "alice:***@dbhost:3306/calls" in msg
    # it says what would have worked
    assert "a file path for SQLite, or postgres://, postgresql://" in msg


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://u:pw@h:5432/db", "postgresql://u:***@h:5432/db"),
    ("postgresql://u@h/db", "postgresql://u@h/db"),  # no password: nothing to hide
    ("postgresql://h:5432/db", "postgresql://h:5432/db"),  # a port is not a password
    ("postgresql://:pw@h/db", "postgresql://:***@h/db"),
])
def test_redact_hides_only_the_password(url, shown):
    assert cache_mod._redact(url) == shown


def test_registered_backend_is_what_callcache_opens(monkeypatch, tmp_path):
    monkeypatch.setattr(cache_mod, "CACHE_BACKENDS", dict(cache_mod.CACHE_BACKENDS))
    register_cache_backend("RecTest", f"{__name__}:_Recording")
    c = CallCache("rectest://somewhere/x", timeout_s=7.0)
    assert type(c) is _Recording
    assert c.location == "rectest://somewhere/x" and c.timeout_s == 7.0  # __init__ ran with the arguments
    assert type(CallCache("RECTEST://y")) is _Recording
    # a subclass opened directly is that subclass, whatever its argument
    assert type(_Recording(str(tmp_path / "f.sqlite"))) is _Recording
    # a plain path still opens SQLite
    with CallCache(tmp_path / "plain.sqlite") as plain:
        assert type(plain) is CallCache


# -- the SQLite file is set up for many writers ---------------------------------------------


def test_opening_creates_the_file_its_folders_and_tables(tmp_path):
    path = tmp_path / "a" / "b" / "calls.sqlite"
    with CallCache(path) as cache:
        assert cache.location == str(path) and cache.path == path
        assert len(cache) == 0
    assert path.exists()
    names = {r[0] for r in _ro(path, "SELECT name FROM sqlite_master")}
    assert {"calls", "failures", "runs", "calls_judge"} <= names
    # WAL is a property of the file: a second connection sees it
    assert _ro(path, "PRAGMA journal_mode") == [("wal",)]
    # reopening an existing cache keeps what it holds
    with CallCache(path) as cache:
        cache.put_many([(_call("k"), {})])
    with CallCache(str(path)) as cache:
        assert cache.get("k") == _call("k")


def test_connection_waits_for_locks_and_commits_each_batch(tmp_path):
    with CallCache(tmp_path / "c.sqlite") as cache:
        assert cache._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 120_000  # the default 120 s
        assert cache._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL: safe in WAL, fast
        assert cache._conn.isolation_level is None  # no implicit transactions: we BEGIN/COMMIT ourselves
    with CallCache(tmp_path / "d.sqlite", timeout_s=2.5) as cache:
        assert cache._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 2500


def test_a_writer_waits_for_another_writer_instead_of_failing(tmp_path):
    path = tmp_path / "c.sqlite"
    with CallCache(path, timeout_s=30) as cache:
        other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # another job holds the write lock ...
        other.execute("INSERT INTO failures (key, judge, backend, model, error, created_at)"
                      " VALUES ('o', 'j', 'b', 'm', 'e', 0)")
        release = threading.Timer(0.3, lambda: other.execute("COMMIT"))  # ... for a moment
        release.start()
        try:
            assert cache.put_many([(_call("k"), {})]) == 1  # waited, then wrote
        finally:
            release.join()
            other.close()
        assert "k" in cache
        assert _ro(path, "SELECT key FROM failures") == [("o",)]


def test_a_batch_is_stored_whole_or_not_at_all(tmp_path):
    path = tmp_path / "c.sqlite"
    with CallCache(path) as cache:
        cache.put_many([(_call("before"), {})])
        broken = _call("k2", tokens_in=[1])  # the second row of the batch cannot be stored
        with pytest.raises(sqlite3.Error):
            cache.put_many([(_call("k1"), {}), (broken, {}), (_call("k3"), {})])
        assert not cache._conn.in_transaction  # rolled back, not left open
        assert [c.key for c in cache.iter_calls()] == ["before"]
        assert _ro(path, "SELECT key FROM calls") == [("before",)]
        # the connection is still usable for the next batch
        assert cache.put_many([(_call("k1"), {})]) == 1
        assert _ro(path, "SELECT key FROM calls ORDER BY key") == [("before",), ("k1",)]


# -- reads and writes ----------------------------------------------------------------------


def test_stored_fields_come_back_and_are_visible_to_other_connections(tmp_path):
    path = tmp_path / "c.sqlite"
    t0 = time.time()
    with CallCache(path) as cache:
        a = _call("a", logprobs={"A": -0.25, "B": -1.5}, tokens_in=7, tokens_out=3, latency_s=1.25,
                  cost_usd=0.125, finish_reason="length", kind="score")
        b = _call("b", judge="j2", text=None, logprobs=None, finish_reason=None)
        assert cache.put_many([(a, {"messages": ["x"]}), (b, {"n": 1})]) == 2
        assert cache.get("a") == a and cache.get("b") == b
        assert cache.get_many(["b", "a", "b"]) == {"a": a, "b": b}
        assert cache.get_many([]) == {}
        assert [c.key for c in cache.iter_calls("j2")] == ["b"]
        assert sorted(c.key for c in cache.iter_calls()) == ["a", "b"]
        assert "a" in cache and "c" not in cache and len(cache) == 2
    (row,) = _ro(path, "SELECT judge, backend, model, kind, raw_text, tokens_in, tokens_out, latency_s, cost_usd,"
                       " finish_reason, created_at FROM calls WHERE key = 'a'")
    assert row[:10] == ("j1", "fake", "m-j1", "score", "[[A]]", 7, 3, 1.25, 0.125, "length")
    assert t0 <= row[10] <= time.time()  # stored with the time it was written
    # no logprobs is SQL NULL (not the JSON text 'null'), so a query can tell logit-mode calls apart
    assert _ro(path, "SELECT key FROM calls WHERE logprobs_json IS NOT NULL") == [("a",)]


def test_get_many_finds_every_key_across_chunks(tmp_path):
    n = 2 * cache_mod._CHUNK + 3
    with CallCache(tmp_path / "c.sqlite") as cache:
        calls = [_call(f"k{i:04d}", text=str(i)) for i in range(n)]
        cache.put_many([(c, {}) for c in calls])
        keys = [c.key for c in calls]
        got = cache.get_many(keys + keys[:10] + ["absent"])  # repeats and a miss
        assert got == {c.key: c for c in calls}
        # one query per chunk of keys, not one per key (a run looks up thousands at once)
        queries: list[str] = []
        cache._conn.set_trace_callback(queries.append)
        cache.get_many(keys)
        cache._conn.set_trace_callback(None)
        assert len([q for q in queries if q.lstrip().upper().startswith("SELECT")]) == 3
        # a chunk boundary in the middle of the key list loses no key on either side
        for lo in (0, cache_mod._CHUNK - 1, cache_mod._CHUNK, n - 1):
            assert set(cache.get_many(keys[lo:])) == set(keys[lo:])


def test_first_answer_wins_and_put_many_counts_only_new_rows(tmp_path):
    with CallCache(tmp_path / "c.sqlite") as cache:
        assert cache.put_many([(_call("k", text="first"), {"v": 1})]) == 1
        assert cache.put_many([(_call("k", text="second"), {"v": 2}), (_call("n"), {})]) == 1
        assert cache.get("k").raw_text == "first"
        assert cache.request("k") == {"v": 1}
        assert cache.put_many(iter([])) == 0
        # a generator of calls is consumed once, all of it
        assert cache.put_many((_call(f"g{i}"), {}) for i in range(3)) == 3


def test_failures_never_answer_a_lookup_and_keep_their_errors(tmp_path):
    path = tmp_path / "c.sqlite"
    t0 = time.time()
    with CallCache(path) as cache:
        cache.record_failures([("kf", "j1", "fake", "m", "HTTP 500")])
        cache.record_failures(f for f in [("kf", "j1", "fake", "m", "timeout")])
        cache.record_failures([])
        assert cache.get("kf") is None and "kf" not in cache and len(cache) == 0
        assert cache.get_many(["kf"]) == {} and list(cache.iter_calls()) == []
        assert cache.request("kf") is None
    rows = _ro(path, "SELECT key, judge, backend, model, error, created_at FROM failures ORDER BY id")
    assert [r[:5] for r in rows] == [("kf", "j1", "fake", "m", "HTTP 500"), ("kf", "j1", "fake", "m", "timeout")]
    assert all(t0 <= r[5] <= time.time() for r in rows)


def test_run_rows_keep_every_counter(tmp_path):
    path = tmp_path / "c.sqlite"
    with CallCache(path) as cache:
        t0 = time.time() - 5
        cache.record_run(judge="j", backend="b", model="m", label="lab", requested=9, hits=4, new_calls=3,
                         failures=2, started_at=t0)
    ((judge, backend, model, label, req, hits, new, fails, started, finished),) = _ro(
        path, "SELECT judge, backend, model, label, requested, hits, new_calls, failures, started_at, finished_at"
              " FROM runs")
    assert (judge, backend, model, label, req, hits, new, fails, started) == ("j", "b", "m", "lab", 9, 4, 3, 2, t0)
    assert t0 + 5 <= finished <= time.time()


def test_stats_of_judges_with_zero_tokens_only_failures_or_only_runs(tmp_path):
    with CallCache(tmp_path / "c.sqlite") as cache:
        cache.put_many([(_call("z1", "zero", tokens_in=0, tokens_out=0, cost_usd=0.0), {}),
                        (_call("z2", "zero", tokens_in=0, tokens_out=0, cost_usd=0.0), {})])
        cache.put_many([(_call("p1", "paid", tokens_in=3, tokens_out=4, cost_usd=0.25), {}),
                        (_call("p2", "paid", tokens_in=5, tokens_out=6, cost_usd=0.5), {})])
        cache.record_failures([("f", "failing", "fb", "fm", "e")] * 3 + [("p9", "paid", "fake", "m-paid", "e")])
        cache.record_run(judge="ran", backend="rb", model="rm", label=None, requested=4, hits=1, new_calls=2,
                         failures=1, started_at=0.0)
        cache.record_run(judge="ran", backend="rb", model="rm", label=None, requested=6, hits=6, new_calls=0,
                         failures=0, started_at=0.0)
        stats = cache.stats()
    assert [s["judge"] for s in stats] == ["failing", "paid", "ran", "zero"]
    by = {s["judge"]: s for s in stats}
    assert by["zero"] == {"judge": "zero", "backend": "fake", "model": "m-zero", "stored_calls": 2, "tokens_in": 0,
                          "tokens_out": 0, "cost_usd": 0.0, "failures": 0, "requested": 0, "hits": 0,
                          "new_calls": 0}
    assert by["paid"]["tokens_in"] == 8 and by["paid"]["tokens_out"] == 10
    assert by["paid"]["cost_usd"] == pytest.approx(0.75) and by["paid"]["failures"] == 1
    empty = {"stored_calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "backend": None, "model": None}
    assert {k: by["failing"][k] for k in empty} == empty and by["failing"]["failures"] == 3
    assert {k: by["ran"][k] for k in empty} == empty
    assert (by["ran"]["requested"], by["ran"]["hits"], by["ran"]["new_calls"], by["ran"]["failures"]) == (10, 7, 2, 0)
    assert all(type(s[k]) is int for s in stats for k in ("tokens_in", "tokens_out", "requested", "hits"))
    assert all(type(s["cost_usd"]) is float for s in stats)


# -- the stored request --------------------------------------------------------------------


def test_request_encoding_is_canonical_compressed_and_readable():
    req = {"messages": [{"role": "user", "content": "Évalue: " + "long prompt " * 200}], "params": {"t": 0}}
    blob = encode_request(req)
    assert decode_request(blob) == req
    # the same request in another key order is stored as the same bytes
    assert encode_request(dict(reversed(list(req.items())))) == blob
    # prompts dominate the file: the blob is much smaller than the JSON text
    assert len(blob) < len(str(req)) / 5
    # older caches stored plain JSON text
    assert decode_request('{"a": [1, "é"]}') == {"a": [1, "é"]}
    # a value JSON cannot hold is kept as its text, not an error
    assert decode_request(encode_request({"path": Path("/x/y")})) == {"path": "/x/y"}


def test_non_ascii_text_is_stored_as_utf8_not_escapes():
    import zlib

    blob = encode_request({"c": "héllo ✓"})
    assert "héllo ✓".encode() in zlib.decompress(blob)


# -- busy retries while a new file switches to WAL ------------------------------------------


class _Clock:
    """Fake monotonic clock and sleep: the retry loop runs without waiting."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    c = _Clock()
    monkeypatch.setattr(cache_mod.time, "monotonic", c.monotonic)
    monkeypatch.setattr(cache_mod.time, "sleep", c.sleep)
    return c


def _locked_n_times(n: int, result: object = "ok"):
    calls = []

    def fn():
        calls.append(1)
        if len(calls) <= n:
            raise sqlite3.OperationalError("database is locked")
        return result

    return fn, calls


def test_retry_busy_retries_only_lock_errors_with_a_growing_bounded_wait(clock):
    fn, calls = _locked_n_times(12, 42)
    assert cache_mod._retry_busy(fn, 100.0) == 42
    assert len(calls) == 13 and len(clock.sleeps) == 12
    s = clock.sleeps
    assert 0 < s[0] <= 0.01  # the first wait is short: the lock is usually released at once
    assert all(b == pytest.approx(min(2 * a, max(s))) for a, b in itertools.pairwise(s))  # doubles ...
    assert max(s) <= 0.2 and s[-1] == max(s) > s[0]  # ... up to a cap

    fn, calls = _locked_n_times(0, "x")
    assert cache_mod._retry_busy(fn, 1.0) == "x" and clock.sleeps == s  # no error: no wait

    def other():
        calls.append(1)
        raise sqlite3.OperationalError("no such table: calls")

    calls.clear()
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        cache_mod._retry_busy(other, 100.0)
    assert len(calls) == 1  # not a lock: raised at once


def test_retry_busy_gives_up_after_the_timeout(clock):
    fn, _ = _locked_n_times(10**6)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        cache_mod._retry_busy(fn, 3.0)
    waited = sum(clock.sleeps)
    assert 3.0 <= waited <= 3.0 + 0.2 + 1e-9  # tried for the whole timeout, and about no longer


# -- the runner on the cache: nothing asked twice, failures retried, resume --------------------


class _CountingJudge(Judge):
    """Answers ``[[A]]`` (or fails the requests in ``fail``); counts every ask; can die mid-run."""

    batch_size = 3

    def __init__(self, *, model: str = "m", sampling: dict | None = None, fail: Sequence[int] = (),
                 die_after_batches: int | None = None) -> None:
        spec = {"name": "counting", "backend": "countingtest", "model": model}
        if sampling is not None:
            spec["sampling"] = sampling
        super().__init__(JudgeSpec.from_dict(spec))
        self.asked: list[str] = []
        self.fail = set(fail)
        self.die_after = die_after_batches
        self.batches = 0

    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        if self.die_after is not None and self.batches >= self.die_after:
            raise KeyboardInterrupt("killed")
        self.batches += 1
        self.asked.extend(r.messages[0].content for r in requests)
        return [RawAnswer(text=None, error="HTTP 503") if r.meta["i"] in self.fail
                else RawAnswer(text="[[A]]", tokens_in=4, tokens_out=1) for r in requests]


def _pair_requests(n: int) -> list[JudgeRequest]:
    return [JudgeRequest(messages=[Message("user", f"q{i}")], fmt="brackets", meta={"i": i}) for i in range(n)]


def test_an_interrupted_run_resumes_without_asking_twice(tmp_path):
    path = tmp_path / "c.sqlite"
    reqs = _pair_requests(10)
    with CallCache(path) as cache:
        dying = _CountingJudge(die_after_batches=2)
        with pytest.raises(KeyboardInterrupt):
            run_requests(dying, reqs, cache, progress=False)
        assert dying.asked == [f"q{i}" for i in range(6)]
        assert len(cache) == 6  # each answered batch was committed before the next was asked
    with CallCache(path) as cache:
        judge = _CountingJudge()
        out = run_requests(judge, reqs, cache, progress=False)
        assert judge.asked == [f"q{i}" for i in range(6, 10)]
        assert [r.cached for r in out] == [True] * 6 + [False] * 4
        judge.asked.clear()
        run_requests(judge, reqs + reqs, cache, progress=False)
        assert judge.asked == []


def test_a_failed_call_is_asked_again_and_an_answer_never_twice(tmp_path):
    reqs = _pair_requests(5)
    with CallCache(tmp_path / "c.sqlite") as cache:
        judge = _CountingJudge(fail=[1, 3])
        run_requests(judge, reqs, cache, progress=False, max_error_rate=None)
        assert len(cache) == 3
        judge.fail.clear()
        judge.asked.clear()
        out = run_requests(judge, reqs, cache, progress=False)
        assert judge.asked == ["q1", "q3"]
        assert [r.cached for r in out] == [True, False, True, False, True]


def _key(judge: Judge, req: JudgeRequest) -> str:
    return judge.key(req)


def test_the_key_changes_with_every_field_that_changes_the_answer():
    judge = _CountingJudge()
    two = [Message("system", "be fair"), Message("user", "A or B?")]
    base = JudgeRequest(messages=two, fmt="brackets", meta={"i": 0})
    k = _key(judge, base)
    variants = {
        "message order": JudgeRequest(messages=two[::-1], fmt="brackets"),
        "message text": JudgeRequest(messages=[two[0], Message("user", "B or A?")], fmt="brackets"),
        "role": JudgeRequest(messages=[Message("user", "be fair"), two[1]], fmt="brackets"),
        "format": JudgeRequest(messages=two, fmt="json"),
        "kind": JudgeRequest(messages=two, fmt="brackets", kind=OutputKind.SCORE),
        "params": JudgeRequest(messages=two, fmt="brackets", params={"temperature": 0.7}),
        "score IDs": JudgeRequest(messages=two, fmt="brackets", score_ids="roman"),
        "task": JudgeRequest(messages=two, fmt="brackets", task="generation"),
        "json mode": JudgeRequest(messages=two, fmt="brackets", json_mode=True),
    }
    keys = {name: _key(judge, r) for name, r in variants.items()}
    keys["model"] = _key(_CountingJudge(model="m2"), base)
    keys["sampling"] = _key(_CountingJudge(sampling={"temperature": 1.0}), base)
    assert all(v != k for v in keys.values()), [n for n, v in keys.items() if v == k]
    assert len(set(keys.values())) == len(keys)
    # what does not reach the model (bookkeeping in meta) leaves the key alone: no needless re-asks
    assert _key(judge, JudgeRequest(messages=list(two), fmt="brackets", meta={"i": 99, "note": "x"})) == k
    assert _key(_CountingJudge(), base) == k  # and the key is stable across judge objects
