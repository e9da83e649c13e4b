"""Small command-line truths (issue #19): ``judgelab cache-stats`` reads the cache of the
directory it is run from, not the installed package's checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgelab import cli
from judgelab.cache import CachedCall, CallCache
from judgelab.config import REPO_ROOT


def _call(key: str, judge: str) -> CachedCall:
    return CachedCall(key=key, judge=judge, backend="fake", model="m", kind="pairwise", raw_text="[[A]]",
                      logprobs=None, tokens_in=10, tokens_out=2, latency_s=0.1, cost_usd=0.0, finish_reason="stop")


def test_cache_stats_defaults_to_the_current_directory(tmp_path: Path, monkeypatch, capsys):
    """A second checkout (here: a tmp directory) sees its own three calls, never the package's cache."""
    project = tmp_path / "checkout2"
    with CallCache(project / "results" / "cache" / "calls.sqlite") as cache:
        cache.put_many([(_call(f"k{i}", "only-here-judge"), {}) for i in range(3)])
    monkeypatch.chdir(project)
    assert cli.main(["cache-stats"]) == 0
    out = capsys.readouterr().out
    assert "only-here-judge" in out and "total: 3 stored calls" in out


def test_cache_stats_without_a_cache_here_names_this_directory(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["cache-stats"]) == 2
    err = capsys.readouterr().err
    assert f"no cache at {tmp_path.resolve() / 'results' / 'cache' / 'calls.sqlite'}" in err
    assert str(REPO_ROOT) not in err


@pytest.mark.parametrize("rel", ["elsewhere/c.sqlite"])
def test_cache_stats_relative_cache_option_is_relative_to_cwd(tmp_path: Path, monkeypatch, capsys, rel):
    with CallCache(tmp_path / rel) as cache:
        cache.put_many([(_call("k", "rel-judge"), {})])
    monkeypatch.chdir(tmp_path)
    assert cli.main(["cache-stats", "--cache", rel]) == 0
    assert "rel-judge" in capsys.readouterr().out
