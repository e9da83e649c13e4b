"""The pair record every pairwise study uses, and loaders with row-level errors.

Columns of a pairs table (parquet/JSONL):

=================== ==========================================================
``pair_id``         stable id, unique within the set
``prompt``          the user question / instruction
``response_a/_b``   the two candidates in the set's own order
``expected_verdict`` gold: ``A``, ``B`` or ``tie``
``bias_type``       which cue the pair isolates (``none`` for ordinary pairs)
``category``        subset or topic (per-category tables)
``source``          where the pair comes from (file or construction rule)
``construction_notes`` how it was made
``context``         extra prompt text shown to the judge (e.g. a bandwagon statement);
                    ``{A}``/``{B}`` stand for the slot letter the stored response A/B
                    is shown under, so the statement follows its response when swapped
=================== ==========================================================

An empty or whitespace-only response is real data (one LLMBar ``LLMEval^2`` pair has
one): the pair is kept, and the loaders warn with the count
(:class:`EmptyResponseWarning`; :func:`empty_responses` lists them), instead of
rejecting the whole set.  A missing or non-text field is still an error.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.io import InputError, iter_jsonl, table_rows
from judgelab.registry import Registry

VERDICTS = ("A", "B", "tie")


@dataclass
class Pair:
    pair_id: str
    prompt: str
    response_a: str
    response_b: str
    expected_verdict: str
    bias_type: str = "none"
    category: str = ""
    source: str = ""
    construction_notes: str = ""
    context: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_REQUIRED = ("pair_id", "prompt", "response_a", "response_b", "expected_verdict")


class EmptyResponseWarning(UserWarning):
    """A pair set holds pairs with an empty or whitespace-only response (kept, counted)."""


def empty_responses(pairs: list[Pair]) -> list[tuple[str, str]]:
    """``(pair_id, "response_a" | "response_b")`` for every empty or whitespace-only response."""
    return [(p.pair_id, k) for p in pairs for k in ("response_a", "response_b") if not getattr(p, k).strip()]


def warn_empty_responses(pairs: list[Pair], *, where: str) -> int:
    """Warn once per set about its empty responses; returns how many there are."""
    empty = empty_responses(pairs)
    if empty:
        shown = ", ".join(f"{pid}:{k}" for pid, k in empty[:5]) + (" ..." if len(empty) > 5 else "")
        warnings.warn(f"{where}: {len(empty)} empty or whitespace-only response(s) kept ({shown})",
                      EmptyResponseWarning, stacklevel=3)
    return len(empty)


def pair_from_row(row: dict[str, Any], *, where: str) -> Pair:
    """Validate one row; errors name ``where`` (file:line or file row n).

    An empty prompt is an error; an empty or whitespace-only response is kept (a
    judge can still be asked about it) and counted by the loaders.
    """
    missing = [k for k in _REQUIRED if k not in row or row[k] is None]
    if missing:
        raise InputError(f"{where}: missing field(s) {missing}")
    if not isinstance(row["prompt"], str) or not row["prompt"].strip():
        raise InputError(f"{where}: field 'prompt' is empty or not text")
    for k in ("response_a", "response_b"):
        if not isinstance(row[k], str):
            raise InputError(f"{where}: field {k!r} is not text (got {type(row[k]).__name__})")
    if row["expected_verdict"] not in VERDICTS:
        raise InputError(f"{where}: expected_verdict must be one of {VERDICTS}, got {row['expected_verdict']!r}")
    known = {f.name for f in fields(Pair)}
    return Pair(**{k: (str(v) if k == "pair_id" else v) for k, v in row.items() if k in known})


def load_pairs(path: str | Path) -> list[Pair]:
    """Load a pairs file (.jsonl or .parquet) with row-level validation."""
    p = Path(path)
    if p.suffix == ".parquet":
        rows = table_rows(pd.read_parquet(p))
        pairs = [pair_from_row(r, where=f"{p} row {i}") for i, r in enumerate(rows)]
    else:
        pairs = [pair_from_row(row, where=f"{p}:{n}") for n, row in iter_jsonl(p)]
    seen: set[str] = set()
    for pr in pairs:
        if pr.pair_id in seen:
            raise InputError(f"{p}: duplicate pair_id {pr.pair_id!r}")
        seen.add(pr.pair_id)
    warn_empty_responses(pairs, where=str(p))
    return pairs


def pairs_frame(pairs: list[Pair]) -> pd.DataFrame:
    return pd.DataFrame([p.to_dict() for p in pairs], columns=[f.name for f in fields(Pair)])


def load_llmbar(path: str | Path, *, subset: str) -> list[Pair]:
    """LLMBar ``dataset.json`` (input, output_1, output_2, label 1/2) as pairs."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON ({exc})") from None
    pairs = []
    for i, item in enumerate(data):
        where = f"{p} element {i}"
        if not isinstance(item, dict) or item.get("label") not in (1, 2):
            raise InputError(f"{where}: expected an object with label 1 or 2")
        row = {
            "pair_id": f"{subset}-{i:04d}",
            "prompt": item.get("input"),
            "response_a": item.get("output_1"),
            "response_b": item.get("output_2"),
            "expected_verdict": "A" if item["label"] == 1 else "B",
            "category": subset,
            "source": f"LLMBar {subset}",
            "construction_notes": "LLMBar gold label (human-verified)",
        }
        pairs.append(pair_from_row(row, where=where))
    warn_empty_responses(pairs, where=str(p))
    return pairs



# Pair-set loaders by name (config: orders.datasets.<name>.loader); a new source is one entry.
PAIRSET_LOADERS: Registry[Callable[[str, str], list[Pair]]] = Registry("pair-set loader")


@PAIRSET_LOADERS.register("llmbar")
def _load_llmbar_set(source: str, name: str) -> list[Pair]:
    from judgelab.datasets.sources import SOURCES, resolve_data_path, source_path

    path = source_path(source) if source in SOURCES else resolve_data_path(source)
    return load_llmbar(path, subset=source.split("/")[-1] if "/" in source else name)


@PAIRSET_LOADERS.register("pairs")
def _load_pairs_file(source: str, name: str) -> list[Pair]:
    from judgelab.datasets.sources import resolve_data_path

    p = Path(source)
    return load_pairs(p if p.exists() else resolve_data_path(source))


def load_pairset(loader: str, source: str, *, name: str) -> list[Pair]:
    return PAIRSET_LOADERS.get(loader, where=f"pair set {name!r}")(source, name)
