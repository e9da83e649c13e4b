"""One self-contained HTML page of titled sections, each a few paragraphs, tables and figures.

A reader opens one file, on any machine, offline: the style sheet is inline, figures are
inline base64 PNG (``data:`` URIs), there is no script and nothing is fetched from the network.
Every name and value that comes from data (judge names, metric names, reasons, file names) is
HTML-escaped here, once, so a caller passes plain text and cannot forget it.

Used by ``judgelab audit`` (one section per judge of the bias card) and meant for every command
that writes a folder of tables and figures (``judgelab leaderboard``): build :class:`Section`
objects and call :func:`write_page`.

The layout is made to be read, not scrolled through: a page opens with its summary section (the
findings in sentences and the one figure), and a section marked ``collapsed`` is a closed
``<details>`` element whose title (and one-line ``lead``) is all a reader sees until they open
it.  Every table sits in its own horizontally scrolling box, so a wide table never widens the
page (the page fits a 1,280 px window; ``tests/plots/test_report_layout.py`` measures it in Chromium).

Why by hand: the page is a list of sections of tables and PNGs.  ``pandas.DataFrame.to_html``
writes a table but no page, and cannot mark a cell by its value (a status); templating libraries
(jinja2) would add a template language for what is twenty lines of escaped f-strings.
"""

from __future__ import annotations

import base64
import html
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgelab.io import write_text

#: the banner of a page built from simulated verdicts (the figures carry the same stamp)
SIMULATED_BANNER = "SIMULATED JUDGES - these verdicts come from the simulated panel, not a real model."

#: cell classes by status value: a reader scans a column of statuses by colour, the word stays
STATUS_CLASSES: Mapping[str, str] = {
    "detected": "st-detected",
    "not detected": "st-not-detected",
    "underpowered": "st-underpowered",
    "not estimable": "st-not-estimable",
    "not identified": "st-not-identified",
    "descriptive": "st-descriptive",
}

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fff}
header{background:#243b53;color:#fff;padding:1rem 2rem}
header h1{margin:0;font-size:1.5rem}
main{padding:1rem 2rem 3rem}
nav ul{columns:3;list-style:none;padding:0}
section{border-top:1px solid #d9e2ec;margin-top:1.5rem;padding-top:.5rem}
h2{font-size:1.25rem;margin:.5rem 0}
h3{font-size:1rem;margin:1rem 0 .4rem}
.banner{background:#fce8e6;border:2px solid #c5221f;color:#8a1c17;font-weight:bold;padding:.6rem 1rem;margin:1rem 0}
table{border-collapse:collapse;font-size:.82rem;margin:.3rem 0 1rem}
th,td{border:1px solid #d9e2ec;padding:.2rem .45rem;text-align:left;vertical-align:top}
th{background:#f0f4f8}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.st-detected{background:#fde2e1;font-weight:bold}
.st-underpowered{background:#fff4ce}
.st-not-estimable,.st-not-identified{background:#eceff1;color:#52606d}
.st-descriptive{color:#334e68}
.st-tested{background:#e3ecf7}
.scroll{overflow-x:auto;max-width:100%;margin:.3rem 0 1rem}
.scroll table{margin:0}
td{max-width:28rem;overflow-wrap:anywhere}
p,li,h2,h3,summary{overflow-wrap:anywhere}
details>summary{cursor:pointer;padding:.2rem 0}
details>summary h2{display:inline;font-size:1.1rem}
.lead{color:#52606d;font-size:.9rem;margin-left:.5rem}
.summary ul{margin:.2rem 0 .8rem;padding-left:1.3rem}
.summary h3{margin:.8rem 0 .2rem}
figure{margin:.5rem 0 1rem}
figure img{max-width:100%;height:auto;border:1px solid #d9e2ec}
figcaption{font-size:.85rem;color:#52606d}
footer{font-size:.8rem;color:#52606d;padding:1rem 2rem}
"""


@dataclass(frozen=True)
class Table:
    """A table: its rows as they are shown; ``status_column`` cells get their status's class."""

    title: str
    frame: pd.DataFrame
    status_column: str | None = "status"
    caption: str = ""
    #: per row, a class for its status cell that replaces the one :data:`STATUS_CLASSES` gives
    #: (None: keep that one); the audit gives an accuracy row tested against chance the neutral
    #: ``st-tested`` so that only a bias reads in the colour of a detected bias
    status_class: Sequence[str | None] = ()


@dataclass(frozen=True)
class Figure:
    """A PNG figure (bytes, or a path read when the page is built), inlined as base64."""

    title: str
    png: bytes | str | Path
    caption: str = ""

    def data(self) -> bytes:
        return self.png if isinstance(self.png, bytes) else Path(self.png).read_bytes()


@dataclass(frozen=True)
class Bullets:
    """A titled list of sentences (the findings of one judge in a summary)."""

    title: str
    items: Sequence[str]


@dataclass(frozen=True)
class Section:
    """One titled section: paragraphs (plain text), then bullet lists, tables, figures.

    ``collapsed``: the section is a closed ``<details>`` element (a reader opens it by its title
    and ``lead``); ``summary``: the section is the page's summary (class ``summary``)."""

    title: str
    paragraphs: Sequence[str] = ()
    tables: Sequence[Table] = ()
    figures: Sequence[Figure] = ()
    key: str = ""           # what the section is about (a judge's name): ``data-key`` for tests and links
    bullets: Sequence[Bullets] = ()
    collapsed: bool = False
    lead: str = ""          # one line beside the title of a collapsed section
    summary: bool = False

    def anchor(self, index: int) -> str:
        return f"s{index}-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", self.key or self.title).strip("-")[:60] or "x")


@dataclass(frozen=True)
class Page:
    title: str
    sections: Sequence[Section]
    banner: str = ""        # shown first, in red (e.g. "SIMULATED JUDGES")
    intro: Sequence[str] = ()
    footer: str = ""
    meta: Mapping[str, str] = field(default_factory=dict)


def esc(value: Any) -> str:
    """Text for HTML: escaped, quotes included (safe in attributes too); NaN and None as ``n/a``."""
    return html.escape(fmt(value), quote=True)


def fmt(value: Any) -> str:
    """A cell's text: floats to 3 significant decimals, missing values as ``n/a``."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        return f"{value:.3f}" if abs(value) < 1e4 else f"{value:.4g}"
    try:
        if pd.isna(value):
            return "n/a"
    except (TypeError, ValueError):
        pass
    return str(value)


def _is_num(value: Any) -> bool:
    return isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_))


def render_table(t: Table) -> str:
    """The table in its own scrolling box (``div.scroll``): however many columns it has, the page
    keeps the window's width and only the box scrolls sideways."""
    cols = [str(c) for c in t.frame.columns]
    if t.status_class and len(t.status_class) != len(t.frame):
        raise ValueError(f"table {t.title!r}: {len(t.status_class)} status classes for {len(t.frame)} rows")
    out = [f"<h3>{esc(t.title)}</h3>" if t.title else "", '<div class="scroll"><table>']
    if t.caption:
        out.append(f"<caption>{esc(t.caption)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols) + "</tr></thead><tbody>")
    for i, row in enumerate(t.frame.itertuples(index=False, name=None)):
        cells = []
        override = t.status_class[i] if t.status_class else None
        for c, v in zip(cols, row, strict=True):
            classes = []
            if _is_num(v):
                classes.append("num")
            if c == t.status_column and override:
                classes.append(override)
            elif c == t.status_column and isinstance(v, str) and v in STATUS_CLASSES:
                classes.append(STATUS_CLASSES[v])
            attr = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{attr}>{esc(v)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def render_figure(f: Figure) -> str:
    b64 = base64.b64encode(f.data()).decode("ascii")
    cap = f"<figcaption>{esc(f.caption)}</figcaption>" if f.caption else ""
    return (f'<figure><img alt="{esc(f.title)}" src="data:image/png;base64,{b64}">'
            f"{cap}</figure>")


def render_bullets(b: Bullets) -> str:
    head = f"<h3>{esc(b.title)}</h3>" if b.title else ""
    return head + "<ul>" + "".join(f"<li>{esc(item)}</li>" for item in b.items) + "</ul>"


def render_section(s: Section, index: int) -> str:
    cls = ' class="summary"' if s.summary else ""
    out = [f'<section id="{s.anchor(index)}" data-key="{esc(s.key or s.title)}"{cls}>']
    if s.collapsed:
        lead = f'<span class="lead">{esc(s.lead)}</span>' if s.lead else ""
        out.append(f"<details><summary><h2>{esc(s.title)}</h2>{lead}</summary>")
    else:
        out.append(f"<h2>{esc(s.title)}</h2>")
    out += [f"<p>{esc(p)}</p>" for p in s.paragraphs]
    out += [render_bullets(b) for b in s.bullets]
    out += [render_table(t) for t in s.tables]
    out += [render_figure(f) for f in s.figures]
    if s.collapsed:
        out.append("</details>")
    out.append("</section>")
    return "\n".join(out)


def render_page(page: Page) -> str:
    """The whole page as one string (UTF-8, no external reference)."""
    meta = "".join(f'<meta name="{esc(k)}" content="{esc(v)}">' for k, v in page.meta.items())
    nav = "".join(f'<li><a href="#{s.anchor(i)}">{esc(s.title)}</a></li>' for i, s in enumerate(page.sections))
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">', meta,
             # nothing may be fetched: no default favicon request either
             '<link rel="icon" href="data:,">',
             f"<title>{esc(page.title)}</title><style>{CSS}</style></head><body>",
             f"<header><h1>{esc(page.title)}</h1></header><main>"]
    if page.banner:
        parts.append(f'<div class="banner">{esc(page.banner)}</div>')
    parts += [f"<p>{esc(p)}</p>" for p in page.intro]
    rendered = [render_section(s, i) for i, s in enumerate(page.sections)]
    # a summary stays the first thing on the page; the table of contents follows it
    lead = 1 if page.sections and page.sections[0].summary else 0
    parts += rendered[:lead]
    if len(page.sections) > 1:
        parts.append(f"<nav><ul>{nav}</ul></nav>")
    parts += rendered[lead:]
    parts.append("</main>")
    if page.footer:
        parts.append(f"<footer>{esc(page.footer)}</footer>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_page(path: str | Path, page: Page) -> None:
    """Write :func:`render_page` to ``path`` (atomically, as every judgelab output)."""
    write_text(path, render_page(page))

