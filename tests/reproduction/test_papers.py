"""Every transcribed paper value of the reproduction tables is in its paper's text.

Each row of ``judgelab/reproduction/<study>.py`` names the number as printed and the snippet
holding it: the snippet must occur verbatim in the paper (``../shared/papers/<paper>_*.txt``),
the printed number must stand in the snippet as a whole number (not inside a longer one), and
it must parse to the row's value and precision.  The study-to-paper map is the papers'
README's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from judgelab.reproduction import STUDIES, parse_printed, study_module
from tests.conftest import REPO

ROWS = [(s, i) for s in STUDIES for i in range(len(study_module(s).ROWS))]


@pytest.fixture(scope="session")
def papers() -> Path:
    """``../shared/papers`` beside the checkout (the five papers' text); skips when absent."""
    root = REPO.parent / "shared" / "papers"
    if not root.is_dir():
        pytest.skip(f"paper texts not available: place them at {root}")
    return root


def paper_text(papers: Path, paper: str) -> str:
    files = sorted(papers.glob(f"{paper}_*.txt"))
    assert len(files) == 1, f"paper {paper}: {files}"
    return files[0].read_text(encoding="utf-8")


def test_each_study_reads_the_paper_the_readme_maps_it_to(papers: Path):
    readme = (papers / "README.md").read_text(encoding="utf-8")
    for study in STUDIES:
        mod = study_module(study)
        line = next(ln for ln in readme.splitlines() if f"`{study}`" in ln)
        assert line.startswith(f"| {mod.PAPER}_"), (study, line)


@pytest.mark.parametrize(("study", "i"), ROWS, ids=[f"{s}-{i}" for s, i in ROWS])
def test_value_and_quote_are_in_the_paper(papers: Path, study: str, i: int):
    mod = study_module(study)
    row = mod.ROWS[i]
    text = paper_text(papers, mod.PAPER)
    assert row.quote in text, f"{study} row {i} ({row.cell}): quote not in paper {mod.PAPER}: {row.quote!r}"
    # the printed number stands alone in the quote (".71" is not found inside "0.710")
    pattern = r"(?<![\d.])" + re.escape(row.printed) + r"(?![\d])"
    assert re.search(pattern, row.quote), f"{study} row {i}: {row.printed!r} not a number of its quote"
    value, precision = parse_printed(row.printed)
    assert (row.value, row.precision) == (value, precision)


@pytest.mark.parametrize(("printed", "value", "precision"), [
    (".660", 0.66, 0.0005), ("+0.44", 0.44, 0.005), ("−0.12", -0.12, 0.005), ("59.1", 59.1, 0.05),
    ("-38", -38.0, 0.5), ("43,152.6", 43152.6, 0.05), ("+.40", 0.40, 0.005),
])
def test_printed_numbers_parse_with_half_a_unit_of_their_last_digit(printed, value, precision):
    v, p = parse_printed(printed)
    assert v == pytest.approx(value) and p == pytest.approx(precision)


@pytest.mark.parametrize("bad", ["", "0.7a", "1e-3", "..5", "+-1"])
def test_what_is_not_a_printed_number_is_refused(bad):
    with pytest.raises(ValueError, match="not a printed number"):
        parse_printed(bad)


def test_every_study_has_rows_and_distinct_cells():
    for study in STUDIES:
        mod = study_module(study)
        assert 4 <= len(mod.ROWS) <= 20, study  # headline numbers, not every cell
        cells = [(r.table_or_figure, r.cell) for r in mod.ROWS]
        assert len(set(cells)) == len(cells), study


@pytest.mark.parametrize("study", STUDIES)
def test_the_study_page_shows_every_row_of_the_reproduction_table(study: str):
    """docs/studies/<study>.md has a "Reproduction" section whose table names each transcribed cell
    and says what each column of the CSV holds."""
    page = (REPO / "docs" / "studies" / f"{study}.md").read_text(encoding="utf-8")
    assert "\n## Reproduction\n" in page, study
    section = page.split("\n## Reproduction\n", 1)[1]
    for row in study_module(study).ROWS:
        assert f"| {row.table_or_figure} | {row.cell} |" in section, (study, row.cell)
    from judgelab.reproduction import COLUMNS
    for col in COLUMNS:
        assert f"| `{col}` |" in section, (study, col)


def test_each_planted_row_names_a_parameter_the_simulated_panel_sets():
    """A row declared planted points at a profile parameter some judge of the default config holds
    (the row's judge's stand-in where the row has one); where the panel copies the paper's number
    itself (the B0 style and verbosity scores of paper 003's Fig. 1), the value is the paper's."""
    from judgelab.config import default_config_paths, load_config
    from judgelab.reproduction import find_judge

    cfg = load_config(*default_config_paths())
    entries = {j["name"]: j for j in cfg["judges"]}
    entries.update({d["judge"]["name"]: d["judge"] for d in cfg["rbd"]["detectors"] if isinstance(d.get("judge"), dict)})

    def lookup(entry: dict, path: str):
        node = (entry.get("options") or {}).get("profile") or {}
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    planted = [(s, r) for s in STUDIES for r in study_module(s).ROWS if r.planted]
    assert {s for s, _ in planted} == {"strategies", "uda", "rbd"}
    for study, row in planted:
        judge = find_judge(row.judges[0], entries) if len(row.judges) == 1 else None
        holders = [judge] if judge else list(entries)
        values = [lookup(entries[j], p) for j in holders for p in row.planted]
        assert any(v is not None for v in values), (study, row.cell)
        if row.planted[0] in ("biases.markdown", "biases.verbosity"):
            assert values[0] == pytest.approx(row.value), (study, row.cell, values)
