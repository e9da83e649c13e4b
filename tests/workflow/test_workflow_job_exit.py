"""A finished job's process ends without the interpreter's teardown, and loses nothing by it.

:func:`judgelab.workflow.run_script` ends a job process Snakemake started through
:func:`judgelab.workflow.end_job_process`: the ``atexit`` handlers run (the job's log is flushed and
closed), the standard streams are flushed, and the process leaves with ``os._exit(0)``, so the objects
of pandas, scipy or torch are never freed one by one.  A caller's own object is never ended this way,
and an error still leaves with its status.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from snakemake.iocontainers import Snakemake

from judgelab.workflow import _is_job_process
from tests.conftest import REPO

JOB = """
import atexit, logging, sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from snakemake.iocontainers import Snakemake
from judgelab.workflow import run_script

out = Path({out!r})


def job_object(sm):
    sm.log, sm.rule = [str(out / "job.log")], "demo"
    return sm


class Teardown:
    # a normal interpreter exit frees this object at teardown; os._exit never does
    def __del__(self):
        (out / "teardown").write_text("ran")


KEEP = Teardown()
atexit.register(lambda: (out / "atexit").write_text("ran"))
sm = {make}


def main(sm):
    logging.getLogger("judgelab").info("the job's last line")
    sys.stdout.write("buffered stdout, no newline")
    {body}


run_script(sm, main)
(out / "after").write_text("ran")  # a caller's own object: run_script returns
"""

# the object a job script's preamble unpickles (its fields as run_script reads them), and a look-alike
REAL = "job_object(Snakemake.__new__(Snakemake))"
FAKE = "job_object(type('Fake', (), {})())"


def run_job(tmp_path: Path, make: str, body: str = "pass") -> tuple[subprocess.CompletedProcess, Path]:
    src = JOB.format(repo=str(REPO), out=str(tmp_path), make=make, body=body)
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(src))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    return proc, tmp_path


def test_a_snakemake_job_ends_after_its_exit_handlers_and_without_teardown(tmp_path):
    proc, out = run_job(tmp_path, REAL)
    assert proc.returncode == 0, proc.stderr
    assert (out / "atexit").read_text() == "ran"  # the exit handlers ran
    assert "the job's last line" in (out / "job.log").read_text()  # the log was flushed and closed
    assert proc.stdout == "buffered stdout, no newline"  # the streams were flushed
    assert not (out / "teardown").exists()  # no teardown: the process ended at os._exit
    assert not (out / "after").exists()  # ... right after the job


def test_a_callers_own_object_returns_and_tears_down_as_usual(tmp_path):
    proc, out = run_job(tmp_path, FAKE)
    assert proc.returncode == 0, proc.stderr
    assert (out / "after").read_text() == "ran"
    assert (out / "teardown").read_text() == "ran"


@pytest.mark.parametrize(("body", "status"), [
    ("from judgelab.config import ConfigError; raise ConfigError('bad key x')", 1),
    ("raise RuntimeError('boom')", 1),
])
def test_a_failing_job_keeps_its_status_and_message(tmp_path, body, status):
    proc, out = run_job(tmp_path, REAL, body)
    assert proc.returncode == status
    assert ("bad key x" in proc.stderr) or ("boom" in proc.stderr)
    assert not (out / "after").exists()


def test_only_snakemakes_job_object_is_a_job_process():
    assert _is_job_process(Snakemake.__new__(Snakemake))
    assert not _is_job_process(SimpleNamespace(log=[], rule="demo"))
