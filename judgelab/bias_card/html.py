"""``report.html`` of ``judgelab audit``: the bias card as one self-contained page.

One section per judge (sorted, as in ``bias_card.md``): its headline per view (what was
detected, underpowered, not estimable or not identified, and why), then its rows of
``bias_card.csv`` with status, estimate, CI, test, p, MDE and the reason or note.  An overview
section comes first with the settings the rows depend on and ``bias_card.png`` inline.  The page
itself is built by :mod:`judgelab.html_report` (escaping, inline figures, no network).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from judgelab.bias_card.card import CardSettings
from judgelab.html_report import SIMULATED_BANNER, Figure, Page, Section, Table, write_page
from judgelab.io import any_true

#: the card's columns shown per judge, in this order (the rest stays in bias_card.csv)
SHOWN = ["view", "metric", "status", "estimate", "ci_low", "ci_high", "null_value", "n", "n_items", "parsed_share",
         "test", "p_value", "p_adjusted", "mde", "why"]


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


def judge_section(judge: str, rows: pd.DataFrame, n_verdicts: int, settings: CardSettings,
                  headline: Callable[[pd.DataFrame, CardSettings], list[str]]) -> Section:
    views = {v: g.set_index("metric") for v, g in rows.groupby("view", sort=False)}
    paragraphs = []
    for view, g in views.items():
        paragraphs += [f"{view} view: {line}".replace("**", "") for line in headline(g, settings)]
    shown = rows.assign(why=[r or n for r, n in zip(rows["reason"].fillna(""), rows["note"].fillna(""), strict=True)])
    family = rows["family"].iloc[0] if "family" in rows else ""
    return Section(title=f"{judge} (family {family}, {n_verdicts} verdicts)", key=str(judge), paragraphs=paragraphs,
                   tables=[Table("Card rows", shown[[c for c in SHOWN if c in shown.columns]].reset_index(drop=True))])


def write_card_html(card: pd.DataFrame, out: str | Path, *, title: str, settings: CardSettings,
                    n_verdicts: dict[str, int], headline: Callable[[pd.DataFrame, CardSettings], list[str]],
                    figure: str | Path | None = None) -> None:
    """Write the audit's ``report.html`` (``out`` is the file) from the card and its figure; ``headline``
    gives a judge's headline lines per view (:func:`judgelab.bias_card.report.headline`, passed in so
    the page and ``bias_card.md`` say the same and this module does not import the markdown writer)."""
    simulated = any_true(card)
    figures = [Figure("bias card figure", figure, "Estimate and item-clustered CI per metric, lenient view; grey: "
                      "not detected.")] if figure is not None and Path(figure).is_file() else []
    overview = Section(title="Overview", key="overview", paragraphs=[settings_text(settings)], figures=figures)
    sections = [overview] + [judge_section(str(j), g, n_verdicts.get(j, 0), settings, headline)
                             for j, g in card.groupby("judge", sort=True)]
    banner = SIMULATED_BANNER if simulated else ""
    write_page(out, Page(title=f"Bias card: {title}", sections=sections, banner=banner,
                         footer="Written by judgelab audit; the same rows are in bias_card.csv."))
