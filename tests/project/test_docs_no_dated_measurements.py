"""User guides hold no dated measurement: timings, scores and run dates live on the benchmark pages.

A guide describes the software as it is; a figure measured on one machine on one day goes stale
the day the code changes, so it belongs on ``docs/benchmarks*.md`` with its command, machine and
date (``docs/benchmarks-guides.md`` holds those the guides quote, one section per guide).  A date
is the giveaway of such a figure, so no page of README.md or docs/ other than the benchmark pages
may carry one.  A date inside an identifier (a model name such as ``o3-mini-2025-01-31``) is a
name, not a measurement, and is allowed: the pattern requires the date not to follow a letter,
digit, ``_`` or ``-``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

DATE = re.compile(r"(^|[^A-Za-z0-9_-])20[0-9]{2}-[0-9]{2}(-[0-9]{2})?")
GUIDES_BENCHMARKS = "benchmarks-guides.md"


def is_benchmark_page(page: Path) -> bool:
    """A page under docs/ named ``benchmarks*.md``: the one place measurements with dates live."""
    return page.parent == REPO / "docs" and page.name.startswith("benchmarks")


USER_PAGES = [REPO / "README.md", *(p for p in sorted((REPO / "docs").rglob("*.md")) if not is_benchmark_page(p))]


def dated_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line holding a date that is not part of an identifier."""
    return [(number, line) for number, line in enumerate(text.splitlines(), start=1) if DATE.search(line)]


def test_the_date_pattern_finds_measurement_dates_and_spares_model_names():
    # why: the page test below is only as good as this pattern; a pattern that found nothing
    # would pass every page.
    assert dated_lines("measured on a 2-core CPU machine, 2026-11-22.") == [
        (1, "measured on a 2-core CPU machine, 2026-11-22.")]
    assert [n for n, _ in dated_lines("ok\n| 464 s wall | 2026-11-25 |\nthe same way, 2026-11-24/25 (")] == [2, 3]
    assert [n for n, _ in dated_lines("2026-11\nin 2026-11")] == [1, 2]
    for name in ("o3-mini-2025-01-31", "gpt-4o-2024-08-06", "claude_2024-10-22", "v2025-01-31", "x12026-11-22"):
        assert dated_lines(f"judge `{name}` answers") == [], name


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_user_page_has_no_dated_measurement(page: Path):
    hits = dated_lines(page.read_text(encoding="utf-8"))
    where = "\n".join(f"  {page.relative_to(REPO)}:{number}: {line.strip()}" for number, line in hits)
    assert not hits, (
        f"{page.relative_to(REPO)} holds a date outside an identifier (a dated measurement?):\n{where}\n"
        f"Move the measurement (figures, command, machine, date) to docs/{GUIDES_BENCHMARKS} under the "
        "page's section and leave a sentence linking to it.")


def nav_pages(node: object) -> list[str]:
    """Every page file named anywhere in mkdocs' nested ``nav`` list."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in nav_pages(value)]
    return []


def test_the_guides_benchmark_page_is_in_the_nav_and_the_readme():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = nav_pages(config["nav"])
    assert GUIDES_BENCHMARKS in pages, f"mkdocs.yml nav does not list {GUIDES_BENCHMARKS}: {pages}"
    positions = [i for i, p in enumerate(pages) if p.startswith("benchmarks")]
    assert positions == list(range(positions[0], positions[0] + len(positions))), (
        f"the benchmark pages are not side by side in the nav: {pages}")
    assert f"(docs/{GUIDES_BENCHMARKS})" in (REPO / "README.md").read_text(encoding="utf-8"), (
        f"README.md's table of docs pages does not link docs/{GUIDES_BENCHMARKS}")


def test_every_link_into_the_guides_benchmark_page_names_a_section_it_has():
    # why: mkdocs --strict checks anchors too, but tests/project/test_docs_site.py skips without mkdocs;
    # this keeps the guides' "measured times" links whole on any machine.
    page = (REPO / "docs" / GUIDES_BENCHMARKS).read_text(encoding="utf-8")
    anchors = set(re.findall(r"^#+ .*\{#([\w-]+)\}\s*$", page, flags=re.M))
    links = [(source, anchor) for source in USER_PAGES
             for anchor in re.findall(rf"{re.escape(GUIDES_BENCHMARKS)}#([\w-]+)", source.read_text(encoding="utf-8"))]
    assert links, "no guide links to a section of the guides' benchmark page"
    missing = [f"{source.relative_to(REPO)} -> #{anchor}" for source, anchor in links if anchor not in anchors]
    assert not missing, f"links to sections {GUIDES_BENCHMARKS} does not have: {missing}"
