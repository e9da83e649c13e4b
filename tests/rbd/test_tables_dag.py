"""The Tables 3-5 and Fig. 6 rules end to end on a small simulated slice of the DAG: the tables the
rules write are the library's numbers on the loop's outputs (Table 3's "without" is Table 2's, the
sizes are the sized loop detectors, Table 5's label-only arm is its own loop)."""

from __future__ import annotations

import pandas as pd
import pytest

from judgelab.io import read_table
from judgelab.rbd.tables import TABLE3_COLUMNS, TABLE4_COLUMNS, TABLE5_COLUMNS
from tests.helpers.dag_slices import RBD_TABLES as TABLES
from tests.helpers.dag_slices import rbd_slice

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, data_root):
    """The rbd slice of tests/helpers/dag_slices.py (its config: ``RBD``), shared with the figure-stamps test."""
    return rbd_slice(tmp_path_factory)


def test_table_rules_write_the_tables_from_the_loop(workdir):
    out = {t: read_table(workdir / f"results/rbd/tables/{t}.csv") for t in TABLES}
    t2 = read_table(workdir / "results/rbd/loop/table2.csv")

    t3 = out["table3"]
    assert list(t3.columns[:len(TABLE3_COLUMNS)]) == TABLE3_COLUMNS
    assert set(t3["set"]) == {"llmbar_verbosity", "llmbar_bandwagon"} and set(t3["benchmark"]) == {"LLMBar"}
    assert list(dict.fromkeys(t3["detector"])) == ["sim-big", "sim-small"]  # the sized detectors
    per_judge = t3[t3["judge"] != "AVERAGE"].merge(
        t2[t2["iterations"] == 2], on=["judge", "detector", "set"], suffixes=("", "_t2"))
    assert len(per_judge) == 2 * 2 * 2
    assert (per_judge["acc_without"] - per_judge["acc_without_t2"]).abs().max() < 1e-12
    assert (per_judge["acc_with"] - per_judge["acc_with_t2"]).abs().max() < 1e-12
    assert t3["simulated"].all()

    t4 = out["table4"]
    assert list(t4.columns[:len(TABLE4_COLUMNS)]) == TABLE4_COLUMNS
    assert list(dict.fromkeys(t4["method"])) == ["Vanilla", "icl-prompt", "sim-prometheus2-8x7b",
                                                "sim-skywork-critic-70b", "Ours"]
    assert set(t4["judge"][t4["method"] == "Vanilla"]) == {"sim-gpt-4o"}  # the first evaluator by default
    assert dict(zip(t4["bias_type"], t4["metric"], strict=False))["position"] == "consistency"

    t5 = out["table5"]
    assert list(t5.columns[:len(TABLE5_COLUMNS)]) == TABLE5_COLUMNS
    assert set(t5["judge"]) == {"sim-gpt-4o"} and set(t5["detector"]) == {"sim-big"}
    big = t2[(t2["judge"] == "sim-gpt-4o") & (t2["detector"] == "sim-big") & (t2["iterations"] == 2)]
    primary = dict(zip(big["set"], big["primary_with"], strict=True))
    for r in t5.to_dict("records"):
        assert r["reasoning"] == pytest.approx(primary[r["set"]])  # the reasoning arm is Table 2's loop
    label_calls = pd.read_parquet(workdir / "results/rbd/feedback/sim-gpt-4o/calls.parquet")
    assert set(label_calls["detector"]) == {"sim-big"}
    # its re-prompts carry the label only: none is one of the reasoning loop's re-prompts
    loop_calls = pd.read_parquet(workdir / "results/rbd/loop/sim-gpt-4o/calls.parquet")
    revisions = set(label_calls.loc[label_calls["role"] == "evaluator", "key"])
    assert revisions and not revisions & set(loop_calls.loc[loop_calls["role"] == "evaluator", "key"])

    sizes = out["fig6_sizes"].set_index("size")
    assert list(sizes.index) == ["14B", "1.5B"] and (sizes["n_cells"] == 2 * 4).all()
    assert (workdir / "results/rbd/tables/table3_wide.csv").exists()
