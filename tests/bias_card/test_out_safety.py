"""``--out`` never deletes what judgelab did not write: inputs, a user's files, the current folder
are refused with one line and left byte-identical; judgelab's own sets are replaced whole; runs to
one ``--out`` wait for each other; read-only places and Ctrl-C are one line with no stray folder;
CSV cells a spreadsheet would run as formulas are quoted and read back as written."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab import cli
from judgelab.io import SET_MANIFEST, _acquire, _release, formula_safe, read_table, staged_folder, write_table
from tests.conftest import REPO

JB = next((Path(__file__).parents[1] / "fixtures" / "verdict_logs" / "judgebench").glob("*o1-mini*"))
SET = {"verdicts.parquet", "bias_card.csv", "bias_card.md", "bias_card.png", "report.html", "human_confusion.csv"}


def _hashes(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` (the root's parent's view: names beside it count too)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def _audit(out: Path | str, *extra: str, log: Path | str = JB) -> list[str]:
    return ["audit", "--format", "judgebench", str(log), "--out", str(out), "--resamples", "20", *extra]


def _one_error_line(capsys) -> str:
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("judgelab")]
    assert len(err) == 1 and err[0].startswith("judgelab: error: "), err
    return err[0]


@pytest.mark.parametrize("where", ["same", "inside", "contains"])
def test_out_overlapping_an_input_is_refused_and_nothing_changes(tmp_path, capsys, monkeypatch, where):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / JB.name).write_bytes(JB.read_bytes())
    (logs / "notes.txt").write_text("mine")
    out = {"same": logs, "inside": logs / "audit", "contains": tmp_path}[where]
    log_arg = logs if where != "contains" else logs / JB.name
    monkeypatch.chdir(tmp_path.parent)  # --out tmp_path is not the current folder, only a folder holding the input
    before = _hashes(tmp_path)
    assert cli.main(_audit(out, log=log_arg)) == 2
    line = _one_error_line(capsys)
    how = {"same": "is", "inside": "lies inside", "contains": "contains"}[where]
    assert f"--out {out} {how} the input" in line
    assert _hashes(tmp_path) == before  # byte-identical, no lock file, no staging folder


@pytest.mark.parametrize("foreign", ["notes.txt", "sub/"])
def test_a_folder_with_a_foreign_entry_is_refused_unless_forced(tmp_path, capsys, foreign):
    out = tmp_path / "mywork"
    (out / "sub").mkdir(parents=True)
    if foreign == "notes.txt":
        (out / "notes.txt").write_text("my notes")
        (out / "sub").rmdir()
    else:
        (out / "sub" / "data.csv").write_text("a\n1\n")
    before = _hashes(tmp_path)
    assert cli.main(_audit(out)) == 2
    line = _one_error_line(capsys)
    assert f"holds {foreign!r}, which judgelab did not write" in line and "--force" in line
    assert _hashes(tmp_path) == before
    assert cli.main(_audit(out, "--force")) == 0
    assert {p.name for p in out.iterdir()} == SET | {SET_MANIFEST}  # replaced whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mywork"]  # no lock, no staging, no old set


def test_a_set_judgelab_wrote_is_replaced_but_not_once_a_user_adds_a_file(tmp_path, capsys):
    out = tmp_path / "audit"
    assert cli.main(_audit(out, "--title", "first")) == 0
    manifest = json.loads((out / SET_MANIFEST).read_text())
    assert manifest["command"] == "audit" and set(manifest["entries"]) == SET
    assert cli.main(_audit(out, "--title", "second")) == 0
    assert "# Bias card: second" in (out / "bias_card.md").read_text()
    (out / "bias_card.md.bak").write_text("a user's copy")
    before = _hashes(tmp_path)
    capsys.readouterr()
    assert cli.main(_audit(out, "--title", "third")) == 2
    assert "'bias_card.md.bak'" in _one_error_line(capsys)
    assert _hashes(tmp_path) == before
    (out / SET_MANIFEST).write_text("not json")  # a damaged manifest lists nothing: every entry is foreign
    (out / "bias_card.md.bak").unlink()
    assert cli.main(_audit(out)) == 2
    assert "which judgelab did not write" in _one_error_line(capsys)


@pytest.mark.parametrize("out", [".", "", "..", "/"])
def test_out_at_or_above_the_current_folder_is_one_line(tmp_path, capsys, monkeypatch, out):
    work = tmp_path / "work"
    work.mkdir()
    (work / "keep.txt").write_text("x")
    monkeypatch.chdir(work)
    before = _hashes(tmp_path)
    assert cli.main(_audit(out or str(work))) == 2
    line = _one_error_line(capsys)
    assert "the current folder; the set replaces its folder whole, so name a subfolder" in line
    assert _hashes(tmp_path) == before  # no ..old-* nor staging folder anywhere


def test_a_place_nobody_can_write_is_one_line(tmp_path, capsys):
    # /proc takes no new file, for root too (chmod does not stop root)
    assert cli.main(_audit("/proc/judgelab-out")) == 2
    assert "cannot write beside it in /proc" in _one_error_line(capsys)
    (tmp_path / "afile").write_text("x")
    assert cli.main(_audit(tmp_path / "afile" / "out")) == 2  # a file where the parent folder should be
    assert f"{tmp_path / 'afile'} is a file, not a folder" in _one_error_line(capsys)
    assert (tmp_path / "afile").read_text() == "x"


@pytest.mark.parametrize("which", ["parent", "folder"])
def test_a_read_only_out_is_one_line_for_a_user_who_cannot_write(which):
    """As root, a child drops to ``nobody`` (root writes through any mode bits)."""
    base = Path(tempfile.mkdtemp(prefix="judgelab-ro-", dir="/tmp"))
    try:
        os.chmod(base, 0o777)
        ro = base / "ro"
        out = ro / "out" if which == "parent" else ro
        ro.mkdir()
        if which == "folder":
            (ro / "old.txt").write_text("x")
            (ro / SET_MANIFEST).write_text(json.dumps({"entries": ["old.txt"]}))
        os.chmod(ro, 0o555)
        env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "MPLCONFIGDIR": str(base / "mpl"),
               "HOME": str(base)}
        # the interpreter lives under /root here: the child imports the command first, then drops to nobody
        child = ("import os, sys, fcntl, glob, difflib; from judgelab import cli, io; cli.build_parser()\n"
                 "import judgelab.datasets.sources, judgelab.judges.base, judgelab.workflow.plan, judgelab.registry\n"
                 "import judgelab.judges.runner\n"
                 "if os.geteuid() == 0:\n    os.setgid(65534); os.setuid(65534)\n"
                 "sys.exit(cli.main(sys.argv[1:]))")
        res = subprocess.run([sys.executable, "-c", child, *_audit(out)], capture_output=True, text=True,
                             timeout=120, cwd=base, env=env)
        lines = [ln for ln in res.stderr.splitlines() if ln.startswith(("judgelab", "Traceback"))]
        assert res.returncode == 2, res.stderr[-2000:]
        assert lines == [f"judgelab: error: --out {out}: {ro} is not writable (the set is staged beside it, then "
                         f"renamed into place); write it elsewhere"]
        assert sorted(p.name for p in ro.iterdir()) == ([] if which == "parent" else [SET_MANIFEST, "old.txt"])
    finally:
        os.chmod(base / "ro", 0o755)
        import shutil

        shutil.rmtree(base)


def test_ctrl_c_mid_write_is_one_line_and_keeps_the_old_set(tmp_path, capsys, monkeypatch):
    from judgelab.bias_card import report

    out = tmp_path / "audit"
    assert cli.main(_audit(out)) == 0
    before = _hashes(tmp_path)

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "card_figure", interrupted)  # inside the staging folder, tables written
    capsys.readouterr()
    assert cli.main(_audit(out, "--title", "new")) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["judgelab: interrupted; nothing was replaced"]
    assert _hashes(tmp_path) == before  # the old set whole, no staging folder, no lock file


def test_ctrl_c_of_a_real_process_is_one_line(tmp_path):
    """SIGINT to a running ``judgelab audit`` (sent while it waits for the lock another holds)."""
    out = tmp_path / "audit"
    fd, lock = _acquire(out)
    try:
        # SIGINT as a terminal delivers it: a suite started in the background (`cmd &` in a script) hands
        # its children SIGINT ignored, and Python keeps an inherited ignore
        proc = subprocess.Popen([sys.executable, "-m", "judgelab.cli", *_audit(out)], cwd=REPO, text=True,
                                stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"},
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        first = proc.stderr.readline()
        assert f"{out} is being written by another run (pid {os.getpid()}); waiting for it" in first
        proc.send_signal(2)
        rest = proc.stderr.read()
        assert proc.wait(timeout=60) == 130
        assert rest.strip().splitlines() == ["judgelab: interrupted; nothing was replaced"]
    finally:
        _release(fd, lock)
    assert list(tmp_path.iterdir()) == []


def test_two_runs_to_one_out_wait_for_each_other_and_both_end_well(tmp_path):
    out = tmp_path / "audit"
    fd, lock = _acquire(out)  # held here until both runs wait, so that they surely overlap
    procs, errs = [], []
    try:
        for title in ("run one", "run two"):
            err = open(tmp_path.parent / f"{tmp_path.name}-{title.replace(' ', '-')}.err", "w+")
            errs.append(err)
            procs.append(subprocess.Popen([sys.executable, "-m", "judgelab.cli", *_audit(out, "--title", title)],
                                          cwd=REPO, stdout=subprocess.DEVNULL, stderr=err,
                                          env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all("waiting for it" in Path(e.name).read_text() for e in errs):
            time.sleep(0.2)
    finally:
        _release(fd, lock)
    codes = [p.wait(timeout=300) for p in procs]
    texts = [Path(e.name).read_text() for e in errs]
    assert codes == [0, 0], texts
    for t in texts:  # said once whom it waited for
        assert t.count("is being written by another run (pid ") == 1
    assert {p.name for p in out.iterdir()} == SET | {SET_MANIFEST}
    md = (out / "bias_card.md").read_text()
    title = "run one" if "# Bias card: run one" in md else "run two"
    assert f"# Bias card: {title}" in md and title in (out / "report.html").read_text()  # one run's set, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit"]


def test_only_a_dead_runs_staging_folder_is_cleaned(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    live = tmp_path / f".out.staging-{os.getpid()}-abc"
    gone = tmp_path / f".out.staging-{dead_pid}-abc"
    old = tmp_path / f".out.old-{dead_pid}-abc"
    other = tmp_path / ".outer.staging-1-abc"  # another --out's: never touched
    for d in (live, gone, old, other):
        (d / "set").mkdir(parents=True)
    with staged_folder(tmp_path / "out") as stage:
        (stage / "a.txt").write_text("a")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name, "out"])


# ---- CSV cells a spreadsheet would run -----------------------------------------------------------------
EVIL = ["=HYPERLINK(\"x\",\"y\")", "+1", "-x", "@SUM(A1)", "\tx", "'=already", "''+two", "'plain", "ok"]


def test_formula_cells_are_quoted_and_read_back_as_written(tmp_path):
    df = pd.DataFrame({"model": EVIL, "score": np.linspace(-1, 1, len(EVIL)), "n": range(-5, 4)})
    write_table(df, tmp_path / "t.csv")
    cells = pd.read_csv(tmp_path / "t.csv", dtype=str, keep_default_na=False)
    assert list(cells["model"]) == ["'=HYPERLINK(\"x\",\"y\")", "'+1", "'-x", "'@SUM(A1)", "'\tx",
                                    "''=already", "'''+two", "'plain", "ok"]
    assert cells["score"].iloc[0] == "-1.0" and cells["n"].iloc[0] == "-5"  # numbers stay numbers
    back = read_table(tmp_path / "t.csv")
    pd.testing.assert_frame_equal(back, df)
    assert formula_safe(df.drop(columns="model")).equals(df.drop(columns="model"))
    assert formula_safe(pd.DataFrame({"m": ["\rx", None, 3]}))["m"].tolist() == ["'\rx", None, 3]


def test_leaderboard_csvs_hold_no_formula(tmp_path, capsys):
    from tests.board.test_outputs import _alpaca_log

    names = ("=HYPERLINK(\"x\")", "+1", "-x", "@SUM")
    logs = _alpaca_log(tmp_path / "results", models=names, n=12)
    out = tmp_path / "board"
    assert cli.main(["leaderboard", "--format", "alpaca_eval", str(logs), "--out", str(out), "--resamples", "1"]) == 0
    seen = set()
    for name in ("leaderboard.csv", "rank_flips.csv"):
        cells = pd.read_csv(out / name, dtype=str, keep_default_na=False)
        for c in cells.columns:
            text = cells[c][~cells[c].str.fullmatch(r"-?[0-9.eE+-]+|-?inf|nan")]  # numbers may be negative
            assert not text.str.match(r"[=+\-@\t\r]").any(), (name, c, list(text))
        seen |= set(read_table(out / name).get("model", pd.Series(dtype=str)))
    assert set(names) <= seen  # read back as the logs name them


def test_bias_card_csv_holds_no_formula(tmp_path):
    from judgelab.bias_card import CardSettings
    from judgelab.bias_card.report import write_audit
    from judgelab.verdict_import import import_verdicts, preset_mapping

    table = import_verdicts([JB], preset_mapping("judgebench"))
    table["judge"] = "=HYPERLINK(\"x\")"
    write_audit(table, tmp_path / "a", title="t", settings=CardSettings(n_resamples=20, min_decisive=1))
    cells = pd.read_csv(tmp_path / "a" / "bias_card.csv", dtype=str, keep_default_na=False)
    assert set(cells["judge"]) == {"'=HYPERLINK(\"x\")"}
    assert set(read_table(tmp_path / "a" / "bias_card.csv")["judge"]) == {"=HYPERLINK(\"x\")"}


def test_the_mt_bench_demonstration_refuses_a_users_folder_before_opening_its_cache(tmp_path):
    from judgelab.bias_card import mtbench_humans

    out = tmp_path / "demo"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit) as exit_:
        mtbench_humans.main(["--out", str(out), "--max-pairs", "4"])
    assert "holds 'notes.txt', which judgelab did not write" in str(exit_.value.code)
    assert _hashes(tmp_path) == {"demo": "dir", "demo/notes.txt": hashlib.sha256(b"mine").hexdigest()}
