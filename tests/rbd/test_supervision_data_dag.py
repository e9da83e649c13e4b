"""With ``rbd.supervision_data`` (the authors' released CSV) the traces come from that file, so
planning ``results/rbd/supervision/traces.parquet`` must schedule that one job: no set build,
no evaluation, no labels, no detector cases (issue #19: it scheduled all of them first)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.rbd.test_released import ROWS, write_csv
from tests.workflow.test_pipeline import copy_workflow, run_sm

pytestmark = pytest.mark.slow

TRACES = "results/rbd/supervision/traces.parquet"


def _planned_rules(text: str) -> dict[str, int]:
    """``rule -> count`` from the job-stats table a dry run prints."""
    block = text.split("Job stats:", 1)[1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", block, re.MULTILINE)
            if m.group(1) != "total"}


def test_supervision_data_plans_only_the_csv_read(tmp_path: Path, data_root: Path):
    wd = copy_workflow(tmp_path / "wf")
    # the released CSV as a local file: it is the job's only input (a change to it reruns the job)
    write_csv(wd / "released-train.csv", ROWS)
    (wd / "sup.yaml").write_text("rbd:\n  supervision_data: released-train.csv\n")
    proc = run_sm(wd, "-n", "--configfile", "sup.yaml", "--", TRACES)
    planned = _planned_rules(proc.stdout + proc.stderr)
    assert planned == {"rbd_supervision": 1}, planned

    # without it the teacher annotates the training tuples, which need the sets, evaluations and labels
    proc = run_sm(wd, "-n", "--", TRACES)
    planned = _planned_rules(proc.stdout + proc.stderr)
    assert {"rbd_supervision", "rbd_cases", "rbd_labels", "rbd_set"} <= set(planned), planned


def test_supervision_data_by_data_root_name_needs_no_input(tmp_path: Path, data_root: Path):
    """A name resolved under the data root at run time (not a local path) adds no input either."""
    wd = copy_workflow(tmp_path / "wf")
    (wd / "sup.yaml").write_text("rbd:\n  supervision_data: rbd/RBD-ReasoningSupervision/train.csv\n")
    proc = run_sm(wd, "-n", "--configfile", "sup.yaml", "--", TRACES)
    assert _planned_rules(proc.stdout + proc.stderr) == {"rbd_supervision": 1}


def test_supervision_data_needs_no_real_teacher(tmp_path: Path, data_root: Path):
    """With real judges configured, the (simulated) rbd.teacher role is no reason to stop: the CSV
    replaces the teacher, so the job asks none (its provenance names none either)."""
    wd = copy_workflow(tmp_path / "wf")
    write_csv(wd / "released-train.csv", ROWS)
    (wd / "sup.yaml").write_text(
        "judges:\n  - {name: real-judge, backend: openai, model: gpt-4o-mini, options: {api_key_env: null}}\n"
        "rbd:\n  supervision_data: released-train.csv\n")
    proc = run_sm(wd, "-n", "--configfile", "sup.yaml", "--", TRACES)
    assert _planned_rules(proc.stdout + proc.stderr) == {"rbd_supervision": 1}
