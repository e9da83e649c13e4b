"""Provenance typed end to end: boolean columns are written and read as booleans, and every
figure stamp is decided from the typed value (a CSV cell ``False`` is text, and ``"False"`` is
truthy: a real judge's agreement table whose gold row left ``simulated`` empty was stamped
SIMULATED JUDGES).  A PNG records the stamp it carries, so tests read it without pixels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.io import BOOL_COLUMNS, InputError, any_true, read_table, to_bool, write_table
from judgelab.plots.stamp import STAMP_TEXT, figure_stamp, plt, save_figure, stamp


def _agreement(simulated: bool) -> pd.DataFrame:
    """An agreement table as strategies_agreement writes it: judge rows and a gold row whose
    ``simulated`` cell is empty (gold is not a judge)."""
    rows = []
    for judge in ("real-a", "real-b"):
        for strat, acc in (("B0", 0.6), ("S1", 0.7)):
            rows.append({"dataset": "mine", "judge": judge, "strategy": strat, "agreement": acc, "ci_low": acc - 0.1,
                         "ci_high": acc + 0.1, "n": 10, "simulated": simulated, "config_hash": "abc"})
    rows.append({"dataset": "mine", "judge": "gold", "strategy": "B0", "agreement": 1.0, "ci_low": 1.0,
                 "ci_high": 1.0, "n": 10, "simulated": None, "config_hash": "abc"})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("simulated", [False, True])
def test_agreement_figure_stamp_follows_the_typed_flag(tmp_path: Path, suffix: str, simulated: bool):
    """The issue's case: written, read back, plotted: stamped exactly when the judges are simulated."""
    from judgelab.plots.strategies import agreement_figure

    table = tmp_path / f"agreement{suffix}"
    write_table(_agreement(simulated), table)
    back = read_table(table)
    assert back["simulated"].dtype.name == "boolean" and back["simulated"].isna().sum() == 1
    agreement_figure(back, str(tmp_path / "agreement.png"))
    assert figure_stamp(tmp_path / "agreement.png") == (STAMP_TEXT if simulated else "none")


def test_a_table_read_as_plain_text_is_still_decided_by_value(tmp_path: Path):
    """pandas' own read_csv (False beside a missing cell: NaN, truthy) does not stamp a real table,
    nor does a column of the text "False"."""
    from judgelab.plots.strategies import agreement_figure

    _agreement(False).to_csv(tmp_path / "a.csv", index=False)
    raw = pd.read_csv(tmp_path / "a.csv")
    assert raw["simulated"].astype(bool).any()  # the old decision: the gold row's NaN is truthy
    agreement_figure(raw, str(tmp_path / "a.png"))
    assert figure_stamp(tmp_path / "a.png") == "none"
    raw["simulated"] = raw["simulated"].astype(str)  # "False" / "nan": the text the issue saw
    assert raw["simulated"].astype(bool).all()
    agreement_figure(raw, str(tmp_path / "a.png"))
    assert figure_stamp(tmp_path / "a.png") == "none"


def test_stamp_refuses_an_untyped_decision():
    fig, _ = plt.subplots()
    with pytest.raises(TypeError, match="must be a bool"):
        stamp(fig, simulated="False")
    stamp(fig, simulated=np.bool_(False))
    plt.close(fig)


def test_save_figure_records_every_stamp_decision(tmp_path: Path):
    for simulated, inputs, expected in ((True, "", STAMP_TEXT), (False, "scoring.gold.judge=sim-x", "SIMULATED INPUTS"),
                                        (False, "", "none")):
        fig, _ = plt.subplots()
        stamp(fig, simulated=simulated, simulated_inputs=inputs)
        save_figure(fig, tmp_path / "f.png")
        assert figure_stamp(tmp_path / "f.png") == expected
    fig, _ = plt.subplots()
    save_figure(fig, tmp_path / "g.png")
    assert figure_stamp(tmp_path / "g.png") is None  # never stamped: no claim either way


@pytest.mark.parametrize(("value", "expected"), [
    (True, True), (False, False), ("True", True), ("false", False), (" FALSE ", False), ("1", True), ("0", False),
    (1, True), (0, False), (1.0, True), (np.bool_(True), True), ("", pd.NA), (None, pd.NA), (float("nan"), pd.NA),
])
def test_to_bool_reads_every_spelling_a_table_holds(value, expected):
    out = to_bool(pd.Series([value, True]))
    assert (out.iloc[0] is pd.NA) if expected is pd.NA else (bool(out.iloc[0]) is expected)


@pytest.mark.parametrize("value", ["maybe", "Falsch", 2, "simulated", -1])
def test_to_bool_refuses_what_is_not_a_boolean_naming_the_row(value):
    with pytest.raises(InputError, match=r"t\.csv: column 'simulated', row 2: .* is not a boolean"):
        to_bool(pd.Series([True, value]), where="t.csv: column 'simulated'")


def test_any_true_is_false_for_text_false_and_missing():
    assert not any_true(pd.DataFrame({"simulated": ["False", "", None, "false"]}))
    assert any_true(pd.DataFrame({"simulated": ["False", "True"]}))
    assert not any_true(pd.DataFrame({"judge": ["a"]}))  # no column: no claim
    assert not any_true(pd.DataFrame({"simulated": pd.Series([], dtype=bool)}))


def test_reading_a_garbled_flag_is_an_error_naming_file_and_row(tmp_path: Path):
    (tmp_path / "t.csv").write_text("judge,simulated\na,False\nb,Flase\n")
    with pytest.raises(InputError, match=r"t\.csv: column 'simulated', row 2: 'Flase' is not a boolean"):
        read_table(tmp_path / "t.csv")


@settings(max_examples=60, deadline=None)
@given(flags=st.lists(st.one_of(st.none(), st.booleans()), min_size=1, max_size=12),
       suffix=st.sampled_from([".csv", ".parquet"]), column=st.sampled_from(sorted(BOOL_COLUMNS)))
def test_bool_columns_round_trip_through_every_format(tmp_path_factory, flags, suffix, column):
    """Whatever mix of True, False and missing is written, the same values come back, typed."""
    p = tmp_path_factory.mktemp("rt") / f"t{suffix}"
    write_table(pd.DataFrame({"judge": [f"j{i}" for i in range(len(flags))], column: flags}), p)
    back = read_table(p)[column]
    assert pd.api.types.is_bool_dtype(back)
    assert [None if v is pd.NA else bool(v) for v in back.astype(object)] == flags
    assert any_true(read_table(p), column) == any(f is True for f in flags)
