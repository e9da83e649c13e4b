"""A Snakemake job dies with its run: the job watchdog (Linux).

Why.  Snakemake's local executor runs a rule script as a chain of processes
(``snakemake`` -> ``sh -c`` -> ``python -m snakemake`` in subprocess mode -> ``python
script.py``), none in a process group of its own.  When the ``snakemake`` the user started is
killed with SIGKILL (an OOM kill, a closed terminal's cleanup, a watchdog, ``kill -9``), nothing
tells its jobs: they are orphaned and keep running, a query job keeps asking its judge and
writing the call cache, and a server it launched (``transformers serve``, see
:class:`judgelab.judges.local_server.Launcher`) keeps running too.  The kernel's
``PR_SET_PDEATHSIG`` does not help here: it fires only when the *direct* parent (more exactly,
the parent thread) dies, and the job's direct parent is a shell that lives on.

What.  :func:`install` (called by ``workflow_scripts/_repo.py``, which every rule script
imports first) does two things in the job process:

* SIGTERM (``scancel``, ``kill``, the watchdog below) raises :class:`SystemExit` (143) in the
  main thread, so ``finally`` blocks and ``close()`` run: a judge stops the server it launched
  and the call cache rolls back the unfinished batch (answered batches are already committed);
  at exit every descendant process still running is stopped (a child that leads its own
  process group or session, as a launched server does, as a whole group).  A timer makes
  sure: after ``grace_s`` it stops the descendants and ends the process with
  ``os._exit(143)``, whatever the main thread is blocked in.
* A daemon thread polls the ``snakemake`` processes among the job's ancestors (found by
  walking ``/proc/<pid>/stat``'s parent chain; identified by pid *and* start time, so a reused
  pid is not taken for the old process) and, when one of them is gone, ends the job the same
  way.  A job started outside Snakemake (no such ancestor) gets no watchdog.

Ctrl-C is unchanged: the terminal sends SIGINT to the whole foreground group, jobs included.
After a crash, Snakemake's own bookkeeping still needs ``snakemake --unlock`` and then a run with
``--rerun-incomplete``; the call cache makes that rerun ask only the calls no job had stored.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: Exit status of a job ended by SIGTERM or by the watchdog (128 + SIGTERM, as the shell reports it).
EXIT_TERMINATED = 128 + signal.SIGTERM
PROC = Path("/proc")


@dataclass(frozen=True)
class ProcessId:
    """A process named by pid and start time (clock ticks after boot): a reused pid differs."""

    pid: int
    start: int

    def alive(self) -> bool:
        info = _stat(self.pid)
        return info is not None and info[2] == self.start and info[0] != "Z"


def _stat(pid: int) -> tuple[str, int, int] | None:
    """``(state, ppid, start time)`` of ``pid`` from ``/proc/<pid>/stat``; None if it is gone."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    rest = raw[raw.rfind(")") + 2:].split()  # the command name in parentheses may hold spaces
    return rest[0], int(rest[1]), int(rest[19])


def _cmdline(pid: int) -> list[str]:
    try:
        return [a for a in (PROC / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0") if a]
    except OSError:
        return []


def is_snakemake(argv: list[str]) -> bool:
    """Whether a command line runs Snakemake (``snakemake ...``, ``python .../snakemake ...``,
    ``python -m snakemake ...``), not merely mentions it in an argument."""
    if not argv:
        return False
    if Path(argv[0]).name == "snakemake":
        return True
    if "python" in Path(argv[0]).name and len(argv) > 1:
        return Path(argv[1]).name == "snakemake" or argv[1:3] == ["-m", "snakemake"]
    return False


def snakemake_ancestors(pid: int | None = None) -> list[ProcessId]:
    """The Snakemake processes above ``pid`` (default: this process), nearest first."""
    out: list[ProcessId] = []
    info = _stat(os.getpid() if pid is None else pid)
    seen: set[int] = set()
    while info is not None and info[1] > 1 and info[1] not in seen:
        parent = info[1]
        seen.add(parent)
        info = _stat(parent)
        if info is not None and is_snakemake(_cmdline(parent)):
            out.append(ProcessId(parent, info[2]))
    return out


def descendants(pid: int | None = None) -> list[int]:
    """Every live process below ``pid`` (default: this process), parents before children."""
    root = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir() if PROC.is_dir() else ():
        if entry.name.isdigit():
            info = _stat(int(entry.name))
            if info is not None and info[0] != "Z":
                children.setdefault(info[1], []).append(int(entry.name))
    out: list[int] = []
    todo = list(children.get(root, []))
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _reap(pid: int) -> None:
    """Collect an exited child of ours, so it stops counting as alive."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except (ChildProcessError, OSError):
        pass


def _alive(pid: int) -> bool:
    _reap(pid)
    info = _stat(pid)
    return info is not None and info[0] != "Z"


#: process groups led by a descendant (a launched server's session), remembered when termination
#: begins: a ``finally`` block that stops only the leader (``Popen.terminate``) leaves the group's
#: other members -- no descendants of this job once orphaned -- and only the group reaches them
_GROUPS: set[int] = set()


def remember_groups(found: list[int] | None = None) -> set[int]:
    """Add the process groups led by descendants (other than this job's own group) to the groups
    :func:`stop_descendants` stops; returns them."""
    own_group = os.getpgrp()
    for p in descendants() if found is None else found:
        try:
            pgid = os.getpgid(p)
        except (ProcessLookupError, PermissionError):
            continue
        if pgid == p and pgid != own_group:
            _GROUPS.add(pgid)
    return set(_GROUPS)


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def stop_descendants(timeout: float = 10.0) -> list[int]:
    """SIGTERM every descendant and every remembered group (a child leading its own group, e.g. a
    launched server, as the whole group, orphaned members included), wait up to ``timeout`` s,
    then SIGKILL what is left.  Returns the pids found."""
    found = descendants()
    groups = remember_groups(found)
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        left = [p for p in found if _alive(p)]
        live_groups = [g for g in groups if _group_exists(g)]
        for g in live_groups:
            try:
                os.killpg(g, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for p in left:
            if p in groups:
                continue
            try:
                os.kill(p, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            for p in found:
                _reap(p)  # a killed child of ours would stay a zombie member of its group
            if not any(_alive(p) for p in left) and not any(_group_exists(g) for g in live_groups):
                break
            time.sleep(0.05)
    return found


@dataclass
class _State:
    pid: int
    grace_s: float
    handler_installed: bool = False
    watched: tuple[ProcessId, ...] = ()
    terminating: bool = False
    exit_raised: bool = False


_STATE: _State | None = None
_LOCK = threading.Lock()


def _say(message: str) -> None:
    """Tell the job's log and stderr; never fail (snakemake's end of stderr may be gone, and in a
    signal handler the interrupted code may be half-way through a write to the same stream)."""
    for emit in (lambda: log.warning("%s", message),
                 lambda: print(f"judgelab: {message}", file=sys.stderr, flush=True)):
        try:
            emit()
        except (OSError, ValueError, RuntimeError):
            pass


def _hard_stop(delay: float) -> None:
    """After ``delay`` s: stop every descendant and end this process, whatever it is doing."""
    time.sleep(delay)
    stop_descendants()
    os._exit(EXIT_TERMINATED)


def _begin_termination(state: _State, reason: str) -> bool:
    """Log ``reason`` and start the hard-stop timer once; False if already terminating."""
    with _LOCK:
        if state.terminating:
            return False
        state.terminating = True
    _say(f"{reason}: stopping this job (pid {state.pid}) and its child processes")
    remember_groups()  # before finally blocks stop the group leaders and orphan their groups
    atexit.register(stop_descendants, 5.0)  # the graceful path: what close() left running, at exit
    threading.Thread(target=_hard_stop, args=(state.grace_s,), name="judgelab-hard-stop", daemon=True).start()
    return True


def _on_sigterm(signum: int, frame: object) -> None:
    state = _STATE
    if state is None or os.getpid() != state.pid:  # a forked child inherited the handler: default death
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    _begin_termination(state, "SIGTERM received")  # no-op when the watchdog sent it (already armed)
    if not state.exit_raised:  # a second SIGTERM while the first unwinds lets the cleanup finish
        state.exit_raised = True
        raise SystemExit(EXIT_TERMINATED)


def _watch(state: _State, poll_s: float) -> None:
    while True:
        time.sleep(poll_s)
        gone = next((p for p in state.watched if not p.alive()), None)
        if gone is None:
            continue
        reason = f"snakemake (pid {gone.pid}) is gone"
        if state.handler_installed:  # the graceful path first: SystemExit in the main thread
            _begin_termination(state, reason)
            os.kill(state.pid, signal.SIGTERM)
        else:
            _say(f"{reason}: stopping this job (pid {state.pid}) and its child processes")
            _hard_stop(0.0)
        return


def install(*, grace_s: float = 15.0, poll_s: float = 0.5) -> bool:
    """Make this job process die with its Snakemake run and stop its children when it dies.

    Idempotent; call from the main thread at job start.  Returns whether a watchdog runs
    (False outside Snakemake or without ``/proc``).  ``grace_s``: how long ``finally`` blocks
    and ``close()`` get after SIGTERM before every descendant is killed and the process ends.
    """
    global _STATE
    if _STATE is not None and _STATE.pid == os.getpid():
        return bool(_STATE.watched)
    state = _State(pid=os.getpid(), grace_s=grace_s)
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)
        state.handler_installed = True
    state.watched = tuple(snakemake_ancestors()) if PROC.is_dir() else ()
    _STATE = state
    if state.watched:
        threading.Thread(target=_watch, args=(state, poll_s), name="judgelab-watchdog", daemon=True).start()
    return bool(state.watched)
