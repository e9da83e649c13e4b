"""Read the records of a recorded-verdict file: JSON, JSONL, CSV, TSV or parquet.

Every reader returns plain dicts (nested JSON kept), so one mapping addresses any
format.  CSV/TSV cells are read as text with empty cells kept empty (``""``), never
``NaN``: a verdict that was empty when written stays empty when read back.
Malformed input raises :class:`~judgelab.io.InputError` naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judgelab.io import InputError, iter_jsonl

SUFFIX_FORMATS = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv",
                  ".parquet": "parquet", ".pq": "parquet"}


def detect_format(path: Path, fmt: str = "auto") -> str:
    if fmt != "auto":
        return fmt
    f = SUFFIX_FORMATS.get(path.suffix.lower())
    if f is None:
        raise InputError(f"{path}: cannot tell the format from the suffix {path.suffix!r}; "
                         f"give one of {sorted(set(SUFFIX_FORMATS.values()))}")
    return f


def _descend(obj: Any, path: tuple[Any, ...], where: str) -> Any:
    for k in path:
        try:
            obj = obj[k]
        except (KeyError, IndexError, TypeError):
            raise InputError(f"{where}: no records at {'.'.join(map(str, path))!r}") from None
    return obj


def read_records(path: str | Path, fmt: str = "auto", records: tuple[Any, ...] = ()) -> list[tuple[int, dict[str, Any]]]:
    """``(row number, record)`` pairs; row numbers are 1-based lines for JSONL, 0-based elements/rows otherwise."""
    return list(iter_records(path, fmt, records))


#: rows per parquet/CSV batch: bounds the memory of the records in flight at any size of file
BATCH_ROWS = 65_536


def iter_records(path: str | Path, fmt: str = "auto", records: tuple[Any, ...] = ()
                 ) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of :func:`read_records`, streamed: JSONL line by line, parquet and CSV/TSV
    in batches of :data:`BATCH_ROWS` rows (a JSON array is parsed whole)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: file not found")
    fmt = detect_format(p, fmt)
    if fmt == "jsonl":
        yield from iter_jsonl(p)
    elif fmt == "json":
        yield from _json_records(p, records)
    elif fmt in ("csv", "tsv"):
        import pandas as pd

        try:
            chunks = pd.read_csv(p, sep="," if fmt == "csv" else "\t", dtype=str, keep_default_na=False,
                                 chunksize=BATCH_ROWS)
            n = 0
            for chunk in chunks:
                for r in chunk.to_dict(orient="records"):
                    yield n, r
                    n += 1
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise InputError(f"{p}: not a valid {fmt.upper()} file ({exc})") from None
    elif fmt == "parquet":
        import pyarrow.parquet as pq

        n = 0
        for batch in pq.ParquetFile(p).iter_batches(batch_size=BATCH_ROWS):
            for r in batch.to_pylist():
                yield n, {k: _plain(v) for k, v in r.items()}
                n += 1
    else:
        raise InputError(f"{p}: unknown format {fmt!r}")


def _json_records(p: Path, records: tuple[Any, ...]) -> list[tuple[int, dict[str, Any]]]:
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    data = _descend(data, records, str(p))
    if isinstance(data, dict):  # {id: record} files
        data = [{"_key": k, **v} if isinstance(v, dict) else {"_key": k, "value": v} for k, v in data.items()]
    if not isinstance(data, list):
        raise InputError(f"{p}: expected a JSON array of records, got {type(data).__name__}")
    out = []
    for i, r in enumerate(data):
        if not isinstance(r, dict):
            raise InputError(f"{p} element {i}: expected a JSON object, got {type(r).__name__}")
        out.append((i, r))
    return out


def _plain(v: Any) -> Any:
    """A value of pyarrow's ``to_pylist`` with every NaN (a missing float cell) as None,
    inside lists and structs too."""
    if isinstance(v, float):
        return None if v != v else v
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v
