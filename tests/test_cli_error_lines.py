"""A damaged cache and a full disk end in one ``judgelab: error:`` line naming the file and the remedy."""

from __future__ import annotations

import errno
import sqlite3

import pytest

from judgelab import cli


@pytest.mark.parametrize("content", [b"this is not a database" * 100, b"SQLite format 3\x00" + b"\x00" * 80])
def test_cache_stats_of_a_damaged_cache(tmp_path, capsys, content):
    bad = tmp_path / "calls.sqlite"
    bad.write_bytes(content)
    assert cli.main(["cache-stats", "--cache", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"judgelab: error: {bad}: not a readable call cache")
    assert f"mv {bad} {bad}.damaged" in err[0] and "asked again" in err[0]


def test_a_locked_cache_is_not_called_damaged(tmp_path, monkeypatch):
    from judgelab.cache import CallCache

    c = CallCache(tmp_path / "c.sqlite")
    with pytest.raises(sqlite3.OperationalError), c._readable():
        raise sqlite3.OperationalError("database is locked")
    c.close()


def test_a_full_disk_is_one_line(tmp_path, capsys, monkeypatch):
    from judgelab.bias_card import report

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(report, "write_audit", full)
    log = tmp_path / "log.csv"
    log.write_text("judge,pair_id,order,verdict\nj,p1,AB,A\nj,p1,BA,B\n")
    assert cli.main(["audit", "--format", "judgelab", str(log), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"judgelab: error: {tmp_path / 'out'}: no space left on the device (No space left on device); "
                   "free space or write elsewhere, then rerun (nothing was renamed into place)"]
    monkeypatch.setattr(report, "write_audit", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.EIO, "x")))
    with pytest.raises(OSError):  # other OS errors are not dressed as a full disk
        cli.main(["audit", "--format", "judgelab", str(log), "--out", str(tmp_path / "out")])
