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


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it into place on success."""
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging folder beside ``path``; on success it replaces ``path`` whole.

    A command writing a set of files (a table, its notes, a figure) stages them here, so a
    reader never sees half a set or a mix of two runs.  The staging folder gets the mode a
    plain ``mkdir`` would (``mkdtemp`` makes it 0700), so the output honours the umask."""
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp"))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    try:
        yield tmp
        old = None
        if dest.exists():
            old = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".old"))
            os.replace(dest, old / "previous")
        os.replace(tmp, dest)
        if old is not None:
            import shutil

            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
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


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    return [obj for _, obj in iter_jsonl(path)]


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


def write_table(df: pd.DataFrame, path: str | os.PathLike[str], *, provenance: dict[str, Any] | None = None) -> None:
    """Write a parquet or CSV table (by suffix) atomically, with provenance columns."""
    p = Path(path)
    if provenance:
        df = with_provenance(df, provenance)
    with atomic_path(p) as tmp:
        if p.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(df, preserve_index=False)
            meta = dict(table.schema.metadata or {})
            if provenance:
                meta[b"judgelab_provenance"] = json.dumps(provenance, sort_keys=True, default=str).encode()
            pq.write_table(table.replace_schema_metadata(meta), tmp)
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
        return pd.read_parquet(p)
    sep = "\t" if p.suffix == ".tsv" else ","
    typed = pd.read_csv(p, sep=sep)
    raw = pd.read_csv(p, sep=sep, dtype=str, keep_default_na=False)
    text = TEXT_COLUMNS if text_columns is None else frozenset(text_columns)
    for c in typed.columns:
        # an all-NaN column holding words pandas counts as missing ("NA", "null") is text too
        words_as_nan = typed[c].isna().all() and (raw[c] != "").any()
        is_text = pd.api.types.is_object_dtype(typed[c]) or pd.api.types.is_string_dtype(typed[c])
        if c in text or is_text or words_as_nan:
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
