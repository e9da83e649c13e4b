"""Strategies on the user's own gold-labelled pair file: README's "On your own data" command.

Runs ``config/examples/strategies-own-data.yaml`` (the shipped 12-pair example) through the DAG
in a scratch copy, with two panel judges of the simulated set standing in for the user's judges
(the README command uses the real CPU judges of ``config/judges/local-cpu.yaml``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.workflow.test_pipeline import run_sm, workdir  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow

TWO_JUDGES = "replay_judges: []\nstrategies:\n  judges: [sim-gpt-4o, sim-claude-sonnet-4]\n"


def test_own_pairs_file_runs_alone_with_the_configured_family(workdir: Path):  # noqa: F811
    (workdir / "two.yaml").write_text(TWO_JUDGES)
    run_sm(workdir, "results/strategies/tables/agreement.csv", "results/strategies/tables/mcnemar.csv", "-q",
           "--configfile", "config/examples/strategies-own-data.yaml", "two.yaml")
    agr = pd.read_csv(workdir / "results/strategies/tables/agreement.csv")
    panel = agr[agr["judge"] != "gold"]
    assert set(panel["dataset"]) == {"mine"}  # the default sets are not run
    assert set(panel["strategy"]) == {"B0", "S1", "S4", "S5"} and set(panel["n"]) == {12}
    gold = agr[agr["judge"] == "gold"].iloc[0]
    assert (gold["n_A"], gold["n_B"]) == (6, 6)
    mcn = pd.read_csv(workdir / "results/strategies/tables/mcnemar.csv")
    assert set(mcn["m"]) == {2 * 3} and mcn["in_family"].all()
    assert not (workdir / "results/strategies/pairs/mtbench.parquet").exists()


def test_unknown_run_dataset_names_the_key(workdir: Path):  # noqa: F811
    (workdir / "bad.yaml").write_text("strategies:\n  run_datasets: [mine]\n")
    proc = run_sm(workdir, "-n", "--configfile", "bad.yaml", check=False)
    assert proc.returncode != 0
    assert "strategies/run_datasets: mine not in strategies/datasets" in proc.stdout + proc.stderr
