"""What only the PostgreSQL cache backend has: URL dispatch, its error messages, reconnects.

The cache contract itself (first answer wins, two writers on two "nodes", SIGKILL resume,
failures retried, concurrent schema creation) runs against both backends in
tests/cache/test_cache.py.
"""

from __future__ import annotations

import pytest

from judgelab.cache import CACHE_BACKENDS, CachedCall, CallCache, cache_backend, cache_scheme
from tests.helpers import pg_server


def _call(key: str, text: str = "[[A]]") -> CachedCall:
    return CachedCall(key=key, judge="j", backend="fake", model="m", kind="pairwise", raw_text=text, logprobs=None,
                      tokens_in=1, tokens_out=1, latency_s=0.0, cost_usd=0.0, finish_reason="stop")


@pytest.fixture
def pg_url() -> str:
    try:
        return pg_server.server().new_database()
    except pg_server.Unavailable as exc:
        pytest.skip(f"PostgreSQL cache backend not tested: {exc}")


def test_location_picks_the_backend(tmp_path):
    assert cache_scheme(str(tmp_path / "c.sqlite")) is None
    assert cache_scheme(tmp_path / "c.sqlite") is None
    assert cache_scheme("postgresql://h/db") == "postgresql" == cache_scheme("PostgreSQL://h/db")
    assert cache_backend(str(tmp_path / "c.sqlite")) is CallCache
    assert cache_backend("postgres://h/db").__name__ == "PostgresCallCache"
    assert {"postgresql", "postgres"} <= set(CACHE_BACKENDS)
    c = CallCache(tmp_path / "c.sqlite")
    assert type(c) is CallCache and c.location == str(tmp_path / "c.sqlite")
    c.close()


def test_unknown_scheme_is_a_clear_error_without_the_password():
    with pytest.raises(ValueError, match=r"unknown cache backend 'mysql'.*postgresql://") as err:
        CallCache("mysql://me:s3cret@host/db")
    assert "s3cret" not in str(err.value) and "me:***@host" in str(err.value)


def test_unreachable_server_names_the_url_without_the_password():
    import psycopg

    port = pg_server._free_port()  # nothing listens there
    with pytest.raises(psycopg.OperationalError, match=rf"cannot open the call cache .*127.0.0.1:{port}") as err:
        CallCache(f"postgresql://me:s3cret@127.0.0.1:{port}/db", timeout_s=2)
    assert "s3cret" not in str(err.value).split(":", 1)[1].split("@")[0]


def test_is_a_call_cache_and_reconnects_after_the_server_drops_it(pg_url):
    import psycopg

    with CallCache(pg_url) as cache:
        assert isinstance(cache, CallCache) and type(cache).__name__ == "PostgresCallCache"
        assert cache.path is None and cache.location == pg_url
        assert cache.put_many([(_call("a"), {"n": 1})]) == 1
        pid = cache._conn.info.backend_pid
        # the server ends this job's connection (restart, idle timeout on a long GPU job)
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        # the next batch opens a new connection and is stored; nothing already stored is lost
        assert cache.put_many([(_call("b"), {"n": 2}), (_call("a", "other"), {})]) == 1
        assert cache._conn.info.backend_pid != pid
        assert {c.key: c.raw_text for c in cache.iter_calls()} == {"a": "[[A]]", "b": "[[A]]"}
        assert cache.request("b") == {"n": 2}


def test_two_connections_see_each_others_commits_at_once(pg_url):
    """Each batch is committed when put_many returns: another node reads it immediately."""
    with CallCache(pg_url) as w, CallCache(pg_url) as r:
        assert r.get("k") is None
        w.put_many([(_call("k", "x"), {})])
        assert r.get("k").raw_text == "x"
        w.record_failures([("f", "j", "fake", "m", "HTTP 500")])
        assert "f" not in r and r.stats()[0]["failures"] == 1
