"""Reading a study's result tables for its reproduction rows: each file once, only files this
run wrote for the study, and a clear error naming the file otherwise."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.io import to_bool


class TableReader:
    """The CSV and parquet tables under one folder, read on first use and kept.

    ``available`` (paths, absolute or relative to the working directory): the files the run
    wrote for this study; a file outside it is reported missing even when an older run left it
    on disk.  None: any file under ``root``."""

    def __init__(self, root: str | Path, available: Iterable[str | Path] | None = None) -> None:
        self.root = Path(root)
        self.available = None if available is None else {Path(p).resolve() for p in available}
        self._cache: dict[str, pd.DataFrame] = {}

    def read(self, rel: str) -> pd.DataFrame:
        if rel not in self._cache:
            path = self.root / rel
            if self.available is not None and path.resolve() not in self.available:
                raise FileNotFoundError(f"{path} is not among this run's outputs")
            if not path.is_file():
                raise FileNotFoundError(f"{path} was not written by this run")
            self._cache[rel] = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
        return self._cache[rel]


def flag(value: Any) -> bool | None:
    """A table's ``simulated`` cell as a bool (None: the table has no such cell or it is empty), read
    as every table's boolean column is (:func:`judgelab.io.to_bool`)."""
    cell = to_bool([value], where="column 'simulated'").iloc[0]
    return None if cell is pd.NA else bool(cell)


def reason_of(row: Any, default: str = "empty cell") -> str:
    """A table row's ``reason`` cell (why a value is empty), or ``default`` when it gives none."""
    value = row.get("reason") if hasattr(row, "get") else None
    return value.strip() if isinstance(value, str) and value.strip() else default
