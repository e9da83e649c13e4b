"""Fast tests of what ``judgelab leaderboard`` shows: the report page (:mod:`judgelab.board.html`),
the figure (:mod:`judgelab.board.figure`) and the command (:mod:`judgelab.board.command`).

The mutation map's tests for those modules: small hand-made boards (no fit) for the page and the
figure, a three-model log of a few dozen games for the command."""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba
from PIL import Image

from judgelab.board import figure as F
from judgelab.board.html import write_board_html
from judgelab.board.table import COLUMNS, CORRECTIONS, FLIP_COLUMNS, Board
from judgelab.plots.html_report import SIMULATED_BANNER


def _table(n: int = 3, *, nan_col: str | None = None) -> pd.DataFrame:
    rows = []
    for k in range(n):
        wr = 70.0 - 10 * k
        row = {c: np.nan for c in COLUMNS}
        row.update(model=f"m{k}", n=40, n_failed=0, win_rate=wr, win_rate_ci_low=wr - 5, win_rate_ci_high=wr + 4,
                   lc_status="ok", style_status="ok", bias_aware_status="ok", baseline="base", source="f.json",
                   lc_difficulty="estimated from the logs (3 models)")
        for j, (col, lo, hi, _) in enumerate(CORRECTIONS):
            v = wr - 3 * (j + 1) + k
            row.update({col: v, lo: v - 2 - j, hi: v + 1 + j})
        rows.append(row)
    t = pd.DataFrame(rows, columns=COLUMNS)
    if nan_col is not None:
        t[nan_col] = np.nan
    return t


def _board(table: pd.DataFrame, *, flips: bool = False, judges: bool = False) -> Board:
    fl = pd.DataFrame([["lc_win_rate", "m0", "m1", 70.0, 60.0, 55.0, 58.0, True, False]], columns=FLIP_COLUMNS) \
        if flips else pd.DataFrame(columns=FLIP_COLUMNS)
    jd = pd.DataFrame([["judge-x", "win_rate", 0.8, 3]], columns=["judge_left_out", "score", "kendall_tau",
                                                                "n_models"]) if judges else pd.DataFrame(
        columns=["judge_left_out", "score", "kendall_tau", "n_models"])
    return Board(table=table, flips=fl, judges=jd, style=None)


def _sections(text: str) -> dict[str, str]:
    return dict(re.findall(r'<section id="[^"]*" data-key="([^"]*)"(?: class="summary")?>(.*?)</section>', text,
                           flags=re.S))


# ---- report.html --------------------------------------------------------------------------------------
def test_page_sections_notes_captions_and_footer(tmp_path):
    out = tmp_path / "report.html"
    write_board_html(out, _board(_table()), title="T<1>", notes=["first note", "second & note"], simulated=False)
    text = out.read_text()
    assert "<title>Leaderboard: T&lt;1&gt;</title>" in text
    secs = _sections(text)
    assert list(secs) == ["summary", "leaderboard", "rank-flips"]  # no judge section for one judge
    assert '<section id="s0-summary" data-key="summary" class="summary">' in text  # the summary leads
    summary = secs["summary"]
    assert "<p>first note</p>" in summary and "<p>second &amp; note</p>" in summary
    assert "<p>Highest raw win rate: m0 (70.0%).</p>" in summary
    assert "<p>No pair of models changes order under a correction.</p>" in summary
    lead = secs["leaderboard"]
    # the full table is a closed details section
    assert "<details><summary><h2>Leaderboard</h2>" in lead and "<details open" not in text
    assert "<h3>leaderboard.csv</h3>" in lead
    assert ("<caption>Win rates in percent; each correction with its interval, its status and, where it has no "
            "number, the reason.</caption>") in lead
    assert lead.count("<tr>") == 1 + 3 and "<td>m2</td>" in lead
    # no status colouring: the status columns hold free text, not the card's statuses
    assert 'class="st-' not in lead
    flips = secs["rank-flips"]
    assert "<h2>Rank flips</h2>" in flips
    assert "<p>No pair of models changes order under a correction.</p>" in flips and "<table>" not in flips
    assert "<figure>" not in text  # no figure given
    assert SIMULATED_BANNER not in text and 'class="banner"' not in text
    assert ("<footer>Written by judgelab leaderboard; the same rows are in the CSV files beside it.</footer>"
            in text)


def test_page_with_flips_judges_banner_and_figure(tmp_path):
    png = tmp_path / "f.png"
    png.write_bytes(b"\x89PNG fake bytes")
    out = tmp_path / "report.html"
    write_board_html(out, _board(_table(), flips=True, judges=True), title="t", notes=[], simulated=True,
                     figure=png)
    text = out.read_text()
    secs = _sections(text)
    assert list(secs) == ["summary", "leaderboard", "rank-flips", "judges"]
    assert "<p>1 pair(s) of models change order under a correction (rank flips below).</p>" in secs["summary"]
    assert "<h3>rank_flips.csv</h3>" in secs["rank-flips"] and "No pair of models" not in secs["rank-flips"]
    assert "<td>m1</td>" in secs["rank-flips"]
    j = secs["judges"]
    assert "<h2>Judges</h2>" in j and "<h3>judges.csv</h3>" in j and "<td>judge-x</td>" in j
    assert "<caption>Leave-one-judge-out Kendall tau of the leaderboard.</caption>" in j
    assert f'<div class="banner">{SIMULATED_BANNER}</div>' in text
    fig = re.search(r'<figure><img alt="([^"]*)" src="data:image/png;base64,([^"]*)"><figcaption>([^<]*)'
                    r"</figcaption></figure>", secs["summary"])
    assert fig is not None
    assert fig.group(1) == "raw and corrected scores"
    assert base64.b64decode(fig.group(2)) == png.read_bytes()
    assert fig.group(3) == "Each model&#x27;s raw win rate beside each correction, with its interval."


def test_page_without_the_figure_file_has_no_figure(tmp_path):
    out = tmp_path / "report.html"
    write_board_html(out, _board(_table()), title="t", notes=[], simulated=False, figure=tmp_path / "missing.png")
    assert "<figure>" not in out.read_text()
    write_board_html(out, _board(_table()), title="t", notes=[], simulated=False, figure=tmp_path)  # a folder
    assert "<figure>" not in out.read_text()


# ---- leaderboard.png ------------------------------------------------------------------------------------
@pytest.fixture
def drawn(monkeypatch):
    """The figure leaderboard_figure draws, kept open (plt.close is a no-op while the test runs)."""
    figs = []
    real = plt.subplots

    def subplots(*a, **k):
        fig, axes = real(*a, **k)
        figs.append((fig, a, k))
        return fig, axes

    monkeypatch.setattr(F.plt, "subplots", subplots)
    monkeypatch.setattr(F.plt, "close", lambda fig=None: None)
    yield figs
    for fig, *_ in figs:
        plt.close(fig)


def _errorbar(ax):
    cont = [c for c in ax.containers if c.__class__.__name__ == "ErrorbarContainer"]
    return cont[0] if cont else None


def _segments(coll):
    return np.array([np.asarray(s) for s in coll.get_segments()])


def test_figure_panels_points_and_intervals(tmp_path, drawn):
    t = _table()
    path = tmp_path / "lb.png"
    with plt.rc_context({"font.size": 8}):  # the sizes below are the figure's own, whatever the user's style
        F.leaderboard_figure(t, path, title="My board", simulated=False)
    (fig, args, kw), = drawn
    assert args == (1, len(CORRECTIONS)) and kw["squeeze"] is False
    assert tuple(kw["figsize"]) == (5 * len(CORRECTIONS), 4.8)
    axes = fig.axes
    assert len(axes) == len(CORRECTIONS)
    assert fig._suptitle.get_text() == "My board"
    x = t["win_rate"].to_numpy()
    for ax, (col, lo, hi, name) in zip(axes, CORRECTIONS, strict=True):
        assert ax.get_title() == name and ax.title.get_fontsize() == 10
        assert ax.get_xlabel() == "raw win rate (%)" and ax.get_ylabel() == f"{name} (%)"
        assert ax.get_xlim() == (0, 100) and ax.get_ylim() == (0, 100)
        diag = ax.lines[0]
        np.testing.assert_array_equal(diag.get_xdata(), [0, 100])
        np.testing.assert_array_equal(diag.get_ydata(), [0, 100])
        assert diag.get_linestyle() == "--" and diag.get_linewidth() == 0.8 and diag.get_zorder() == 0
        assert to_rgba(diag.get_color()) == to_rgba("grey")
        eb = _errorbar(ax)
        line, caps, (xbars, ybars) = eb.lines[0], eb.lines[1], eb.lines[2]
        np.testing.assert_allclose(line.get_xdata(), x)
        np.testing.assert_allclose(line.get_ydata(), t[col])
        assert line.get_marker() == "o" and line.get_markersize() == 4 and line.get_linestyle() == "None"
        # the bars run from each interval's low to its high end, on both axes
        xs = _segments(xbars)
        np.testing.assert_allclose(xs[:, 0, 0], t["win_rate_ci_low"])
        np.testing.assert_allclose(xs[:, 1, 0], t["win_rate_ci_high"])
        ys = _segments(ybars)
        np.testing.assert_allclose(ys[:, 0, 1], t[lo])
        np.testing.assert_allclose(ys[:, 1, 1], t[hi])
        assert xbars.get_linewidth()[0] == 0.8
        assert len(caps) == 4 and caps[0].get_markersize() == 2 * 2  # capsize 2 (matplotlib draws 2x)
        labels = {a.get_text(): a for a in ax.texts}
        assert set(labels) == {"m0", "m1", "m2"}  # 12 models or fewer: each point named
        a = labels["m1"]
        assert a.xy == (pytest.approx(x[1]), pytest.approx(t[col][1]))
        assert a.get_fontsize() == 7 and a.xyann == (3, 3) and a.anncoords == "offset points"
    im = Image.open(path)
    assert im.format == "PNG"
    assert "Software" not in im.info  # no matplotlib version stamped into the file
    assert im.info.get("dpi") and round(im.info["dpi"][0]) == 130
    # cropped to what is drawn (bbox_inches="tight"): the saved size is the tight box, not the figure size
    box = fig.get_tightbbox(fig.canvas.get_renderer()).padded(0.1)
    assert abs(im.size[0] - box.width * 130) <= 3 and abs(im.size[1] - box.height * 130) <= 3
    assert abs(im.size[0] - 15 * 130) > 20
    assert not [t for t in fig.texts if t.get_text() == "SIMULATED JUDGES"]


def test_figure_large_boards_missing_scores_and_the_simulated_stamp(tmp_path, drawn):
    t = _table(13)
    t.loc[2, "win_rate"] = np.nan  # a model without games: left out of every panel
    t.loc[4, "lc_win_rate"] = np.nan
    t.loc[5, "style_ci_low"] = np.nan  # a score without its interval: the point stays, without a bar
    t["bias_aware"] = np.nan  # a correction with no number at all
    F.leaderboard_figure(t, tmp_path / "lb.png", title="t", simulated=True)
    (fig, *_), = drawn
    lc_ax, st_ax = fig.axes  # the correction with no number gets no panel (no empty box)
    assert [ax.get_title() for ax in fig.axes] == [CORRECTIONS[0][3], CORRECTIONS[1][3]]
    assert not lc_ax.texts and not st_ax.texts  # more than 12 models: no labels
    np.testing.assert_allclose(_errorbar(lc_ax).lines[0].get_xdata(), np.delete(t["win_rate"].to_numpy(), [2, 4]))
    st = _errorbar(st_ax)
    assert len(st.lines[0].get_xdata()) == 12
    ys = _segments(st.lines[2][1])
    assert np.isfinite(ys).all()  # the missing low end is drawn as no bar below, not NaN
    assert all(_errorbar(ax) is not None for ax in fig.axes)  # every panel drawn has points
    assert [x.get_text() for x in fig.texts if x.get_text() == "SIMULATED JUDGES"]


# ---- the command ---------------------------------------------------------------------------------------
def _alpaca_log(root, models=("m1", "m2", "m3"), n=24, short=None):
    """results/<model>/ann/annotations.json of AlpacaEval, one file per model; ``short``: a model of 6 games."""
    rng = np.random.default_rng(0)
    for m in (*models, *([short] if short else [])):
        k = 6 if m == short else n
        rows = [{"instruction": f"q{i}", "output_1": "base answer " * (1 + i % 4), "generator_1": "base",
                 "output_2": f"{m} answer " * (1 + (i * 7) % 6), "generator_2": m, "dataset": "d",
                 "annotator": "ann", "preference": 1 + float(rng.random()), "raw_completion": None}
                for i in range(k)]
        p = root / m / "ann" / "annotations.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(rows), encoding="utf-8")
    return root


class _Stop(Exception):
    pass


@pytest.fixture
def spy(monkeypatch):
    """What the command hands to the library: the battles' arguments, the settings, the board, the
    figure's and the page's arguments (each real function still runs unless ``stop`` is set)."""
    from judgelab.board import battles as B
    from judgelab.board import html as H
    from judgelab.board import table as T

    seen: dict = {"stop": False}

    def wrap(mod, name, key, *, stop=False):
        real = getattr(mod, name)

        def f(*a, **k):
            seen[key] = (a, k)
            if stop and seen["stop"]:
                raise _Stop
            out = real(*a, **k)
            seen[key + "_out"] = out
            return out

        monkeypatch.setattr(mod, name, f)

    wrap(B, "battles_from_table", "battles")
    wrap(T, "leaderboard", "leaderboard", stop=True)

    # the figure and the page are the tests' above: here only what the command hands them (a
    # placeholder file each, so that these tests do not run for every mutant of those modules)
    def placeholder(key):
        def f(*a, **k):
            seen[key] = (a, k)
            a[1 if key == "figure" else 0].write_bytes(b"placeholder")
        return f

    monkeypatch.setattr(F, "leaderboard_figure", placeholder("figure"))
    monkeypatch.setattr(H, "write_board_html", placeholder("html"))
    return seen


def _run(argv):
    from judgelab import cli

    return cli.main(["leaderboard", *map(str, argv)])


def test_the_command_hands_its_options_to_the_library_and_says_what_it_wrote(tmp_path, capsys, spy):
    logs = _alpaca_log(tmp_path / "results", short="m4")
    out = tmp_path / "out"
    assert _run(["--format", "alpaca_eval", logs, "--out", out, "--resamples", 1, "--seed", 7, "--alpha", 0.2,
                 "--title", "My board"]) == 0
    (battle_table,), bk = spy["battles"]
    assert bk == {"metadata": None, "baseline": None} and len(battle_table) == 3 * 24 + 6
    (b, s), _ = spy["leaderboard"]
    assert (s.alpha, s.style_rounds, s.seed) == (0.2, 1, 7)
    assert s.gamed is None and s.style_reference is None and s.lc_weights is None
    board = spy["leaderboard_out"]
    meta = json.loads((out / "leaderboard.json").read_text())
    assert meta == json.loads(json.dumps(dict(board.meta, title="My board", inputs=[str(logs)]), default=str))
    assert (out / "leaderboard.json").read_text() == json.dumps(meta, indent=2) + "\n"
    from judgelab.board.style_control import reference_dict

    style = (out / "style_coefficients.json").read_text()
    assert style == json.dumps(reference_dict(board.style, b.style_source), indent=2) + "\n"
    pd.testing.assert_frame_equal(pd.read_csv(out / "leaderboard.csv"), board.table, check_dtype=False,
                                  check_exact=False)
    assert list(pd.read_csv(out / "rank_flips.csv").columns) == FLIP_COLUMNS
    assert list(pd.read_csv(out / "judges.csv").columns) == ["judge_left_out", "score", "kendall_tau", "n_models"]
    notes = [f"{3 * 24 + 6} games, 5 models, design: baseline, scores against 'base'",
             "LC instruction difficulty: estimated from the logs (4 models)",
             f"style features from {b.style_source}"]
    if board.meta["bias_aware_note"]:
        notes.append(f"bias-aware: {board.meta['bias_aware_note']}")
    notes.append("lc_status: 1 model(s) without a number (not estimable: 6 games, the cross-validated GLM needs 10)")
    (fa, fk), (ha, hk) = spy["figure"], spy["html"]
    assert fa[0] is board.table and fa[1].name == "leaderboard.png" and fk == {"title": "My board", "simulated": False,
                                                                                      "names": {}}
    assert ha[0].name == "report.html" and ha[1] is board
    assert hk == {"title": "My board", "notes": notes, "simulated": False, "figure": fa[1], "names": {}}
    # both were written into the staged set that became --out
    assert (out / "leaderboard.png").read_bytes() == (out / "report.html").read_bytes() == b"placeholder"
    printed = capsys.readouterr().out
    show = board.table[["model", "n", "win_rate", "lc_win_rate", "style_controlled", "bias_aware"]]
    assert printed == (show.round(2).to_string(index=False) + "\n\n" + "\n".join(notes) + "\n"
                       f"{len(board.flips)} rank flips; wrote {out}/leaderboard.csv, rank_flips.csv, judges.csv, "
                       "style_coefficients.json, leaderboard.json, leaderboard.png, report.html\n")


def test_title_defaults_to_the_preset_then_the_mapping_files_name(tmp_path, spy):
    logs = _alpaca_log(tmp_path / "results", n=12)
    assert _run(["--format", "alpaca_eval", logs, "--out", tmp_path / "a", "--resamples", 1]) == 0
    assert spy["figure"][1]["title"] == "alpaca_eval"
    assert json.loads((tmp_path / "a" / "leaderboard.json").read_text())["title"] == "alpaca_eval"
    mapping = tmp_path / "my_mapping.yaml"
    mapping.write_text("preset: alpaca_eval\n")
    assert _run(["--mapping", mapping, logs, "--out", tmp_path / "b", "--resamples", 1]) == 0
    assert spy["figure"][1]["title"] == "my_mapping"
    spy["stop"] = True
    with pytest.raises(_Stop):
        _run(["--format", "alpaca_eval", logs, "--out", tmp_path / "c"])
    (_, s), _ = spy["leaderboard"]
    assert (s.alpha, s.style_rounds, s.seed) == (0.05, 100, 0)  # the documented defaults


def test_files_given_by_option_reach_the_settings(tmp_path, spy, monkeypatch):
    logs = _alpaca_log(tmp_path / "results", n=12)
    gamed = tmp_path / "df_gamed.csv"
    pd.DataFrame({"index": [0, 1], "preference": [1.0, 0.0], "std_delta_len": [0.5, -1.0],  # AlpacaEval's [0, 1]
                  "instruction_difficulty": [0.3, -0.2], "not_gamed_baseline": [False, True]}).to_csv(gamed, index=False)
    weights = tmp_path / "w.csv"
    pd.DataFrame({"np.tanh(std_delta_len)": [0.1], "instruction_difficulty": [0.2],
                  "not_gamed_baseline.astype(float)": [0.3]}, index=["m1"]).to_csv(weights)
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps({"coefs": {"length": 0.1, "header_density": 0.0, "list_density": 0.0,
                                         "bold_density": 0.0}, "mean": [0, 0, 0, 0], "std": [1, 1, 1, 1]}))
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"uid": "q1", "model": "m1", "metadata": {
        "token_len": 9, "header_count": 1, "list_count": 2, "bold_count": 3}}) + "\n")
    from judgelab.verdict_import import cli as vcli

    real = vcli.verdicts_from_args
    # an Arena-Hard log names its answer files with --table answers=...; here the AlpacaEval log
    # stands in for the verdicts (its preset takes no side table), the answers option as given
    monkeypatch.setattr(vcli, "verdicts_from_args", lambda args: real(argparse.Namespace(**{**vars(args), "table": None})))
    spy["stop"] = True
    with pytest.raises(_Stop):
        _run(["--format", "alpaca_eval", logs, "--out", tmp_path / "o", "--gamed-csv", gamed, "--lc-weights", weights,
              "--style-reference", ref, "--baseline", "base", "--table", f"answers={answers}"])
    assert spy["battles"][1]["metadata"] == {("q1", "m1"): (9, 1, 2, 3)}
    (_, s), _ = spy["leaderboard"]
    np.testing.assert_allclose(s.gamed.preference, [1.0, 0.0])
    assert s.lc_weights.loc["m1"].tolist() == [0.1, 0.2, 0.3]
    assert s.style_reference["coefs"]["length"] == 0.1
    assert spy["battles"][1]["baseline"] == "base"


@pytest.mark.parametrize("opt,val,msg", [
    ("--alpha", "0", "judgelab leaderboard: --alpha: must be a number in (0, 1), got 0.0"),
    ("--alpha", "1", "judgelab leaderboard: --alpha: must be a number in (0, 1), got 1.0"),
    ("--resamples", "0", "judgelab leaderboard: --resamples: must be an integer in [1, inf), got 0"),
    ("--seed", "-1", "judgelab leaderboard: --seed: must be an integer in [0, inf), got -1"),
])
def test_out_of_range_options_are_one_line_errors(tmp_path, capsys, spy, opt, val, msg):
    logs = _alpaca_log(tmp_path / "results", n=12)
    assert _run(["--format", "alpaca_eval", logs, "--out", tmp_path / "o", opt, val]) == 2
    assert capsys.readouterr().err.strip() == f"judgelab: error: {msg}"
    assert "leaderboard" not in spy


def test_without_torch_a_style_reference_says_why_and_no_coefficients_are_written(tmp_path, capsys, monkeypatch,
                                                                                   spy):
    logs = _alpaca_log(tmp_path / "results", n=12)
    ref = tmp_path / "ref.json"
    ref.write_text("{}")
    monkeypatch.setitem(sys.modules, "judgelab.board.style_control", None)  # import raises ImportError
    assert _run(["--format", "alpaca_eval", logs, "--out", tmp_path / "o", "--style-reference", ref]) == 2
    assert capsys.readouterr().err.strip() == (
        "judgelab: error: --style-reference freezes Arena-Hard's style control, which needs torch "
        "(pip install 'judgelab[train]')")
    assert _run(["--format", "alpaca_eval", logs, "--out", tmp_path / "o", "--resamples", 1]) == 0
    assert not (tmp_path / "o" / "style_coefficients.json").exists()
    assert (tmp_path / "o" / "leaderboard.csv").exists()
    assert "style_status: 3 model(s) without a number (not estimable: Arena-Hard's style control needs torch" \
        in capsys.readouterr().out


def test_a_frozen_run_says_so_and_a_long_board_prints_every_row(tmp_path, capsys, monkeypatch, spy):
    logs = _alpaca_log(tmp_path / "results", n=12)
    assert _run(["--format", "alpaca_eval", logs, "--out", tmp_path / "a", "--resamples", 1]) == 0
    board = spy["leaderboard_out"]
    from judgelab.board import table as T

    big = _table(70)
    big.loc[3, "bias_aware_status"] = "not estimable: no chain of games to the reference 'base'"
    big.loc[5, "bias_aware_status"] = "not estimable: other"
    meta = dict(board.meta, style_frozen=True, lc_difficulty="", bias_aware_note="position term dropped")
    monkeypatch.setattr(T, "leaderboard", lambda *a, **k: Board(table=big, flips=board.flips, judges=board.judges,
                                                                 style=board.style, meta=meta))
    capsys.readouterr()
    assert _run(["--format", "alpaca_eval", logs, "--out", tmp_path / "b", "--style-reference",
                 tmp_path / "a" / "style_coefficients.json"]) == 0
    shown, rest = capsys.readouterr().out.split("\n\n")
    assert len(shown.splitlines()) == 1 + 70  # the terminal shows every model, as the CSV holds them
    assert len(pd.read_csv(tmp_path / "b" / "leaderboard.csv")) == 70
    assert rest.splitlines()[:-1] == [
        f"{meta['games']} games, {meta['models']} models, design: baseline, scores against 'base'",
        f"style features from {meta['style_source']} (frozen from --style-reference)",
        "bias-aware: position term dropped",
        "bias_aware_status: 2 model(s) without a number (not estimable: no chain of games to the reference 'base')"]


def test_the_parser_documents_each_option():
    import argparse

    from judgelab.board.command import add_command, cmd_leaderboard

    p = argparse.ArgumentParser()
    add_command(p.add_subparsers())
    sub = p._subparsers._group_actions[0].choices["leaderboard"]
    assert sub.get_default("fn") is cmd_leaderboard
    helps = {a.option_strings[0]: a.help for a in sub._actions if a.option_strings}
    assert helps["--out"] == "output folder (replaced whole)"
    assert helps["--baseline"] == ("score against this model (default: the one in every game, else the most "
                                   "frequent)")
    assert helps["--gamed-csv"] == ("AlpacaEval's df_gamed.csv: instruction difficulty and gamed-baseline rows "
                                    "for the LC win rate (default: difficulty estimated from the logs)")
    assert helps["--lc-weights"] == ("AlpacaEval's published length_controlled_v1 weights CSV: adds "
                                     "lc_from_published_weights for the models it lists")
    assert helps["--style-reference"] == ("style_coefficients.json of an earlier run: freeze the style "
                                          "coefficients so adding a model does not move the others")
    assert helps["--resamples"] == ("bootstrap rounds of the style control (show_result.py's default); an integer "
                                    "in [1, inf) (default 100)")
    assert helps["--alpha"] == ("significance level; every interval is at level 1 - alpha; a number in (0, 1) "
                                "(default 0.05)")
    assert helps["--seed"] == "seed of the style control's bootstrap; an integer in [0, inf) (default 0)"
    assert helps["--title"] == "title of the figure"
    for a in sub._actions:
        if a.dest == "out":
            assert a.required
    assert sub.description is None
    (choice,) = [a for a in p._subparsers._group_actions[0]._choices_actions if a.dest == "leaderboard"]
    assert choice.help == "raw and bias-corrected leaderboard from recorded verdicts (no judge call)"


def test_figure_of_an_object_table_with_twelve_models(tmp_path, drawn):
    """A table whose columns are Python objects (rows built with None for a missing number) draws as
    the numeric one; twelve models are still named."""
    t = _table(12).astype(object)
    t["style_controlled"] = None
    t["style_ci_low"] = None
    t.loc[0, "win_rate_ci_low"] = None  # an interval end missing: no bar on that side
    t.loc[1, "win_rate_ci_high"] = None
    t.loc[2, "lc_ci_high"] = None
    F.leaderboard_figure(t, tmp_path / "lb.png", title="t", simulated=False)
    (fig, *_), = drawn
    lc_ax, ba_ax = fig.axes  # style_controlled has no number: no panel
    assert ba_ax.get_title() == CORRECTIONS[2][3]
    # every model whose point lies in the panel is named (twelve is not too many to label); the
    # made-up win rates of m8..m11 fall below 0, outside the panel, where a label would not be drawn
    inside = [f"m{k}" for k in range(12) if 0 <= t.loc[k, "win_rate"] <= 100 and 0 <= t.loc[k, "lc_win_rate"] <= 100]
    assert inside == [f"m{k}" for k in range(8)]
    assert sorted(a.get_text() for a in lc_ax.texts if a.get_text().startswith("m")) == sorted(inside)
    np.testing.assert_allclose(_errorbar(lc_ax).lines[0].get_ydata(), t["lc_win_rate"].to_numpy(float))
    def end(col, at):
        v = t[col].to_numpy(float)
        return np.where(np.isnan(v), t[at].to_numpy(float), v)

    xs = _segments(_errorbar(lc_ax).lines[2][0])
    np.testing.assert_allclose(xs[:, 0, 0], end("win_rate_ci_low", "win_rate"))
    np.testing.assert_allclose(xs[:, 1, 0], end("win_rate_ci_high", "win_rate"))
    ys = _segments(_errorbar(lc_ax).lines[2][1])
    np.testing.assert_allclose(ys[:, 0, 1], end("lc_ci_low", "lc_win_rate"))
    np.testing.assert_allclose(ys[:, 1, 1], end("lc_ci_high", "lc_win_rate"))
    assert not [a for a in fig.axes if _errorbar(a) is None]
