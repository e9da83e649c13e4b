"""Read the records of a recorded-verdict file: JSON, JSONL, CSV, TSV or parquet.

Every reader returns plain dicts (nested JSON kept), so one mapping addresses any
format.  CSV/TSV cells are read as text with empty cells kept empty (``""``), never
``NaN``: a verdict that was empty when written stays empty when read back.
Malformed input raises :class:`~judgelab.io.InputError` naming the file and line.
"""

from __future__ import annotations

import json
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
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: file not found")
    fmt = detect_format(p, fmt)
    if fmt == "jsonl":
        return list(iter_jsonl(p))
    if fmt == "json":
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
    import pandas as pd

    if fmt in ("csv", "tsv"):
        try:
            df = pd.read_csv(p, sep="," if fmt == "csv" else "\t", dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise InputError(f"{p}: not a valid {fmt.upper()} file ({exc})") from None
    elif fmt == "parquet":
        df = pd.read_parquet(p)
    else:
        raise InputError(f"{p}: unknown format {fmt!r}")
    rows = df.to_dict(orient="records")
    return [(i, {k: _plain(v) for k, v in r.items()}) for i, r in enumerate(rows)]


def _plain(v: Any) -> Any:
    """numpy scalars/arrays from parquet to Python values; NaN/NA to None."""
    if hasattr(v, "tolist") and not isinstance(v, str):
        v = v.tolist()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    try:
        import pandas as pd

        if v is not None and not isinstance(v, list | dict | str) and pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return v
