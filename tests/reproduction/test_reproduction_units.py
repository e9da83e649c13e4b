"""The shared parts of the reproduction tables (``judgelab/reproduction/__init__.py``), unit by unit.

* Judge keys: ``sim-`` and ``replay-`` prefixes dropped, case ignored; a lookup gives the same run judge
  whatever the order of the names.
* A judge's kind comes from its backend's traits.
* Provenance: the value's judges decide (all configured judges when it names none); a simulated table
  of judges the config does not know is planted only on a row declaring a planted parameter.
* The verdict's reason states the interval, the distance and the precision in four significant digits,
  and what is missing; the precision band has a 1e-12 tolerance for binary rounding, no more.
* ``build_table`` turns the four kinds of a missing table or cell into a row without a value, and lets
  any other error through; a non-finite run value is written as empty.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from judgelab.reproduction import (
    COLUMNS,
    PaperValue,
    RunValue,
    assign_verdict,
    build_table,
    find_judge,
    judge_key,
    judge_kind,
    judges_mismatch,
    missing,
    reproduce,
    resolve_provenance,
    study_module,
    write_reproduction,
)

REAL = {"name": "gpt-4o", "backend": "openai", "model": "gpt-4o", "options": {"api_key_env": None}}
REPLAY = {"name": "replay-gpt-4o", "backend": "replay", "model": "gpt-4o",
          "options": {"source": "llmbar", "dataset": "llmbar_natural", "prompt_template": "output_ab", "path": "x"}}
SIM = {"name": "sim-gpt-4o", "backend": "simulated", "model": "s",
       "options": {"profile": {"competence": 2.0, "biases": {"markdown": 0.3}}}}
ROW = PaperValue("Fig. 1", "c", "0.50", "r", "q 0.50", "x", {}, ("gpt-4o",))
PLANTED_ROW = PaperValue("Fig. 1", "p", "0.50", "r", "q 0.50", "x", {}, ("gpt-4o",), ("biases.markdown",))


def test_judge_keys_drop_the_stand_in_prefixes_and_case():
    assert judge_key("sim-Claude-Sonnet-4") == judge_key("REPLAY-claude-sonnet-4") == "claude-sonnet-4"
    assert judge_key("simulated-x") == "simulated-x"  # only the prefix with its dash
    assert find_judge("GPT-4o", ["x", "replay-gpt-4o"]) == "replay-gpt-4o"
    assert find_judge("gpt-4o", ["gpt-4o-mini", "sim-gpt-4"]) is None
    # two stand-ins for the same judge: the same one, whatever the order they come in
    names = ["sim-gpt-4o", "replay-gpt-4o", "gpt-4o"]
    assert {find_judge("gpt-4o", order) for order in (names, names[::-1], names[1:] + names[:1])} == {"gpt-4o"}


def test_a_judges_kind_comes_from_its_backend():
    assert [judge_kind(e) for e in (SIM, REPLAY, REAL)] == ["simulated", "replayed", "real"]
    # the name does not decide
    assert judge_kind({**REAL, "name": "sim-gpt-4o"}) == "real"


def test_provenance_follows_the_values_judges_or_all_configured_ones():
    entries = {"gpt-4o": REAL, "sim-gpt-4o": SIM, "replay-gpt-4o": REPLAY}
    assert resolve_provenance(ROW, RunValue(judges=("gpt-4o",)), entries) == "real"
    assert resolve_provenance(ROW, RunValue(judges=("replay-gpt-4o", "gpt-4o")), entries) == "replayed"
    # no judges named: every configured judge counts (one simulated: simulated; planted where its profile holds it)
    assert resolve_provenance(ROW, RunValue(), entries) == "simulated"
    assert resolve_provenance(PLANTED_ROW, RunValue(), entries) == "planted"
    assert resolve_provenance(ROW, RunValue(), {"gpt-4o": REAL, "replay-gpt-4o": REPLAY}) == "replayed"
    # a simulated judge whose profile lacks the parameter; the path must exist to its end
    bare = {**SIM, "options": {"profile": {"biases": 0.3}}}
    assert resolve_provenance(PLANTED_ROW, RunValue(judges=("sim-gpt-4o",)), {"sim-gpt-4o": bare}) == "simulated"
    no_options = {**SIM, "options": None}
    assert resolve_provenance(PLANTED_ROW, RunValue(judges=("sim-gpt-4o",)), {"sim-gpt-4o": no_options}) == "simulated"
    # a table of judges the config does not know, marked simulated: planted only where the row declares it
    role = RunValue(judges=("role",), table_simulated=True)
    assert resolve_provenance(PLANTED_ROW, role, {}) == "planted"
    assert resolve_provenance(ROW, role, {}) == "simulated"
    # marked simulated beside a simulated judge whose profile lacks the parameter: that profile decides
    assert resolve_provenance(PLANTED_ROW, RunValue(judges=("sim-gpt-4o",), table_simulated=True),
                              {"sim-gpt-4o": bare}) == "simulated"
    assert resolve_provenance(ROW, RunValue(judges=("role",), table_simulated=None), {}) == "real"


def test_the_reason_states_interval_distance_and_precision_in_four_digits():
    v, why = assign_verdict("real", 0.58, 0.0005, RunValue(value=0.612345, ci_low=0.5312345, ci_high=0.7))
    assert (v, why) == ("reproduced", "paper 0.58 inside the run's interval [0.5312, 0.7]")
    v, why = assign_verdict("real", 0.58, 0.0005, RunValue(value=0.65, ci_low=0.6, ci_high=0.7))
    assert (v, why) == ("not reproduced", "paper 0.58 outside the run's interval [0.6, 0.7]")
    v, why = assign_verdict("replayed", 0.5, 0.005, RunValue(value=0.503, ci_low=0.501, ci_high=0.6))
    assert (v, why) == ("reproduced", "paper 0.5 outside the run's interval [0.501, 0.6], run 0.503 within ±0.005 of it")
    v, why = assign_verdict("real", 59.1, 0.05, RunValue(value=59.2))
    assert (v, why) == ("not reproduced", "run 59.2 not within ±0.05 of paper 59.1, no interval")
    v, why = assign_verdict("real", 59.1, 0.05, RunValue(value=59.12, ci_low=math.nan, ci_high=60.0))
    assert (v, why) == ("reproduced", "run 59.12 within ±0.05 of paper 59.1, no interval")


def test_the_precision_band_tolerates_rounding_only():
    # 0.1 + 0.2 - 0.3 is 5.6e-17 off in binary: inside the band's tolerance
    assert assign_verdict("real", 0.3, 0.0, RunValue(value=0.1 + 0.2))[0] == "reproduced"
    assert assign_verdict("real", 0.3, 0.0, RunValue(value=0.3 + 1e-9))[0] == "not reproduced"
    # the band is closed at its edge, tolerance included
    assert assign_verdict("real", 0.0, 0.0, RunValue(value=1e-12))[0] == "reproduced"


def test_what_a_row_without_a_value_or_a_planted_row_says():
    assert assign_verdict("real", 0.5, 0.005, RunValue()) == ("not comparable", "this run has no value: not computed")
    assert assign_verdict("real", 0.5, 0.005, RunValue(value=math.inf, missing="x")) == (
        "not comparable", "this run has no value: x")
    assert assign_verdict("planted", 0.5, 0.005, RunValue()) == (
        "not comparable", "planted from the paper (simulated profile): agreement is built in")
    assert assign_verdict("planted", 0.5, 0.005, RunValue(value=0.5), ("a.b", "c")) == (
        "not comparable", "planted from the paper (a.b, c): agreement is built in (run 0.5 within ±0.005 of paper "
                          "0.5, no interval)")
    assert assign_verdict("simulated", 0.5, 0.005, RunValue(value=0.6)) == (
        "not comparable", "simulated judges stand in for the paper's (run 0.6 not within ±0.005 of paper 0.5, "
                          "no interval)")


def test_judges_mismatch_names_the_lacking_paper_judges_for_real_and_replayed_values_only():
    row = PaperValue("T", "c", "0.5", "r", "q 0.5", "x", {}, ("gpt-4o", "Claude-3"))
    assert judges_mismatch(row, RunValue(judges=("replay-gpt-4o",)), "replayed") == (
        "other judges than the paper's (paper: Claude-3; run: replay-gpt-4o)")
    assert judges_mismatch(row, RunValue(), "real") == "other judges than the paper's (paper: gpt-4o, Claude-3; run: none)"
    assert judges_mismatch(row, RunValue(judges=("a", "b")), "real") == (
        "other judges than the paper's (paper: gpt-4o, Claude-3; run: a, b)")
    assert judges_mismatch(row, RunValue(judges=("gpt-4o", "sim-claude-3")), "real") == ""
    for prov in ("simulated", "planted"):
        assert judges_mismatch(row, RunValue(), prov) == ""
    assert judges_mismatch(PaperValue("T", "c", "0.5", "r", "q", "x"), RunValue(), "real") == ""


@pytest.mark.parametrize("error", [OSError("gone"), KeyError("col"), ValueError("bad"), IndexError("out")])
def test_build_table_turns_a_missing_table_or_cell_into_a_row_without_a_value(error):
    def extract(row: PaperValue) -> RunValue:
        raise error

    t = build_table("strategies", "003", [ROW], extract, {"gpt-4o": REAL})
    assert math.isnan(t["run_value"].iloc[0]) and t["verdict"].iloc[0] == "not comparable"
    assert t["reason"].iloc[0] == f"this run has no value: {type(error).__name__}: {error}"


def test_build_table_lets_an_extractors_bug_through():
    def extract(row: PaperValue) -> RunValue:
        raise TypeError("a bug")

    with pytest.raises(TypeError, match="a bug"):
        build_table("strategies", "003", [ROW], extract, {})


def test_build_table_writes_the_row_and_leaves_a_non_finite_value_empty():
    runs = {"a": RunValue(value=math.inf, ci_low=0.4, ci_high=0.6, judges=("gpt-4o",)),
            "b": RunValue(value=0.5, ci_low=0.4, ci_high=0.6, judges=("gpt-4o",))}
    rows = [PaperValue("Fig. 1", c, "0.50", "ref", "q 0.50", "x", {}, ("gpt-4o",)) for c in runs]
    t = build_table("strategies", "003", rows, lambda r: runs[r.cell], {"gpt-4o": REAL})
    assert list(t.columns) == list(COLUMNS)
    a, b = t.iloc[0], t.iloc[1]
    assert math.isnan(a["run_value"]) and a["verdict"] == "not comparable"
    assert (a["study"], a["paper"], a["table_or_figure"], a["paper_reference"], a["paper_quote"]) == (
        "strategies", "003", "Fig. 1", "ref", "q 0.50")
    assert (b["run_value"], b["run_ci_low"], b["run_ci_high"], b["paper_value"], b["paper_precision"]) == (
        0.5, 0.4, 0.6, 0.5, 0.005)
    assert (b["provenance"], b["verdict"]) == ("real", "reproduced")


def test_a_table_without_rows_still_has_the_columns():
    t = build_table("strategies", "003", [], lambda r: RunValue(), {})
    assert t.empty and list(t.columns) == list(COLUMNS)


def test_missing_keeps_the_judges_it_would_have_come_from():
    run = missing("why", ["a", "b"])
    assert (run.missing, run.judges, math.isnan(run.value)) == ("why", ("a", "b"), True)


def test_an_unknown_study_names_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match=r"no reproduction table for study 'x' \(known: uda, rbd, topk, strategies, "
                                         r"scoring\)"):
        study_module("x")
    assert study_module("topk").STUDY == "topk"
    # reproduce passes the options to the study's extractor: topk's focus judge
    t2 = tmp_path / "tables" / "table2_correctness.csv"
    t2.parent.mkdir()
    pd.DataFrame([{"judge": "j1", "delta": 0.4, "ci_low": 0.3, "ci_high": 0.5},
                  {"judge": "j2", "delta": 0.1, "ci_low": 0.0, "ci_high": 0.2}]).to_csv(t2, index=False)
    cell = "Llama-3.1-8B: bias-aware gain (Δ)"
    for focus, value in (("j1", 0.4), ("j2", 0.1)):
        t = reproduce("topk", tmp_path, [t2], {}, {"focus": focus}).set_index("cell")
        assert t.loc[cell, "run_value"] == value
        assert set(t["study"]) == {"topk"} and set(t["paper"]) == {"002"}


def test_the_writer_without_provenance_writes_the_columns_alone(tmp_path):
    t = build_table("strategies", "003", [ROW], lambda r: RunValue(value=0.5, judges=("gpt-4o",)), {"gpt-4o": REAL})
    out = tmp_path / "reproduction.csv"
    write_reproduction(t.assign(extra=1), out)
    back = pd.read_csv(out, dtype={"paper": str})
    assert list(back.columns) == list(COLUMNS)
    assert back["paper"].iloc[0] == "003" and back["verdict"].iloc[0] == "reproduced"


def test_an_unknown_provenance_names_the_known_ones():
    with pytest.raises(ValueError, match=r"^unknown provenance 'sim' \(one of planted, simulated, replayed, real\)$"):
        assign_verdict("sim", 0.5, 0.005, RunValue(value=0.5))
