"""Reading rows with precise errors, and writing tables atomically with provenance.

Atomic: every output is written to a temporary file in the destination folder and
renamed into place, so a rule killed mid-write leaves no half-written file that
Snakemake (or a person) could mistake for a result.

Provenance: every table carries the config hash, the judge ids and the seeds it
came from, as columns (so they survive any CSV round trip) and, for parquet, as
file metadata too.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd


class InputError(ValueError):
    """Malformed input data; the message names the file and the line or row."""


def current_umask() -> int:
    """The process umask (read by setting it and restoring it at once: POSIX has no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it into place on success.

    The file gets the mode a plain ``open()`` would give it (0666 less the umask): ``mkstemp``
    creates 0600, which would hide results from the group on a shared file system."""
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.is_dir():
        raise InputError(f"{dest}: is a folder, expected a file path")
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``, which Python's ``os`` does
    not expose); False where the call is missing or refused (then two renames do it)."""
    import ctypes

    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


#: The manifest every output set carries: the entries judgelab wrote into the folder and the
#: command that wrote them.  A folder whose every entry is listed in its manifest is judgelab's to
#: replace; any other entry is the user's, and ``--out`` refuses the folder (``--force`` overrides).
SET_MANIFEST = ".judgelab-set.json"


class OutputRefused(InputError):
    """``--out`` names a folder judgelab must not replace (an input, a user's files, the cwd)."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _entries(folder: Path) -> list[str]:
    """Every entry under ``folder`` as a relative POSIX path (folders end in ``/``), symlinks not followed."""
    out: list[str] = []
    for root, dirs, files in os.walk(folder):
        rel = Path(root).relative_to(folder)
        for d in dirs:
            path = rel / d
            out.append(path.as_posix() + ("" if (Path(root) / d).is_symlink() else "/"))
        out.extend((rel / f).as_posix() for f in files)
    return sorted(e for e in out if e != SET_MANIFEST)


def foreign_entry(folder: str | os.PathLike[str], *, ours: Sequence[str] = ()) -> str | None:
    """The first entry of an existing ``folder`` that judgelab did not write (not listed in its
    :data:`SET_MANIFEST`, nor in ``ours``: files the command itself keeps there while it works),
    or None when every entry is listed (an empty or missing folder too)."""
    dest = Path(folder)
    if not dest.is_dir():
        return None
    listed: set[str] = set()
    try:
        manifest = json.loads((dest / SET_MANIFEST).read_text(encoding="utf-8"))
        if isinstance(manifest, dict) and isinstance(manifest.get("entries"), list):
            listed = {str(e) for e in manifest["entries"]}
    except (OSError, ValueError):
        pass  # no manifest (or not one judgelab wrote): every entry counts as the user's
    listed |= set(ours)
    return next((e for e in _entries(dest) if e not in listed), None)


def check_out(path: str | os.PathLike[str], *, inputs: Sequence[str | os.PathLike[str]] = (),
              force: bool = False, ours: Sequence[str] = ()) -> Path:
    """Refuse an ``--out`` folder judgelab must not replace, before anything is read or written.

    Refused, each with one line (an :class:`OutputRefused`): an existing file; the current folder
    or one holding it (a set is staged beside ``--out``, and replacing the folder one stands in
    would pull it from under the shell); a path that is, contains or lies inside an input (the
    set would delete or write into the logs it was read from); a folder whose parent cannot take
    the staging folder; and, unless ``force``, a folder holding an entry judgelab did not write.
    Returns the absolute path."""
    dest = Path(os.path.abspath(path))
    shown = str(path)
    if dest.exists() and not dest.is_dir():
        raise OutputRefused(f"{shown}: exists and is a file; --out needs a folder (a new or an existing one)")
    real = dest.resolve()
    cwd = Path.cwd().resolve()
    if real == cwd or real in cwd.parents:
        raise OutputRefused(f"--out {shown} {'is' if real == cwd else 'holds'} the current folder; the set "
                            f"replaces its folder whole, so name a subfolder (e.g. --out {Path(shown) / 'out'})")
    for raw in inputs:
        inp = Path(os.path.abspath(raw)).resolve()
        if real == inp:
            how = "is"
        elif inp in real.parents:
            how = "lies inside"
        elif real in inp.parents:
            how = "contains"
        else:
            continue
        raise OutputRefused(f"--out {shown} {how} the input {raw}; the set replaces its folder whole, "
                            f"so write it elsewhere (nothing was written)")
    parent = real.parent
    probe = parent
    while not probe.exists() and probe.parent != probe:  # the nearest folder that exists takes the mkdir
        probe = probe.parent
    if not probe.is_dir():
        raise OutputRefused(f"--out {shown}: {probe} is a file, not a folder")
    if not os.access(probe, os.W_OK | os.X_OK) or (dest.is_dir() and not os.access(dest, os.W_OK | os.X_OK)):
        where = dest if dest.is_dir() and not os.access(dest, os.W_OK | os.X_OK) else probe
        raise OutputRefused(f"--out {shown}: {where} is not writable (the set is staged beside it, then renamed "
                            f"into place); write it elsewhere")
    if not force:
        foreign = foreign_entry(dest, ours=ours)
        if foreign is not None:
            raise OutputRefused(f"--out {shown} holds {foreign!r}, which judgelab did not write; the set would "
                                f"replace the folder whole: choose another --out, or add --force to replace it")
    return dest


def add_out_folder(parser: Any, help_text: str) -> None:
    """``--out`` (an output set's folder) and ``--force``, declared once for every command that
    writes a set: ``judgelab.cli`` refuses or locks the folder (:func:`out_guard`) before the
    command reads anything."""
    parser.add_argument("--out", required=True, help=help_text)
    parser.add_argument("--force", action="store_true",
                        help="replace --out even when it holds files judgelab did not write")
    parser.set_defaults(out_folder=True)


#: Environment variable naming the file of single-file outputs judgelab wrote (default
#: ``$XDG_STATE_HOME/judgelab/written.tsv``, else ``~/.local/state/judgelab/written.tsv``).
WRITTEN_LEDGER_ENV = "JUDGELAB_WRITTEN_LEDGER"
#: Above this size the ledger is rewritten with the last line per path.
LEDGER_COMPACT_BYTES = 1 << 20


def written_ledger() -> Path:
    """Where judgelab lists the single files it wrote through ``--out FILE`` (path, size, sha256).

    A table file carries no room for an owner mark a user cannot also write (a CSV has no metadata),
    and a sidecar beside every output would clutter the user's folders; a per-user ledger outside
    them says, for an existing file, whether judgelab wrote exactly these bytes."""
    env = os.environ.get(WRITTEN_LEDGER_ENV)
    if env:
        return Path(env)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "judgelab" / "written.tsv"


def _sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def record_written(path: str | os.PathLike[str]) -> None:
    """Add ``path`` (as it is now) to the :func:`written_ledger`; a ledger that cannot be written only
    means the next run to the same file needs ``--force``."""
    import fcntl

    p = Path(os.path.abspath(path))
    ledger = written_ledger()
    try:
        line = f"{p}\t{p.stat().st_size}\t{_sha256(p)}\n"
        ledger.parent.mkdir(parents=True, exist_ok=True)
        with open(ledger, "a+", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)  # one whole line per writer, never interleaved
            fh.write(line)
            fh.flush()
            if fh.tell() > LEDGER_COMPACT_BYTES:  # keep the last line per path (the only one ever read)
                fh.seek(0)
                last = {r.split("\t", 1)[0]: r for r in fh.read().splitlines() if r}
                fh.seek(0)
                fh.truncate()
                fh.write("".join(r + "\n" for r in last.values()))
    except OSError:
        pass


def written_by_judgelab(path: str | os.PathLike[str]) -> bool:
    """Whether the file at ``path`` holds exactly the bytes judgelab last wrote there (a file the user
    edited since, or replaced, is theirs)."""
    p = Path(os.path.abspath(path))
    try:
        rows = written_ledger().read_text(encoding="utf-8").splitlines()
        size = p.stat().st_size
    except OSError:
        return False
    key = f"{p}\t"
    last = next((r for r in reversed(rows) if r.startswith(key)), None)
    return last is not None and last == f"{p}\t{size}\t{_sha256(p)}"


def check_out_file(path: str | os.PathLike[str], *, inputs: Sequence[str | os.PathLike[str]] = (),
                   force: bool = False, suffixes: Sequence[str] = (".csv", ".parquet")) -> Path:
    """Refuse an ``--out FILE`` judgelab must not write, before anything is read or computed.

    Refused, each with one line (an :class:`OutputRefused`): a suffix the table writer does not know;
    an existing folder; the file of an input, or a path inside an input folder (the command would
    replace what it reads); and, unless ``force``, an existing file judgelab did not write
    (:func:`written_by_judgelab`).  Returns the absolute path."""
    dest = Path(os.path.abspath(path))
    shown = str(path)
    if dest.suffix not in suffixes:
        raise OutputRefused(f"--out {shown}: the table is written as {' or '.join(suffixes)} (by the name's "
                            f"suffix); name a file ending in one of them")
    if dest.is_dir():
        raise OutputRefused(f"--out {shown} is a folder; --out names the table file to write")
    real = dest.resolve()
    for raw in inputs:
        inp = Path(os.path.abspath(raw)).resolve()
        if real == inp or inp in real.parents:
            how = "is" if real == inp else "lies inside"
            raise OutputRefused(f"--out {shown} {how} the input {raw}; write the table elsewhere (nothing was written)")
    if dest.exists() and not force and not written_by_judgelab(dest):
        raise OutputRefused(f"--out {shown} exists and judgelab did not write it (or it changed since); "
                            f"choose another --out, or add --force to replace it")
    return dest


def add_out_file(parser: Any, help_text: str, *, required: bool = False) -> None:
    """``--out FILE`` (one table) and ``--force``, declared once for every command that writes one:
    ``judgelab.cli`` refuses the file (:func:`check_out_file`) before the command reads anything and
    records it as judgelab's after (:func:`record_written`)."""
    parser.add_argument("--out", required=required, help=help_text + " (.csv or .parquet; an existing file "
                        "judgelab did not write is refused)")
    parser.add_argument("--force", action="store_true", help="replace --out even when judgelab did not write it")
    parser.set_defaults(out_file=True)


class _Guard:
    """One held ``--out``: its lock file's descriptor and the options the command gave."""

    def __init__(self, fd: int, lock: Path, inputs: tuple[str, ...], force: bool, command: str | None) -> None:
        self.fd, self.lock, self.inputs, self.force, self.command = fd, lock, inputs, force, command


#: ``--out`` folders this process holds (:func:`out_guard`), by absolute path: a staged folder
#: inside the guard takes its options and does not lock again (a second ``flock`` on a new
#: descriptor of the same file would wait on this process itself).
_GUARDS: dict[Path, _Guard] = {}


def _acquire(dest: Path) -> tuple[int, Path]:
    """Lock ``.<name>.lock`` beside ``dest`` (``flock``), waiting for another run that holds it.

    The holder writes its pid into the file, so a waiting run says once whom it waits for.  The
    holder removes the file while it still holds it; a run that locked a file that was removed
    meanwhile (the path now names another file, or none) locks again, so two runs never hold two
    different files of one path."""
    import fcntl
    import sys

    lock = dest.parent / f".{dest.name}.lock"
    said = False
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666 & ~current_umask())
        except OSError as exc:  # /proc, a read-only mount: no staging folder could be made there either
            raise OutputRefused(f"--out {dest}: cannot write beside it in {lock.parent} ({exc.strerror}); "
                                f"write it elsewhere") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not said:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                    print(f"judgelab: {dest} is being written by another run (pid {holder}); waiting for it",
                          file=sys.stderr, flush=True)
                    said = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.fstat(fd).st_ino == os.stat(lock).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                return fd, lock
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _make_parent(dest: Path) -> None:
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputRefused(f"--out {dest}: cannot make its parent folder ({exc.strerror}); write it elsewhere") from None


def _release(fd: int, lock: Path) -> None:
    try:
        lock.unlink(missing_ok=True)  # while still held: a run waiting on it locks again (see _acquire)
    finally:
        os.close(fd)


def _clean_stale(dest: Path) -> None:
    """Remove staging and old-set folders beside ``dest`` whose run is dead (their names carry its
    pid); called with the lock held, so a live run's staging folder is never removed."""
    import shutil

    pattern = re.compile(rf"^\.{re.escape(dest.name)}\.(?:staging|old)-(\d+)-")
    for stale in dest.parent.glob(f".{glob_escape(dest.name)}.*"):
        m = pattern.match(stale.name)
        if m and stale.is_dir() and not stale.is_symlink() and not _pid_alive(int(m.group(1))):
            shutil.rmtree(stale, ignore_errors=True)


def glob_escape(name: str) -> str:
    import glob

    return glob.escape(name)


@contextmanager
def out_guard(path: str | os.PathLike[str], *, inputs: Sequence[str | os.PathLike[str]] = (), force: bool = False,
              command: str | None = None) -> Iterator[Path]:
    """Hold ``--out`` for a whole command: refuse it (:func:`check_out`) or lock it, before the
    command reads anything, so a refused folder costs no work and a second run to the same folder
    waits for the first and then sees its set (a judgelab set, replaced in turn).  Every
    :func:`staged_folder` of ``path`` inside takes ``inputs``, ``force`` and ``command`` from here."""
    check_out(path, inputs=inputs, force=force)  # before waiting: a refusal needs no lock
    dest = Path(os.path.abspath(path))
    _make_parent(dest)
    fd, lock = _acquire(dest)
    try:
        check_out(path, inputs=inputs, force=force)  # again: the run we waited for may have changed it
        _GUARDS[dest] = _Guard(fd, lock, tuple(str(p) for p in inputs), force, command)
        yield dest
    finally:
        _GUARDS.pop(dest, None)
        _release(fd, lock)


@contextmanager
def staged_folder(path: str | os.PathLike[str], *, force: bool = False, command: str | None = None,
                  ours: Sequence[str] = ()) -> Iterator[Path]:
    """Yield an empty staging folder beside ``path``; on success it replaces ``path`` whole.

    Only a folder judgelab wrote is replaced (:func:`check_out`: every entry listed in its
    :data:`SET_MANIFEST`, or empty, or missing), unless ``force``; the new set gets its own manifest.
    Runs to one ``path`` are serialised by a lock beside it (:func:`out_guard` holds it for a
    whole command; outside one, this holds it for the staging and the swap).

    A reader (or a run killed at any instant, ``kill -9`` included) sees either the old set of
    files or the new one, never a mix: the staging folder is written whole, then swapped with the
    old one in one atomic ``renameat2(RENAME_EXCHANGE)`` on Linux, then the old set removed.
    Where that call is missing, two renames do it: the old folder aside, the new one into place
    (a kill between them leaves the old set under ``.<name>.old-<pid>-*/set`` and nothing at
    ``path``).  Staging folders of a dead run (their names carry its pid) are removed by the next
    run.  The folder gets the umask's mode, as ``mkdir`` would.  ``ours``: entries the command
    itself keeps in ``path`` while it works (a call cache), not counted as a user's."""
    dest = Path(os.path.abspath(path))
    guard = _GUARDS.get(dest)
    if guard is not None:
        yield from _staged(dest, force=guard.force, command=command or guard.command, inputs=guard.inputs, ours=ours)
        return
    check_out(path, force=force, ours=ours)
    _make_parent(dest)
    fd, lock = _acquire(dest)
    try:
        yield from _staged(dest, force=force, command=command, inputs=(), ours=ours)
    finally:
        _release(fd, lock)


def _staged(dest: Path, *, force: bool, command: str | None, inputs: Sequence[str],
            ours: Sequence[str] = ()) -> Iterator[Path]:
    import shutil

    check_out(dest, inputs=inputs, force=force, ours=ours)
    _clean_stale(dest)
    stage = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.staging-{os.getpid()}-"))
    os.chmod(stage, 0o777 & ~current_umask())
    try:
        yield stage
        write_json(stage / SET_MANIFEST, {"written_by": "judgelab", "command": command, "entries": _entries(stage)})
        if dest.exists() and _exchange(stage, dest):  # one atomic swap: the old set is now in stage
            shutil.rmtree(stage, ignore_errors=True)
            return
        old = None
        if dest.exists():
            old = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.old-{os.getpid()}-"))
            os.replace(dest, old / "set")
        os.replace(stage, dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def write_text(path: str | os.PathLike[str], text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n")


def table_rows(df: pd.DataFrame) -> list[dict[str, Any]]:
    """``df.to_dict("records")``: the same dicts of the same values, typed with the string column
    names judgelab's tables have (pandas' stubs allow any hashable as a column name).

    Built column by column rather than by pandas' row iteration, which reads an Arrow-backed
    column (every text column of a table read back) one boxed cell at a time: a plan's steps read
    their verdict tables as records, a paper-size rbd plan some 100,000 rows.  Each column's
    ``tolist()`` gives the Python scalars pandas' rows hold; the cells of an object column or of
    an extension column other than text are boxed as pandas boxes them (``maybe_box_native``:
    a NumPy scalar in an object column becomes the Python one); a text column's cells are Python
    strings or its missing value, a float, which boxing leaves as they are
    (``tests/test_io_table_rows.py`` compares the two on mixed tables)."""
    # pandas' own boxing of a record's cell (what to_dict applies; not in pandas' stubs)
    from pandas.core.dtypes.cast import maybe_box_native  # type: ignore[attr-defined]

    columns = df.columns.tolist()
    if not columns:
        return [{} for _ in range(len(df))]
    values = []
    for i, dtype in enumerate(df.dtypes.tolist()):
        cells = df.iloc[:, i].tolist()
        if pd.api.types.is_object_dtype(dtype) or (isinstance(dtype, pd.api.extensions.ExtensionDtype)
                               and not isinstance(dtype, pd.StringDtype)):
            cells = [maybe_box_native(v) for v in cells]
        values.append(cells)
    return [dict(zip(columns, row, strict=True)) for row in zip(*values, strict=True)]


def table_tuples(df: pd.DataFrame, *, index: bool = True) -> Iterator[Any]:
    """``df.itertuples(index=index)``: rows whose fields are read by column name.  Typed ``Any``: pandas'
    stubs type every field as any scalar (a date, bytes, an interval), which no caller's column holds.

    The same named tuples of the same values as pandas builds (its ``"Pandas"`` namedtuple with
    ``rename=True``, over the index and the columns by position), except that a text column is read
    through ``tolist()``: pandas' row iteration reads an Arrow-backed text column (every text column
    of a table read back, pandas 3's ``str``) one boxed cell at a time, some fifteen times slower,
    for the same Python strings and missing values.  Every other column is iterated as pandas
    iterates it (a nullable integer column gives NumPy scalars there, Python ones from
    ``tolist()``).  ``tests/test_io_table_rows.py`` compares the two on mixed tables."""
    fields = list(df.columns)
    columns: list[Any] = []
    if index:
        columns.append(df.index)
        fields.insert(0, "Index")
    for k, dtype in enumerate(df.dtypes.tolist()):  # by position: column names may repeat
        column = df.iloc[:, k]
        columns.append(column.tolist() if isinstance(dtype, pd.StringDtype) else column)
    rows: Iterator[tuple[Any, ...]] = zip(*columns, strict=True) if columns else itertools.repeat((), len(df))
    row = collections.namedtuple("Pandas", fields, rename=True)  # type: ignore[misc]  # pandas' own
    return map(row._make, rows)


def write_jsonl(path: str | os.PathLike[str], rows: list[dict[str, Any]]) -> None:
    write_text(path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)``; a malformed line raises InputError naming file and line."""
    p = Path(path)
    with p.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{p}:{n}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise InputError(f"{p}:{n}: expected a JSON object, got {type(obj).__name__}")
            yield n, obj


def with_provenance(df: pd.DataFrame, provenance: dict[str, Any]) -> pd.DataFrame:
    """Add provenance columns (constant per table) unless already present.

    Keys starting with ``_`` are directives, not columns: ``_judge_simulated`` (judge name ->
    simulated, from :func:`judgelab.workflow.provenance`) makes ``simulated`` a per-row flag
    in a table with a ``judge`` column, so a real judge's rows are not marked simulated
    because a simulated judge's rows sit beside them (other rows keep the table's flag).
    """
    out = df.copy()
    per_judge = provenance.get("_judge_simulated")
    if per_judge and "simulated" not in out.columns and "judge" in out.columns and "simulated" in provenance:
        table_flag = bool(provenance["simulated"])
        out["simulated"] = [bool(per_judge.get(j, table_flag)) if isinstance(j, str) else table_flag
                            for j in out["judge"]]
    for k, v in provenance.items():
        if k not in out.columns and not k.startswith("_"):
            out[k] = v if not isinstance(v, list | dict) else json.dumps(v, sort_keys=True)
    return out


#: Boolean columns of judgelab's tables: written and read as booleans (:func:`to_bool`), never as
#: text.  A CSV cell ``False`` read as text is a non-empty string, and ``"False"`` is truthy: a
#: real judge's table whose ``simulated`` column held one empty cell (a gold row) came back as
#: text and was stamped SIMULATED.  An empty cell is missing (``pd.NA``), not True and not False.
BOOL_COLUMNS = frozenset({
    "simulated", "cached", "significant", "improves", "accepted", "kept", "converged", "lpm_converged",
    "logit_converged", "separation",
})
_TRUE = frozenset({"true", "1", "1.0", "yes"})
_FALSE = frozenset({"false", "0", "0.0", "no"})
_MISSING = frozenset({"", "nan", "none", "<na>"})  # an empty cell, or a missing value printed as text


def to_bool(values: Any, *, where: str = "column") -> pd.Series:
    """A boolean column from bools, 0/1 or their text (``True``/``False``, any case); an empty
    cell, None or NaN is missing.  Anything else is an :class:`InputError` naming ``where`` and
    the row, never a guess.  Without missing cells the dtype is numpy ``bool``; with them the
    nullable ``boolean``."""
    s = values if isinstance(values, pd.Series) else pd.Series(values)
    if pd.api.types.is_bool_dtype(s) and not isinstance(s.dtype, pd.BooleanDtype):
        return s
    out: list[Any] = []
    for i, v in enumerate(s.tolist()):
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            out.append(pd.NA)
        elif isinstance(v, bool):
            out.append(v)
        elif isinstance(v, int | float) and v in (0, 1):
            out.append(bool(v))
        elif isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE | _MISSING:
            t = v.strip().lower()
            out.append(pd.NA if t in _MISSING else t in _TRUE)
        elif hasattr(v, "dtype") and getattr(v.dtype, "kind", "") == "b":  # numpy bool scalar
            out.append(bool(v))
        else:
            raise InputError(f"{where}, row {i + 1}: {v!r} is not a boolean (True/False)")
    has_na = any(x is pd.NA for x in out)
    return pd.Series(out, index=s.index, name=s.name, dtype="boolean" if has_na else bool)


def any_true(df: pd.DataFrame, column: str = "simulated") -> bool:
    """Whether any row of ``df`` has ``column`` True (typed: ``"False"`` is False, an empty cell
    is not True).  Every figure stamp is decided by this, on the table the figure shows."""
    if column not in df.columns or not len(df):
        return False
    return bool(to_bool(df[column], where=f"column {column!r}").fillna(False).any())


def _typed(df: pd.DataFrame, where: str) -> pd.DataFrame:
    cols = [c for c in df.columns if c in BOOL_COLUMNS]
    if not cols:
        return df
    out = df.copy(deep=False)  # the other columns shared (copy-on-write): a big table is not copied whole
    for c in cols:
        out[c] = to_bool(out[c], where=f"{where}: column {c!r}")
    return out


#: A text cell a spreadsheet would run as a formula (OWASP "CSV injection"): it starts with one of
#: these, after any number of single quotes (so the escape below stays reversible).
_FORMULA = re.compile(r"^'*[=+\-@\t\r]")
_ESCAPED = re.compile(r"^'+[=+\-@\t\r]")


def formula_safe(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every text cell that a spreadsheet would run as a formula given a leading
    single quote (the OWASP rule), for CSV output: a model named ``=HYPERLINK(...)`` is shown,
    not run.  A cell that already starts with quotes before such a character gets one more, so
    :func:`read_table` undoes exactly this.  Numeric columns are untouched (``-1`` is a number)."""
    out = None
    for c in df.columns:
        col = df[c]
        if not (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)):
            continue
        values = col.astype(object)  # a categorical column too (its cells are written as text)
        try:
            hit = values.str.match(_FORMULA.pattern)  # vectorised; a cell that is no string is NaN
        except AttributeError:  # no string cell at all
            continue
        hit = hit.fillna(False).astype(bool)
        if hit.any():
            out = df.copy(deep=False) if out is None else out
            out[c] = values.where(~hit, values.map(lambda v: "'" + v if isinstance(v, str) else v))
    return df if out is None else out


def _unescape_formulas(col: pd.Series) -> pd.Series:
    """Undo :func:`formula_safe` on a column read as text."""
    hit = col.str.match(_ESCAPED).fillna(False).astype(bool)
    return col.where(~hit, col.str.slice(1)) if hit.any() else col


#: rows converted to Arrow and written to parquet at a time (:func:`write_table`)
PARQUET_ROWS = 1 << 20


def write_table(df: pd.DataFrame, path: str | os.PathLike[str], *, provenance: dict[str, Any] | None = None) -> None:
    """Write a parquet or CSV table (by suffix) atomically, with provenance columns; the columns
    of :data:`BOOL_COLUMNS` as booleans."""
    p = Path(path)
    if provenance:
        df = with_provenance(df, provenance)
    df = _typed(df, str(p))
    with atomic_path(p) as tmp:
        if p.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            # a slice of rows at a time (one row group each): Arrow holds one slice, not a copy of the table
            # (the schema from the whole frame: a column empty in the first slice keeps its type)
            schema = pa.Schema.from_pandas(df, preserve_index=False)
            meta = dict(schema.metadata or {})
            if provenance:
                meta[b"judgelab_provenance"] = json.dumps(provenance, sort_keys=True, default=str).encode()
            schema = schema.with_metadata(meta)
            with pq.ParquetWriter(tmp, schema) as writer:
                for lo in range(0, max(len(df), 1), PARQUET_ROWS):
                    part = pa.Table.from_pandas(df.iloc[lo:lo + PARQUET_ROWS], schema=schema, preserve_index=False)
                    writer.write_table(part)
        elif p.suffix == ".csv":
            formula_safe(df).to_csv(tmp, index=False)
        else:
            raise ValueError(f"unsupported table format {p.suffix!r} ({p})")


#: Text columns of judgelab's tables: read back from CSV as text, an empty cell as ``""``
#: (an unparsed verdict is ``""`` in the verdict table; NaN would make ``verdict == verdict``
#: false and change LLMBar's "equal"), and ids keep their leading zeros.
TEXT_COLUMNS = frozenset({
    "pair_id", "order", "judge", "backend", "model", "family", "template", "verdict_shown", "verdict",
    "expected_verdict", "status", "parse_method", "raw_text", "key", "bias_type", "category", "source",
    "construction_notes", "context", "prompt", "response_a", "response_b", "dataset", "error", "question_id",
    "item_id", "instruction",
})


def read_table(path: str | os.PathLike[str], *, text_columns: frozenset[str] | set[str] | None = None,
               columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a parquet, CSV or TSV table (by suffix).

    ``columns``: only those of the table's columns (in the table's order; a name the table lacks
    is left out, as it would be absent from the whole table).  A parquet file reads only them
    from disk: a step that needs a few columns of wide verdict tables (the raw answers among
    them) need not decode the rest.

    The columns of :data:`BOOL_COLUMNS` are read as booleans (:func:`to_bool`), from CSV too.
    CSV/TSV: numbers and booleans are inferred as usual, but every column pandas
    reads as text (or as all-missing although it holds words such as ``NA``), and
    every column in ``text_columns`` (default :data:`TEXT_COLUMNS`), keeps its cells
    verbatim: an empty cell is ``""`` and ``NA``/``None``/``null`` stay words
    (pandas' default turns all of them into NaN).
    So a table written by :func:`write_table` as CSV reads back equal to the frame
    written, empty verdicts included, and text cells it escaped against spreadsheet formulas
    (:func:`formula_safe`) read back as they were.
    """
    p = Path(path)
    if columns is not None:  # the table's own columns among those asked, in its order
        wanted = set(columns)
        if p.suffix != ".parquet":
            whole = read_table(p, text_columns=text_columns)
            return whole[[c for c in whole.columns if c in wanted]]
        import pyarrow.parquet as pq

        return _typed(pd.read_parquet(p, columns=[c for c in pq.read_schema(p).names if c in wanted]), str(p))
    if p.suffix == ".parquet":
        return _typed(pd.read_parquet(p), str(p))
    sep = "\t" if p.suffix == ".tsv" else ","
    typed = pd.read_csv(p, sep=sep)
    raw = pd.read_csv(p, sep=sep, dtype=str, keep_default_na=False)
    text = TEXT_COLUMNS if text_columns is None else frozenset(text_columns)
    for c in typed.columns:
        # an all-NaN column holding words pandas counts as missing ("NA", "null") is text too
        words_as_nan = typed[c].isna().all() and (raw[c] != "").any()
        is_text = pd.api.types.is_object_dtype(typed[c]) or pd.api.types.is_string_dtype(typed[c])
        if c in BOOL_COLUMNS:
            typed[c] = to_bool(raw[c], where=f"{p}: column {c!r}")
        elif c in text or is_text or words_as_nan:
            typed[c] = _unescape_formulas(raw[c]) if p.suffix == ".csv" else raw[c]
    return typed


def read_verdicts(paths: list[str] | tuple[str, ...], *, dataset_level: int | None = None,
                  columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Concatenate verdict tables; ``dataset_level`` takes a ``dataset`` column from
    that path component (e.g. -2 for ``.../verdicts/<dataset>/<judge>.parquet``);
    ``columns``: read only those (:func:`read_table`)."""
    frames = []
    for p in paths:
        df = read_table(p, columns=columns)  # parquet, or the CSV the CLI writes
        if dataset_level is not None:
            df["dataset"] = Path(p).parts[dataset_level]
        frames.append(df)
    if not frames:
        raise InputError("no verdict tables to read")
    return pd.concat(frames, ignore_index=True)
