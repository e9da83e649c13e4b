"""The row of a judge a table cannot score: kept, its statistics NaN, the reason in words.

A study table that aggregates a judge's answers keeps a row for a judge whose every answer
failed (unparsed, refused, errored) instead of dropping it, or printing a rate computed from no
verdict at all (0 % agreement, 50 % accuracy from ties, a recall from a model fitted on nothing).
This module is the one wording of that reason and the one way to blank a row, so every table
says it alike (``reason`` is empty on a row that is scored).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

REASON = "reason"
USABLE = ("ok", "fallback")
# failure statuses in the order the reason names them, with their wording
_FAILURES = (("unparsed", "unparsed"), ("refusal", "refused"), ("error", "errored"))


def no_value_reason(statuses: Iterable[Any], *, what: str = "verdict",
                    usable: Sequence[bool] | np.ndarray | pd.Series | None = None) -> str:
    """``""`` when at least one answer is usable; otherwise why none is, with the counts:
    ``"no parsable verdict: 40 of 40 unparsed"``, ``"no parsable score: 30 of 40 unparsed, 10 errored"``,
    ``"no verdicts recorded"``.

    ``statuses`` are the calls' :class:`~judgelab.records.CallStatus` values; ``usable`` (one
    flag per call) overrides which calls count as scored where a table needs more than a parsed
    status (e.g. a verdict among A/B only).
    """
    counts = _failure_counts(statuses, what=what, usable=usable)
    if counts is None:
        return ""
    return f"no parsable {what}: {counts}" if counts else f"no {what}s recorded"


def no_gold_reason(gold_judge: str, statuses: Iterable[Any], *,
                   usable: Sequence[bool] | np.ndarray | pd.Series | None = None) -> str:
    """Why a data set has no gold score from its gold judge, with the counts
    (``"no gold score: gold judge X: 40 of 40 unparsed"``); ``""`` when one of its scorings is usable.

    Every judge's row of that data set's gold carries this reason: no correlation with a gold
    that does not exist, and no row dropped for it.
    """
    counts = _failure_counts(statuses, what="score", usable=usable)
    if counts is None:
        return ""
    return f"no gold score: gold judge {gold_judge}: {counts or 'no scorings recorded'}"


def no_value_reason_from_counts(counts: Mapping[str, int], total: int, *, what: str = "verdict") -> str:
    """:func:`no_value_reason` for a table that keeps counts per status rather than the calls:
    ``counts`` maps a status (``unparsed``, ``refusal``, ``error``) to its number of calls, none
    of which was usable; the rest of ``total`` had no usable answer for another reason."""
    text = _count_words(counts, total, what=what)
    return f"no parsable {what}: {text}" if text else f"no {what}s recorded"


def _failure_counts(statuses: Iterable[Any], *, what: str,
                    usable: Sequence[bool] | np.ndarray | pd.Series | None) -> str | None:
    """``None`` when some answer is usable, ``""`` when none is recorded, else ``"40 of 40 unparsed, ..."``."""
    s = pd.Series(list(statuses), dtype=object).astype(str)
    if not len(s):
        return ""
    ok = np.asarray(usable, dtype=bool) if usable is not None else s.isin(USABLE).to_numpy()
    if ok.any():
        return None
    return _count_words({str(k): int(n) for k, n in s.value_counts().items()}, len(s), what=what)


def _count_words(counts: Mapping[str, int], total: int, *, what: str) -> str:
    """``"40 of 40 unparsed, 3 errored"`` (failures in :data:`_FAILURES` order, then the rest);
    ``""`` when ``total`` is 0."""
    if total <= 0:
        return ""
    parts = [(int(counts[k]), word) for k, word in _FAILURES if counts.get(k, 0)]
    rest = total - sum(n for n, _ in parts)
    if rest:
        parts.append((rest, f"without a usable {what}"))
    (n0, w0), others = parts[0], parts[1:]
    return ", ".join([f"{n0} of {total} {w0}", *(f"{n} {w}" for n, w in others)])


def blank(row: Mapping[str, Any], columns: Iterable[str], reason: str) -> dict[str, Any]:
    """``row`` with ``columns`` set to NaN and its ``reason``; unchanged (reason ``""``) when ``reason`` is empty."""
    out = dict(row)
    if reason:
        out.update({c: np.nan for c in columns})
    out[REASON] = reason
    return out
