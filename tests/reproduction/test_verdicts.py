"""The verdict rule and the provenance of reproduction rows.

* A row with provenance ``planted`` is never ``reproduced``, whatever this run's value and
  interval (hypothesis over values, intervals, precisions; and end to end through
  :func:`build_table` with a run value equal to the paper's).
* The interval's ends count as inside; the paper's precision is a closed band; one step outside
  either is ``not reproduced``.
* Provenance follows the judges' backends and the tables' ``simulated`` flags: the same
  strategies table written (with the study's provenance columns) for a replayed judge says
  ``replayed``, for a real one ``real``, for the simulated panel ``planted`` on a row whose
  profile parameter was set from the paper and ``simulated`` on one that was not.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.config import default_config_paths, load_config
from judgelab.io import write_table
from judgelab.reproduction import (
    COLUMN_DOCS,
    COLUMNS,
    PROVENANCES,
    VERDICTS,
    PaperValue,
    RunValue,
    assign_verdict,
    build_table,
    reproduce,
    resolve_provenance,
)
from judgelab.reproduction import strategies as strat_repro
from judgelab.workflow import provenance

floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(-2, 2))


@settings(max_examples=300, deadline=None)
@given(paper=st.floats(-100, 100), precision=st.floats(0, 10), value=floats, lo=floats, hi=floats,
       planted=st.lists(st.sampled_from(["biases.markdown", "label_recall"]), max_size=2),
       judges_match=st.sampled_from(["", "other judges"]), incomparable=st.sampled_from(["", "another size"]))
def test_a_planted_row_is_never_reproduced(paper, precision, value, lo, hi, planted, judges_match, incomparable):
    run = RunValue(value=value, ci_low=lo, ci_high=hi, incomparable=incomparable)
    verdict, reason = assign_verdict("planted", paper, precision, run, planted, judges_match)
    assert verdict == "not comparable"
    assert reason.startswith("planted from the paper") and "agreement is built in" in reason


@settings(max_examples=300, deadline=None)
@given(prov=st.sampled_from(PROVENANCES), paper=st.floats(-100, 100), precision=st.floats(0, 10), value=floats,
       lo=floats, hi=floats)
def test_every_verdict_is_one_of_three_with_a_reason(prov, paper, precision, value, lo, hi):
    verdict, reason = assign_verdict(prov, paper, precision, RunValue(value=value, ci_low=lo, ci_high=hi))
    assert verdict in VERDICTS and reason
    if prov == "simulated" or not math.isfinite(value):
        assert verdict == "not comparable"


@pytest.mark.parametrize("prov", ["real", "replayed"])
def test_interval_ends_are_inside_and_one_step_beyond_is_not(prov):
    paper, prec = 0.58, 0.0005
    # the paper value on either end of the interval; the run value far from it (precision does not help)
    for lo, hi in ((0.58, 0.70), (0.40, 0.58)):
        v, why = assign_verdict(prov, paper, prec, RunValue(value=0.64 if lo == paper else 0.49, ci_low=lo, ci_high=hi))
        assert v == "reproduced" and "inside" in why, why
    v, why = assign_verdict(prov, paper, prec, RunValue(value=0.64, ci_low=np.nextafter(0.58, 1), ci_high=0.70))
    assert v == "not reproduced" and "outside" in why, why
    v, _ = assign_verdict(prov, paper, prec, RunValue(value=0.50, ci_low=0.40, ci_high=np.nextafter(0.58, 0)))
    assert v == "not reproduced"


def test_without_an_interval_the_papers_precision_decides_closed_at_its_edge():
    paper, prec = 59.1, 0.05
    assert assign_verdict("real", paper, prec, RunValue(value=59.15))[0] == "reproduced"
    assert assign_verdict("real", paper, prec, RunValue(value=59.05))[0] == "reproduced"
    assert assign_verdict("real", paper, prec, RunValue(value=59.16))[0] == "not reproduced"
    assert assign_verdict("real", paper, prec, RunValue(value=59.04))[0] == "not reproduced"
    # precision also rescues a run value just outside its own interval's paper side
    v, why = assign_verdict("real", 0.5, 0.005, RunValue(value=0.503, ci_low=0.501, ci_high=0.6))
    assert v == "reproduced" and "outside" in why and "within ±0.005" in why


def test_what_makes_a_row_not_comparable_is_named():
    inside = RunValue(value=0.6, ci_low=0.5, ci_high=0.7)
    assert assign_verdict("real", 0.6, 0.005, inside, judges_match="other judges than the paper's")[1].startswith(
        "other judges than the paper's")
    v, why = assign_verdict("real", 0.6, 0.005, RunValue(value=0.6, incomparable="48 mt_bench responses"))
    assert v == "not comparable" and why.startswith("48 mt_bench responses")
    v, why = assign_verdict("real", 0.6, 0.005, RunValue(missing="no judge standing for gpt-4o"))
    assert v == "not comparable" and "no judge standing for gpt-4o" in why
    v, why = assign_verdict("simulated", 0.6, 0.005, inside)
    assert v == "not comparable" and why.startswith("simulated judges stand in")
    with pytest.raises(ValueError, match="unknown provenance 'sim'"):
        assign_verdict("sim", 0.6, 0.005, inside)


def test_columns_are_documented_in_order():
    assert list(COLUMN_DOCS) == list(COLUMNS)


# -- provenance --------------------------------------------------------------------------
REPLAY = {"name": "replay-gpt-4o", "backend": "replay", "model": "gpt-4o", "family": "openai",
          "options": {"source": "llmbar", "dataset": "llmbar_natural", "prompt_template": "output_ab",
                      "path": "x.json"}}
REAL = {"name": "gpt-4o", "backend": "openai", "model": "gpt-4o", "family": "openai",
        "options": {"api_key_env": None}}


def simulated_panel() -> dict[str, dict]:
    cfg = load_config(*default_config_paths())
    return {j["name"]: j for j in cfg["judges"]}


def agreement_table(path: Path, judge: dict, agreement: float) -> None:
    """tables/agreement.csv as the study writes it: its rows, with the provenance columns of the judge."""
    df = pd.DataFrame([{"dataset": ds, "judge": judge["name"], "strategy": s, "n": n, "agreement": agreement,
                        "ci_low": agreement - 0.05, "ci_high": agreement + 0.05}
                       for ds, n in (("mtbench", 400), ("llmbar", 200)) for s in ("B0", "S5", "S8")])
    write_table(df, path, provenance=provenance("h", 1, [judge]))


def mcnemar_table(path: Path, judge: dict, delta_pp: float) -> None:
    df = pd.DataFrame([{"dataset": "mtbench", "judge": judge["name"], "strategy": "S8", "n": 400,
                        "delta_pp": delta_pp}])
    write_table(df, path, provenance=provenance("h", 1, [judge]))


def _rows(tmp_path: Path, judge: dict, entries: dict, agreement: float = 0.58, delta: float = 11.5) -> pd.DataFrame:
    (tmp_path / "tables").mkdir(exist_ok=True)
    agreement_table(tmp_path / "tables" / "agreement.csv", judge, agreement)
    mcnemar_table(tmp_path / "tables" / "mcnemar.csv", judge, delta)
    files = [tmp_path / "tables" / f for f in ("agreement.csv", "mcnemar.csv")]
    table = reproduce("strategies", tmp_path, files, entries)
    return table.set_index("cell")


CLAUDE_B0 = "MT-Bench agreement, B0, Claude Sonnet 4"
CLAUDE_S8 = "MT-Bench gain of S8 over B0 (pp), Claude Sonnet 4"


def test_a_replayed_judge_makes_replayed_rows(tmp_path):
    judge = {**REPLAY, "name": "replay-claude-sonnet-4"}
    t = _rows(tmp_path, judge, {judge["name"]: judge})
    assert t.loc[CLAUDE_B0, "provenance"] == "replayed" and t.loc[CLAUDE_B0, "verdict"] == "reproduced"
    # the planted declaration does not apply to a replayed judge: its gain is evidence (within precision)
    assert t.loc[CLAUDE_S8, "provenance"] == "replayed" and t.loc[CLAUDE_S8, "verdict"] == "reproduced"


def test_a_real_judge_makes_real_rows_and_other_judges_are_not_comparable(tmp_path):
    judge = {**REAL, "name": "claude-sonnet-4"}
    t = _rows(tmp_path, judge, {judge["name"]: judge}, agreement=0.70)
    assert t.loc[CLAUDE_B0, "provenance"] == "real" and t.loc[CLAUDE_B0, "verdict"] == "not reproduced"
    other = _rows(tmp_path, REAL, {"gpt-4o": REAL})  # the table holds gpt-4o only: no Claude row
    assert other.loc[CLAUDE_B0, "verdict"] == "not comparable"
    assert "no judge standing for claude-sonnet-4" in other.loc[CLAUDE_B0, "reason"]


def test_the_simulated_panel_makes_planted_and_simulated_rows(tmp_path):
    panel = simulated_panel()
    t = _rows(tmp_path, panel["sim-claude-sonnet-4"], panel)
    # B0 agreement is not set from the paper; the S8 gain is (prompt_styles.cot_rubric.competence_delta)
    assert t.loc[CLAUDE_B0, "provenance"] == "simulated" and t.loc[CLAUDE_B0, "verdict"] == "not comparable"
    assert t.loc[CLAUDE_S8, "provenance"] == "planted" and t.loc[CLAUDE_S8, "verdict"] == "not comparable"
    assert "agreement is built in" in t.loc[CLAUDE_S8, "reason"]


def test_planted_needs_the_parameter_in_the_simulated_profile():
    row = next(r for r in strat_repro.ROWS if r.planted)
    panel = simulated_panel()
    judge = "sim-claude-sonnet-4"
    stripped = {**panel[judge], "options": {"profile": {"competence": 2.0, "biases": {}}}}
    run = RunValue(value=0.1, judges=(judge,))
    assert resolve_provenance(row, run, panel) == "planted"
    assert resolve_provenance(row, run, {judge: stripped}) == "simulated"
    # a role judge the config does not list counts by the table's flag
    assert resolve_provenance(row, RunValue(value=0.1, judges=("role",), table_simulated=True), {}) == "planted"
    assert resolve_provenance(row, RunValue(value=0.1, judges=("role",), table_simulated=False), {}) == "real"
    # a table flag overrides a backend that says real
    assert resolve_provenance(row, RunValue(value=0.1, judges=("gpt-4o",), table_simulated=True),
                              {"gpt-4o": REAL}) == "planted"
    unplanted = PaperValue("T", "c", "0.5", "r", "q 0.5", "bias", {}, ("gpt-4o",))
    assert resolve_provenance(unplanted, RunValue(judges=("sim-claude-sonnet-4",)), panel) == "simulated"
    assert resolve_provenance(unplanted, RunValue(judges=("gpt-4o", "replay-gpt-4o")),
                              {"gpt-4o": REAL, "replay-gpt-4o": REPLAY}) == "replayed"


def test_build_table_end_to_end_never_reproduces_a_planted_row():
    rows = [PaperValue("Fig. 1", "planted", "+0.76", "r", "q +0.76", "x", {}, ("gemini-2.5-pro",),
                       ("biases.markdown",)),
            PaperValue("Fig. 1", "failing", "0.5", "r", "q 0.5", "x", {}, ("gemini-2.5-pro",))]
    panel = simulated_panel()

    def extract(row: PaperValue) -> RunValue:
        if row.cell == "failing":
            raise KeyError("agreement")
        return RunValue(value=0.76, ci_low=0.7, ci_high=0.8, judges=("sim-gemini-2.5-pro",))

    t = build_table("strategies", "003", rows, extract, panel)
    assert list(t.columns) == list(COLUMNS)
    assert t["provenance"].tolist() == ["planted", "simulated"]
    assert t["verdict"].tolist() == ["not comparable", "not comparable"]
    assert "inside" in t["reason"].iloc[0]
    assert "KeyError" in t["reason"].iloc[1] and math.isnan(t["run_value"].iloc[1])


def test_the_writer_puts_the_documented_columns_first_then_the_pipelines_provenance(tmp_path):
    from judgelab.reproduction import write_reproduction

    panel = simulated_panel()
    _rows(tmp_path, panel["sim-claude-sonnet-4"], panel)
    table = reproduce("strategies", tmp_path, [tmp_path / "tables" / "agreement.csv"], panel)
    out = tmp_path / "reproduction.csv"
    write_reproduction(table, out, provenance("h", 7, list(panel.values())))
    back = pd.read_csv(out, dtype={"paper": str})
    assert list(back.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert {"config_hash", "pipeline_seed", "judge_ids", "judge_seeds", "simulated"} <= set(back.columns)
    assert back["simulated"].all() and (back["pipeline_seed"] == 7).all() and (back["paper"] == "003").all()
    assert set(back["provenance"]) <= set(PROVENANCES) and set(back["verdict"]) <= set(VERDICTS)
    assert len(back) == len(strat_repro.ROWS)
