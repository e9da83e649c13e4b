"""``--fail-on`` rules: a small grammar over the rows a command writes, for CI gates.

A rule names rows of the command's main table and a condition; the command exits 1 when any
rule *trips* (a matching row meets the condition), 2 when a rule is malformed or names no row
(with the closest names), and 0 otherwise.  The grammar::

    any-detected                       any bias row of the card (metric kind ``bias``) is detected
    detected:NAME                      a row NAME is detected (audit: NAME is a card metric)
    NAME.COLUMN OP NUMBER              a row NAME has COLUMN OP NUMBER (OP: < <= > >= == !=)
    rank-flip:CORRECTION               leaderboard: a pair of models swaps order under CORRECTION
                                       (lc_win_rate, style_controlled or bias_aware); compare: a
                                       pair swaps order between before and after on that score
                                       (win_rate too)
    compare:NAME.COLUMN OP NUMBER      compare: a row NAME has COLUMN OP NUMBER and its difference is
                                       significant (``compare:position_preference.diff>0``: a
                                       significant worsening)

``NAME`` is a card ``metric`` for ``judgelab audit`` and ``judgelab compare``, a ``model`` for
``judgelab leaderboard`` and for the leaderboard rows of ``judgelab compare`` (filtered by
``[score=...]``).
Any NAME (and CORRECTION) may carry filters on the table's other columns, ``NAME[judge=gpt-4,
view=lenient]``; without them every matching row counts (each judge, both views).  A row whose
COLUMN is empty (a number the data cannot support) never trips a threshold: it is listed under
``no_value`` in ``gate.json`` so a gate that could not be checked is visible.

Why hand-written: the rules are a dozen tokens over pandas rows; a parser library would add
a dependency for one regular expression per form.
"""

from __future__ import annotations

import difflib
import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from judgelab.io import InputError

OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt}

_SELECTOR = r"(?P<name>[^\[\]]+?)(?:\[(?P<filters>[^\[\]]*)\])?"
_THRESHOLD = re.compile(rf"^{_SELECTOR}\.(?P<column>[A-Za-z_]\w*)\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<value>\S+)$")
_PREFIXED = re.compile(rf"^(?P<kind>detected|rank-flip):{_SELECTOR}$")


class GateError(InputError):
    """A rule that is malformed or names nothing in the table: exit 2, never a silent pass."""


@dataclass(frozen=True)
class Rule:
    """One parsed ``--fail-on`` rule (:func:`parse_rule`)."""

    text: str
    kind: str  # any-detected | detected | threshold | rank-flip
    name: str = ""
    filters: tuple[tuple[str, str], ...] = ()
    column: str = ""
    op: str = ""
    value: float = math.nan


def _filters(text: str | None, rule: str) -> tuple[tuple[str, str], ...]:
    if not text:
        return ()
    out = []
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise GateError(f"--fail-on {rule!r}: filter {part!r} is not KEY=VALUE")
        out.append((key.strip(), value.strip()))
    return tuple(out)


def parse_rule(text: str) -> Rule:
    """Parse one rule; a malformed one is a :class:`GateError` naming it and the forms."""
    rule = text.strip()
    if rule == "any-detected":
        return Rule(rule, "any-detected")
    m = _PREFIXED.match(rule)
    if m:
        return Rule(rule, m["kind"], m["name"].strip(), _filters(m["filters"], rule))
    significant_only = rule.startswith("compare:")
    m = _THRESHOLD.match(rule.removeprefix("compare:"))
    if m:
        try:
            value = float(m["value"])
        except ValueError:
            raise GateError(f"--fail-on {rule!r}: {m['value']!r} is not a number") from None
        if math.isnan(value):
            raise GateError(f"--fail-on {rule!r}: a threshold must be a number, not NaN")
        return Rule(rule, "compare" if significant_only else "threshold", m["name"].strip(),
                    _filters(m["filters"], rule), m["column"], m["op"], value)
    raise GateError(f"--fail-on {rule!r}: not a rule; the forms are any-detected, detected:NAME, "
                    f"NAME.COLUMN<NUMBER (or <=, >, >=, ==, !=), rank-flip:CORRECTION, compare:NAME.COLUMN>NUMBER, "
                    f"each NAME optionally "
                    f"with [KEY=VALUE,...]")


def parse_rules(texts: Sequence[str] | None) -> list[Rule]:
    """Every rule of the command line, parsed before any log is read (a typo costs no audit)."""
    return [parse_rule(t) for t in texts or ()]


@dataclass
class Subject:
    """What rules are evaluated on: the command's table, the column a NAME matches, and the
    kinds of rule it answers.

    ``bias_names``: the NAMEs ``any-detected`` looks at (the card's bias metrics: an accuracy
    row that differs from chance is not a bias).  ``flips``: the leaderboard's rank flips."""

    command: str
    table: pd.DataFrame
    name_column: str
    kinds: frozenset[str]
    bias_names: frozenset[str] = frozenset()
    flips: pd.DataFrame | None = None
    id_columns: tuple[str, ...] = ()
    corrections: tuple[str, ...] = ("lc_win_rate", "style_controlled", "bias_aware")


@dataclass
class GateResult:
    """The rules, the rows that tripped them, and the rows a threshold could not be read on."""

    rules: list[str]
    tripped: list[dict[str, Any]] = field(default_factory=list)
    no_value: list[dict[str, Any]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.tripped else 0

    def lines(self) -> list[str]:
        """One line per tripped row: the rule, then the row's identifying fields and value."""
        return [f"{t['rule']}: " + _fields(t["row"]) for t in self.tripped]

    def to_json(self) -> str:
        return json.dumps({"rules": self.rules, "tripped": self.tripped, "no_value": self.no_value,
                           "exit_code": self.exit_code}, indent=2, sort_keys=True, default=_plain) + "\n"


def _fields(row: dict[str, Any]) -> str:
    """``key=value, ...`` with numbers to 4 significant digits (the full value is in gate.json)."""
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())


def _plain(x: Any) -> Any:
    try:
        return x.item()  # numpy scalars
    except AttributeError:
        return str(x)


def _suggest(word: str, choices: Iterable[Any]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.5)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def _known(values: Iterable[Any]) -> str:
    names = sorted({str(v) for v in values})
    shown = ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12 else "")
    return f" (known: {shown})"


def _select(table: pd.DataFrame, column: str, name: str, filters: tuple[tuple[str, str], ...], rule: Rule,
            what: str) -> pd.DataFrame:
    """The rows of ``table`` whose ``column`` is ``name`` and that pass ``filters``; none is a GateError."""
    names = table[column].astype(str)
    if name not in set(names):
        hint = _suggest(name, names.unique()) or _known(names.unique())
        raise GateError(f"--fail-on {rule.text!r}: no {what} named {name!r}{hint}")
    rows = table[names == name]
    for key, value in filters:
        if key not in table.columns:
            raise GateError(f"--fail-on {rule.text!r}: no column {key!r} to filter on"
                            f"{_suggest(key, [str(c) for c in table.columns])}")
        col = rows[key].astype(str)
        if value not in set(table[key].astype(str)):
            raise GateError(f"--fail-on {rule.text!r}: no row has {key}={value!r}"
                            f"{_suggest(value, table[key].astype(str).unique())}")
        rows = rows[col == value]
    if rows.empty:
        raise GateError(f"--fail-on {rule.text!r}: no {what} {name!r} has "
                        + ", ".join(f"{k}={v}" for k, v in filters))
    return rows


def _row_id(row: pd.Series, columns: Sequence[str]) -> dict[str, Any]:
    """The identifying fields of a row; a field the row leaves empty (a card row's ``score`` in
    compare's table) is not shown."""
    return {c: row[c] for c in columns if c in row.index and not (pd.api.types.is_scalar(row[c]) and pd.isna(row[c]))}


def evaluate(rules: Sequence[Rule], subject: Subject) -> GateResult:
    """Check every rule against ``subject``; a rule that names no row is a :class:`GateError`."""
    result = GateResult([r.text for r in rules])
    t = subject.table
    ids = subject.id_columns or (subject.name_column,)
    for rule in rules:
        if rule.kind not in subject.kinds:
            raise GateError(f"--fail-on {rule.text!r}: {subject.command} has no {rule.kind} rule "
                            f"(its rules: {', '.join(sorted(subject.kinds))})")
        if rule.kind == "any-detected":
            hit = t[t[subject.name_column].isin(subject.bias_names) & (t["status"] == "detected")]
            result.tripped += [{"rule": rule.text, "row": _row_id(r, (*ids, "status", "estimate"))}
                               for _, r in hit.iterrows()]
        elif rule.kind == "detected":
            rows = _select(t, subject.name_column, rule.name, rule.filters, rule, subject.name_column)
            hit = rows[rows["status"] == "detected"]
            result.tripped += [{"rule": rule.text, "row": _row_id(r, (*ids, "status", "estimate"))}
                               for _, r in hit.iterrows()]
        elif rule.kind == "rank-flip":
            flips = subject.flips if subject.flips is not None else pd.DataFrame(columns=["correction"])
            corrections = subject.corrections
            if rule.name not in corrections:
                raise GateError(f"--fail-on {rule.text!r}: no correction named {rule.name!r}"
                                f"{_suggest(rule.name, corrections)} (corrections: {', '.join(corrections)})")
            rows = flips[flips["correction"].astype(str) == rule.name]
            for key, value in rule.filters:
                if key not in flips.columns:
                    raise GateError(f"--fail-on {rule.text!r}: rank flips have no column {key!r}"
                                    f"{_suggest(key, [str(c) for c in flips.columns])}")
                rows = rows[rows[key].astype(str) == value]
            result.tripped += [{"rule": rule.text, "row": _row_id(r, ("correction", "model_1", "model_2",
                                                                       "win_rate_1", "win_rate_2", "corrected_1",
                                                                       "corrected_2", "before_1", "before_2",
                                                                       "after_1", "after_2"))}
                               for _, r in rows.iterrows()]
        else:  # threshold; compare: the same on the rows whose difference is significant
            rows = _select(t, subject.name_column, rule.name, rule.filters, rule, subject.name_column)
            if rule.column not in t.columns:
                raise GateError(f"--fail-on {rule.text!r}: no column {rule.column!r}"
                                f"{_suggest(rule.column, [str(c) for c in t.columns])}")
            values = pd.to_numeric(rows[rule.column], errors="coerce")
            if values.isna().all() and rows[rule.column].notna().any():
                raise GateError(f"--fail-on {rule.text!r}: column {rule.column!r} holds no numbers")
            compare = OPERATORS[rule.op]
            for (_, r), v in zip(rows.iterrows(), values, strict=True):
                entry = {"rule": rule.text, "row": {**_row_id(r, ids), rule.column: v}}
                if pd.isna(v):
                    result.no_value.append(entry)
                elif compare(float(v), rule.value) and (rule.kind == "threshold" or bool(r["significant"])):
                    result.tripped.append(entry)
    return result


def card_subject(card: pd.DataFrame) -> Subject:
    """The bias card as a gate subject: NAME is ``metric``; ``any-detected`` reads its bias metrics."""
    from judgelab.bias_card.card import METRICS

    bias = frozenset(m for m, spec in METRICS.items() if spec.kind == "bias")
    return Subject("judgelab audit", card, "metric", frozenset({"any-detected", "detected", "threshold"}), bias,
                   id_columns=("judge", "view", "metric"))


def compare_subject(table: pd.DataFrame, board: pd.DataFrame | None = None,
                    flips: pd.DataFrame | None = None) -> Subject:
    """The comparison as a gate subject: NAME is ``metric``, or a ``model`` of the leaderboard rows
    (``board``, compare_board.csv); ``compare:`` counts significant rows only; ``rank-flip:SCORE``
    reads the pairs whose order ``flips`` reverses (only with a leaderboard)."""
    if board is None:
        return Subject("judgelab compare without a leaderboard (no models to rank)", table, "metric",
                       frozenset({"threshold", "compare"}), id_columns=("view", "metric"))
    both = pd.concat([table, board.rename(columns={"model": "metric"})], ignore_index=True)
    return Subject("judgelab compare", both, "metric", frozenset({"threshold", "compare", "rank-flip"}), flips=flips,
                   id_columns=("view", "metric", "score"),
                   corrections=("win_rate", "lc_win_rate", "style_controlled", "bias_aware"))


def board_subject(table: pd.DataFrame, flips: pd.DataFrame) -> Subject:
    """The leaderboard as a gate subject: NAME is ``model``; rank flips per correction."""
    return Subject("judgelab leaderboard", table, "model", frozenset({"threshold", "rank-flip"}), flips=flips,
                   id_columns=("model",))


def report(result: GateResult | None) -> int:
    """Print each tripped row on its own line (stderr), so a CI log shows why the job failed; the
    command's exit code (0 without rules)."""
    import sys

    if result is None:
        return 0
    for line in result.lines():
        print(f"judgelab: gate tripped: {line}", file=sys.stderr)
    for entry in result.no_value:
        print(f"judgelab: gate: {entry['rule']}: no value for " + _fields(entry["row"]), file=sys.stderr)
    return result.exit_code
