"""A crashed run leaves nothing running, and its rerun asks only what no job had stored.

Issue #19: a ``kill -9`` of snakemake left its job processes (and a server a job had
launched) running and writing the call cache.  :mod:`judgelab.workflow.lifecycle` (installed by
``workflow_scripts/_repo.py`` in every rule script) makes each job watch its snakemake
ancestors and stop itself and every child process when one disappears, and turns SIGTERM
into a clean exit that stops the children too.

* The pipeline test runs a real audit query job against an OpenAI-compatible server on
  loopback (started here, slow on purpose: 0.25 s a call), SIGKILLs snakemake once some
  batches are in the cache, and checks that within a bounded time no process of the run is
  left (every process started by the run carries a marker in its environment), then that
  ``--unlock`` and ``--rerun-incomplete`` finish the run asking the server only the calls the
  cache lacked (the cache's run log and the server's own count agree).
* The unit tests run a stand-in job (a python process that installs the lifecycle and starts
  a child in a session of its own, as :func:`judgelab.judges.local_server.start_server` starts
  ``transformers serve``) under a process whose command line is ``snakemake``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from judgelab.workflow import lifecycle
from tests.conftest import REPO
from tests.workflow.test_pipeline import copy_workflow, snakemake_bin

MARK = "JUDGELAB_CRASH_TEST_RUN"
N_PAIRS = 64  # 128 calls: about 32 s at 0.25 s a call, far longer than the cleanup bound
CLEANUP_BOUND_S = 15.0


# -- helpers ---------------------------------------------------------------------------------
def marked_processes(mark: str) -> list[tuple[int, str]]:
    """(pid, command line) of every live process whose environment carries ``MARK=mark``."""
    needle = f"{MARK}={mark}".encode()
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state != "Z":
            out.append((int(entry.name), cmd.strip()))
    return out


def wait_until_gone(mark: str, bound: float) -> list[tuple[int, str]]:
    deadline = time.monotonic() + bound
    left = marked_processes(mark)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = marked_processes(mark)
    return left


def kill_marked(mark: str) -> None:
    for pid, _ in marked_processes(mark):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class SlowOpenAI:
    """A chat-completions endpoint on 127.0.0.1 that answers ``{"verdict": "A"}`` after
    ``delay`` seconds and counts every request it receives (by its messages)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.asked: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                time.sleep(owner.delay)
                owner.asked.append(json.dumps(body["messages"], sort_keys=True))
                answer = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": '{"verdict": "A"}'}}],
                          "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}}
                data = json.dumps(answer).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client was killed while we slept
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def stored_calls(cache: Path) -> int:
    if not cache.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=5) as c:
            return int(c.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
    except sqlite3.OperationalError:  # the table is not created yet
        return 0


# -- the pipeline test -----------------------------------------------------------------------
@pytest.fixture()
def crash_project(tmp_path: Path, data_root: Path):
    server = SlowOpenAI(delay=0.25)
    wd = copy_workflow(tmp_path / "wf")
    rows = [{"pair_id": str(i), "prompt": f"Question {i}: name a prime number.", "response_a": f"{2 + i} maybe",
             "response_b": f"Answer {i}: 2 is prime.", "expected_verdict": "B"} for i in range(N_PAIRS)]
    (wd / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    judge = {"name": "crash-judge", "backend": "openai", "model": "slow-model", "family": "test", "concurrency": 1,
             "options": {"base_url": server.base_url, "api_key_env": None, "timeout_s": 60, "max_retries": 0}}
    (wd / "crash.yaml").write_text(json.dumps({
        "judges": [judge], "allow_simulated_roles": True,
        "orders": {"datasets": {"mine": {"loader": "pairs", "source": str(wd / "pairs.jsonl")}}},
    }))
    mark = uuid.uuid4().hex
    yield wd, server, mark
    kill_marked(mark)  # a failing test leaves nothing behind either
    server.close()


def _snakemake(wd: Path, mark: str, *args: str) -> tuple[subprocess.Popen, Path]:
    """Snakemake in a session of its own (so killing it is all the test kills), its output in
    ``wd/snakemake-<n>.out`` (a pipe nobody reads could fill and stall it)."""
    env = {**os.environ, MARK: mark, "JUDGELAB_PROGRESS": "0", "HF_HUB_OFFLINE": "1"}
    env.setdefault("JUDGELAB_DATA", str(REPO.parent / "shared" / "data"))
    out = wd / f"snakemake-{len(list(wd.glob('snakemake-*.out')))}.out"
    with open(out, "w") as fh:
        proc = subprocess.Popen([snakemake_bin(), "--cores", "2", "--configfile", "crash.yaml", *args], cwd=wd,
                                env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, out


def _tail(out: Path) -> str:
    return out.read_text(errors="replace")[-3000:]


@pytest.mark.slow
def test_kill_9_of_snakemake_stops_the_run_and_the_rerun_asks_only_the_rest(crash_project):
    wd, server, mark = crash_project
    target = "results/orders/verdicts/mine/crash-judge.parquet"
    cache = wd / "results" / "cache" / "calls.sqlite"
    total = 2 * N_PAIRS

    proc, out = _snakemake(wd, mark, "--", target)
    deadline = time.monotonic() + 300
    while stored_calls(cache) < 16 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None, f"the run ended before it could be killed:\n{_tail(out)}"
    assert stored_calls(cache) >= 16, "no batch reached the cache in time"
    running = marked_processes(mark)
    assert any("query_pairs" in cmd for _, cmd in running), running  # the query job is mid-run
    proc.kill()  # SIGKILL snakemake itself, nothing else
    proc.wait()
    killed_at = time.monotonic()

    left = wait_until_gone(mark, CLEANUP_BOUND_S)
    assert not left, f"still running {time.monotonic() - killed_at:.1f} s after kill -9 of snakemake: {left}"
    logs = "".join(p.read_text(errors="replace") for p in (wd / "results" / "logs").rglob("*.log"))
    assert "is gone: stopping this job" in logs  # the job's watchdog ended it, and said why
    stored = stored_calls(cache)
    asked_by_first_run = len(server.asked)
    assert 16 <= stored < total
    time.sleep(1.0)
    assert len(server.asked) == asked_by_first_run  # nothing asks the judge any more

    # the rerun: what README "The call cache" says to run after a crash
    server.delay = 0.0
    unlock, out = _snakemake(wd, mark, "--unlock")
    assert unlock.wait(timeout=300) == 0, _tail(out)
    rerun, out = _snakemake(wd, mark, "--rerun-incomplete", "--", target)
    assert rerun.wait(timeout=600) == 0, _tail(out)
    assert not marked_processes(mark)

    asked_by_rerun = server.asked[asked_by_first_run:]
    assert len(asked_by_rerun) == total - stored  # only the calls no job had stored
    assert len(set(asked_by_rerun)) == len(asked_by_rerun)  # and each once
    assert stored_calls(cache) == total
    with sqlite3.connect(cache) as c:  # the cache's own run log says the same
        hits, new = c.execute("SELECT hits, new_calls FROM runs WHERE judge = 'crash-judge' "
                              "ORDER BY rowid DESC LIMIT 1").fetchone()
    assert (hits, new) == (stored, total - stored)
    import pandas as pd

    assert len(pd.read_parquet(wd / target)) == total


# -- the lifecycle in a stand-in job ---------------------------------------------------------
JOB = """
import os, subprocess, sys, time
sys.path.insert(0, {repo!r})
from judgelab.workflow import lifecycle
watching = lifecycle.install(grace_s=20.0, poll_s=0.2)  # a cap: the graceful path ends in well under a second, but a loaded CI machine may stall it
tmp = {tmp!r}
PIDFILE = "import os\\ndef note(name):\\n    open(name + '.t', 'w').write(str(os.getpid())); os.replace(name + '.t', name)\\n"
# a child in its own session, as start_server runs `transformers serve`; it leaves a member of its
# process group orphaned (double fork): no descendant of this job, reachable only through the group
SERVER = PIDFILE + "import time\\nif os.fork() == 0:\\n    if os.fork() == 0:\\n        note(%r)\\n        time.sleep(600)\\n    os._exit(0)\\ntime.sleep(600)" % (tmp + "/orphan")
child = subprocess.Popen([sys.executable, "-c", SERVER], start_new_session=True)
# an ordinary helper with a child of its own: a true grandchild of this job
HELPER = PIDFILE + "import subprocess, sys, time\\ng = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\\nopen(%r + '.t', 'w').write(str(g.pid)); os.replace(%r + '.t', %r)\\ntime.sleep(600)" % ((tmp + "/grandchild",) * 3)
helper = subprocess.Popen([sys.executable, "-c", HELPER])
while not (os.path.exists(tmp + "/orphan") and os.path.exists(tmp + "/grandchild")):
    time.sleep(0.05)
pids = [open(tmp + "/" + n).read() for n in ("grandchild", "orphan")]
try:  # announced inside the try: a SIGTERM right after the line still runs the finally block
    print(watching, child.pid, helper.pid, *pids, flush=True)
    time.sleep(600)
finally:
    child.terminate(); child.wait()  # what a careless close() does: the leader only, not its group
    open({done!r}, "w").write("closed")
"""


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _fake_snakemake(tmp_path: Path, mark: str, job: Path) -> subprocess.Popen:
    """A process whose command line is ``snakemake`` that runs ``job`` through ``sh -c``, as
    Snakemake's local executor does."""
    exe = tmp_path / "snakemake"
    exe.write_text(f"#!{sys.executable}\nimport subprocess, sys\n"
                   f"sys.exit(subprocess.call([sys.executable, {str(job)!r}]))\n")
    exe.chmod(0o755)
    return subprocess.Popen(["sh", "-c", f"exec {exe}"], env={**os.environ, MARK: mark}, stdout=subprocess.PIPE,
                            text=True, start_new_session=True)


@pytest.fixture()
def stand_in_job(tmp_path: Path):
    mark = uuid.uuid4().hex
    done = tmp_path / "closed"
    job = tmp_path / "job.py"
    job.write_text(JOB.format(repo=str(REPO), done=str(done), tmp=str(tmp_path)))
    sm = _fake_snakemake(tmp_path, mark, job)
    line = sm.stdout.readline().split()
    yield sm, mark, done, line
    kill_marked(mark)


def _check_family(mark: str, line: list[str]) -> None:
    """The stand-in job's processes are what they claim: a true grandchild (child of the helper)
    and an orphan of the server's process group that is no descendant of the job."""
    server, helper, grandchild, orphan = map(int, line[1:])
    job = _ppid(helper)
    assert _ppid(grandchild) == helper and _ppid(server) == job
    assert grandchild in lifecycle.descendants(job)
    assert orphan not in lifecycle.descendants(job) and os.getpgid(orphan) == server == os.getpgid(server)
    # snakemake, the job, the server, its orphan, the helper, its child
    assert len(marked_processes(mark)) == 6, marked_processes(mark)


def test_job_stops_its_children_when_snakemake_is_killed(stand_in_job):
    sm, mark, done, line = stand_in_job
    assert line[0] == "True", line  # it found its snakemake ancestor
    _check_family(mark, line)
    sm.kill()
    sm.wait()
    left = wait_until_gone(mark, 30.0)
    assert not left, left
    assert done.read_text() == "closed"  # the graceful path ran the job's finally block


def test_sigterm_of_the_job_stops_its_children(stand_in_job):
    sm, mark, done, line = stand_in_job
    _check_family(mark, line)
    job_pid = next(p for p, cmd in marked_processes(mark) if cmd.endswith("job.py"))
    os.kill(job_pid, signal.SIGTERM)
    assert sm.wait(timeout=30) == lifecycle.EXIT_TERMINATED  # the job's status, passed on by "snakemake"
    left = wait_until_gone(mark, 30.0)
    assert not left, left
    assert done.read_text() == "closed"


def test_ancestors_and_command_lines():
    assert lifecycle.is_snakemake(["/venv/bin/snakemake", "--cores", "2"])
    assert lifecycle.is_snakemake(["/usr/bin/python3.12", "/venv/bin/snakemake", "-n"])
    assert lifecycle.is_snakemake(["python", "-m", "snakemake", "--mode", "subprocess"])
    assert not lifecycle.is_snakemake(["bash", "-c", "snakemake --cores 2"])
    assert not lifecycle.is_snakemake(["python", "-m", "pytest", "tests/snakemake_test.py"])
    assert not lifecycle.is_snakemake([])
    me = lifecycle.ProcessId(os.getpid(), lifecycle._stat(os.getpid())[2])
    assert me.alive() and not lifecycle.ProcessId(os.getpid(), me.start + 1).alive()  # a reused pid is not us
    assert lifecycle.snakemake_ancestors() == []  # pytest is no snakemake


SERVER_JOB = """
import sys, time
sys.path.insert(0, {repo!r})
from judgelab.workflow import lifecycle
lifecycle.install(grace_s=20.0, poll_s=0.2)
from judgelab.judges import make_judge
from tests.helpers.realllm import smollm2_openai_spec
judge = make_judge(smollm2_openai_spec("smollm2-launched", launch="transformers-serve"))
judge._launcher.ensure()
print(judge._launcher.server.pid, flush=True)
try:
    time.sleep(600)
finally:
    judge.close()
"""


@pytest.mark.slow
def test_a_launched_transformers_serve_dies_with_the_run(tmp_path: Path):
    """The case of issue #19: a job's own ``transformers serve`` outlived a ``kill -9`` of snakemake."""
    from tests.helpers.realllm import server_missing

    why = server_missing()
    if why:
        pytest.skip(why)
    mark = uuid.uuid4().hex
    job = tmp_path / "server_job.py"
    job.write_text(SERVER_JOB.format(repo=str(REPO)))
    sm = _fake_snakemake(tmp_path, mark, job)
    try:
        server_pid = int(sm.stdout.readline())
        cmds = {p: cmd for p, cmd in marked_processes(mark)}
        assert "serve" in cmds[server_pid], cmds  # the server runs, and it is part of the run
        assert os.getpgid(server_pid) == server_pid  # in a process group (session) of its own
        sm.kill()
        sm.wait()
        left = wait_until_gone(mark, 30.0)
        assert not left, left
    finally:
        kill_marked(mark)
