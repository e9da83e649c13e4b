"""``report.html`` of ``judgelab leaderboard``: the leaderboard, its rank flips and judge checks, the
notes on what was estimated from what, and the figure, on one self-contained page
(:mod:`judgelab.html_report`: inline style and figure, nothing fetched, every value escaped)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgelab.html_report import SIMULATED_BANNER, Figure, Page, Section, Table, write_page


def write_board_html(out: str | Path, board: Any, *, title: str, notes: Sequence[str], simulated: bool,
                     figure: str | Path | None = None) -> None:
    """Write the page for ``board`` (:class:`judgelab.board.table.Board`) to ``out``."""
    figures = ([Figure("raw and corrected scores", figure, "Each model's raw win rate beside each correction, "
                       "with its interval.")] if figure is not None and Path(figure).is_file() else [])
    sections = [
        Section(title="Leaderboard", key="leaderboard", paragraphs=list(notes),
                tables=[Table("leaderboard.csv", board.table, status_column=None,
                              caption="Win rates in percent; each correction with its interval, its status and, "
                                      "where it has no number, the reason.")],
                figures=figures),
        Section(title="Rank flips", key="rank-flips",
                paragraphs=[] if len(board.flips) else ["No pair of models changes order under a correction."],
                tables=[Table("rank_flips.csv", board.flips, status_column=None)] if len(board.flips) else []),
    ]
    if len(board.judges):
        sections.append(Section(title="Judges", key="judges",
                                tables=[Table("judges.csv", board.judges, status_column=None,
                                              caption="Leave-one-judge-out Kendall tau of the leaderboard.")]))
    write_page(out, Page(title=f"Leaderboard: {title}", sections=sections,
                         banner=SIMULATED_BANNER if simulated else "",
                         footer="Written by judgelab leaderboard; the same rows are in the CSV files beside it."))
