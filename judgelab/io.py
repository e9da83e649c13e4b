"""Reading rows with precise errors, and writing tables atomically with provenance.

Atomic: every output is written to a temporary file in the destination folder and
renamed into place, so a rule killed mid-write leaves no half-written file that
Snakemake (or a person) could mistake for a result.

Provenance: every table carries the config hash, the judge ids and the seeds it
came from, as columns (so they survive any CSV round trip) and, for parquet, as
file metadata too.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
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


@contextmanager
def staged_folder(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging folder beside ``path``; on success it replaces ``path`` whole.

    A reader (or a run killed at any instant, ``kill -9`` included) sees either the old set of
    files or the new one, never a mix: the staging folder is written whole, then swapped with the old one in one atomic ``renameat2(RENAME_EXCHANGE)`` on Linux, then the old
    set removed.  Where that call is missing, two renames do it: the old folder aside, the new one
    into place (a kill between them leaves the old set under ``.<name>.old-*/set`` and nothing at
    ``path``).  Staging folders a killed run left behind are removed by the next run.  ``path`` naming an existing file is an :class:`InputError`.
    The folder gets the umask's mode, as ``mkdir`` would."""
    import shutil

    dest = Path(path)
    if dest.exists() and not dest.is_dir():
        raise InputError(f"{dest}: exists and is a file; --out needs a folder (a new or an existing one)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    for stale in dest.parent.glob(f".{dest.name}.*"):  # left by a run killed mid-swap or mid-write
        if stale.is_dir() and (".staging-" in stale.name or ".old-" in stale.name):
            shutil.rmtree(stale, ignore_errors=True)
    stage = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.staging-"))
    os.chmod(stage, 0o777 & ~current_umask())
    try:
        yield stage
        if dest.exists() and _exchange(stage, dest):  # one atomic swap: the old set is now in stage
            shutil.rmtree(stage, ignore_errors=True)
            return
        old = None
        if dest.exists():
            old = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.old-"))
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
            df.to_csv(tmp, index=False)
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


def read_table(path: str | os.PathLike[str], *, text_columns: frozenset[str] | set[str] | None = None) -> pd.DataFrame:
    """Read a parquet, CSV or TSV table (by suffix).

    The columns of :data:`BOOL_COLUMNS` are read as booleans (:func:`to_bool`), from CSV too.
    CSV/TSV: numbers and booleans are inferred as usual, but every column pandas
    reads as text (or as all-missing although it holds words such as ``NA``), and
    every column in ``text_columns`` (default :data:`TEXT_COLUMNS`), keeps its cells
    verbatim: an empty cell is ``""`` and ``NA``/``None``/``null`` stay words
    (pandas' default turns all of them into NaN).
    So a table written by :func:`write_table` as CSV reads back equal to the frame
    written, empty verdicts included.
    """
    p = Path(path)
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
            typed[c] = raw[c]
    return typed


def read_verdicts(paths: list[str] | tuple[str, ...], *, dataset_level: int | None = None) -> pd.DataFrame:
    """Concatenate verdict tables; ``dataset_level`` takes a ``dataset`` column from
    that path component (e.g. -2 for ``.../verdicts/<dataset>/<judge>.parquet``)."""
    frames = []
    for p in paths:
        df = read_table(p)  # parquet, or the CSV the CLI writes
        if dataset_level is not None:
            df["dataset"] = Path(p).parts[dataset_level]
        frames.append(df)
    if not frames:
        raise InputError("no verdict tables to read")
    return pd.concat(frames, ignore_index=True)
