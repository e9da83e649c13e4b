"""``judgelab.compare.report`` unit by unit, on hand-made comparison tables (no card is computed).

The summary lines, the markdown, the figure and the written set are checked against the table
they are made from: every line asserted whole, the figure's artists read back from matplotlib,
the page's sections read from the ``Page`` handed to the HTML writer.
"""

from __future__ import annotations

import importlib
import json

import matplotlib
import numpy as np
import pandas as pd
import pytest

from judgelab.compare import report as rep
from judgelab.compare.board import BOARD_COLUMNS, FLIP_COLUMNS, BoardComparison, skipped
from judgelab.compare.paired import COLUMNS, Matched
from judgelab.plots.html_report import SIMULATED_BANNER

NAMES = ("old|j", "new")
stamp_module = importlib.import_module("judgelab.plots.stamp")  # judgelab.plots.stamp is also a function


def _row(view="lenient", metric="m", before=0.1, after=0.3, **kw) -> dict:
    d = after - before
    r = {"view": view, "metric": metric, "before": before, "after": after, "diff": d, "ci_low": d - 0.05,
         "ci_high": d + 0.05, "se": 0.02, "p_value": 0.01, "p_adjusted": 0.02, "significant": False,
         "test_reason": "", "status_before": "not detected", "status_after": "not detected", "flip": "",
         "n_items": 30, "underpowered": False}
    r.update(kw)
    return r


def _table(*rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=COLUMNS)


def _matched(n_items=3, unmatched=2, simulated=False) -> Matched:
    t = pd.DataFrame({"item_id": [f"i{k // 2}" for k in range(2 * n_items)], "simulated": simulated})
    u = pd.DataFrame({"side": ["before"] * unmatched, "item_id": [f"u{k}" for k in range(unmatched)],
                      "pair_id": "p", "order": "AB", "repeat": "0"})
    return Matched(t, t.copy(), u)


TABLE = _table(
    _row(metric="pos|x", flip="not detected -> detected", significant=True, status_after="detected",
         p_adjusted=0.0123456),
    _row(metric="len", before=0.5, after=0.25, significant=True, p_adjusted=0.04),
    _row(metric="tie", before=0.2, after=0.2, flip="detected -> not detected"),
    _row(metric="acc", before=0.7, after=np.nan, ci_low=np.nan, ci_high=np.nan, se=np.nan, p_value=np.nan,
         p_adjusted=np.nan, test_reason="a side has no estimate"),
    _row(view="strict", metric="pos|x", flip="x -> y", significant=True))


def test_md_escapes_pipes_only():
    assert rep._md("a|b|c") == "a\\|b\\|c" and rep._md(3) == "3" and rep._md(None) == "None"


# ---- summary -----------------------------------------------------------------------------------------------
def test_summary_lines_give_size_flips_then_significant_changes_of_the_first_view():
    assert rep.summary_lines(TABLE, NAMES, _matched()) == [
        "3 items matched (6 presentations); 2 presentations recorded by one side only (unmatched.csv).",
        "pos|x: the card's conclusion changes (not detected -> detected), old|j 0.100 -> new 0.300.",
        "tie: the card's conclusion changes (detected -> not detected), old|j 0.200 -> new 0.200.",
        "pos|x: new minus old|j = +0.200 [+0.150, +0.250], Holm p = 0.0123.",
        "len: new minus old|j = -0.250 [-0.300, -0.200], Holm p = 0.04."]


def test_summary_reads_the_first_view_whatever_its_name():
    strict_first = _table(_row(view="strict", metric="a", significant=True), _row(view="lenient", metric="b",
                                                                                   significant=True))
    lines = rep.summary_lines(strict_first, NAMES, _matched())
    assert lines[1:] == ["a: new minus old|j = +0.200 [+0.150, +0.250], Holm p = 0.02."]


def test_a_quiet_comparison_says_nothing_changed_and_underpowered_says_so():
    quiet = _table(_row(), _row(metric="k"))
    assert rep.summary_lines(quiet, NAMES, _matched(unmatched=0))[1:] == [
        "No card conclusion changes and no difference is significant after Holm's correction."]
    under = _table(_row(underpowered=True), _row(metric="k", underpowered=True))
    assert rep.summary_lines(under, NAMES, _matched())[1:] == [
        "Underpowered: too few matched items for a paired comparison to detect a moderate change.",
        "No card conclusion changes and no difference is significant after Holm's correction."]
    under_flip = _table(_row(underpowered=True, flip="a -> b"))
    assert rep.summary_lines(under_flip, NAMES, _matched())[1:] == [
        "Underpowered: too few matched items for a paired comparison to detect a moderate change.",
        "m: the card's conclusion changes (a -> b), old|j 0.100 -> new 0.300."]
    one_row_under = _table(_row(underpowered=False), _row(metric="k", underpowered=True))
    assert rep.summary_lines(one_row_under, NAMES, _matched())[1] .startswith("Underpowered:")


# ---- the leaderboard's part ------------------------------------------------------------------------------------
def _board_row(model, score, before, after, **kw) -> dict:
    d = after - before
    r = {"model": model, "score": score, "before": before, "after": after, "diff": d, "ci_low": d - 1,
         "ci_high": d + 1, "se": 0.5, "p_value": 0.01, "p_adjusted": 0.03, "significant": False,
         "interval": "item bootstrap (20 resamples)", "test_reason": "", "rank_before": 1, "rank_after": 2,
         "rank_flip": "", "status_before": "ok", "status_after": "ok", "n_items": 30, "underpowered": False}
    r.update(kw)
    return r


def _board() -> BoardComparison:
    t = pd.DataFrame([_board_row("a|1", "win_rate", 60.0, 40.0, significant=True, p_adjusted=0.001234,
                                 rank_flip="1 -> 2, order reversed with b"),
                      _board_row("b", "win_rate", 50.0, 55.0, rank_before=2, rank_after=1,
                                 rank_flip="2 -> 1, order reversed with a|1"),
                      _board_row("a|1", "bias_aware", 1.0, 3.5, significant=True, p_adjusted=0.02),
                      _board_row("b", "bias_aware", 1.0, 1.0)], columns=BOARD_COLUMNS)
    f = pd.DataFrame([{"correction": "win_rate", "model_1": "a|1", "model_2": "b", "before_1": 60.0,
                       "before_2": 50.0, "after_1": 40.0, "after_2": 55.0}], columns=FLIP_COLUMNS)
    return BoardComparison(t, f, baseline="base")


def test_board_summary_lines():
    assert rep.board_summary_lines(None, NAMES) == []
    assert rep.board_summary_lines(skipped("why not"), NAMES) == ["Leaderboard: not compared (why not)."]
    assert rep.board_summary_lines(_board(), NAMES) == [
        "Leaderboard: 2 models against 'base'; 1 pairs of models change order (win_rate: 1, lc_win_rate: 0, "
        "style_controlled: 0, bias_aware: 0).",
        "a|1 win_rate: new minus old|j = -20.00 [-21.00, -19.00], Holm p = 0.00123.",
        "a|1 bias_aware: new minus old|j = +2.50 [+1.50, +3.50], Holm p = 0.02."]


def test_flip_counts_per_score_in_order():
    b = _board()
    b.flips = pd.concat([b.flips, b.flips.assign(correction="bias_aware"), b.flips.assign(correction="bias_aware")])
    assert rep._flip_counts(b) == {"win_rate": 1, "lc_win_rate": 0, "style_controlled": 0, "bias_aware": 2}
    assert list(rep._flip_counts(b)) == ["win_rate", "lc_win_rate", "style_controlled", "bias_aware"]


def test_board_markdown():
    assert rep.board_markdown(None, NAMES) == []
    assert rep.board_markdown(skipped("a|b"), NAMES) == ["", "## Leaderboard", "", "Not compared: a\\|b."]
    lines = rep.board_markdown(_board(), NAMES)
    assert lines == [
        "", "## Leaderboard", "",
        "- Leaderboard: 2 models against 'base'; 1 pairs of models change order (win_rate: 1, lc_win_rate: 0, "
        "style_controlled: 0, bias_aware: 0).",
        "- a\\|1 win_rate: new minus old\\|j = -20.00 [-21.00, -19.00], Holm p = 0.00123.",
        "- a\\|1 bias_aware: new minus old\\|j = +2.50 [+1.50, +3.50], Holm p = 0.02.",
        "",
        "| model | score | before | after | diff | ci_low | ci_high | p_adjusted | rank_flip | interval |",
        "|---|---|---|---|---|---|---|---|---|---|",
        "| a\\|1 | win_rate | 60.00 | 40.00 | -20.00 | -21.00 | -19.00 | 0.00 | 1 -> 2, order reversed with b | "
        "item bootstrap (20 resamples) |",
        "| b | win_rate | 50.00 | 55.00 | 5.00 | 4.00 | 6.00 | 0.03 | 2 -> 1, order reversed with a\\|1 | "
        "item bootstrap (20 resamples) |",
        "| a\\|1 | bias_aware | 1.00 | 3.50 | 2.50 | 1.50 | 3.50 | 0.02 |  | item bootstrap (20 resamples) |",
        "| b | bias_aware | 1.00 | 1.00 | 0.00 | -1.00 | 1.00 | 0.03 |  | item bootstrap (20 resamples) |",
        "", "### Pairs of models whose order is reversed", "",
        "| correction | model_1 | model_2 | before_1 | before_2 | after_1 | after_2 |",
        "|---|---|---|---|---|---|---|",
        "| win_rate | a\\|1 | b | 60.00 | 50.00 | 40.00 | 55.00 |"]
    none = _board()
    none.flips = none.flips.iloc[:0]
    assert rep.board_markdown(none, NAMES)[-4:] == [
        "", "### Pairs of models whose order is reversed", "",
        "None: every score orders the models the same way before and after."]


def test_compare_markdown():
    t = _table(_row(metric="pos|x", significant=True, flip="a -> b"), _row(metric="acc", after=np.nan,
                                                                            test_reason="a side has no estimate"))
    md = rep.compare_markdown(t, NAMES, _matched(), simulated=False)
    assert md == "\n".join([
        "# new vs old\\|j", "",
        "- 3 items matched (6 presentations); 2 presentations recorded by one side only (unmatched.csv).",
        "- pos\\|x: the card's conclusion changes (a -> b), old\\|j 0.100 -> new 0.300.",
        "- pos\\|x: new minus old\\|j = +0.200 [+0.150, +0.250], Holm p = 0.02.",
        "",
        "| view | metric | before | after | diff | ci_low | ci_high | p_adjusted | flip | test_reason |",
        "|---|---|---|---|---|---|---|---|---|---|",
        "| lenient | pos\\|x | 0.100 | 0.300 | 0.200 | 0.150 | 0.250 | 0.020 | a -> b |  |",
        "| lenient | acc | 0.100 | nan | nan | nan | nan | 0.020 |  | a side has no estimate |"]) + "\n"
    sim = rep.compare_markdown(t, NAMES, _matched(), simulated=True, board=skipped("none"))
    assert sim.splitlines()[:4] == [
        "# new vs old\\|j", "", "**SIMULATED JUDGES** - these verdicts come from the simulated panel, not a real model.",
        ""]
    assert sim.endswith("\n## Leaderboard\n\nNot compared: none.\n")


# ---- the figure ------------------------------------------------------------------------------------------------
@pytest.fixture
def saved(monkeypatch):
    """The figure handed to ``save_figure`` (and where), instead of a PNG."""
    got = {}

    def save(fig, path, **kw):
        got.update(fig=fig, path=path, kw=kw)

    monkeypatch.setattr(stamp_module, "save_figure", save)
    yield got
    import matplotlib.pyplot as plt

    plt.close("all")


def test_the_figure_draws_each_difference_of_the_first_view(saved, tmp_path):
    import matplotlib.pyplot as plt

    before = set(plt.get_fignums())
    rep.compare_figure(TABLE, tmp_path / "c.png", ("old $x$", "new"), simulated=False)
    fig = saved["fig"]
    assert saved["path"] == tmp_path / "c.png" and saved["kw"] == {}
    assert matplotlib.get_backend().lower() == "agg"
    assert set(plt.get_fignums()) == before  # closed
    ax = fig.axes[0]
    # lenient rows with a difference: pos|x, len, tie (acc has none)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["pos|x", "len", "tie"]
    assert all(t.get_fontsize() == 8 and not t.get_parse_math() for t in ax.get_yticklabels())
    assert ax.get_title() == "new minus old $x$ (lenient view; red: significant after Holm)"
    assert ax.title.get_fontsize() == 9 and not ax.title.get_parse_math()
    assert ax.yaxis_inverted()
    lines = ax.get_lines()
    segments = [(list(x.get_xdata()), list(x.get_ydata()), x.get_color(), x.get_linewidth())
                for x in lines if len(x.get_xdata()) == 2 and x.get_linestyle() == "-"]
    assert [(y, c, w) for _x, y, c, w in segments] == [([0, 0], "#c5221f", 2), ([1, 1], "#c5221f", 2),
                                                       ([2, 2], "#52606d", 2)]
    assert [x for x, *_ in segments] == [pytest.approx([0.15, 0.25]), pytest.approx([-0.3, -0.2]),
                                         pytest.approx([-0.05, 0.05])]
    points = [(list(x.get_xdata()), list(x.get_ydata()), x.get_color(), x.get_marker()) for x in lines
              if x.get_marker() == "o"]
    assert [(p[0][0], p[1][0], p[2]) for p in points] == [(pytest.approx(0.2), 0, "#c5221f"),
                                                          (pytest.approx(-0.25), 1, "#c5221f"),
                                                          (0.0, 2, "#52606d")]
    zero = [x for x in lines if x.get_linestyle() == ":"]
    assert len(zero) == 1 and list(zero[0].get_xdata()) == [0, 0] and zero[0].get_color() == "#999"
    assert tuple(fig.get_size_inches()) == pytest.approx((7.5, 0.32 * 3 + 1.4))
    assert fig._judgelab_stamp == "none"


def test_the_figure_height_follows_the_rows_and_skips_missing_intervals(saved, tmp_path):
    rows = [_row(metric=f"m{k}", ci_low=np.nan if k == 1 else -0.1) for k in range(5)]
    rep.compare_figure(_table(*rows), tmp_path / "c.png", NAMES, simulated=True)
    fig = saved["fig"]
    assert tuple(fig.get_size_inches()) == pytest.approx((7.5, 0.32 * 5 + 1.4))
    segs = [x for x in fig.axes[0].get_lines() if len(x.get_xdata()) == 2 and x.get_linestyle() == "-"]
    assert len(segs) == 4  # m1 has no interval: its point only
    assert fig._judgelab_stamp != "none"
    assert abs(fig.subplotpars.left - matplotlib.rcParams["figure.subplot.left"]) > 1e-3  # tight_layout moved them


def test_the_figure_reads_the_first_views_rows(saved, tmp_path):
    t = _table(_row(view="strict", metric="a"), _row(view="lenient", metric="b"), _row(view="strict", metric="c"))
    rep.compare_figure(t, tmp_path / "c.png", NAMES, simulated=False)
    ax = saved["fig"].axes[0]
    assert ax.get_title() == "new minus old|j (strict view; red: significant after Holm)"
    assert [x.get_text() for x in ax.get_yticklabels()] == ["a", "c"]


def test_the_figure_leaves_the_callers_figures_open(tmp_path):
    import matplotlib.pyplot as plt

    other = plt.figure()
    try:
        rep.compare_figure(TABLE, tmp_path / "c.png", NAMES, simulated=False)
        assert plt.get_fignums() == [other.number]
        assert (tmp_path / "c.png").stat().st_size > 0
        assert stamp_module.figure_stamp(tmp_path / "c.png") == "none"
    finally:
        plt.close(other)


# ---- the set ----------------------------------------------------------------------------------------------------
@pytest.fixture
def pages(monkeypatch):
    got = []
    real = rep.write_page

    def write(path, page):
        got.append(page)
        real(path, page)

    monkeypatch.setattr(rep, "write_page", write)
    return got


def test_write_compare_writes_the_whole_set(tmp_path, pages):
    out = tmp_path / "cmp"
    m = _matched(simulated=False)
    rep.write_compare(out, TABLE, m, NAMES, extra={"gate.json": '{"x": 1}\n'})
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert {"compare.csv", "unmatched.csv", "compare.md", "compare.png", "report.html", "gate.json"} <= set(names)
    assert "compare_board.csv" not in names and "compare_board_flips.csv" not in names
    assert json.loads((out / "gate.json").read_text()) == {"x": 1}
    csv = pd.read_csv(out / "compare.csv")
    assert list(csv.columns) == [*COLUMNS, "simulated"] and csv["simulated"].tolist() == [False] * 5
    assert pd.read_csv(out / "unmatched.csv")["item_id"].tolist() == ["u0", "u1"]
    assert (out / "compare.md").read_text() == rep.compare_markdown(TABLE, NAMES, m, simulated=False)
    (page,) = pages
    assert page.title == "new vs old|j" and page.banner == ""
    assert [s.title for s in page.sections] == ["Summary", "Every card row", "Unmatched presentations"]
    summary, rows, unmatched = page.sections
    assert list(summary.paragraphs) == rep.summary_lines(TABLE, NAMES, m)
    assert [(f.title, f.png) for f in summary.figures] == [("Differences", f.png) for f in summary.figures]
    assert summary.figures[0].title == "Differences" and str(summary.figures[0].png).endswith("compare.png")
    (t,) = rows.tables
    assert t.title == "before, after and the paired difference" and t.status_column == "status_after"
    assert list(t.frame.columns) == [c for c in COLUMNS if c not in ("n_items", "underpowered")]
    assert list(unmatched.paragraphs) == ["2 presentations recorded by one side only."]
    (u,) = unmatched.tables
    assert (u.title, u.status_column) == ("unmatched", None) and len(u.frame) == 2
    html = (out / "report.html").read_text()
    assert "Every card row" in html and "Unmatched presentations" in html


def test_write_compare_shows_at_most_200_unmatched_and_stamps_simulated(tmp_path, pages):
    m = _matched(unmatched=230, simulated=True)
    rep.write_compare(tmp_path / "cmp", TABLE, m, NAMES)
    assert pd.read_csv(tmp_path / "cmp" / "compare.csv")["simulated"].all()
    assert len(pd.read_csv(tmp_path / "cmp" / "unmatched.csv")) == 230
    assert "**SIMULATED JUDGES**" in (tmp_path / "cmp" / "compare.md").read_text()
    page = pages[0]
    assert page.banner == SIMULATED_BANNER
    assert len(page.sections[-1].tables[0].frame) == 200
    assert page.sections[-1].paragraphs == ["230 presentations recorded by one side only."]
    assert not (tmp_path / "cmp" / "gate.json").exists()
    # simulated on one side is enough
    m2 = _matched()
    m2.after = m2.after.assign(simulated=True)
    rep.write_compare(tmp_path / "c2", TABLE, m2, NAMES)
    assert pages[1].banner == SIMULATED_BANNER


def test_write_compare_with_a_leaderboard(tmp_path, pages):
    b = _board()
    rep.write_compare(tmp_path / "cmp", TABLE, _matched(), NAMES, board=b)
    board_csv = pd.read_csv(tmp_path / "cmp" / "compare_board.csv")
    assert list(board_csv.columns) == [*BOARD_COLUMNS, "simulated"]
    assert board_csv["simulated"].tolist() == [False] * 4
    flips = pd.read_csv(tmp_path / "cmp" / "compare_board_flips.csv")
    assert flips.to_dict("records") == b.flips.to_dict("records")
    assert (tmp_path / "cmp" / "compare.md").read_text().count("## Leaderboard") == 1
    page = pages[0]
    assert [s.title for s in page.sections] == ["Summary", "Every card row", "Leaderboard", "Unmatched presentations"]
    lb = page.sections[2]
    assert list(lb.paragraphs) == rep.board_summary_lines(b, NAMES)
    shown, fl = lb.tables
    assert (shown.title, shown.status_column) == ("every model and score: before, after and the paired difference",
                                                  "status_after")
    assert list(shown.frame.columns) == [c for c in BOARD_COLUMNS if c not in ("n_items", "underpowered",
                                                                               "test_reason")]
    assert (fl.title, fl.status_column) == ("pairs of models whose order is reversed", None)
    assert fl.frame is b.flips


def test_board_sections_without_flips_or_without_a_board():
    assert rep._board_sections(None, NAMES) == []
    (s,) = rep._board_sections(skipped("no models"), NAMES)
    assert (s.title, list(s.paragraphs), list(s.tables)) == ("Leaderboard", ["Not compared: no models."], [])
    b = _board()
    b.flips = b.flips.iloc[:0]
    (s,) = rep._board_sections(b, NAMES)
    assert [t.title for t in s.tables] == ["every model and score: before, after and the paired difference"]


def test_a_skipped_board_writes_no_board_tables(tmp_path, pages):
    rep.write_compare(tmp_path / "cmp", TABLE, _matched(), NAMES, board=skipped("2 model(s)"))
    assert not (tmp_path / "cmp" / "compare_board.csv").exists()
    assert not (tmp_path / "cmp" / "compare_board_flips.csv").exists()
    assert [s.title for s in pages[0].sections][2] == "Leaderboard"
