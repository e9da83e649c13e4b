"""A throw-away PostgreSQL server on 127.0.0.1 for the cache tests (one per test session).

Started from Debian's ``postgresql`` package (``initdb``/``pg_ctl`` from
``/usr/lib/postgresql/*/bin`` or PATH) in a temporary directory, as a non-root user
(PostgreSQL refuses to run as root: as root we run it as the ``postgres`` system user
the package creates), on a free loopback port with trust authentication and no Unix
socket.  Stopped by the PID in ``postmaster.pid`` at interpreter exit.  When anything
is missing, :func:`server` raises :class:`Unavailable` with the reason, which the
fixtures turn into a skip.
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path


class Unavailable(RuntimeError):
    """No PostgreSQL server can be started here; the message says why."""


@dataclass
class Server:
    port: int
    user: str
    datadir: Path
    pid: int

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{db}"

    def new_database(self) -> str:
        """A fresh empty database; returns its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


_SERVER: Server | None = None
_ERROR: str | None = None


def _bindir() -> Path | None:
    for cand in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(cand, "initdb").exists() and Path(cand, "pg_ctl").exists():
            return Path(cand)
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start() -> Server:
    try:
        import psycopg
    except ImportError as exc:
        raise Unavailable("psycopg is not installed (pip install 'judgelab[slurm]')") from exc
    bindir = _bindir()
    if bindir is None:
        raise Unavailable("no initdb/pg_ctl found (apt-get install postgresql, or scripts/install-services.sh)")
    run_as: list[str] = []
    user = pwd.getpwuid(os.getuid()).pw_name
    if os.getuid() == 0:
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError as exc:
            raise Unavailable("running as root and there is no 'postgres' user to run the server as") from exc
        user = pw.pw_name
        run_as = ["runuser", "-u", user, "--"]
    tmp = Path(tempfile.mkdtemp(prefix="judgelab-pg-"))
    if os.getuid() == 0:
        os.chown(tmp, pw.pw_uid, pw.pw_gid)
    datadir = tmp / "data"
    init = subprocess.run(
        [*run_as, str(bindir / "initdb"), "-D", str(datadir), "-U", user, "--auth=trust", "-E", "UTF8",
         "--no-sync"],
        capture_output=True, text=True, timeout=120,
    )
    if init.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise Unavailable(f"initdb failed: {init.stderr.strip()[-500:]}")
    port = _free_port()
    opts = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories='' -c fsync=off"
    start = subprocess.run(
        [*run_as, str(bindir / "pg_ctl"), "-D", str(datadir), "-l", str(tmp / "server.log"), "-o", opts,
         "-w", "-t", "60", "start"],
        capture_output=True, text=True, timeout=90,
    )
    if start.returncode != 0:
        log = (tmp / "server.log").read_text() if (tmp / "server.log").exists() else ""
        shutil.rmtree(tmp, ignore_errors=True)
        raise Unavailable(f"pg_ctl start failed: {start.stderr.strip()[-300:]} {log[-300:]}")
    pid = int((datadir / "postmaster.pid").read_text().splitlines()[0])
    server = Server(port=port, user=user, datadir=datadir, pid=pid)
    atexit.register(_stop, server, tmp)
    deadline = time.monotonic() + 30
    while True:
        try:
            psycopg.connect(server.url(), connect_timeout=2).close()
            break
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                raise Unavailable(f"the server started but takes no connections: {exc}") from exc
            time.sleep(0.1)
    return server


def _stop(server: Server, tmp: Path) -> None:
    """Fast shutdown by PID (SIGINT to the postmaster), then remove the data directory."""
    try:
        os.kill(server.pid, signal.SIGINT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            os.kill(server.pid, 0)
            time.sleep(0.05)
        os.kill(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    shutil.rmtree(tmp, ignore_errors=True)


def server() -> Server:
    """The session's server, started on first use; :class:`Unavailable` if it cannot start."""
    global _SERVER, _ERROR
    if _SERVER is None and _ERROR is None:
        try:
            _SERVER = _start()
        except Unavailable as exc:
            _ERROR = str(exc)
        except (OSError, subprocess.SubprocessError) as exc:
            _ERROR = f"could not start PostgreSQL: {exc}"
    if _SERVER is None:
        raise Unavailable(_ERROR)
    return _SERVER
