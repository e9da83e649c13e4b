"""``snakemake --report`` renders every caption of ``report/*.rst`` without a reStructuredText error.

Captions are rendered by Snakemake only for outputs that exist, so a study that no test runs
would hide a broken caption (``|b - c|`` in a formula is a substitution reference to docutils).
The slow test builds the report of the whole default DAG without running it: the DAG's outputs
are listed by ``snakemake --summary`` and written as empty stand-ins, then ``--report`` renders
the caption of every output marked for the report (about a minute, no job runs).  The fast test
renders each file the way Snakemake does (jinja2, then docutils) and reads docutils' messages.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pytest
from docutils.core import publish_parts

from tests.conftest import REPO
from tests.workflow.test_pipeline import copy_workflow, run_sm

CAPTIONS = sorted((REPO / "report").glob("*.rst"))


class _Value(jinja2.ChainableUndefined):
    """``{{ snakemake.wildcards.x }}`` and the like: a word, as a real job's value would be."""

    def __str__(self) -> str:
        return "value"


def render_caption(text: str) -> str:
    """Snakemake's caption path (``snakemake.report.FileRecord.render``): jinja2, then docutils html."""
    body = jinja2.Environment(undefined=_Value).from_string(text).render()
    return publish_parts(body, writer_name="html",
                         settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": False})["body"]


@pytest.mark.parametrize("path", CAPTIONS, ids=lambda p: p.name)
def test_caption_renders_without_docutils_messages(path: Path):
    html = render_caption(path.read_text(encoding="utf-8"))
    assert "system-message" not in html, f"{path.name}: {re.sub(r'<[^>]+>', ' ', html)[:600]}"


def test_caption_check_sees_a_substitution_error():
    assert "system-message" in render_caption("chi2 = (|b - c| - 1)^2 / (b + c)")


def _opening(path: Path) -> str:
    """The first words of a caption, up to its first markup character."""
    return re.split(r"[`*|{\\'\"(:]", path.read_text(encoding="utf-8").replace("\n", " "))[0][:40]


@pytest.mark.slow
def test_report_of_the_default_dag_has_no_rst_error(tmp_path: Path, data_root: Path):
    wd = copy_workflow(tmp_path / "wf")
    summary = run_sm(wd, "-n", "--summary").stdout.splitlines()
    outputs = [line.split("\t")[0] for line in summary[1:] if "\t" in line]
    assert len(outputs) > 100
    for out in outputs:
        (wd / out).parent.mkdir(parents=True, exist_ok=True)
        (wd / out).touch()
    proc = run_sm(wd, "--report", "report.html")
    assert "Report created" in proc.stdout + proc.stderr
    text = (wd / "report.html").read_text(encoding="utf-8", errors="replace")
    assert "System Message" not in text and "problematic" not in text, (
        re.findall(r"System Message.{0,300}", text)[:3])
    # the report really rendered the studies' captions: the opening words of nearly every file
    rendered = [p.name for p in CAPTIONS if _opening(p) in text]
    assert len(rendered) >= len(CAPTIONS) - 5, sorted({p.name for p in CAPTIONS} - set(rendered))
    for phrase in ("McNemar's test with continuity correction", "Bias card of every judge in log set"):
        assert phrase in text, phrase
