"""Reproduction tables: each paper's headline numbers beside this run's, with a verdict.

Every study writes ``results/<study>/reproduction.csv`` (rule ``<study>_reproduction``): one row
per number the paper publishes and the study's tables compute.  The paper's side is transcribed
in ``judgelab/reproduction/<study>.py`` (a :class:`PaperValue` per row: the number as printed,
the sentence or table line holding it, where it is); the run's side is read from the study's
result tables by that module's ``extract`` (a :class:`RunValue`).  This module holds what the
five have in common: the row schema (:data:`COLUMNS`, documented in :data:`COLUMN_DOCS`), where a
run's number comes from (:func:`resolve_provenance`), the one rule that assigns verdicts
(:func:`assign_verdict`) and the writer (:func:`build_table`, :func:`write_reproduction`).

Why the provenance column matters: the default run's simulated panel is planted from the papers'
own published values (``config/judges/simulated.yaml`` says which), so where that run agrees
with a paper the agreement was built in.  A row whose number was planted says ``planted`` and is
never ``reproduced``; :func:`assign_verdict` enforces it for every caller.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.registry import backend_traits

#: The columns of ``reproduction.csv``, in order.
COLUMNS: tuple[str, ...] = (
    "study", "paper", "table_or_figure", "cell", "paper_value", "paper_precision", "paper_reference",
    "paper_quote", "run_value", "run_ci_low", "run_ci_high", "provenance", "verdict", "reason",
)

#: What each column holds (the study pages' "Reproduction" sections show the same text).
COLUMN_DOCS: dict[str, str] = {
    "study": "the pipeline study (uda, rbd, topk, strategies, scoring)",
    "paper": "the paper's file number in ../shared/papers (000-004)",
    "table_or_figure": "the paper's table, figure or section holding the number",
    "cell": "which number of it: row / column, judge, strategy, bias",
    "paper_value": "the number as the paper prints it (in the paper's units: a percentage stays a percentage)",
    "paper_precision": "half a unit of the paper's last printed digit: a run value this close rounds to the "
                       "paper's number",
    "paper_reference": "page/section/table of the paper",
    "paper_quote": "the exact snippet of the paper's text holding the number",
    "run_value": "this run's value of the same quantity, in the paper's units (empty: the run has none)",
    "run_ci_low": "lower end of this run's 95% interval (empty: the table gives none)",
    "run_ci_high": "upper end of this run's 95% interval",
    "provenance": "planted (the simulated panel was set from this paper value), simulated (simulated "
                  "judges, the number not set from the paper), replayed (recorded real verdicts), real "
                  "(a real judge backend)",
    "verdict": "reproduced (paper value inside this run's interval or within the paper's precision), "
               "not reproduced, not comparable",
    "reason": "why the verdict: the interval or distance, or what makes the row not comparable",
}

#: The provenances (a row's, and -- all but ``planted`` -- a judge's kind: :func:`judge_kind`).
PLANTED, SIMULATED, REPLAYED, REAL = PROVENANCES = ("planted", "simulated", "replayed", "real")
VERDICTS = ("reproduced", "not reproduced", "not comparable")

_NUMBER = re.compile(r"[+\-−]?(?:\d+(?:,\d{3})*(?:\.\d+)?|\.\d+)")


def parse_printed(printed: str) -> tuple[float, float]:
    """The value and precision of a number as a paper prints it (``".660"``, ``"+0.44"``,
    ``"−0.12"``, ``"59.1"``, ``"43,152.6"``): precision is half a unit of the last printed digit,
    the distance within which another value rounds to the same print."""
    text = printed.strip().replace("−", "-").replace(",", "")
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"not a printed number: {printed!r}")
    decimals = len(text.split(".")[1]) if "." in text else 0
    return float(text), 0.5 * 10.0 ** (-decimals)


@dataclass(frozen=True)
class PaperValue:
    """One headline number of a paper, transcribed.

    ``printed`` is the number exactly as it appears inside ``quote`` (which is verbatim paper
    text, tested against the paper).  ``judges`` are the paper's judges the number comes from,
    as run-judge keys (``claude-sonnet-4``): a run judge named so, or ``sim-<key>`` /
    ``replay-<key>``, stands for it.  ``planted`` names the simulated-profile parameter(s) set
    from this very value (paths under a judge's ``options.profile``, e.g. ``biases.markdown``,
    ``prompt_styles.cot.biases.markdown``); empty when the simulated panel was not set from it.
    ``metric`` and ``params`` tell the study's extractor what to read."""

    table_or_figure: str
    cell: str
    printed: str
    reference: str
    quote: str
    metric: str
    params: Mapping[str, Any] = field(default_factory=dict)
    judges: tuple[str, ...] = ()
    planted: tuple[str, ...] = ()

    @property
    def value(self) -> float:
        return parse_printed(self.printed)[0]

    @property
    def precision(self) -> float:
        return parse_printed(self.printed)[1]


@dataclass(frozen=True)
class RunValue:
    """This run's value of a row (in the paper's units), its 95% interval, the run judges it came
    from and whether the table marked their rows simulated.  ``missing`` says why there is no
    value; ``incomparable`` what makes an existing value measure something else than the paper
    (another data set or size, another judge set)."""

    value: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    judges: tuple[str, ...] = ()
    table_simulated: bool | None = None
    missing: str = ""
    incomparable: str = ""


def missing(reason: str, judges: Iterable[str] = ()) -> RunValue:
    """No run value, and why; ``judges``: the run judges it would have come from (they still
    decide the row's provenance, e.g. ``replayed`` when only replayed judges were there)."""
    return RunValue(missing=reason, judges=tuple(judges))


# -- judges ------------------------------------------------------------------------------
def judge_key(name: str) -> str:
    """The paper-judge key a run judge stands for: its name without a ``sim-`` / ``replay-``
    prefix, lower-cased (``sim-claude-sonnet-4`` and ``claude-sonnet-4`` are both Claude Sonnet 4)."""
    low = name.lower()
    for prefix in ("sim-", "replay-"):
        if low.startswith(prefix):
            return low[len(prefix):]
    return low


def find_judge(key: str, names: Iterable[str]) -> str | None:
    """The run judge among ``names`` that stands for the paper's judge ``key`` (None: none)."""
    for n in sorted(set(names)):
        if judge_key(n) == key.lower():
            return n
    return None


def judge_kind(entry: Mapping[str, Any]) -> str:
    """``simulated``, ``replayed`` or ``real``: what a judge entry's answers are, from its
    backend's declared traits (never from the judge's name)."""
    traits = backend_traits(entry)
    if traits.simulated:
        return SIMULATED
    return REPLAYED if traits.recorded else REAL


def _has_path(mapping: Any, path: str) -> bool:
    node = mapping
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def resolve_provenance(row: PaperValue, run: RunValue, entries: Mapping[str, Mapping[str, Any]]) -> str:
    """Where this run's number comes from.

    The judges the value came from (``run.judges``; all configured ``entries`` when it names
    none) decide: any simulated one -- by its backend, or because the table marked its rows
    simulated -- makes the row ``planted`` when the row declares the profile parameter set from
    the paper and a simulated judge's profile holds it, else ``simulated``; otherwise any
    replayed judge makes it ``replayed``, and only real backends ``real``.  A judge the config
    does not know (a role judge of the study) counts by the table's flag alone."""
    names = run.judges or tuple(entries)
    known = [entries[n] for n in names if n in entries]
    kinds = {judge_kind(e) for e in known}
    if run.table_simulated:
        kinds.add(SIMULATED)
    if SIMULATED in kinds:
        sim_profiles = [(e.get("options") or {}).get("profile") or {} for e in known if judge_kind(e) == SIMULATED]
        if row.planted and (any(_has_path(p, path) for p in sim_profiles for path in row.planted)
                            or (run.table_simulated and not sim_profiles)):
            return PLANTED
        return SIMULATED
    return REPLAYED if REPLAYED in kinds else REAL


# -- the verdict -------------------------------------------------------------------------
def _fmt(x: float) -> str:
    return f"{x:.4g}"


def assign_verdict(provenance: str, paper_value: float, precision: float, run: RunValue,
                   planted: Sequence[str] = (), judges_match: str = "") -> tuple[str, str]:
    """The verdict and its reason: the only place verdicts are made.

    * ``planted`` -> ``not comparable``, always: the simulated panel was set from this number,
      so agreement is built in (the reason still says whether the run recovered it);
    * no run value -> ``not comparable`` (``run.missing`` says why);
    * ``simulated`` -> ``not comparable``: simulated judges stand in for the paper's;
    * ``judges_match`` (the paper's judges are not this run's) or ``run.incomparable`` (another
      set or size) -> ``not comparable``;
    * else ``reproduced`` when the paper value lies in the run's interval (ends included) or the
      run value is within the paper's precision of it, ``not reproduced`` otherwise.
    """
    if provenance not in PROVENANCES:
        raise ValueError(f"unknown provenance {provenance!r} (one of {', '.join(PROVENANCES)})")
    has_value = isinstance(run.value, (int, float)) and math.isfinite(run.value)
    has_ci = all(isinstance(x, (int, float)) and math.isfinite(x) for x in (run.ci_low, run.ci_high))
    inside = has_ci and run.ci_low <= paper_value <= run.ci_high
    close = has_value and abs(run.value - paper_value) <= precision + 1e-12
    if has_ci:
        where = (f"paper {_fmt(paper_value)} {'inside' if inside else 'outside'} the run's interval "
                 f"[{_fmt(run.ci_low)}, {_fmt(run.ci_high)}]")
        if close and not inside:
            where += f", run {_fmt(run.value)} within ±{_fmt(precision)} of it"
    elif has_value:
        where = (f"run {_fmt(run.value)} {'within' if close else 'not within'} ±{_fmt(precision)} "
                 f"of paper {_fmt(paper_value)}, no interval")
    else:
        where = ""
    if provenance == PLANTED:
        detail = f" ({where})" if where else ""
        return "not comparable", (f"planted from the paper ({', '.join(planted) or 'simulated profile'}): "
                                  f"agreement is built in{detail}")
    if not has_value:
        return "not comparable", f"this run has no value: {run.missing or 'not computed'}"
    if provenance == SIMULATED:
        return "not comparable", f"simulated judges stand in for the paper's ({where})"
    if judges_match:
        return "not comparable", f"{judges_match} ({where})"
    if run.incomparable:
        return "not comparable", f"{run.incomparable} ({where})"
    if inside or close:
        return "reproduced", where
    return "not reproduced", where


# -- the table ---------------------------------------------------------------------------
Extractor = Callable[[PaperValue], RunValue]


def judges_mismatch(row: PaperValue, run: RunValue, provenance: str) -> str:
    """Why a real or replayed run value is not the paper judges' (empty when it is): the row's
    paper judges must each be stood for by a run judge the value came from."""
    if not row.judges or provenance not in (REAL, REPLAYED):
        return ""
    have = {judge_key(j) for j in run.judges}
    lacking = [j for j in row.judges if j.lower() not in have]
    if lacking:
        used = ", ".join(run.judges) or "none"
        return f"other judges than the paper's (paper: {', '.join(lacking)}; run: {used})"
    return ""


def build_table(study: str, paper: str, rows: Sequence[PaperValue], extract: Extractor,
                entries: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The reproduction table of one study: each transcribed row, this run's value from
    ``extract``, its provenance and verdict.  An extractor that fails on a row (a table the run
    did not write, a column it lacks) leaves that row without a run value, saying why."""
    out = []
    for row in rows:
        try:
            run = extract(row)
        except (OSError, KeyError, ValueError, IndexError) as exc:
            run = missing(f"{type(exc).__name__}: {exc}")
        prov = resolve_provenance(row, run, entries)
        verdict, reason = assign_verdict(prov, row.value, row.precision, run, row.planted,
                                         judges_mismatch(row, run, prov))
        has_value = math.isfinite(run.value)
        out.append({
            "study": study, "paper": paper, "table_or_figure": row.table_or_figure, "cell": row.cell,
            "paper_value": row.value, "paper_precision": row.precision, "paper_reference": row.reference,
            "paper_quote": row.quote, "run_value": run.value if has_value else math.nan,
            "run_ci_low": run.ci_low, "run_ci_high": run.ci_high, "provenance": prov,
            "verdict": verdict, "reason": reason,
        })
    return pd.DataFrame(out, columns=list(COLUMNS))


def write_reproduction(table: pd.DataFrame, path: str | Path, provenance: Mapping[str, Any] | None = None) -> None:
    """Write ``reproduction.csv``: the :data:`COLUMNS`, then the provenance columns every table of
    the pipeline carries (config hash, seed, judge ids and seeds, whether any judge is simulated:
    :func:`judgelab.workflow.provenance`)."""
    from judgelab.io import write_table

    write_table(table[list(COLUMNS)], path, provenance=dict(provenance) if provenance else None)


#: The studies with a reproduction table, each a module ``judgelab/reproduction/<study>.py``
#: with ``STUDY``, ``PAPER``, ``ROWS`` (its :class:`PaperValue` rows), ``TABLES`` (the result
#: files it reads, relative to ``results/<study>``) and ``extractor(root, available, options)``.
STUDIES = ("uda", "rbd", "topk", "strategies", "scoring")


def study_module(study: str) -> Any:
    """The transcription module of ``study`` (a ValueError naming the known ones otherwise)."""
    import importlib

    if study not in STUDIES:
        raise ValueError(f"no reproduction table for study {study!r} (known: {', '.join(STUDIES)})")
    return importlib.import_module(f"judgelab.reproduction.{study}")


def reproduce(study: str, root: str | Path, available: Iterable[str | Path] | None,
              entries: Mapping[str, Mapping[str, Any]], options: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """The reproduction table of ``study`` from its result folder ``root`` (``results/<study>``).

    ``available``: the result files this run wrote for it (the rule's inputs); a table outside
    it is never read, so a file left from another configuration cannot fill a row.  ``entries``:
    the run's judge entries by name (provenance comes from their backends); ``options``: what a
    study's extractor needs of the config (topk: its focus judge)."""
    mod = study_module(study)
    return build_table(mod.STUDY, mod.PAPER, mod.ROWS, mod.extractor(root, available, options), entries)
