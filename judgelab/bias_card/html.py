"""``report.html`` of ``judgelab audit``: the bias card as one self-contained page.

The page opens with its summary: per judge (sorted, as in ``bias_card.md``) one sentence per
finding, as the card states it (a bias row whose status is ``detected``: estimable, identified,
significant after the multiplicity correction), its accuracy against gold as a neutral sentence,
and ``bias_card.png``.  Everything else is in closed ``<details>`` sections a reader opens by
name: per judge its headline per view and its rows of ``bias_card.csv`` (one table when the
strict and lenient views give the same rows), the between-judge rows, and the settings the rows
depend on.  The page itself is built by :mod:`judgelab.plots.html_report` (escaping, inline figures,
no network).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.bias_card.card import METRICS, CardSettings
from judgelab.bias_card.reliability import PANEL_JUDGE
from judgelab.io import any_true
from judgelab.plots.html_report import SIMULATED_BANNER, Bullets, Figure, Page, Section, Table, write_page

#: the card's columns shown per judge, in this order (the rest stays in bias_card.csv)
SHOWN = ["view", "metric", "status", "estimate", "ci_low", "ci_high", "null_value", "n", "n_items", "parsed_share",
         "test", "p_value", "p_adjusted", "mde", "why"]
#: metric kinds whose ``detected`` is a bias (the colour of a detected bias); an ``accuracy`` row
#: is tested against chance, and its ``detected`` (better than chance) is shown in a neutral colour
BIAS_KINDS = ("bias", "conditional")
#: the multiplicity correction by its setting, as a sentence names it
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "no"}


def multiplicity_text(settings: CardSettings) -> str:
    """The sentence saying how a judge's tests are corrected together (the card's intro, the HTML page)."""
    if settings.multiplicity == "none":
        return "p-values are not corrected for multiplicity (each row is read at alpha alone)."
    how = {"holm": "Holm (family-wise error)", "bh": "Benjamini-Hochberg (false discovery rate)"}
    return (f"Each judge's and view's tested rows are one family, their p-values adjusted by "
            f"{how[settings.multiplicity]} (column p adj.; the family in bias_card.csv's test_family); a row "
            "is detected on its adjusted p-value, and its MDE is the one at the family's level.")


def settings_text(settings: CardSettings) -> str:
    return (f"Item-clustered {settings.confidence:.0%} CIs (clusters = items/questions); tests at alpha "
            f"{settings.alpha}, MDE at power {settings.power}; tested rows need >= {settings.min_decisive} decisive "
            f"verdicts. Views: lenient counts every verdict judgelab's parser read (status ok or fallback); strict "
            "only the benchmark authors' extraction (status ok). " + multiplicity_text(settings))


def _missing(x: Any) -> bool:
    """Whether a cell is missing (NaN or None: a row that was not estimable)."""
    return x is None or bool(pd.isna(x))


def _num(x: Any, digits: int = 3) -> str:
    """A number of a sentence, ``n/a`` for a missing one."""
    return "n/a" if _missing(x) else f"{float(x):.{digits}f}"


def _p(x: Any) -> str:
    """A p-value of a sentence: two significant digits."""
    return "n/a" if _missing(x) else f"{float(x):.2g}"


def _kind(metric: str) -> str:
    return METRICS[metric].kind if metric in METRICS else ""


def display(name: str, names: Mapping[str, str]) -> str:
    """``name`` as the reader knows it: its display name with the name in the logs after it, or
    the name alone when ``names`` has none for it."""
    shown = names.get(name, name)
    return name if shown == name else f"{shown} ({name})"


def views_of(rows: pd.DataFrame, *, index: bool = True) -> dict[str, pd.DataFrame]:
    """The rows of each view, in the card's view order (indexed by metric unless ``index=False``)."""
    return {str(v): (g.set_index("metric") if index else g) for v, g in rows.groupby("view", sort=False)}


def _main_view(views: Mapping[str, pd.DataFrame]) -> str:
    return "lenient" if "lenient" in views else next(iter(views))


def finding_sentences(views: Mapping[str, pd.DataFrame], settings: CardSettings) -> list[str]:
    """One sentence per finding of a judge (``views``: view -> its rows indexed by metric), as the
    card states it: parse failures above the alert, then each bias row of the main view (lenient
    when present) whose status is ``detected`` with its estimate, CI, null and adjusted p; when none
    is, the card's own "no bias" sentence; a sentence when another view detects other rows; and
    the accuracy against gold, which is not a bias."""
    main = _main_view(views)
    g = views[main]
    out = []
    pf = g.loc["parse_failures"] if "parse_failures" in g.index else None
    if pf is not None and not pd.isna(pf["estimate"]) and pf["estimate"] > settings.parse_failure_alert:
        out.append(f"Parse failures: {pf['estimate']:.0%} of {int(pf['n'])} calls gave no verdict; every preference "
                   f"uses only the {int(pf['n_parsed'])} parsed verdicts.")
    correction = CORRECTION_NAMES[settings.multiplicity]
    detected = [m for m in g.index if _kind(m) == "bias" and g.loc[m, "status"] == "detected"]
    for m in detected:
        r = g.loc[m]
        adjusted = (f", adjusted p = {_p(r.get('p_adjusted'))} ({correction} correction)"
                    if settings.multiplicity != "none" else "")
        out.append(f"{m} detected ({main} view): {_num(r['estimate'])} [{_num(r['ci_low'])}, {_num(r['ci_high'])}] "
                   f"against a null of {_num(r['null_value'], 2)}, p = {_p(r['p_value'])}{adjusted}.")
    if not detected:
        tested = [m for m in g.index if _kind(m) == "bias"
                  and g.loc[m, "status"] in ("not detected", "underpowered")]
        under = [m for m in tested if g.loc[m, "status"] == "underpowered"]
        if not tested:
            out.append("No bias could be tested: no bias metric is estimable and identified.")
        else:
            out.append("No bias detected at this sample size"
                       + (f" ({', '.join(under)} underpowered)." if under else "."))
    for view, gv in views.items():
        if view == main:
            continue
        other = {m for m in gv.index if _kind(m) == "bias" and gv.loc[m, "status"] == "detected"}
        only_main, only_other = sorted(set(detected) - other), sorted(other - set(detected))
        if only_main or only_other:
            parts = ([f"{', '.join(only_main)} detected in the {main} view only"] if only_main else []) + (
                [f"{', '.join(only_other)} detected in the {view} view only"] if only_other else [])
            out.append(f"The {view} view differs: " + "; ".join(parts) + ".")
    acc = next((m for m in ("accuracy_average", "accuracy_AB") if m in g.index and not _missing(g.at[m, "estimate"])),
               None)
    if acc is not None:
        r = g.loc[acc]
        out.append(f"Accuracy against gold ({acc}, not a bias): {_num(r['estimate'])} "
                   f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}].")
    return out


def _why(rows: pd.DataFrame) -> list[str]:
    return [r or n for r, n in zip(rows["reason"].fillna(""), rows["note"].fillna(""), strict=True)]


def _status_classes(rows: pd.DataFrame) -> list[str | None]:
    """``st-tested`` for a detected row that is not a bias (an accuracy above chance), else the
    status's own class."""
    return ["st-tested" if s == "detected" and _kind(m) not in BIAS_KINDS else None
            for m, s in zip(rows["metric"], rows["status"], strict=True)]


def _table(title: str, rows: pd.DataFrame, *, drop_view: bool = False, caption: str = "") -> Table:
    shown = rows.assign(why=_why(rows)).reset_index(drop=True)
    cols = [c for c in SHOWN if c in shown.columns and not (drop_view and c == "view")]
    return Table(title, shown[cols], caption=caption, status_class=_status_classes(shown))


def _same_rows(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Whether two views' rows are the same in every shown column (missing equal to missing)."""
    cols = [c for c in SHOWN if c not in ("view", "why") and c in a.columns] + ["reason", "note"]
    cols = [c for c in cols if c in a.columns]
    x = a[cols].reset_index(drop=True)
    y = b[cols].reset_index(drop=True)
    return x.shape == y.shape and bool(x.astype(object).where(x.notna(), None).equals(
        y.astype(object).where(y.notna(), None)))


def view_tables(rows: pd.DataFrame) -> list[Table]:
    """The rows of one judge as tables: one table when every view gives the same rows (captioned
    "strict and lenient views agree"), else the main view's table and one per other view."""
    groups = views_of(rows, index=False) if "view" in rows else {"": rows}
    if len(groups) == 1:
        view, g = next(iter(groups.items()))
        return [_table(f"Card rows ({view} view)" if view else "Card rows", g, drop_view=bool(view))]
    main = _main_view(groups)
    first = groups[main]
    if all(_same_rows(first, g) for g in groups.values()):
        names = " and ".join(groups)
        return [_table(f"Card rows ({names} views agree)", first, drop_view=True,
                       caption=f"The {names} views give the same rows; shown once.")]
    return [_table(f"Card rows, {v} view", g, drop_view=True)
            for v, g in sorted(groups.items(), key=lambda kv: kv[0] != main)]


def judge_section(judge: str, rows: pd.DataFrame, n_verdicts: int, settings: CardSettings,
                  headline: Callable[[pd.DataFrame, CardSettings], list[str]],
                  names: Mapping[str, str] | None = None) -> Section:
    """A judge's details, closed: its headline per view and its card rows."""
    views = views_of(rows)
    paragraphs = []
    for view, g in views.items():
        paragraphs += [f"{view} view: {line}".replace("**", "") for line in headline(g, settings)]
    family = rows["family"].iloc[0] if "family" in rows else ""
    main = views[_main_view(views)]
    n_detected = sum(_kind(str(m)) == "bias" and s == "detected" for m, s in zip(main.index, main["status"],
                                                                              strict=True))
    return Section(title=f"{display(judge, names or {})} (family {family}, {n_verdicts} verdicts)", key=str(judge),
                   paragraphs=paragraphs, tables=view_tables(rows), collapsed=True,
                   lead=f"{n_detected} bias(es) detected; card rows and reasons")


def panel_section(rows: pd.DataFrame) -> Section:
    """The between-judge rows (agreement of the judges with one another), closed: they belong to
    no judge and hold no verdicts of their own, so they are not a judge's section."""
    return Section(title="Agreement between judges", key=PANEL_JUDGE,
                   paragraphs=["Rows computed over every judge together (agreement between judges)."],
                   tables=view_tables(rows), collapsed=True, lead=", ".join(sorted(set(rows["metric"]))))


def _panel_sentences(rows: pd.DataFrame) -> list[str]:
    views = views_of(rows)
    main = _main_view(views)
    return [f"{m} ({main} view): {_num(r['estimate'])} [{_num(r['ci_low'])}, {_num(r['ci_high'])}]."
            for m, r in views[main].iterrows() if not pd.isna(r["estimate"])]


def summary_section(card: pd.DataFrame, settings: CardSettings, n_verdicts: Mapping[str, int],
                    names: Mapping[str, str], figures: list[Figure]) -> Section:
    """The page's first section: what was found, per judge, then the figure."""
    bullets = []
    for judge, g in card[card["judge"] != PANEL_JUDGE].groupby("judge", sort=True):
        bullets.append(Bullets(f"{display(str(judge), names)} ({n_verdicts.get(str(judge), 0)} verdicts)",
                               finding_sentences(views_of(g), settings)))
    panel = card[card["judge"] == PANEL_JUDGE]
    if len(panel) and _panel_sentences(panel):
        bullets.append(Bullets("All judges together", _panel_sentences(panel)))
    correction = CORRECTION_NAMES[settings.multiplicity]
    intro = (f"A finding is a bias row the card calls detected: estimable, identified, and significant at alpha "
             f"{settings.alpha} after {correction} correction within each judge and view. Open a judge below for "
             "every row and the reason for each row that is not a finding.")
    return Section(title="Summary", key="summary", paragraphs=[intro], bullets=bullets, figures=figures,
                   summary=True)


def write_card_html(card: pd.DataFrame, out: str | Path, *, title: str, settings: CardSettings,
                    n_verdicts: dict[str, int], headline: Callable[[pd.DataFrame, CardSettings], list[str]],
                    figure: str | Path | None = None, names: Mapping[str, str] | None = None) -> None:
    """Write the audit's ``report.html`` (``out`` is the file) from the card and its figure; ``headline``
    gives a judge's headline lines per view (:func:`judgelab.bias_card.report.headline`, passed in so
    the page and ``bias_card.md`` say the same and this module does not import the markdown writer);
    ``names`` maps a judge's name in the logs to the display name the page shows (``--names``)."""
    names = dict(names or {})
    simulated = any_true(card)
    figures = [Figure("bias card figure", figure, "Estimate and item-clustered CI per metric, lenient view; blue: "
                      "a detected bias; black: an accuracy tested against chance (not a bias); grey: not "
                      "detected. Metrics without an estimate are not drawn.")
               ] if figure is not None and Path(figure).is_file() else []
    sections = [summary_section(card, settings, n_verdicts, names, figures)]
    sections += [judge_section(str(j), g, n_verdicts.get(str(j), 0), settings, headline, names)
                 for j, g in card[card["judge"] != PANEL_JUDGE].groupby("judge", sort=True)]
    panel = card[card["judge"] == PANEL_JUDGE]
    if len(panel):
        sections.append(panel_section(panel))
    sections.append(Section(title="Settings", key="settings", paragraphs=[settings_text(settings)], collapsed=True,
                            lead="what the rows depend on"))
    banner = SIMULATED_BANNER if simulated else ""
    write_page(out, Page(title=f"Bias card: {title}", sections=sections, banner=banner,
                         footer="Written by judgelab audit; the same rows are in bias_card.csv."))
