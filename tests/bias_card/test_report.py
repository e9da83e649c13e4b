"""bias_card.md and bias_card.png from hand-made card tables: what leads, what may be called a
detection, how the strict view is reported, what the figure draws."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from judgelab.bias_card.card import CARD_COLUMNS, METRICS, CardSettings
from judgelab.bias_card.metrics import JUDGE_METRICS
from judgelab.bias_card.report import STYLE, card_figure, card_markdown, headline

S = CardSettings()
NAN = float("nan")

STRICT = ("Strict view ({} fewer parsed verdicts; fallback verdicts and texts the source's own rule reads no "
          "verdict in count as unparsed):")


def row(metric: str, status: str, *, view: str = "lenient", judge: str = "j", est: float = 0.6, lo: float = 0.55,
        hi: float = 0.65, p: float = 0.01, reason: str = "", note: str = "", n: int = 40, n_parsed: int = 40,
        parsed_share: float = 1.0) -> dict:
    r = dict.fromkeys(CARD_COLUMNS, NAN)
    r.update(judge=judge, family="openai", view=view, metric=metric, status=status, estimate=est, ci_low=lo,
             ci_high=hi, se=0.02, null_value=0.5, n=n, n_items=n // 2, share=1.0, n_parsed=n_parsed,
             parsed_share=parsed_share, test="binomial", statistic=1.0, p_value=p, mde=0.1,
             underpowered=status == "underpowered", estimable=status != "not estimable",
             identified=status != "not identified", reason=reason, note=note, simulated=False)
    return r


def card(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=CARD_COLUMNS)


def base(view: str = "lenient", judge: str = "j", **over: str) -> list[dict]:
    """A full set of rows, every one 'not detected' / 'descriptive' unless overridden."""
    out = []
    for m, spec in METRICS.items():
        status = over.get(m, "descriptive" if spec.kind in ("rate", "benchmark") else "not detected")
        out.append(row(m, status, view=view, judge=judge, est=0.02 if m == "parse_failures" else 0.6, p=0.3))
    return out


def head(rows: list[dict], settings: CardSettings = S) -> list[str]:
    return headline(card(rows).set_index("metric"), settings)


def test_only_detected_bias_metrics_make_the_headline():
    lines = head(base(length_preference="detected", accuracy_AB="detected", self_preference="not identified"))
    assert lines[0] == ("Biases detected: length_preference 0.600 [0.550, 0.650] (null 0.50, p=0.3).")
    assert lines[1] == ("Not identified (never a detection): self_preference ().")
    assert len(lines) == 2


def test_no_bias_detected_only_when_something_was_tested():
    assert head(base()) == ["No bias detected at this sample size."]
    bias = {m: "not estimable" for m in METRICS if METRICS[m].kind == "bias"}
    lines = head(base(**bias))
    assert lines[0] == "No bias could be tested: no bias metric is estimable and identified."
    assert lines[1].startswith("Not estimable: accuracy_order_gap (); position_preference ();")
    # rates that are not estimable (no pair in both orders) are not listed as missing tests
    rates = {m: "not estimable" for m in METRICS if METRICS[m].kind == "rate"}
    assert head(base(**rates)) == ["No bias detected at this sample size."]
    assert head(base(length_preference="underpowered")) == [
        "No bias detected at this sample size.",
        "Underpowered (not significant, and an effect of the threshold size could have been missed): "
        "length_preference."]


def test_parse_failures_lead_above_the_threshold_only():
    rows = base()
    pf = next(r for r in rows if r["metric"] == "parse_failures")
    pf.update(estimate=0.875, ci_low=0.69, ci_high=0.96, n=24, n_parsed=3)
    lines = head(rows)
    assert lines[0] == ("**Parse failures: 88% of 24 calls gave no verdict** (CI [0.69, 0.96]); every preference "
                        "below uses only the 3 parsed verdicts.")
    pf.update(estimate=0.2)
    assert head(rows)[0] == "No bias detected at this sample size."  # at the threshold: no lead
    assert head(rows, CardSettings(parse_failure_alert=0.19))[0].startswith("**Parse failures: 20% of 24 calls")
    pf.update(estimate=NAN)
    assert head(rows)[0] == "No bias detected at this sample size."


def test_markdown_card_has_both_views_and_says_where_they_differ():
    lenient = base(length_preference="detected")
    strict = base("strict")
    for r in strict:
        r["n_parsed"] = 34
    md = card_markdown(card(lenient + strict), title="T", settings=S, n_verdicts={"j": 40}, simulated=True)
    lines = md.splitlines()
    assert lines[0] == "# Bias card: T"
    assert "**SIMULATED JUDGES**" in lines[2]
    assert "alpha 0.05, MDE at power 0.8; tested rows need >= 10 decisive verdicts" in md
    assert "## j (family openai, 40 verdicts)" in lines
    i = lines.index("## j (family openai, 40 verdicts)")
    assert lines[i + 2].startswith("Biases detected: length_preference")
    assert STRICT.format(6) in lines
    k = lines.index(STRICT.format(6))
    assert lines[k + 1] == "No bias detected at this sample size."
    assert lines[k + 2] == "Status differs between views: length_preference (detected lenient, not detected strict)."
    assert ("| lenient | length_preference | detected | 0.600 | [0.550, 0.650] | 0.50 | 40 (20) | 1.00 | binomial | "
            "0.300 | n/a | 0.100 |  |") in lines  # (p adj.: the row was made without a family)
    assert sum(ln.startswith("| strict |") for ln in lines) == len(METRICS)
    # no fallback verdicts: one line says so, no second headline
    md = card_markdown(card(base() + base("strict")), title="T", settings=S, n_verdicts={}, simulated=False)
    assert "The strict view equals the lenient one." in md
    assert "SIMULATED" not in md and "## j (family openai, 0 verdicts)" in md
    # a strict-only card leads with the strict headline
    md = card_markdown(card(base("strict", position_preference="detected")), title="T", settings=S,
                       n_verdicts={}, simulated=False)
    assert "Biases detected: position_preference" in md and "Strict view" not in md


def test_table_cells_say_why_a_row_is_missing():
    rows = base()
    r = next(r for r in rows if r["metric"] == "length_controlled")
    r.update(status="not estimable", estimate=NAN, ci_low=NAN, ci_high=NAN, p_value=NAN, reason="perfect separation",
             note="controls: position")
    md = card_markdown(card(rows), title="T", settings=S, n_verdicts={}, simulated=False)
    assert ("| lenient | length_controlled | not estimable | n/a | [n/a, n/a] | 0.50 | 40 (20) | 1.00 | binomial | "
            "n/a | n/a | 0.100 | perfect separation |") in md
    r.update(reason="")
    md = card_markdown(card(rows), title="T", settings=S, n_verdicts={}, simulated=False)
    assert "| n/a | 0.100 | controls: position |" in md


def test_figure_draws_the_lenient_view_grey_unless_detected(monkeypatch, tmp_path):
    import importlib

    stamp_mod = importlib.import_module("judgelab.plots.stamp")  # the package exports a function of that name
    got = {}
    monkeypatch.setattr(stamp_mod, "save_figure", lambda fig, path: got.update(fig=fig, path=path))
    rows = [row("position_preference", "detected", judge="a", est=0.3, lo=0.1, hi=0.5),
            row("position_preference", "not detected", judge="b", est=0.05, lo=-0.1, hi=0.2),
            row("position_preference", "detected", judge="a", view="strict", est=0.9, lo=0.8, hi=1.0),
            row("tie_rate", "descriptive", judge="a", est=NAN, lo=NAN, hi=NAN),
            row("tie_rate", "descriptive", judge="b", est=0.1, lo=0.05, hi=0.2)]
    card_figure(card(rows), tmp_path / "f.png", title="T")
    fig = got["fig"]
    assert got["path"] == str(tmp_path / "f.png")
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["position_preference", "tie_rate"]  # no blank grid cell left
    pos = axes[0].lines
    # per judge: CI line + point; then the null line
    assert len(pos) == 5
    ci_a, pt_a, ci_b, pt_b, null = pos
    assert list(ci_a.get_xdata()) == [0.1, 0.5] and list(pt_a.get_xdata()) == [0.3]  # lenient, not strict
    assert ci_a.get_color() == STYLE.detected and ci_b.get_color() == STYLE.not_detected
    assert list(pt_b.get_ydata()) == [1] and list(null.get_xdata()) == [0.5, 0.5]
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["a", "b"]
    assert [t.get_text() for t in axes[1].get_yticklabels()] == ["", ""]  # names on the first column only
    assert len(axes[1].lines) == 3  # judge a has no estimate: only b's CI and point, and the null
    assert axes[0].get_ylim() == pytest.approx((-0.7, 1.7))
    assert ("lenient view (blue: detected bias; black: accuracy above chance; grey: not detected)"
            in fig._suptitle.get_text())
    assert math.isclose(fig.get_size_inches()[0], STYLE.ncol * STYLE.panel_width)
    np.testing.assert_allclose(fig.get_size_inches()[1],
                               STYLE.title_margin + (STYLE.judge_height * 2 + STYLE.panel_margin) * 1)


def test_write_audit_writes_the_four_outputs(tmp_path, monkeypatch):
    import judgelab.bias_card.report as report
    from judgelab.bias_card.card import bias_card
    from judgelab.bias_card.report import write_audit
    from judgelab.io import read_table
    from tests.helpers.bias_card_logs import both_orders, table

    figures = []

    def record(card, path, **kw):
        figures.append(kw)
        return card_figure(card, path, **kw)

    monkeypatch.setattr(report, "card_figure", record)

    log = table([c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "A")], judge="jj")
    log["simulated"] = True
    out = write_audit(log, tmp_path / "a", title="TT", settings=CardSettings(n_resamples=50, alpha=0.2),
                      provenance={"config_hash": "abc"})
    assert set(out["view"]) == {"lenient", "strict"} and len(out) == 2 * len(JUDGE_METRICS)
    md = (tmp_path / "a" / "bias_card.md").read_text()
    assert md.startswith("# Bias card: TT") and "## jj (family openai, 24 verdicts)" in md
    assert "SIMULATED JUDGES" in md and "tests at alpha 0.2" in md
    assert (tmp_path / "a" / "bias_card.png").stat().st_size > 0
    verdicts = read_table(tmp_path / "a" / "verdicts.parquet")
    assert len(verdicts) == 24 and (verdicts["config_hash"] == "abc").all()
    written = pd.read_csv(tmp_path / "a" / "bias_card.csv")
    assert (written["config_hash"] == "abc").all()
    pd.testing.assert_frame_equal(written[["metric", "status"]], out[["metric", "status"]].reset_index(drop=True))
    # the card is computed with the given settings (80% CIs at alpha 0.2, narrower than the default 95%)
    pd.testing.assert_frame_equal(out, bias_card(log, CardSettings(n_resamples=50, alpha=0.2)))
    # default settings when none are given
    given = out
    out = write_audit(log.assign(simulated=False), tmp_path / "b", title="TT")
    assert not np.allclose(given["ci_low"], out["ci_low"], equal_nan=True)
    assert "tests at alpha 0.05" in (tmp_path / "b" / "bias_card.md").read_text()
    assert figures == [{"title": "TT", "config_hash": "abc", "names": None},
                       {"title": "TT", "config_hash": None, "names": None}]


def test_markdown_intro_is_exact_and_judges_are_sorted():
    md = card_markdown(card(base(judge="zz") + base(judge="aa")), title="T", settings=CardSettings(
        length_margin=0.5), n_verdicts={}, simulated=True)
    assert md.splitlines()[:6] == [
        "# Bias card: T", "",
        "**SIMULATED JUDGES** - these verdicts come from the simulated panel, not a real model.", "",
        "Item-clustered 95% CIs (clusters = items/questions); tests at alpha 0.05, MDE at power 0.8; tested rows "
        "need >= 10 decisive verdicts. Length preference counts pairs whose word counts differ by a factor >= 1.5; "
        "markdown preference pairs whose markdown scores differ by >= 0.25. Views: `lenient` counts every verdict "
        "judgelab's parser read (status ok or fallback); `strict` the source's published extraction (recorded "
        "labels as written, texts re-read with the authors' rule), fallback verdicts counting as unparsed. "
        "Each judge's and view's tested rows are one family, their p-values adjusted by Holm (family-wise error) "
        "(column p adj.; the family in bias_card.csv's test_family); a row is detected on its adjusted p-value, "
        "and its MDE is the one at the family's level.", ""]
    assert md.index("## aa (") < md.index("## zz (")
    assert md.splitlines()[6:9] == ["## aa (family openai, 0 verdicts)", "", "No bias detected at this sample size."]


def test_headline_lists_several_rows_of_a_kind_separated_and_closed():
    rows = base(length_preference="detected", position_preference="detected", markdown_preference="underpowered",
                self_preference="underpowered", length_controlled="not estimable",
                markdown_controlled="not estimable", accuracy_order_gap="not identified", tie_rate="not identified")
    for r in rows:
        r.update(reason={"length_controlled": "perfect separation", "markdown_controlled": "no pair"}.get(r["metric"], ""),
                 note={"accuracy_order_gap": "no gold", "tie_rate": "no ties asked"}.get(r["metric"], ""))
    assert head(rows) == [
        "Biases detected: position_preference 0.600 [0.550, 0.650] (null 0.50, p=0.3); "
        "length_preference 0.600 [0.550, 0.650] (null 0.50, p=0.3).",
        "Underpowered (not significant, and an effect of the threshold size could have been missed): "
        "markdown_preference, self_preference.",
        "Not estimable: length_controlled (perfect separation); markdown_controlled (no pair).",
        "Not identified (never a detection): accuracy_order_gap (no gold); tie_rate (no ties asked)."]


def test_an_underpowered_bias_row_counts_as_tested():
    # every bias metric untestable but one underpowered: something was tested, nothing detected
    bias = {m: "not estimable" for m in METRICS if METRICS[m].kind == "bias"}
    lines = head(base(**{**bias, "self_preference": "underpowered"}))
    assert lines[0] == "No bias detected at this sample size."
    assert lines[1].endswith(": self_preference.")


def test_headline_of_a_card_without_a_parse_failure_row():
    rows = [r for r in base(length_preference="detected") if r["metric"] != "parse_failures"]
    assert head(rows)[0].startswith("Biases detected: length_preference")


def test_markdown_layout_blank_lines_table_header_and_status_changes():
    lenient = base(judge="a", length_preference="detected", position_preference="detected")
    strict = base("strict", judge="a")
    for r in strict:
        r["n_parsed"] = 30
    md = card_markdown(card(lenient + strict + base(judge="b") + base("strict", judge="b")), title="T", settings=S,
                       n_verdicts={"a": 40, "b": 40}, simulated=False)
    lines = md.splitlines()
    k = lines.index(STRICT.format(10))
    assert lines[k - 1] == ""  # its own paragraph, not glued to the lenient headline
    assert lines[k + 2] == ("Status differs between views: position_preference (detected lenient, not detected strict), "
                            "length_preference (detected lenient, not detected strict).")
    header = "| view | metric | status | estimate | CI | null | n (items) | parsed | test | p | p adj. | MDE | note |"
    assert [i for i, ln in enumerate(lines) if ln == header] == [k + 4, lines.index("## b (family openai, 40 verdicts)")
                                                                + 5]
    assert lines[k + 3] == "" and lines[k + 5] == "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    b = lines.index("## b (family openai, 40 verdicts)")
    assert lines[b - 1] == "" and lines[b - 2].startswith(f"| strict | {list(METRICS)[-1]} |")  # the table ends first
    assert lines[b + 2] == "No bias detected at this sample size."
    assert lines[b + 3] == "The strict view equals the lenient one."
    assert md.endswith("|\n")  # the last table is closed by a blank line
    assert len(lines) == b + 7 + 2 * len(METRICS)


def test_a_strict_only_card_has_no_comparison_of_views():
    md = card_markdown(card(base("strict")), title="T", settings=S, n_verdicts={}, simulated=False)
    assert "Strict view" not in md and "The strict view equals" not in md and "Status differs" not in md


def test_the_lenient_view_leads_the_headline_whatever_the_card_order():
    strict = base("strict")
    for r in strict:
        r["n_parsed"] = 38
    md = card_markdown(card(strict + base(length_preference="detected")), title="T", settings=S, n_verdicts={},
                       simulated=False)
    lines = md.splitlines()
    i = lines.index("## j (family openai, 0 verdicts)")
    assert lines[i + 2].startswith("Biases detected: length_preference")
    assert STRICT.format(2) in lines
    # the table keeps the card's view order (settings.views)
    rows = [ln.split(" | ")[0] for ln in lines if ln.startswith("| lenient |") or ln.startswith("| strict |")]
    assert rows == ["| strict"] * len(METRICS) + ["| lenient"] * len(METRICS)


def test_markdown_of_a_one_metric_card():
    rows = [row("position_preference", "detected", n_parsed=40),
            row("position_preference", "not detected", view="strict", n_parsed=35, p=0.2)]
    rows[0]["family"] = rows[1]["family"] = "meta"
    md = card_markdown(card(rows), title="T", settings=S, n_verdicts={"j": 50}, simulated=False)
    assert "## j (family meta, 50 verdicts)" in md
    assert STRICT.format(5) in md


def _capture(monkeypatch) -> dict:
    import importlib

    stamp_mod = importlib.import_module("judgelab.plots.stamp")
    got: dict = {}
    monkeypatch.setattr(stamp_mod, "save_figure", lambda fig, path: got.update(fig=fig, path=path))
    return got


def _points(ax) -> dict[float, float]:
    """y -> x of the estimate markers of a panel."""
    return {float(ln.get_ydata()[0]): float(ln.get_xdata()[0]) for ln in ax.lines if ln.get_marker() == "o"}


def test_figure_draws_markers_in_the_colour_of_their_ci_and_a_dotted_null(monkeypatch, tmp_path):
    got = _capture(monkeypatch)
    rows = [row("position_preference", "detected", judge="a", est=0.3, lo=0.1, hi=0.5),
            row("position_preference", "underpowered", judge="b", est=0.05, lo=-0.1, hi=0.2)]
    card_figure(card(rows), tmp_path / "f.png", title="T")
    fig = got["fig"]
    ax = fig.axes[0]
    ci_a, pt_a, ci_b, pt_b, null = ax.lines
    assert pt_a.get_marker() == "o" and pt_b.get_marker() == "o"  # a visible point, not a one-point line
    assert ci_a.get_marker() == "None" and ci_a.get_linestyle() == "-"
    assert pt_a.get_color() == ci_a.get_color() == STYLE.detected
    assert pt_b.get_color() == ci_b.get_color() == STYLE.not_detected
    r, g, b = (int(STYLE.not_detected[i:i + 2], 16) for i in (1, 3, 5))
    assert r == g == b  # the title promises grey
    assert null.get_linestyle() == ":"
    # the style is applied as written in FigureStyle
    assert ci_a.get_linewidth() == STYLE.ci_width and pt_a.get_markersize() == STYLE.marker_size
    assert null.get_color() == STYLE.null_colour and null.get_linewidth() == STYLE.null_width
    assert ax.title.get_fontsize() == STYLE.panel_title_fontsize
    assert fig._suptitle.get_fontsize() == STYLE.title_fontsize
    assert {t.get_fontsize() for t in ax.get_yticklabels()} == {STYLE.tick_fontsize}
    assert {t.get_fontsize() for t in ax.get_xticklabels()} == {STYLE.tick_fontsize}
    # panels stay inside the layout box: room for the stamp footer below and the title above
    x0, y0, x1, y1 = STYLE.layout_rect
    for a in fig.axes:
        p = a.get_position()
        assert p.x0 >= x0 and p.y0 >= y0 and p.x1 <= x1 and p.y1 <= y1 and p.width > 0 and p.height > 0


def test_figure_places_judges_by_name_even_when_one_lacks_a_metric(monkeypatch, tmp_path):
    got = _capture(monkeypatch)
    rows = [row("position_preference", "detected", judge="c", est=0.3),
            row("position_preference", "detected", judge="a", est=0.1),
            row("tie_rate", "descriptive", judge="c", est=0.7),
            row("tie_rate", "descriptive", judge="b", est=0.2),
            row("position_preference", "detected", judge="b", est=0.2)]
    card_figure(card(rows), tmp_path / "f.png", title="T")
    pos, tie = got["fig"].axes[:2]
    assert _points(pos) == {0.0: 0.1, 1.0: 0.2, 2.0: 0.3}
    assert _points(tie) == {1.0: 0.2, 2.0: 0.7}  # judge a has no tie_rate row: nothing at y=0


def test_figure_reads_missing_estimates_of_an_object_column(monkeypatch, tmp_path):
    got = _capture(monkeypatch)
    c = card([row("position_preference", "detected", judge="a", est=0.3),
              row("position_preference", "not estimable", judge="b")])
    c["estimate"] = pd.Series([0.3, None], dtype=object)
    card_figure(c, tmp_path / "f.png", title="T")
    assert _points(got["fig"].axes[0]) == {0.0: 0.3}


def test_figure_of_a_card_without_views_or_with_the_strict_view_only(monkeypatch, tmp_path):
    got = _capture(monkeypatch)
    rows = [row("position_preference", "detected", judge="a", est=0.3, view="strict")]
    card_figure(card(rows), tmp_path / "f.png", title="T")
    assert _points(got["fig"].axes[0]) == {0.0: 0.3}
    card_figure(card(rows).drop(columns="view"), tmp_path / "g.png", title="T")
    assert _points(got["fig"].axes[0]) == {0.0: 0.3}


def test_figure_wraps_panels_in_rows_and_grows_taller(monkeypatch, tmp_path):
    got = _capture(monkeypatch)
    metrics = [m for m in METRICS][:STYLE.ncol + 1]
    card_figure(card([row(m, "descriptive", judge=j) for m in metrics for j in "ab"]), tmp_path / "f.png", title="T")
    fig = got["fig"]
    assert len(fig.axes) == STYLE.ncol + 1  # the second row's empty cells are removed, not left as boxes
    assert [ax.get_title() for ax in fig.axes] == metrics
    two_rows = fig.get_size_inches()
    card_figure(card([row(m, "descriptive", judge=j) for m in metrics[:STYLE.ncol] for j in "ab"]),
                tmp_path / "g.png", title="T")
    one_row = got["fig"].get_size_inches()
    assert two_rows[0] == one_row[0]
    # each panel row keeps its height: the second row adds one row's worth, it does not squash the first
    assert two_rows[1] - one_row[1] == pytest.approx(one_row[1] - STYLE.title_margin)


def test_figure_stamps_simulated_verdicts_and_the_config_hash(monkeypatch, tmp_path):
    from judgelab.plots.stamp import STAMP_TEXT

    got = _capture(monkeypatch)
    rows = [row("position_preference", "detected", judge="a"), row("position_preference", "detected", judge="b")]
    rows[1]["simulated"] = True
    card_figure(card(rows), tmp_path / "f.png", title="T", config_hash="h123")
    texts = [t.get_text() for t in got["fig"].texts]
    assert STAMP_TEXT in texts and any("config h123" in t for t in texts)
    rows[1]["simulated"] = False
    card_figure(card(rows), tmp_path / "f.png", title="T")
    texts = [t.get_text() for t in got["fig"].texts]
    assert STAMP_TEXT not in texts and not any("config" in t for t in texts)


def test_figure_of_a_card_with_nothing_to_draw_says_so(tmp_path):
    with pytest.raises(ValueError, match=r"card_figure\('T'\): the card has no row of a known metric.*'bogus'"):
        card_figure(card([row("bogus", "detected")]), tmp_path / "f.png", title="T")
    with pytest.raises(ValueError, match="no row of a known metric"):
        card_figure(card([]), tmp_path / "f.png", title="T")
    assert not (tmp_path / "f.png").exists()


def test_write_audit_of_an_empty_table_fails_before_writing(tmp_path):
    from judgelab.bias_card.report import write_audit
    from tests.helpers.bias_card_logs import table

    with pytest.raises(ValueError, match=r"write_audit\('TT'\): the verdict table has no rows"):
        write_audit(table([]), tmp_path / "a", title="TT")
    assert not (tmp_path / "a").exists()


def test_figure_panels_leave_room_for_the_title_and_the_stamp_footer(monkeypatch, tmp_path):
    """A tall figure (many judges, two panel rows): no panel, tick labels included, overlaps the
    figure title or the simulated / config footer the stamp writes at the bottom edge."""
    from judgelab.plots.stamp import STAMP_TEXT

    got = _capture(monkeypatch)
    judges = [f"judge{i:02d}" for i in range(20)]
    rows = [row(m, "descriptive", judge=j) for m in list(METRICS)[:STYLE.ncol + 1] for j in judges]
    for r in rows:
        r["simulated"] = True
    card_figure(card(rows), tmp_path / "f.png", title="T", config_hash="h123")
    fig = got["fig"]
    renderer = fig.canvas.get_renderer()
    footer = next(t for t in fig.texts if "config h123" in t.get_text())
    fixed = [footer.get_window_extent(renderer), fig._suptitle.get_window_extent(renderer)]
    assert STAMP_TEXT in [t.get_text() for t in fig.texts]  # the watermark crosses the panels on purpose
    for ax in fig.axes:
        if ax.axison:
            box = ax.get_tightbbox(renderer)
            assert not any(box.overlaps(f) for f in fixed), ax.get_title()
