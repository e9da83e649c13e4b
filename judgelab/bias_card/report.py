"""Outputs of ``judgelab audit``: the card table, a short markdown card, a figure.

:func:`write_audit` writes, into one folder per judge set:

* ``bias_card.csv``     one row per judge x view x metric (columns: :data:`judgelab.bias_card.CARD_COLUMNS`);
* ``bias_card.md``      a short card per judge: parse failures first when they are many,
                        the detected biases, the underpowered, not estimable and not
                        identified rows, the strict view where it differs, the full table;
* ``bias_card.png``     one panel per metric with an estimate, every judge's estimate with its
                        CI and the null line (stamped when the verdicts are simulated);
* ``verdicts.parquet``  the recorded verdict table the card was computed from;
* ``report.html``       the card as one self-contained page (:mod:`judgelab.bias_card.html`).
* ``human_confusion.csv`` when a judge has human labels (or gold): human label x judge verdict
                        counts per judge (:func:`judgelab.bias_card.humans.confusion_table`).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgelab.bias_card.card import METRICS, PANEL_METRICS, CardSettings, bias_card
from judgelab.bias_card.html import multiplicity_text, write_card_html
from judgelab.bias_card.reliability import PANEL_JUDGE
from judgelab.io import any_true, staged_folder, write_table, write_text

NAN = float("nan")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]#|~!])")


def md_escape(text: object) -> str:
    """A name from the data as literal markdown text on one line: control characters and line
    breaks become spaces, ``& < >`` HTML entities (markdown renders raw HTML), and markdown's
    punctuation is backslash-escaped, so a judge named ``x\n# y`` or ``<b>x</b>`` stays a name."""
    one_line = re.sub(r"[\x00-\x1f\x7f\u2028\u2029]+", " ", str(text))
    return _MD_SPECIAL.sub(r"\\\1", html.escape(one_line, quote=False))


def _table_cell(text: object) -> str:
    """A table cell on one line that cannot end its cell (``|``) or open raw HTML."""
    one_line = re.sub(r"[\x00-\x1f\x7f\u2028\u2029]+", " ", str(text))
    return html.escape(one_line, quote=False).replace("|", "\\|")


def _same(a: float, b: float) -> bool:
    return (pd.isna(a) and pd.isna(b)) or a == b


def _fmt(x: float, digits: int = 3) -> str:
    """A number for the card, ``n/a`` for a missing one (NaN or None: a row that was not estimable)."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _cell(r: pd.Series) -> str:
    """One detected bias in the headline: metric, estimate, CI, null and p (``r`` named by its metric)."""
    adj = r.get("p_adjusted", NAN)
    adjusted = f", adjusted p={adj:.2g}" if isinstance(adj, float) and math.isfinite(adj) else ""
    return (f"{r.name} {_fmt(r['estimate'])} "
            f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}] (null {_fmt(r['null_value'], 2)}, p={r['p_value']:.2g}"
            f"{adjusted})")


def headline(g: pd.DataFrame, settings: CardSettings) -> list[str]:
    """The headline lines of one judge and view (``g`` indexed by metric).

    Parse failures above ``settings.parse_failure_alert`` come first; "Biases detected"
    lists only bias metrics whose status is ``detected`` (estimable, identified, finite
    non-zero SE, CI excluding the null, p < alpha); "No bias detected" is said only when
    at least one bias metric could be tested.
    """
    lines = []
    pf = g.loc["parse_failures"] if "parse_failures" in g.index else None
    if pf is not None and not pd.isna(pf["estimate"]) and pf["estimate"] > settings.parse_failure_alert:
        n_calls = int(pf["n"])
        lines.append(f"**Parse failures: {pf['estimate']:.0%} of {n_calls} calls gave no verdict** "
                     f"(CI [{_fmt(pf['ci_low'], 2)}, {_fmt(pf['ci_high'], 2)}]); every preference below uses only "
                     f"the {int(pf['n_parsed'])} parsed verdicts.")
    bias = [m for m in g.index if m in METRICS and METRICS[m].kind == "bias"]
    sig = [m for m in bias if g.loc[m, "status"] == "detected"]
    tested = [m for m in bias if g.loc[m, "status"] in ("detected", "not detected", "underpowered")]
    if sig:
        lines.append("Biases detected: " + "; ".join(_cell(g.loc[m]) for m in sig) + ".")
    elif tested:
        lines.append("No bias detected at this sample size.")
    else:
        lines.append("No bias could be tested: no bias metric is estimable and identified.")
    under = [m for m in g.index if g.loc[m, "status"] == "underpowered"]
    if under:
        lines.append("Underpowered (not significant, and an effect of the threshold size could have been missed): "
                     + ", ".join(under) + ".")
    nonest = [m for m in g.index if g.loc[m, "status"] == "not estimable"
              and METRICS[m].kind not in ("rate", "conditional")]
    if nonest:
        lines.append("Not estimable: " + "; ".join(f"{m} ({g.loc[m, 'reason']})" for m in nonest) + ".")
    unid = [m for m in g.index if g.loc[m, "status"] == "not identified"]
    if unid:
        lines.append("Not identified (never a detection): " + "; ".join(
            f"{m} ({g.loc[m, 'note']})" for m in unid) + ".")
    return lines


def card_markdown(card: pd.DataFrame, *, title: str, settings: CardSettings, n_verdicts: dict[str, int],
                  simulated: bool) -> str:
    """The markdown card: an intro stating the settings the rows depend on, then per judge (sorted)
    the headline of the lenient view, the strict view's headline where fallback verdicts make the
    two differ, and the full table of every view in the card's order.

    A reader should not have to open the CSV to learn what was detected, what could not be tested
    and why; ``simulated`` puts a banner first so a card of the simulated panel is never mistaken
    for one of a real model.
    """
    lines = [f"# Bias card: {md_escape(title)}", ""]
    if simulated:
        lines += ["**SIMULATED JUDGES** - these verdicts come from the simulated panel, not a real model.", ""]
    lines += [f"Item-clustered {settings.confidence:.0%} CIs (clusters = items/questions); tests at "
              f"alpha {settings.alpha}, MDE at power {settings.power}; tested rows need "
              f">= {settings.min_decisive} decisive verdicts. Length preference counts pairs whose "
              f"word counts differ by a factor >= {1 + settings.length_margin:g}; markdown preference pairs whose "
              f"markdown scores differ by >= {settings.markdown_margin:g}. Views: `lenient` counts every verdict "
              "judgelab's parser read (status ok or fallback); `strict` the source's published extraction "
              "(recorded labels as written, texts re-read with the authors' rule), fallback verdicts "
              f"counting as unparsed. {multiplicity_text(settings)}", ""]
    for judge, g_all in card.groupby("judge", sort=True):
        views = {v: g.set_index("metric") for v, g in g_all.groupby("view", sort=False)}
        first = next(iter(views.values()))
        lines += [f"## {md_escape(judge)} (family {md_escape(first['family'].iloc[0])}, "
                  f"{n_verdicts.get(str(judge), 0)} verdicts)", ""]
        main = "lenient" if "lenient" in views else next(iter(views))
        lines += headline(views[main], settings)
        if "strict" in views and main != "strict":
            gs, gl = views["strict"], views[main]
            n_fb = int(gl["n_parsed"].iloc[0] - gs["n_parsed"].iloc[0])
            changed = [m for m in gs.index if m in gl.index and gs.loc[m, "status"] != gl.loc[m, "status"]]
            moved = [m for m in gs.index if m in gl.index
                     and not _same(gs.loc[m, "estimate"], gl.loc[m, "estimate"])]
            if n_fb or moved or changed:
                lines += ["", f"Strict view ({n_fb} fewer parsed verdicts; fallback verdicts and texts the "
                              "source's own rule reads no verdict in count as unparsed):"]
                lines += headline(gs, settings)
                if changed:
                    lines.append("Status differs between views: " + ", ".join(
                        f"{m} ({gl.loc[m, 'status']} lenient, {gs.loc[m, 'status']} strict)" for m in changed) + ".")
            else:
                lines.append("The strict view equals the lenient one.")
        lines += ["", "| view | metric | status | estimate | CI | null | n (items) | parsed | test | p | p adj. | MDE "
                      "| note |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for v, g in views.items():
            for m, r in g.iterrows():
                why = r["reason"] or r["note"]
                cells = [v, m, r["status"], _fmt(r["estimate"]), f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]",
                         _fmt(r["null_value"], 2), f"{r['n']!s} ({r['n_items']!s})", _fmt(r["parsed_share"], 2),
                         r["test"], _fmt(r["p_value"], 3), _fmt(r.get("p_adjusted", NAN), 3), _fmt(r["mde"]),
                         _table_cell(why)]
                lines.append("| " + " | ".join(str(c) for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


@dataclass(frozen=True)
class FigureStyle:
    """The look of :func:`card_figure`: sizes, colours and line weights in one place.

    No user-facing contract fixes these numbers (the figure's contract is what it draws:
    one panel per metric, each judge's estimate and CI, the null line, grey when not
    detected); they live here so a restyle is one edit and the drawing code reads as what
    it draws. Sizes are in inches and points.
    """

    ncol: int = 4                  # panels per row
    panel_width: float = 3.4       # inches per panel column
    judge_height: float = 0.28     # inches per judge in a panel row
    panel_margin: float = 1.1      # inches per panel row for its title and x tick labels
    title_margin: float = 0.6      # inches for the figure title
    detected: str = "#4C72B0"      # estimate and CI of a detected bias
    accuracy: str = "#1d1d1f"      # a detected accuracy row: better than chance, not a bias
    not_detected: str = "#999999"  # grey: everything else (the figure title says so)
    ci_width: float = 1.5
    marker_size: float = 4
    null_colour: str = "black"
    null_width: float = 0.8
    tick_fontsize: float = 7
    panel_title_fontsize: float = 8
    title_fontsize: float = 9
    # tight_layout's box: leaves the bottom 3% to the stamp footer and the top 3% to the title
    layout_rect: tuple[float, float, float, float] = (0, 0.03, 1, 0.97)


STYLE = FigureStyle()


def card_figure(card: pd.DataFrame, path: str | Path, *, title: str, config_hash: str | None = None,
                style: FigureStyle = STYLE, names: Mapping[str, str] | None = None) -> None:
    """:func:`_card_figure` with every text drawn as written (names are never mathtext:
    :data:`judgelab.plots.orders.LITERAL_TEXT`)."""
    from judgelab.plots.orders import LITERAL_TEXT
    from judgelab.plots.stamp import plt

    with plt.rc_context(LITERAL_TEXT):
        _card_figure(card, path, title=title, config_hash=config_hash, style=style, names=names)


def drawn_metrics(card: pd.DataFrame) -> list[str]:
    """The metrics :func:`card_figure` draws a panel for, in the card's order: the metrics of one
    judge (the between-judge rows of :data:`~judgelab.bias_card.card.PANEL_METRICS` are sentences
    of the report's summary) with an estimate for at least one judge.  A metric no judge has an
    estimate of would be an empty box; its rows say why in the table."""
    rows = card[~card["metric"].isin(PANEL_METRICS) & (card["judge"] != PANEL_JUDGE)]
    has = pd.to_numeric(rows["estimate"], errors="coerce").notna().groupby(rows["metric"]).any()
    return [m for m in METRICS if bool(has.get(m, False))]


def _card_figure(card: pd.DataFrame, path: str | Path, *, title: str, config_hash: str | None = None,
                 style: FigureStyle = STYLE, names: Mapping[str, str] | None = None) -> None:
    """One panel per drawn metric (:func:`drawn_metrics`): estimate and CI per judge, null as a
    dotted line; only the panels drawn exist (no empty box, no blank grid cell).

    Draws the lenient view when the card has one (the headline's view), else the card's
    rows as they are. A detected bias is blue, a detected accuracy (better than chance, not a
    bias) black, every other row grey. Judges are named by ``names`` (display names) where it has
    them. Raises ``ValueError`` when no row is of a metric in
    :data:`~judgelab.bias_card.card.METRICS` (there would be no panel to draw); a card whose known
    metrics have no estimate at all gets a figure that says so in words, without axes.
    """
    from judgelab.plots.stamp import plt, save_figure, stamp

    if "view" in card.columns and (card["view"] == "lenient").any():
        card = card[card["view"] == "lenient"]
    if not any(m in METRICS for m in set(card["metric"])):
        raise ValueError(f"card_figure({title!r}): the card has no row of a known metric "
                         f"(metrics {sorted(set(card['metric']))}; known: {list(METRICS)}), nothing to draw")
    metrics = drawn_metrics(card)
    card = card[card["judge"] != PANEL_JUDGE]
    judges = sorted(card["judge"].unique())
    labels = [(names or {}).get(str(j), str(j)) for j in judges]
    heading = (f"{title}: estimate and item-clustered CI, lenient view (blue: detected bias; black: accuracy "
               "above chance; grey: not detected)")
    if not metrics:
        fig = plt.figure(figsize=(style.panel_width * 2, 1.5))
        fig.text(0.5, 0.5, "No metric of the card has an estimate; bias_card.csv says why per row.",
                 ha="center", va="center", fontsize=style.title_fontsize)
        fig.suptitle(heading, fontsize=style.title_fontsize)
        stamp(fig, simulated=any_true(card), config_hash=config_hash)
        save_figure(fig, str(path))
        return
    ncol = min(style.ncol, len(metrics))
    nrow = math.ceil(len(metrics) / ncol)
    height = style.title_margin + (style.judge_height * len(judges) + style.panel_margin) * nrow
    fig, axes = plt.subplots(nrow, ncol, figsize=(style.panel_width * style.ncol, height), squeeze=False)
    y = np.arange(len(judges))
    for ax, m in zip(axes.flat, metrics, strict=False):
        g = card[card["metric"] == m].set_index("judge").reindex(judges)
        est, lo, hi = g[["estimate", "ci_low", "ci_high"]].to_numpy(float).T
        detected = (g["status"] == "detected").to_numpy()
        hit = style.detected if METRICS[m].kind in ("bias", "conditional") else style.accuracy
        for i in range(len(judges)):
            if np.isnan(est[i]):
                continue
            c = hit if detected[i] else style.not_detected
            ax.plot([lo[i], hi[i]], [y[i], y[i]], color=c, lw=style.ci_width)
            ax.plot(est[i], y[i], "o", color=c, ms=style.marker_size)
        null = g["null_value"].dropna()
        if len(null):
            ax.axvline(float(null.iloc[0]), color=style.null_colour, lw=style.null_width, ls=":")
        ax.set_yticks(y, labels if ax in axes[:, 0] else [], fontsize=style.tick_fontsize)
        ax.set_ylim(-0.7, len(judges) - 0.3)
        ax.set_title(m, fontsize=style.panel_title_fontsize)
        ax.tick_params(axis="x", labelsize=style.tick_fontsize)
    for ax in list(axes.flat)[len(metrics):]:
        fig.delaxes(ax)  # a grid cell without a metric: no box at all
    fig.suptitle(heading, fontsize=style.title_fontsize)
    stamp(fig, simulated=any_true(card), config_hash=config_hash)
    fig.tight_layout(rect=style.layout_rect)
    save_figure(fig, str(path))


def write_audit(table: pd.DataFrame, out_dir: str | Path, *, title: str, settings: CardSettings | None = None,
                provenance: dict[str, Any] | None = None,
                extra_files: Callable[[pd.DataFrame], dict[str, str]] | None = None,
                names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Compute the card of every judge in ``table`` and write the four outputs into ``out_dir``.

    ``names`` maps a judge's name in the logs to its display name (``--names``): the figure and
    report.html show it; the tables keep the names of the logs.

    An empty ``table`` raises ``ValueError`` before anything is written: its card has no
    row, so there would be a table and a card without a judge and no figure to draw.
    ``extra_files(card)`` gives more text files of the set (``gate.json``); it runs before
    anything is written, so an error it raises leaves ``out_dir`` as it was.
    """
    settings = settings or CardSettings()
    out = Path(out_dir)
    if table.empty:
        raise ValueError(f"write_audit({title!r}): the verdict table has no rows; nothing to audit "
                         f"(nothing written to {out})")
    card = bias_card(table, settings)
    n = {str(k): int(v) for k, v in table.groupby("judge", observed=True).size().items()}
    extra = extra_files(card) if extra_files else {}
    with staged_folder(out) as stage:  # the files appear together, replacing the old set whole
        for name, text in extra.items():
            write_text(stage / name, text)
        write_table(table, stage / "verdicts.parquet", provenance=provenance)
        write_table(card, stage / "bias_card.csv", provenance=provenance)
        write_text(stage / "bias_card.md", card_markdown(card, title=title, settings=settings, n_verdicts=n,
                                                         simulated=any_true(card)))
        card_figure(card, stage / "bias_card.png", title=title,
                    config_hash=(provenance or {}).get("config_hash"), names=names)
        write_card_html(card, stage / "report.html", title=title, settings=settings, n_verdicts=n, headline=headline,
                        figure=stage / "bias_card.png", names=names)
        _write_confusion(table, stage, provenance)
    return card


def _write_confusion(table: pd.DataFrame, out: Path, provenance: dict[str, Any] | None) -> None:
    """``human_confusion.csv`` (human label x judge verdict per judge) when a judge has human labels."""
    from judgelab.bias_card.humans import confusion_table

    cm = confusion_table(table)
    if len(cm):
        write_table(cm, out / "human_confusion.csv", provenance=provenance)
