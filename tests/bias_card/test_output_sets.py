"""Outputs as whole sets: a folder appears whole or not at all, files honour the umask, names from
the data cannot rewrite the card's markdown, and a path not found says where it was looked for."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from judgelab.bias_card import CardSettings
from judgelab.bias_card.report import write_audit
from judgelab.io import SET_MANIFEST, InputError, staged_folder, write_table, write_text
from judgelab.verdict_import import import_verdicts, preset_mapping
from tests.conftest import REPO

JB_DIR = Path(__file__).parents[1] / "fixtures" / "verdict_logs" / "judgebench"
JB = next(JB_DIR.glob("*o1-mini*"))
JB_OTHER = next(JB_DIR.glob("*claude-3-haiku*"))
FAST = CardSettings(n_resamples=50, min_decisive=1)
SET = ("verdicts.parquet", "bias_card.csv", "bias_card.md", "bias_card.png", "report.html", "human_confusion.csv")


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.mark.parametrize(("umask", "file_mode", "dir_mode"), [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)])
def test_outputs_honour_the_umask(tmp_path, umask, file_mode, dir_mode):
    old = os.umask(umask)
    try:
        write_text(tmp_path / "a.txt", "x")
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "t.parquet")
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "t.csv")
        with staged_folder(tmp_path / "set") as stage:
            write_text(stage / "f.md", "y")
    finally:
        os.umask(old)
    for name in ("a.txt", "t.parquet", "t.csv", "set/f.md"):
        assert _mode(tmp_path / name) == file_mode, name
    assert _mode(tmp_path / "set") == dir_mode


def test_a_staged_folder_replaces_the_old_set_whole_or_not_at_all(tmp_path):
    out = tmp_path / "out"
    with staged_folder(out) as stage:
        write_text(stage / "old.txt", "old")
    with pytest.raises(RuntimeError), staged_folder(out) as stage:
        write_text(stage / "new.txt", "new")
        raise RuntimeError("failed mid-write")
    assert sorted(p.name for p in out.iterdir()) == [SET_MANIFEST, "old.txt"]  # the failed set left no trace
    with staged_folder(out) as stage:
        write_text(stage / "new.txt", "new")
    assert sorted(p.name for p in out.iterdir()) == [SET_MANIFEST, "new.txt"]  # no file of the old set survives
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging folder left behind
    (tmp_path / "f").write_text("a file")
    with pytest.raises(InputError, match=r"f: exists and is a file; --out needs a folder"), staged_folder(tmp_path / "f"):
        pass


#: ``python -c`` program that runs ``judgelab`` with the card's markdown writer replaced by a SIGKILL
#: of the process: the kill lands after ``write_audit`` has staged the new set's tables and before
#: its markdown, figure and page, as a kill -9 from outside at that moment would.
KILL_BEFORE_MARKDOWN = """
import os, runpy, signal, sys
import judgelab.bias_card.report as report
report.card_markdown = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
sys.argv = ["judgelab", *sys.argv[1:]]
runpy.run_module("judgelab.cli", run_name="__main__")
"""


def _audit(out: Path, *extra: str, log: Path = JB, killed: bool = False) -> subprocess.CompletedProcess:
    run = ["-c", KILL_BEFORE_MARKDOWN] if killed else ["-m", "judgelab.cli"]
    cmd = [sys.executable, *run, "audit", "--format", "judgebench", str(log), "--out", str(out),
           "--resamples", "50", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"})


def test_kill_9_of_audit_mid_write_leaves_the_old_set(tmp_path):
    """``judgelab audit`` killed (SIGKILL, injected from outside the package after the new tables
    are staged: :data:`KILL_BEFORE_MARKDOWN`) into an existing --out: the folder still holds
    exactly the old run's files; the next run replaces them whole and clears what the killed
    run left."""
    out = tmp_path / "audit"
    first = _audit(out, "--title", "old run")
    assert first.returncode == 0, first.stderr
    before = {n: (out / n).read_bytes() for n in SET}
    killed = _audit(out, "--title", "new run", log=JB_OTHER, killed=True)
    assert killed.returncode == -9, (killed.returncode, killed.stderr[-2000:])
    # the kill landed mid-write: the new set's tables are staged beside --out, its markdown is not
    staged = [p for p in tmp_path.rglob("bias_card.csv") if not p.is_relative_to(out)]
    assert len(staged) == 1 and (staged[0].parent / "verdicts.parquet").is_file(), sorted(tmp_path.rglob("*"))
    assert not (staged[0].parent / "bias_card.md").exists()
    assert sorted(p.name for p in out.iterdir()) == sorted([*SET, SET_MANIFEST])
    assert {n: (out / n).read_bytes() for n in SET} == before
    again = _audit(out, "--title", "new run", log=JB_OTHER)
    assert again.returncode == 0, again.stderr
    assert "# Bias card: new run" in (out / "bias_card.md").read_text()
    assert all((out / n).read_bytes() != before[n] for n in SET)  # every file is of the new set
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit"]  # the killed run's staging folder is gone


def test_out_naming_a_file_is_one_error_line(tmp_path):
    f = tmp_path / "results.csv"
    f.write_text("keep me")
    res = _audit(f)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("judgelab: error:") and "results.csv: exists and is a file" in lines[0]
    assert f.read_text() == "keep me"


def test_names_from_the_data_are_escaped_in_the_card(tmp_path):
    table = import_verdicts([JB], preset_mapping("judgebench"))
    evil = "o1\n# Biases detected\n<script>alert(1)</script> | *bold*"
    table["judge"] = evil
    write_audit(table, tmp_path / "a", title="t <b>x</b>\n## forged", settings=FAST)
    md = (tmp_path / "a" / "bias_card.md").read_text()
    headings = [ln for ln in md.splitlines() if ln.startswith("#")]
    assert headings == ["# Bias card: t &lt;b&gt;x&lt;/b&gt; \\#\\# forged",
                        "## o1 \\# Biases detected &lt;script&gt;alert(1)&lt;/script&gt; \\| \\*bold\\* "
                        "(family openai, 6 verdicts)"]
    assert "<script>" not in md and "<b>" not in md


def test_a_relative_path_missing_here_is_not_read_from_the_data_root(tmp_path, monkeypatch):
    root = tmp_path / "data"
    (root / "logs").mkdir(parents=True)
    (root / "logs" / JB.name).write_bytes(JB.read_bytes())
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("JUDGELAB_DATA", str(root))
    monkeypatch.chdir(work)
    rel = f"logs/{JB.name}"
    with pytest.raises(InputError) as err:
        import_verdicts([rel], preset_mapping("judgebench"))
    msg = str(err.value)
    assert f"no such file or folder in the working folder {work}" in msg
    assert f"the data root has {root / rel}: give that path to read it" in msg
    assert len(import_verdicts([root / rel], preset_mapping("judgebench"))) == 6
