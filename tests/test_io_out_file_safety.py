"""``--out FILE`` (judge, plan, power, leaderboard-length) never overwrites what judgelab did not write:
an input, a file the user has there, or a table judgelab wrote that the user changed since; each
refusal is one line before any work, with the file byte-identical after (hashed).  A table judgelab
wrote is replaced on the next run without ``--force``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from judgelab.cli import main
from judgelab.io import OutputRefused, check_out_file, record_written, written_by_judgelab

BOARD = "model,score,length\na,0.5,100\nb,0.6,200\nc,0.7,300\nd,0.2,50\ne,0.4,120\n"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state" / "written.tsv"
    monkeypatch.setenv("JUDGELAB_WRITTEN_LEDGER", str(path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "board.csv").write_text(BOARD)
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def test_out_equal_to_the_input_is_refused_and_the_input_kept(ledger: Path, capsys) -> None:
    before = _digest(Path("board.csv"))
    code, err = _run(capsys, "leaderboard-length", "board.csv", "--out", "board.csv")
    assert code == 2 and err.count("\n") == 1
    assert "--out board.csv is the input board.csv" in err
    assert _digest(Path("board.csv")) == before
    # --force does not make an input writable
    code, err = _run(capsys, "leaderboard-length", "board.csv", "--out", "./board.csv", "--force")
    assert code == 2 and "is the input" in err and _digest(Path("board.csv")) == before


def test_a_foreign_file_is_refused_unless_forced(ledger: Path, capsys) -> None:
    Path("mine.csv").write_text("my notes\n")
    code, err = _run(capsys, "leaderboard-length", "board.csv", "--out", "mine.csv")
    assert code == 2 and "judgelab did not write it" in err and "--force" in err
    assert Path("mine.csv").read_text() == "my notes\n"
    assert not ledger.exists()  # nothing recorded for a refused run
    code, _ = _run(capsys, "leaderboard-length", "board.csv", "--out", "mine.csv", "--force")
    assert code == 0 and "my notes" not in Path("mine.csv").read_text()
    assert written_by_judgelab("mine.csv")  # forced once, judgelab's from now on


def test_judgelabs_own_table_is_replaced_but_not_once_the_user_edits_it(ledger: Path, capsys) -> None:
    assert _run(capsys, "leaderboard-length", "board.csv", "--out", "r.csv")[0] == 0
    assert written_by_judgelab("r.csv")
    assert _run(capsys, "leaderboard-length", "board.csv", "--out", "r.csv", "--log-length")[0] == 0
    with open("r.csv", "a") as fh:
        fh.write("an edit\n")
    edited = _digest(Path("r.csv"))
    code, err = _run(capsys, "leaderboard-length", "board.csv", "--out", "r.csv")
    assert code == 2 and "changed since" in err
    assert _digest(Path("r.csv")) == edited


def test_a_folder_or_an_unknown_suffix_is_one_line(ledger: Path, capsys) -> None:
    Path("d.csv").mkdir()
    code, err = _run(capsys, "leaderboard-length", "board.csv", "--out", "d.csv")
    assert code == 2 and "is a folder" in err and err.count("\n") == 1
    code, err = _run(capsys, "leaderboard-length", "board.csv", "--out", "r.txt")
    assert code == 2 and ".csv or .parquet" in err and not Path("r.txt").exists()


def test_out_inside_an_input_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    with pytest.raises(OutputRefused, match="lies inside the input"):
        check_out_file(tmp_path / "logs" / "t.csv", inputs=[tmp_path / "logs"])
    assert check_out_file(tmp_path / "t.csv", inputs=[tmp_path / "logs"]) == tmp_path / "t.csv"


def test_the_ledger_keeps_the_last_write_per_path(ledger: Path, tmp_path: Path, monkeypatch) -> None:
    import judgelab.io as io

    f = tmp_path / "t.csv"
    f.write_text("one\n")
    record_written(f)
    f.write_text("two\n")
    assert not written_by_judgelab(f)  # the bytes judgelab wrote are gone
    record_written(f)
    assert written_by_judgelab(f)
    f.write_text("one\n")  # an earlier content put back by hand is not the last write
    assert not written_by_judgelab(f)
    # compaction keeps one line per path, the last
    monkeypatch.setattr(io, "LEDGER_COMPACT_BYTES", 10)
    g = tmp_path / "u.csv"
    g.write_text("x\n")
    record_written(g)
    lines = ledger.read_text().splitlines()
    assert len(lines) == 2 and sum(str(f) in r for r in lines) == 1
    assert written_by_judgelab(g)


def test_an_unwritable_ledger_only_means_force_next_time(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("JUDGELAB_WRITTEN_LEDGER", str(tmp_path / "afile" / "written.tsv"))
    (tmp_path / "afile").write_text("not a folder")
    f = tmp_path / "t.csv"
    f.write_text("x\n")
    record_written(f)  # no error
    assert not written_by_judgelab(f)


def test_the_ledger_defaults_to_the_xdg_state_folder(tmp_path: Path, monkeypatch) -> None:
    from judgelab.io import written_ledger

    monkeypatch.delenv("JUDGELAB_WRITTEN_LEDGER")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert written_ledger() == tmp_path / "judgelab" / "written.tsv"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert written_ledger() == tmp_path / "h" / ".local" / "state" / "judgelab" / "written.tsv"
