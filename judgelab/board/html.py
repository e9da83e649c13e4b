"""``report.html`` of ``judgelab leaderboard``: the leaderboard, its rank flips and judge checks, the
notes on what was estimated from what, and the figure, on one self-contained page
(:mod:`judgelab.plots.html_report`: inline style and figure, nothing fetched, every value escaped).

The page opens with its summary: the notes, one sentence per score (which model leads it), one on
the rank flips, a compact table of each model's scores and the figure.  The full tables
(``leaderboard.csv``, ``rank_flips.csv``, ``judges.csv``) follow in closed ``<details>`` sections.
``names`` (``--names``) adds a ``display_name`` column beside each model name and names the models
of the summary by it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgelab.board.table import CORRECTIONS
from judgelab.plots.html_report import SIMULATED_BANNER, Figure, Page, Section, Table, write_page

#: model-name columns of the board's tables, each followed by its display name when ``names`` is given
NAME_COLUMNS = ("model", "model_1", "model_2")


def with_display_names(frame: pd.DataFrame, names: Mapping[str, str]) -> pd.DataFrame:
    """``frame`` with a ``display_name`` column after each model-name column (``display_name_1`` after
    ``model_1``...): the published name where ``names`` has one, else the name of the logs.  Unchanged
    when ``names`` is empty (no ``--names``)."""
    if not names:
        return frame
    out = frame.copy()
    for col in NAME_COLUMNS:
        if col in out.columns:
            new = "display_name" + col[len("model"):]
            out.insert(list(out.columns).index(col) + 1, new, [names.get(str(m), str(m)) for m in out[col]])
    return out


def summary_lines(table: pd.DataFrame, flips: pd.DataFrame, names: Mapping[str, str]) -> list[str]:
    """One sentence per score (raw and each correction with a number): the model that leads it;
    then one on the rank flips."""
    def lead(col: str, what: str) -> str | None:
        values = pd.to_numeric(table[col], errors="coerce").to_numpy(float)
        if not np.isfinite(values).any():
            return None
        i = int(np.nanargmax(values))
        m = str(table["model"].iloc[i])
        return f"Highest {what}: {names.get(m, m)} ({values[i]:.1f}%)."

    out = [lead("win_rate", "raw win rate")]
    out += [lead(col, name) for col, _, _, name in CORRECTIONS]
    pairs = len(flips)
    out.append(f"{pairs} pair(s) of models change order under a correction (rank flips below)." if pairs
               else "No pair of models changes order under a correction.")
    return [s for s in out if s]


def compact_table(table: pd.DataFrame, names: Mapping[str, str]) -> pd.DataFrame:
    """Each model's raw win rate and corrected scores, rounded to one decimal, by raw win rate."""
    cols = ["win_rate"] + [c for c, _, _, _ in CORRECTIONS if pd.to_numeric(table[c], errors="coerce").notna().any()]
    shown = table[["model", "n", *cols]].copy()
    shown.insert(0, "model", shown.pop("model").map(lambda m: names.get(str(m), str(m))))
    shown = (shown.assign(_key=pd.to_numeric(shown["win_rate"], errors="coerce"))
             .sort_values("_key", ascending=False, na_position="last", kind="stable").drop(columns="_key"))
    for c in cols:  # one decimal, as text: the page's number format would add two zeros
        shown[c] = [f"{v:.1f}" if pd.notna(v) else "n/a" for v in pd.to_numeric(shown[c], errors="coerce")]
    return shown.reset_index(drop=True)


def write_board_html(out: str | Path, board: Any, *, title: str, notes: Sequence[str], simulated: bool,
                     figure: str | Path | None = None, names: Mapping[str, str] | None = None) -> None:
    """Write the page for ``board`` (:class:`judgelab.board.table.Board`) to ``out``."""
    names = dict(names or {})
    figures = ([Figure("raw and corrected scores", figure, "Each model's raw win rate beside each correction, "
                       "with its interval.")] if figure is not None and Path(figure).is_file() else [])
    sections = [
        Section(title="Summary", key="summary", paragraphs=[*notes, *summary_lines(board.table, board.flips, names)],
                tables=[Table("Scores (%)", compact_table(board.table, names), status_column=None,
                              caption="Raw win rate and each correction with a number; intervals and statuses "
                                      "in leaderboard.csv below.")],
                figures=figures, summary=True),
        Section(title="Leaderboard", key="leaderboard", collapsed=True, lead="leaderboard.csv: every column",
                tables=[Table("leaderboard.csv", with_display_names(board.table, names), status_column=None,
                              caption="Win rates in percent; each correction with its interval, its status and, "
                                      "where it has no number, the reason.")]),
        Section(title="Rank flips", key="rank-flips", collapsed=True, lead=f"{len(board.flips)} pair(s)",
                paragraphs=[] if len(board.flips) else ["No pair of models changes order under a correction."],
                tables=[Table("rank_flips.csv", with_display_names(board.flips, names), status_column=None)]
                if len(board.flips) else []),
    ]
    if len(board.judges):
        sections.append(Section(title="Judges", key="judges", collapsed=True, lead="leave-one-judge-out checks",
                                tables=[Table("judges.csv", board.judges, status_column=None,
                                              caption="Leave-one-judge-out Kendall tau of the leaderboard.")]))
    write_page(out, Page(title=f"Leaderboard: {title}", sections=sections,
                         banner=SIMULATED_BANNER if simulated else "",
                         footer="Written by judgelab leaderboard; the same rows are in the CSV files beside it."))
