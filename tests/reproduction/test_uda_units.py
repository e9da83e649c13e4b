"""Paper 000's rows against the ``uda`` study's tables (``judgelab/reproduction/uda.py``), cell by cell,
from hand-written tables in the study's layout.

* The answer models are the std table's columns between ``method`` and ``mean``; the judges its
  ``judge_ids``; the paper's ten judges all answering make the Arena-Hard rows comparable, fewer
  are named with the count absent.  The transfer set is always named as MT-Bench's stand-in.
* The transfer rows read the adapter transferred from Arena-Hard, not an in-domain one; the
  in-domain rows the method itself.
* gpt-4o's self-preference reads its own judge's row of the method; the row's ``simulated`` cell
  wins over the std table's flag, which applies when the row has none.
* The held-out rows read the adapter trained on the split's source, on the average alignment row.
* Empty cells carry the table's reason; rows without a value name what was looked for.
* :func:`heldout_split` takes the first transfer onto a run set whose prompt split is ``heldout``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from judgelab.reproduction import reproduce
from judgelab.reproduction.uda import PAPER_JUDGES, ROWS, heldout_split

REAL = {j: {"name": j, "backend": "openai", "model": j, "options": {"api_key_env": None}} for j in PAPER_JUDGES}
STD0 = "Arena-Hard: mean inter-judge std, baseline Elo"
RED = "Arena-Hard: std reduction of UDA (%)"
T_RED = "transfer set: std reduction of UDA, zero-shot (%)"
T_BASE = "transfer set: mean Pearson with human scores, baseline Elo"
T_UDA = "transfer set: mean Pearson with human scores, UDA"
SELF = "Arena-Hard: gpt-4o's self-preference deviation, baseline Elo (%)"
H_STD = "held-out Arena-Hard prompts: std reduction of UDA, zero-shot (%)"
H_PEARSON = "held-out Arena-Hard prompts: mean Pearson with the baseline consensus, UDA zero-shot"
STAND_IN = "the paper's human-annotated transfer set is not public: MT-Bench human votes stand in"


def _paper(cell: str) -> float:
    return next(r for r in ROWS if r.cell == cell).value


def _csv(root: Path, name: str, rows: list[dict]) -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def _std(root: Path, set_name: str, models: list[str], simulated: bool | None = False) -> str:
    """std.csv: a column per answer model between ``method`` and ``mean``, then the provenance columns."""
    row = {"set": set_name, "method": "baseline", **{m: 100.0 for m in models}, "mean": 100.0,
           "judge_ids": ",".join(PAPER_JUDGES)}
    if simulated is not None:
        row["simulated"] = simulated
    return _csv(root, f"{set_name}/tables/std.csv", [row])


def _methods(root: Path, set_name: str, rows: list[tuple[str, str, float]]) -> str:
    return _csv(root, f"{set_name}/tables/methods.csv",
                [{"method": m, column: v, "reason": "" if not math.isnan(v) else "no judge scored"}
                 for m, column, v in rows])


def test_arena_hard_rows_with_the_papers_ten_judges_answering_are_comparable(tmp_path):
    files = [_std(tmp_path, "arena_hard", list(PAPER_JUDGES)),
             _methods(tmp_path, "arena_hard", [("uda [from mt_bench]", "std_reduction_pct", 10.0),
                                               ("baseline", "mean_inter_judge_std", _paper(STD0)),
                                               ("uda", "std_reduction_pct", _paper(RED) + 0.2)])]
    t = reproduce("uda", tmp_path, files, REAL).set_index("cell")
    assert t.loc[STD0, "run_value"] == pytest.approx(_paper(STD0))
    assert (t.loc[STD0, "provenance"], t.loc[STD0, "verdict"]) == ("real", "reproduced"), t.loc[STD0, "reason"]
    assert t.loc[STD0, "reason"].endswith("no interval")
    # the in-domain adapter, not the one transferred from another set; 0.2 off is outside the 0.05 precision
    assert t.loc[RED, "run_value"] == pytest.approx(_paper(RED) + 0.2) and t.loc[RED, "verdict"] == "not reproduced"


def test_fewer_answer_models_and_the_transfer_set_are_named(tmp_path):
    models = ["gpt-4o", "m2", "deepseek-r1"]  # two of the paper's ten
    files = [_std(tmp_path, "arena_hard", models), _std(tmp_path, "mt_bench", list(PAPER_JUDGES)),
             _methods(tmp_path, "arena_hard", [("baseline", "mean_inter_judge_std", _paper(STD0))]),
             _methods(tmp_path, "mt_bench", [("uda", "std_reduction_pct", 1.0),
                                             ("uda [from arena_hard]", "std_reduction_pct", _paper(T_RED)),
                                             ("baseline", "mean_pearson_reference", _paper(T_BASE))])]
    t = reproduce("uda", tmp_path, files, REAL).set_index("cell")
    assert t.loc[STD0, "reason"].startswith(
        "arena_hard: 3 answer models, not the paper's ten judges answering (8 of them absent) ("), t.loc[STD0, "reason"]
    # all ten answer on MT-Bench: only the stand-in is named
    row = t.loc[T_RED]
    assert row["run_value"] == pytest.approx(_paper(T_RED))
    assert row["verdict"] == "not comparable" and row["reason"].startswith(STAND_IN + " ("), row["reason"]
    assert t.loc[T_BASE, "run_value"] == pytest.approx(_paper(T_BASE))
    # both notes, joined
    files[1] = _std(tmp_path, "mt_bench", ["gpt-4o"])
    t = reproduce("uda", tmp_path, files, REAL).set_index("cell")
    assert t.loc[T_RED, "reason"].startswith(
        STAND_IN + "; mt_bench: 1 answer models, not the paper's ten judges answering (9 of them absent) (")


def test_a_simulated_std_table_makes_the_rows_simulated(tmp_path):
    files = [_std(tmp_path, "arena_hard", list(PAPER_JUDGES), simulated=True),
             _methods(tmp_path, "arena_hard", [("baseline", "mean_inter_judge_std", _paper(STD0))])]
    t = reproduce("uda", tmp_path, files, REAL).set_index("cell")
    assert (t.loc[STD0, "provenance"], t.loc[STD0, "verdict"]) == ("simulated", "not comparable")


def test_empty_cells_and_absent_methods_say_why(tmp_path):
    files = [_std(tmp_path, "mt_bench", list(PAPER_JUDGES)),
             _methods(tmp_path, "mt_bench", [("uda", "mean_pearson_reference", 0.8),
                                             ("baseline", "mean_pearson_reference", float("nan"))])]
    t = reproduce("uda", tmp_path, files, REAL).set_index("cell")
    assert t.loc[T_BASE, "reason"] == "this run has no value: no judge scored"
    assert t.loc[T_UDA, "reason"] == ("this run has no value: no method 'uda [from arena_hard]' in "
                                      "mt_bench/tables/methods.csv")


def _self_pref(root: Path, rows: list[dict]) -> str:
    return _csv(root, "arena_hard/tables/self_preference.csv", rows)


def test_self_preference_reads_gpt_4o_in_the_baseline_with_the_rows_flag(tmp_path):
    paper = _paper(SELF)
    rows = [{"method": "uda", "judge": "gpt-4o", "deviation_pct": 5.0},
            {"method": "baseline", "judge": "claude-3.5", "deviation_pct": 7.0},
            {"method": "baseline", "judge": "gpt-4o", "deviation_pct": paper}]
    std = _std(tmp_path, "arena_hard", list(PAPER_JUDGES), simulated=True)
    # no simulated cell in the row: the std table's flag (simulated) applies
    t = reproduce("uda", tmp_path, [std, _self_pref(tmp_path, rows)], REAL).set_index("cell")
    assert t.loc[SELF, "run_value"] == pytest.approx(paper)
    assert t.loc[SELF, "provenance"] == "planted"  # a simulated table, a row declared planted
    # the row's own cell wins: not simulated
    rows = [{**r, "simulated": False} for r in rows]
    t = reproduce("uda", tmp_path, [std, _self_pref(tmp_path, rows)], REAL).set_index("cell")
    assert (t.loc[SELF, "provenance"], t.loc[SELF, "verdict"]) == ("real", "reproduced"), t.loc[SELF, "reason"]


def test_self_preference_without_its_judge_or_its_value_says_why(tmp_path):
    std = _std(tmp_path, "arena_hard", list(PAPER_JUDGES))
    f = _self_pref(tmp_path, [{"method": "baseline", "judge": "claude-3.5", "deviation_pct": 1.0},
                              {"method": "uda", "judge": "gpt-4o", "deviation_pct": 1.0}])
    t = reproduce("uda", tmp_path, [std, f], REAL).set_index("cell")
    assert t.loc[SELF, "reason"] == "this run has no value: no judge standing for gpt-4o in arena_hard's self-preference table"
    f = _self_pref(tmp_path, [{"method": "baseline", "judge": "sim-gpt-4o", "deviation_pct": float("nan"),
                               "reason": "gpt-4o answered no prompt"}])
    t = reproduce("uda", tmp_path, [std, f], REAL).set_index("cell")
    assert t.loc[SELF, "reason"] == "this run has no value: gpt-4o answered no prompt"


def test_the_held_out_rows_read_the_split_sources_adapter_on_the_average(tmp_path):
    held, source = "ah_held", "ah_train"
    files = [_std(tmp_path, held, ["gpt-4o"]),
             _csv(tmp_path, f"{held}/tables/methods.csv",
                  [{"method": "uda [from other]", "std_reduction_pct": 1.0},
                   {"method": f"uda [from {source}]", "std_reduction_pct": 60.0}]),
             _csv(tmp_path, f"{held}/tables/alignment.csv",
                  [{"judge": "gpt-4o", "method": f"uda [from {source}]", "pearson_consensus": 0.1},
                   {"judge": "Average", "method": "uda [from other]", "pearson_consensus": 0.2},
                   {"judge": "Average", "method": f"uda [from {source}]", "pearson_consensus": 0.88}])]
    t = reproduce("uda", tmp_path, files, REAL, {"heldout": {"set": held, "source": source}}).set_index("cell")
    assert t.loc[H_STD, "run_value"] == pytest.approx(60.0)
    assert t.loc[H_PEARSON, "run_value"] == pytest.approx(0.88)
    assert t.loc[H_STD, "reason"].startswith(
        f"{held}: held-out prompts the adapter never saw stand in for the paper's human-annotated transfer set; "
        f"{held}: 1 answer models, not the paper's ten judges answering (9 of them absent) ("), t.loc[H_STD, "reason"]
    # a split whose source's adapter is not in the tables: named
    t = reproduce("uda", tmp_path, files, REAL, {"heldout": {"set": held, "source": "x"}}).set_index("cell")
    assert t.loc[H_STD, "reason"] == f"this run has no value: no method 'uda [from x]' in {held}/tables/methods.csv"
    assert t.loc[H_PEARSON, "reason"] == f"this run has no value: no method 'uda [from x]' in {held}/tables/alignment.csv"


def test_heldout_split_takes_the_first_transfer_onto_a_held_out_run_set():
    uda = {"datasets": {"a": {}, "b": {"prompt_split": {"part": "heldout"}}, "c": {"prompt_split": {"part": "heldout"}},
                        "d": {"prompt_split": {"part": "train"}}},
           "transfer": [{"train": "a", "apply": "d"}, {"train": "a", "apply": "b"}, {"train": "d", "apply": "c"}]}
    assert heldout_split(uda, ["a", "b", "c", "d"]) == {"set": "b", "source": "a"}
    assert heldout_split(uda, ["a", "c", "d"]) == {"set": "c", "source": "d"}
    assert heldout_split(uda, ["a", "d"]) is None
    assert heldout_split({"datasets": uda["datasets"]}, ["a", "b"]) is None  # no transfer at all
    assert heldout_split({"transfer": uda["transfer"]}, ["a", "b"]) is None  # no dataset specs


SIM = {"name": "sim-x", "backend": "simulated", "model": "s", "options": {"profile": {"competence": 2.0}}}


def test_a_row_without_a_value_keeps_the_provenance_of_the_sets_judges(tmp_path):
    """The set's judges (the std table's ``judge_ids``: the paper's ten, real) decide the provenance of a
    row without a value -- not every configured judge, a simulated one among them."""
    entries = {**REAL, "sim-x": SIM}
    held = "ah_held"
    files = [_std(tmp_path, "arena_hard", list(PAPER_JUDGES)), _std(tmp_path, held, list(PAPER_JUDGES)),
             _methods(tmp_path, "arena_hard", [("other", "mean_inter_judge_std", 1.0)]),
             _self_pref(tmp_path, [{"method": "baseline", "judge": "claude-3.5", "deviation_pct": 1.0}]),
             _csv(tmp_path, f"{held}/tables/methods.csv", [{"method": "other", "std_reduction_pct": 1.0}])]
    t = reproduce("uda", tmp_path, files, entries, {"heldout": {"set": held, "source": "arena_hard"}}).set_index("cell")
    for cell in (STD0, SELF, H_STD):
        assert math.isnan(t.loc[cell, "run_value"]) and t.loc[cell, "provenance"] == "real", cell


def test_a_std_table_without_judge_ids_or_a_simulated_column_still_gives_the_rows(tmp_path):
    root = tmp_path
    path = root / "arena_hard/tables/std.csv"
    path.parent.mkdir(parents=True)
    pd.DataFrame([{"method": "baseline", **{m: 1.0 for m in PAPER_JUDGES}, "mean": 1.0}]).to_csv(path, index=False)
    files = [str(path), _methods(root, "arena_hard", [("baseline", "mean_inter_judge_std", _paper(STD0))])]
    row = reproduce("uda", root, files, REAL).set_index("cell").loc[STD0]
    # no judges named: all configured ones (the paper's ten, real) give the provenance; which judges scored
    # is unknown, so the value is not the paper judges'
    assert row["run_value"] == pytest.approx(_paper(STD0)) and row["provenance"] == "real"
    assert row["verdict"] == "not comparable" and "; run: none)" in row["reason"], row["reason"]


def test_the_held_out_rows_follow_the_std_tables_simulated_flag(tmp_path):
    held, source = "ah_held", "ah_train"
    files = [_std(tmp_path, held, list(PAPER_JUDGES), simulated=True),
             _csv(tmp_path, f"{held}/tables/methods.csv", [{"method": f"uda [from {source}]", "std_reduction_pct": 60.0}])]
    t = reproduce("uda", tmp_path, files, REAL, {"heldout": {"set": held, "source": source}}).set_index("cell")
    assert t.loc[H_STD, "provenance"] == "simulated"


def test_self_preference_names_a_tournament_that_is_not_the_papers(tmp_path):
    std = _std(tmp_path, "arena_hard", ["gpt-4o", "m2"])
    f = _self_pref(tmp_path, [{"method": "baseline", "judge": "gpt-4o", "deviation_pct": _paper(SELF),
                               "simulated": False}])
    row = reproduce("uda", tmp_path, [std, f], REAL).set_index("cell").loc[SELF]
    assert row["verdict"] == "not comparable"
    assert row["reason"].startswith("arena_hard: 2 answer models, not the paper's ten judges answering (9 of them "
                                    "absent) ("), row["reason"]


def test_without_a_split_the_held_out_rows_name_the_setting_they_need(tmp_path):
    t = reproduce("uda", tmp_path, [], REAL).set_index("cell")
    assert t.loc[H_STD, "reason"] == (
        "this run has no value: this run has no held-out Arena-Hard split (no uda.datasets.<set>.prompt_split with "
        "part: heldout that a uda.transfer applies the adapter to)")


def test_a_value_comes_without_a_missing_reason(tmp_path):
    """The extractor's contract (:class:`judgelab.reproduction.RunValue`): ``missing`` says why there is no
    value, so a row with a value has none -- here every row the tables cover."""
    from judgelab.reproduction import uda

    held, source = "ah_held", "arena_hard"
    files = [_std(tmp_path, s, list(PAPER_JUDGES)) for s in ("arena_hard", "mt_bench", held)]
    files += [_methods(tmp_path, "arena_hard", [("baseline", "mean_inter_judge_std", 150.0),
                                                ("uda", "std_reduction_pct", 50.0)]),
              _csv(tmp_path, "mt_bench/tables/methods.csv", [
                  {"method": m, "std_reduction_pct": 60.0, "mean_pearson_reference": 0.8,
                   "consensus_pearson_reference": 0.9}
                  for m in ("baseline", "uda [from arena_hard]", "uda_ablated [from arena_hard]")]),
              _self_pref(tmp_path, [{"method": "baseline", "judge": "gpt-4o", "deviation_pct": -30.0}]),
              _csv(tmp_path, f"{held}/tables/methods.csv", [{"method": f"uda [from {source}]",
                                                            "std_reduction_pct": 60.0}]),
              _csv(tmp_path, f"{held}/tables/alignment.csv", [{"judge": "Average", "method": f"uda [from {source}]",
                                                              "pearson_consensus": 0.88}])]
    extract = uda.extractor(tmp_path, files, {"heldout": {"set": held, "source": source}})
    runs = {row.cell: extract(row) for row in ROWS}
    assert all(math.isfinite(run.value) and run.missing == "" for run in runs.values()), runs
