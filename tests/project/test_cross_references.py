"""Every pointer from code and config to the docs resolves: a ``docs/<page>.md`` named in the package,
the config, the rules, the workflow scripts, the scripts or the benchmarks exists, a section quoted
beside it (``docs/x.md, "Section"``) is a heading of that page, and nothing points to a README section
(README.md holds the two fresh-machine commands and a map of the docs, not the guides)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*sorted((ROOT / "judgelab").rglob("*.py")), *sorted((ROOT / "config").rglob("*.yaml")),
           *sorted((ROOT / "rules").glob("*.smk")), ROOT / "Snakefile", *sorted((ROOT / "workflow_scripts").glob("*.py")),
           *sorted((ROOT / "scripts").glob("*")), *sorted((ROOT / "benchmarks").glob("*.py"))]
DOC_REF = re.compile(r"docs/([A-Za-z0-9_/-]+\.md)(?:,\s*\"([^\"]+)\")?")
README_SECTION = re.compile(r"README[^\n\"]{0,20}\"([^\"]+)\"")


def _headings(page: Path) -> set[str]:
    return {m.group(1).strip().strip("`") for m in re.finditer(r"^#{1,6}\s+(.+)$", page.read_text(), re.M)}


def _references() -> list[tuple[str, str, str]]:
    out = []
    for src in SOURCES:
        if not src.is_file():
            continue
        text = src.read_text(errors="replace")
        for m in DOC_REF.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            # a section quoted across a wrapped comment reads as one line
            section = re.sub(r"\s*\n\s*#*\s*", " ", m.group(2) or "")
            out.append((f"{src.relative_to(ROOT)}:{line}", m.group(1), section))
    return out


def test_the_sources_hold_doc_pointers_to_check():
    refs = _references()
    assert len(refs) >= 15, refs  # the config's and the studies' pointers at least
    assert any(section for _, _, section in refs)


@pytest.mark.parametrize(("where", "page", "section"), _references(), ids=lambda x: str(x)[:60])
def test_each_docs_pointer_resolves(where, page, section):
    path = ROOT / "docs" / page
    assert path.is_file(), f"{where}: docs/{page} does not exist"
    if section:
        assert section in _headings(path), f"{where}: docs/{page} has no heading {section!r}"


def test_nothing_points_to_a_readme_section():
    bad = []
    for src in SOURCES:
        if src.is_file():
            text = src.read_text(errors="replace")
            bad += [f"{src.relative_to(ROOT)}: README \"{m.group(1)}\"" for m in README_SECTION.finditer(text)]
    assert not bad, bad
