"""The call cache and the runner on top of it: nothing answered is lost or asked twice.

Covers the single-process contract of :class:`CallCache` (round trip, first answer
wins, failures kept apart from answers, per-judge stats), two processes writing one
cache file at once, a run killed with SIGKILL and resumed, and the retry of failed
calls.  The multi-process tests start real interpreters (``sys.executable``) so
that SQLite's file locking (or the PostgreSQL server's row locks: separate processes,
separate connections, as jobs on two nodes would be), not a shared connection, is what
is exercised.

Every contract test runs against each backend (``location`` fixture): the SQLite file
and a PostgreSQL server started on loopback for the session (tests/helpers/pg_server.py); the
PostgreSQL cases skip, with the reason, where no server can be started.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from judgelab.cache import CachedCall, CallCache, decode_request
from judgelab.config import JudgeSpec
from judgelab.judges.base import Judge
from judgelab.judges.runner import TooManyErrors, run_requests
from judgelab.records import CallStatus, JudgeRequest, Message, OutputKind, RawAnswer
from tests.helpers import pg_server

REPO_ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["sqlite", "postgresql"]


def _new_location(backend: str, tmp_path: Path, name: str = "c.sqlite") -> str:
    """A fresh, empty cache location of ``backend``: a file path or a new database's URL."""
    if backend == "sqlite":
        return str(tmp_path / name)
    try:
        srv = pg_server.server()
    except pg_server.Unavailable as exc:
        pytest.skip(f"PostgreSQL cache backend not tested: {exc}")
    return srv.new_database()


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def location(backend, tmp_path) -> str:
    return _new_location(backend, tmp_path)


def _sql(location: str, query: str) -> list[tuple]:
    """Rows of ``query`` read through a separate connection (what another process would see)."""
    if "://" not in location:
        con = sqlite3.connect(location)
        try:
            return con.execute(query).fetchall()
        finally:
            con.close()
    import psycopg

    with psycopg.connect(location) as con:
        return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in con.execute(query)]


def _call(key: str, judge: str = "j1", text: str | None = "[[A]]", **kw) -> CachedCall:
    base = dict(
        key=key, judge=judge, backend="fake", model="m-" + judge, kind="pairwise", raw_text=text,
        logprobs=None, tokens_in=10, tokens_out=2, latency_s=0.5, cost_usd=0.001, finish_reason="stop",
    )
    base.update(kw)
    return CachedCall(**base)


def _subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env["JUDGELAB_PROGRESS"] = "0"
    return env


# ---------------------------------------------------------------------------------
# single process


def test_put_get_round_trip(location):
    with CallCache(location) as cache:
        c1 = _call("k1", logprobs={"A": -0.1, "B": -2.3}, finish_reason="length")
        c2 = _call("k2", text=None, tokens_in=0)
        n = cache.put_many([(c1, {"messages": [{"role": "user", "content": "héllo"}]}), (c2, {})])
        assert n == 2
        assert len(cache) == 2
        assert cache.get("k1") == c1
        assert cache.get("k2") == c2
        assert cache.get("missing") is None
        assert "k1" in cache and "missing" not in cache
        got = cache.get_many(["k2", "k1", "missing", "k1"])
        assert got == {"k1": c1, "k2": c2}
        assert cache.put_many([]) == 0
        assert {c.key for c in cache.iter_calls("j1")} == {"k1", "k2"}
        assert list(cache.iter_calls("other")) == []
        assert cache.request("k1") == {"messages": [{"role": "user", "content": "héllo"}]}
        assert cache.request("missing") is None
    # persisted: a new connection sees the same rows
    with CallCache(location) as cache:
        assert cache.get("k1") == c1


def test_get_many_beyond_parameter_chunk(location):
    with CallCache(location) as cache:
        calls = [(_call(f"k{i:05d}", text=f"t{i}"), {}) for i in range(1234)]
        assert cache.put_many(calls) == 1234
        keys = [f"k{i:05d}" for i in range(0, 1300)]
        got = cache.get_many(keys)
        assert len(got) == 1234
        assert got["k01000"].raw_text == "t1000"


def test_first_answer_wins(location):
    with CallCache(location) as cache:
        assert cache.put_many([(_call("k", text="first"), {"n": 1})]) == 1
        # INSERT OR IGNORE: a second answer for the same key is dropped, not replaced
        assert cache.put_many([(_call("k", text="second", tokens_in=99), {"n": 2}), (_call("k2"), {})]) == 1
        got = cache.get("k")
        assert got.raw_text == "first" and got.tokens_in == 10
        assert len(cache) == 2
        # duplicates inside one batch: the first one in the batch wins
        cache.put_many([(_call("d", text="x"), {}), (_call("d", text="y"), {})])
        assert cache.get("d").raw_text == "x"


def test_failures_are_not_answers(location):
    with CallCache(location) as cache:
        cache.record_failures([("kf", "j1", "fake", "m-j1", "HTTP 500"), ("kf", "j1", "fake", "m-j1", "timeout")])
        cache.record_failures([])
        assert len(cache) == 0
        assert "kf" not in cache
        assert cache.get("kf") is None
        rows = _sql(location, "SELECT key, judge, error FROM failures ORDER BY id")
        assert rows == [("kf", "j1", "HTTP 500"), ("kf", "j1", "timeout")]
        assert _sql(location, "SELECT COUNT(*) FROM calls")[0][0] == 0


def test_stats_per_judge(location):
    with CallCache(location) as cache:
        cache.put_many([(_call("a1", "j1"), {}), (_call("a2", "j1", tokens_out=5, cost_usd=0.5), {})])
        cache.put_many([(_call("b1", "j2", tokens_in=7), {})])
        cache.record_failures([("x", "j2", "fake", "m-j2", "boom"), ("y", "j3", "fake", "m-j3", "boom")])
        t = time.time()
        cache.record_run(judge="j1", backend="fake", model="m-j1", label="L", requested=5, hits=3, new_calls=2,
                         failures=0, started_at=t)
        cache.record_run(judge="j1", backend="fake", model="m-j1", label=None, requested=5, hits=5, new_calls=0,
                         failures=0, started_at=t)
        stats = {s["judge"]: s for s in cache.stats()}
        assert [s["judge"] for s in cache.stats()] == ["j1", "j2", "j3"]
        assert stats["j1"] == {
            "judge": "j1", "backend": "fake", "model": "m-j1", "stored_calls": 2, "tokens_in": 20,
            "tokens_out": 7, "cost_usd": pytest.approx(0.501), "failures": 0, "requested": 10, "hits": 8,
            "new_calls": 2,
        }
        assert stats["j2"]["stored_calls"] == 1 and stats["j2"]["tokens_in"] == 7
        assert stats["j2"]["failures"] == 1 and stats["j2"]["requested"] == 0
        # a judge with only failures is still reported
        assert stats["j3"]["stored_calls"] == 0 and stats["j3"]["failures"] == 1
        assert stats["j3"]["backend"] is None


# ---------------------------------------------------------------------------------
# two processes writing one file

_WRITER = textwrap.dedent(
    """
    import os, random, sys, time
    from judgelab.cache import CachedCall, CallCache

    path, who, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    cache = CallCache(path, timeout_s=30)
    own = [f"{who}-{i:05d}" for i in range(n)]
    shared = [f"shared-{i:04d}" for i in range(n // 10)]
    keys = own + shared
    random.Random(who).shuffle(keys)
    deadline = time.time() + 10
    while not os.path.exists(go):  # start both writers together
        if time.time() > deadline:
            sys.exit("no go signal")
        time.sleep(0.001)
    rng = random.Random(who + "batches")
    i = 0
    while i < len(keys):
        m = rng.randint(1, 10)
        rows = [
            (
                CachedCall(key=k, judge=who, backend="fake", model="m", kind="pairwise",
                           raw_text=f"{k}|{who}|" + "x" * (len(k) % 7), logprobs={"A": -0.5},
                           tokens_in=len(k), tokens_out=3, latency_s=0.1, cost_usd=0.0, finish_reason="stop"),
                {"key": k, "writer": who},
            )
            for k in keys[i : i + m]
        ]
        cache.put_many(rows)
        i += m
        time.sleep(rng.random() * 0.0005)  # give the other writer a chance at the lock
    cache.close()
    print("done", who)
    """
)


def test_two_processes_write_concurrently_without_loss(backend, tmp_path):
    """Two writers, each its own process and connection: two jobs on one host (SQLite) or
    on two nodes (PostgreSQL)."""
    db = _new_location(backend, tmp_path, "shared.sqlite")
    CallCache(db).close()  # create the schema once, so both writers start on equal terms
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    go = tmp_path / "go"
    n = 2000
    procs = [
        subprocess.Popen([sys.executable, str(script), str(db), who, str(n), str(go)], env=_subprocess_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for who in ("w1", "w2")
    ]
    time.sleep(0.3)  # let both interpreters reach the barrier
    go.touch()
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=20)
            outs.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for rc, out, err in outs:
        assert rc == 0, err
        assert out.startswith("done")

    # insertion order: SQLite's rowid; on the server the commit time of each batch
    order = "rowid" if backend == "sqlite" else "created_at, key"
    rows = _sql(db, f"SELECT key, judge, raw_text, request_json, tokens_in, logprobs_json FROM calls ORDER BY {order}")
    # the writers really did take turns (not one after the other)
    switches = sum(1 for a, b in itertools.pairwise(rows) if a[1] != b[1])
    assert switches >= 10, switches
    expected = {f"w1-{i:05d}" for i in range(n)} | {f"w2-{i:05d}" for i in range(n)}
    expected |= {f"shared-{i:04d}" for i in range(n // 10)}
    keys = [r[0] for r in rows]
    assert len(keys) == len(set(keys)) == len(expected)
    assert set(keys) == expected
    winners = Counter()
    for key, who, raw, req, tokens_in, lp in rows:
        # every row is one writer's complete row, never a mix of two
        assert who in ("w1", "w2")
        if not key.startswith("shared"):
            assert key.startswith(who)
        else:
            winners[who] += 1
        assert raw == f"{key}|{who}|" + "x" * (len(key) % 7)
        assert decode_request(req) == {"key": key, "writer": who}
        assert tokens_in == len(key)
        assert json.loads(lp) == {"A": -0.5}
    assert sum(winners.values()) == n // 10


# ---------------------------------------------------------------------------------
# SIGKILL in the middle of a run, then resume

_SLOW_JUDGE = textwrap.dedent(
    """
    import os, time
    from judgelab.judges.base import Judge
    from judgelab.records import RawAnswer


    class SlowJudge(Judge):
        batch_size = 10

        def __init__(self, spec, log_path):
            super().__init__(spec)
            self.log_path = log_path

        def answer(self, requests):
            keys = [self.key(r) for r in requests]
            with open(self.log_path, "a") as fh:  # one line per ask, written before answering
                fh.write("".join(k + "\\n" for k in keys))
                fh.flush()
                os.fsync(fh.fileno())
            out = []
            for r in requests:
                time.sleep(0.01)
                out.append(RawAnswer(text="[[" + r.meta["v"] + "]]", tokens_in=5, tokens_out=1))
            return out


    def make(log_path):
        from judgelab.config import JudgeSpec
        return SlowJudge(JudgeSpec.from_dict({"name": "slow", "backend": "slowtest", "model": "m"}), log_path)


    def requests(n):
        from judgelab.records import JudgeRequest, Message
        return [
            JudgeRequest(messages=[Message("user", f"question {i}")], fmt="brackets", meta={"i": i, "v": "AB"[i % 2]})
            for i in range(n)
        ]


    if __name__ == "__main__":
        import sys
        from judgelab.cache import CallCache
        from judgelab.judges.runner import run_requests

        db, log, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
        with CallCache(db) as cache:
            run_requests(make(log), requests(n), cache, progress=False)
        print("finished")
    """
)


def _load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _asks(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [ln for ln in log.read_text().splitlines() if len(ln) == 64]


def _count_rows_ro(db: str) -> int:
    if "://" in db:
        import psycopg

        try:
            with psycopg.connect(db) as con:
                return con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        except psycopg.errors.UndefinedTable:
            return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
    except sqlite3.OperationalError:
        return 0
    try:
        return con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    except sqlite3.OperationalError:  # file or schema not there yet
        return 0
    finally:
        con.close()


def test_sigkill_then_resume_asks_nothing_twice(backend, tmp_path):
    helper = tmp_path / "slow_judge_helper.py"
    helper.write_text(_SLOW_JUDGE)
    db = _new_location(backend, tmp_path, "calls.sqlite")
    log1, log2, log3 = tmp_path / "asks1.log", tmp_path / "asks2.log", tmp_path / "asks3.log"
    n, bs = 400, 10

    p = subprocess.Popen([sys.executable, str(helper), str(db), str(log1), str(n)], env=_subprocess_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 15
        while _count_rows_ro(db) < 50:
            assert p.poll() is None, f"the run ended before it was killed: {p.communicate()}"
            assert time.time() < deadline, "the run never reached 50 cached calls"
            time.sleep(0.005)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGKILL

    with CallCache(db) as cache:
        committed = {c.key for c in cache.iter_calls()}
    assert 50 <= len(committed) < n, "the kill came too late to test a resume"
    asks1 = _asks(log1)
    assert len(asks1) == len(set(asks1))
    assert committed <= set(asks1)
    in_flight = set(asks1) - committed
    assert len(in_flight) <= bs  # only the batch being answered was lost
    assert len(committed) % bs == 0  # whole batches are committed

    # second run, in another process, to completion
    done = subprocess.run([sys.executable, str(helper), str(db), str(log2), str(n)], env=_subprocess_env(),
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "finished" in done.stdout
    asks2 = _asks(log2)
    assert not set(asks2) & committed  # nothing committed before the kill is asked again
    assert len(asks2) == len(set(asks2)) == n - len(committed)

    mod = _load_module(helper, "slow_judge_helper_inproc")
    reqs = mod.requests(n)
    judge = mod.make(str(log3))
    all_keys = {judge.key(r) for r in reqs}
    with CallCache(db) as cache:
        assert {c.key for c in cache.iter_calls()} == all_keys
        assert len(cache) == n
        counts = Counter(asks1 + asks2)
        assert set(counts) == all_keys
        assert sum(counts.values()) - n <= bs
        twice = {k for k, c in counts.items() if c > 1}
        assert twice <= in_flight and max(counts.values()) <= 2

        # third run: everything is cached, nothing is asked
        out = run_requests(judge, reqs, cache, progress=False)
        assert _asks(log3) == []
        assert all(r.cached for r in out)
        assert [r.value for r in out] == ["AB"[i % 2] for i in range(n)]
        assert {r.status for r in out} == {CallStatus.OK}
        runs = _sql(db, "SELECT requested, hits, new_calls, failures FROM runs ORDER BY id")
    # the killed run recorded no run row; the resumed and the cached one did
    assert runs == [(n, len(committed), n - len(committed), 0), (n, n, 0, 0)]


# ---------------------------------------------------------------------------------
# failed calls are not cached and are asked again


class FlakyJudge(Judge):
    """Fails every request in ``flaky`` (by meta id) on its first ask, answers all later asks."""

    batch_size = 4

    def __init__(self, flaky: set[int], name: str = "flaky") -> None:
        super().__init__(JudgeSpec.from_dict({"name": name, "backend": "flakytest", "model": "m",
                                              "price": {"input_per_1k": 1.0, "output_per_1k": 2.0}}))
        self.flaky = set(flaky)
        self.asked: list[int] = []
        self._failed: set[int] = set()

    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        out = []
        for r in requests:
            i = r.meta["i"]
            self.asked.append(i)
            if i in self.flaky and i not in self._failed:
                self._failed.add(i)
                if i % 2:
                    out.append(RawAnswer(text=None, error=f"HTTP 503 for {i}"))
                else:
                    out.append(RawAnswer(text=None))  # no text and no error message: still an error
            else:
                out.append(RawAnswer(text=f"Feedback: fine. [RESULT] {i % 5 + 1}", tokens_in=100, tokens_out=10))
        return out


def _score_requests(n: int) -> list[JudgeRequest]:
    return [
        JudgeRequest(messages=[Message("user", f"rate answer {i}")], kind=OutputKind.SCORE, fmt="result",
                     meta={"i": i})
        for i in range(n)
    ]


def test_failed_calls_are_retried_next_run(location):
    reqs = _score_requests(20)
    reqs.append(reqs[3])  # a duplicate request is asked once
    flaky = {1, 2, 3, 10, 17}
    judge = FlakyJudge(flaky)
    with CallCache(location) as cache:
        out = run_requests(judge, reqs, cache, progress=False, max_error_rate=None)
        assert sorted(judge.asked) == list(range(20))
        assert len(out) == 21
        for r in out:
            i = r.meta["i"]
            if i in flaky:
                assert r.status is CallStatus.ERROR and r.value is None and r.raw_text is None
                assert r.error == (f"HTTP 503 for {i}" if i % 2 else "empty answer (no text)")
            else:
                assert r.status is CallStatus.OK and r.value == i % 5 + 1 and not r.cached
                assert r.cost_usd == pytest.approx(0.1 + 0.02)
        assert len(cache) == 20 - len(flaky)
        assert not any(judge.key(reqs[i]) in cache for i in flaky)
        fails = _sql(location, "SELECT key FROM failures")
        assert sorted(k for (k,) in fails) == sorted(judge.key(reqs[i]) for i in flaky)

        judge.asked.clear()
        out2 = run_requests(judge, reqs, cache, progress=False, max_error_rate=None)
        assert sorted(judge.asked) == sorted(flaky)  # only the failures are asked again
        assert all(r.status is CallStatus.OK for r in out2)
        assert [r.value for r in out2] == [r.meta["i"] % 5 + 1 for r in reqs]
        assert [r.cached for r in out2] == [r.meta["i"] not in flaky for r in reqs]
        assert len(cache) == 20

        judge.asked.clear()
        run_requests(judge, reqs, cache, progress=False)
        assert judge.asked == []
        (s,) = cache.stats()
        assert s["stored_calls"] == 20 and s["failures"] == len(flaky)
        assert (s["requested"], s["hits"], s["new_calls"]) == (63, 0 + 15 + 21, 15 + 5 + 0)


def test_too_many_errors_raises_but_keeps_successes(backend, tmp_path):
    reqs = _score_requests(12)
    judge = FlakyJudge({0, 5})
    with CallCache(_new_location(backend, tmp_path)) as cache:
        with pytest.raises(TooManyErrors, match=r"2 of 12 calls failed"):
            run_requests(judge, reqs, cache, progress=False)
        assert len(cache) == 10  # answered calls were committed before the raise
        assert {c.key for c in cache.iter_calls()} == {judge.key(r) for r in reqs if r.meta["i"] not in (0, 5)}
        (s,) = cache.stats()
        assert s["failures"] == 2 and s["new_calls"] == 10 and s["requested"] == 12

        judge.asked.clear()
        out = run_requests(judge, reqs, cache, progress=False)  # default tolerance again: now fine
        assert sorted(judge.asked) == [0, 5]
        assert all(r.status is CallStatus.OK for r in out)

    # a tolerance above the error share does not raise
    judge2 = FlakyJudge({0}, name="flaky2")
    with CallCache(_new_location(backend, tmp_path, "c2.sqlite")) as cache:
        out = run_requests(judge2, reqs, cache, progress=False, max_error_rate=0.1)
        assert [r.status for r in out].count(CallStatus.ERROR) == 1


def test_many_processes_opening_a_new_cache_at_once(backend, tmp_path):
    """Opening a brand-new cache from several processes at once must not fail (SQLite:
    switching to WAL needs an exclusive lock; PostgreSQL: CREATE TABLE IF NOT EXISTS
    races with a concurrent creator); parallel Snakemake jobs all do it."""
    path = _new_location(backend, tmp_path, "fresh.sqlite")

    code = (
        "import sys, time; from judgelab.cache import CallCache\n"
        "start = float(sys.argv[2])\n"
        "while time.time() < start: pass\n"  # all processes open the file at the same instant
        "c = CallCache(sys.argv[1]); c.record_failures([('k', 'j', 'b', 'm', 'e')]); c.close()\n"
    )
    start = str(time.time() + 1.5)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), start], stderr=subprocess.PIPE, text=True,
                              env=_subprocess_env())
             for _ in range(8)]
    errs = [p.communicate(timeout=60)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    assert _sql(path, "SELECT COUNT(*) FROM failures")[0][0] == 8


def test_cli_cache_stats_reads_either_backend(location, capsys):
    """`judgelab cache-stats --cache <path or postgresql:// URL>` reports what the cache holds."""
    from judgelab import cli

    with CallCache(location) as cache:
        cache.put_many([(_call("k1"), {}), (_call("k2", judge="j2"), {})])
    assert cli.main(["cache-stats", "--cache", location]) == 0
    out = capsys.readouterr().out
    assert "j1" in out and "j2" in out and "2 stored calls" in out
