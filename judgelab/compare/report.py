"""The outputs of ``judgelab compare``, written as one set into ``--out``.

``compare.csv`` (:data:`judgelab.compare.paired.COLUMNS`: per view and card metric, before, after,
the paired difference with its item-clustered interval, test and Holm-adjusted p-value, and the
flip of the card's status), ``unmatched.csv`` (the presentations only one side recorded),
``compare.md`` (the flips and significant differences first, then the table), ``compare.png``
(each tested metric's difference with its interval) and ``report.html`` (all of it on one page).
When the log has models to rank (:mod:`judgelab.compare.board`) the set also holds
``compare_board.csv`` (:data:`judgelab.compare.board.BOARD_COLUMNS`: per model and leaderboard
score, before, after, the paired difference, its interval where one is computed, the ranks and
their flip) and ``compare_board_flips.csv`` (:data:`judgelab.compare.board.FLIP_COLUMNS`: the
pairs of models whose order is reversed), with a leaderboard section in ``compare.md`` and
``report.html``; otherwise that section says why there is no leaderboard to compare.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from judgelab.compare.board import BoardComparison
from judgelab.compare.paired import Matched
from judgelab.io import any_true, staged_folder, write_table, write_text
from judgelab.plots.html_report import SIMULATED_BANNER, Figure, Page, Section, Table, write_page


def _md(x: object) -> str:
    return str(x).replace("|", "\\|")


def summary_lines(table: pd.DataFrame, names: tuple[str, str], m: Matched) -> list[str]:
    """What a reader needs first: the matched size, each flip of a conclusion, each significant change."""
    before, after = names
    out = [f"{m.n_items} items matched ({len(m.before)} presentations); {len(m.unmatched)} presentations "
           f"recorded by one side only (unmatched.csv)."]
    if table["underpowered"].any():
        out.append("Underpowered: too few matched items for a paired comparison to detect a moderate change.")
    lenient = table[table["view"] == table["view"].iloc[0]]
    for r in lenient.itertuples():
        if r.flip:
            out.append(f"{r.metric}: the card's conclusion changes ({r.flip}), {before} {r.before:.3f} -> "
                       f"{after} {r.after:.3f}.")
    for r in lenient[lenient["significant"]].itertuples():
        out.append(f"{r.metric}: {after} minus {before} = {r.diff:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}], "
                   f"Holm p = {r.p_adjusted:.3g}.")
    if len(out) == 1 + int(table["underpowered"].any()):
        out.append("No card conclusion changes and no difference is significant after Holm's correction.")
    return out


def board_summary_lines(board: BoardComparison | None, names: tuple[str, str]) -> list[str]:
    """The leaderboard's part of the summary: why there is none, or its rank flips and significant changes."""
    if board is None:
        return []
    if not board.compared:
        return [f"Leaderboard: not compared ({board.note})."]
    before, after = names
    t = board.table
    out = [f"Leaderboard: {t['model'].nunique()} models against {board.baseline!r}; {len(board.flips)} pairs of "
           f"models change order ({', '.join(f'{k}: {n}' for k, n in _flip_counts(board).items())})."]
    for r in t[t["significant"]].itertuples():
        out.append(f"{r.model} {r.score}: {after} minus {before} = {r.diff:+.2f} [{r.ci_low:+.2f}, {r.ci_high:+.2f}], "
                   f"Holm p = {r.p_adjusted:.3g}.")
    return out


def _flip_counts(board: BoardComparison) -> dict[str, int]:
    from judgelab.compare.board import SCORES

    counts = board.flips["correction"].value_counts()
    return {s: int(counts.get(s, 0)) for s in SCORES}


BOARD_SHOWN = ["model", "score", "before", "after", "diff", "ci_low", "ci_high", "p_adjusted", "rank_flip", "interval"]


def board_markdown(board: BoardComparison | None, names: tuple[str, str]) -> list[str]:
    """The leaderboard section of compare.md: the note, or the table and the reversed pairs."""
    if board is None:
        return []
    lines = ["", "## Leaderboard", ""]
    if not board.compared:
        return [*lines, f"Not compared: {_md(board.note)}."]
    lines += [f"- {_md(x)}" for x in board_summary_lines(board, names)] + [""]
    lines += ["| " + " | ".join(BOARD_SHOWN) + " |", "|" + "---|" * len(BOARD_SHOWN)]
    for r in board.table[BOARD_SHOWN].itertuples(index=False):
        lines.append("| " + " | ".join(_md(f"{v:.2f}" if isinstance(v, float) else v) for v in r) + " |")
    lines += ["", "### Pairs of models whose order is reversed", ""]
    if board.flips.empty:
        return [*lines, "None: every score orders the models the same way before and after."]
    cols = list(board.flips.columns)
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in board.flips.itertuples(index=False):
        lines.append("| " + " | ".join(_md(f"{v:.2f}" if isinstance(v, float) else v) for v in r) + " |")
    return lines


def compare_markdown(table: pd.DataFrame, names: tuple[str, str], m: Matched, *, simulated: bool,
                     board: BoardComparison | None = None) -> str:
    lines = [f"# {_md(names[1])} vs {_md(names[0])}", ""]
    if simulated:
        lines += ["**SIMULATED JUDGES** - these verdicts come from the simulated panel, not a real model.", ""]
    lines += [f"- {_md(x)}" for x in summary_lines(table, names, m)] + [""]
    cols = ["view", "metric", "before", "after", "diff", "ci_low", "ci_high", "p_adjusted", "flip", "test_reason"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in table[cols].itertuples(index=False):
        lines.append("| " + " | ".join(_md(f"{v:.3f}" if isinstance(v, float) else v) for v in r) + " |")
    lines += board_markdown(board, names)
    return "\n".join(lines) + "\n"


def compare_figure(table: pd.DataFrame, path: Path, names: tuple[str, str], *, simulated: bool) -> None:
    """Each metric with a difference: the difference and its interval, the zero line, flips in red."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from judgelab.plots.stamp import save_figure, stamp

    view = table["view"].iloc[0]
    t = table[(table["view"] == view) & table["diff"].notna()].reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * max(len(t), 3) + 1.4))
    for i, r in t.iterrows():
        colour = "#c5221f" if r["significant"] else "#52606d"
        if pd.notna(r["ci_low"]):
            ax.plot([r["ci_low"], r["ci_high"]], [i, i], color=colour, lw=2)
        ax.plot(r["diff"], i, "o", color=colour)
    ax.axvline(0, color="#999", ls=":")
    ax.set_yticks(range(len(t)), [str(m) for m in t["metric"]], fontsize=8)
    ax.invert_yaxis()
    title = f"{names[1]} minus {names[0]} ({view} view; red: significant after Holm)"
    ax.set_title(title, fontsize=9)
    for text in (ax.title, *ax.get_yticklabels()):  # names are drawn as written: a "$" is no formula
        text.set_parse_math(False)
    stamp(fig, simulated=simulated)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def write_compare(out: str | Path, table: pd.DataFrame, m: Matched, names: tuple[str, str], *,
                  extra: dict[str, str] | None = None, board: BoardComparison | None = None) -> None:
    """Write the set (module docstring) and the ``extra`` text files (``gate.json``) into ``out``,
    replacing an earlier set whole."""
    simulated = any_true(m.before) or any_true(m.after)
    with staged_folder(out) as stage:
        for name, text in (extra or {}).items():
            write_text(stage / name, text)
        write_table(table.assign(simulated=simulated), stage / "compare.csv")
        write_table(m.unmatched, stage / "unmatched.csv")
        if board is not None and board.compared:
            write_table(board.table.assign(simulated=simulated), stage / "compare_board.csv")
            write_table(board.flips, stage / "compare_board_flips.csv")
        write_text(stage / "compare.md", compare_markdown(table, names, m, simulated=simulated, board=board))
        compare_figure(table, stage / "compare.png", names, simulated=simulated)
        shown = table.drop(columns=["n_items", "underpowered"])
        page = Page(f"{names[1]} vs {names[0]}", [
            Section("Summary", summary_lines(table, names, m), figures=[Figure("Differences", stage / "compare.png")]),
            Section("Every card row", tables=[Table("before, after and the paired difference", shown,
                                                    status_column="status_after")]),
            *_board_sections(board, names),
            Section("Unmatched presentations", [f"{len(m.unmatched)} presentations recorded by one side only."],
                    tables=[Table("unmatched", m.unmatched.head(200), status_column=None)]),
        ], banner=SIMULATED_BANNER if simulated else "")
        write_page(stage / "report.html", page)


def _board_sections(board: BoardComparison | None, names: tuple[str, str]) -> list[Section]:
    if board is None:
        return []
    if not board.compared:
        return [Section("Leaderboard", [f"Not compared: {board.note}."])]
    shown = board.table.drop(columns=["n_items", "underpowered", "test_reason"])
    flips = [Table("pairs of models whose order is reversed", board.flips, status_column=None)] if len(board.flips) \
        else []
    return [Section("Leaderboard", board_summary_lines(board, names),
                    tables=[Table("every model and score: before, after and the paired difference", shown,
                                  status_column="status_after"), *flips])]
