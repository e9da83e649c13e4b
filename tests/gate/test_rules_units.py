"""``judgelab.gate.rules`` unit by unit, on small synthetic tables (no card, no leaderboard is computed).

Every error message is asserted whole: a gate that fails in CI must say which rule, which name and
what it could have meant. The values a rule trips on are hand-counted from the table in the test.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
import pandas as pd
import pytest

from judgelab.bias_card.card import METRICS
from judgelab.gate.cli import add_gate_argument
from judgelab.gate.rules import (
    OPERATORS,
    GateError,
    GateResult,
    Subject,
    _fields,
    _known,
    _plain,
    _row_id,
    _select,
    _suggest,
    board_subject,
    card_subject,
    compare_subject,
    evaluate,
    parse_rule,
    parse_rules,
    report,
)
from judgelab.io import InputError

FORMS = ("not a rule; the forms are any-detected, detected:NAME, NAME.COLUMN<NUMBER (or <=, >, >=, ==, !=), "
         "rank-flip:CORRECTION, compare:NAME.COLUMN>NUMBER, each NAME optionally with [KEY=VALUE,...]")


def _raises(exact: str):
    """``pytest.raises`` for a GateError whose message is exactly ``exact``."""
    import re

    return pytest.raises(GateError, match=f"^{re.escape(exact)}$")


# ---- parsing ----------------------------------------------------------------------------------------------
def test_a_gate_error_is_an_input_error():
    """The CLI turns an InputError into one line and exit 2: a bad rule must be one."""
    assert issubclass(GateError, InputError)


def test_any_detected_has_no_name_filters_or_threshold():
    r = parse_rule("  any-detected\t")
    assert (r.text, r.kind, r.name, r.filters, r.column, r.op) == ("any-detected", "any-detected", "", (), "", "")
    assert math.isnan(r.value)


def test_prefixed_rules_keep_kind_name_and_filters():
    r = parse_rule("detected: position_preference [judge=a , view = lenient]")
    assert (r.text, r.kind, r.name, r.filters) == ("detected: position_preference [judge=a , view = lenient]",
                                                    "detected", "position_preference",
                                                    (("judge", "a"), ("view", "lenient")))
    assert (r.column, r.op) == ("", "") and math.isnan(r.value)
    f = parse_rule("rank-flip:bias_aware")
    assert (f.kind, f.name, f.filters) == ("rank-flip", "bias_aware", ())


def test_an_empty_filter_list_is_no_filter_and_a_value_may_be_empty():
    assert parse_rule("x[].estimate>1").filters == ()
    assert parse_rule("detected:x[]").filters == ()
    assert parse_rule("x[judge=].estimate>1").filters == (("judge", ""),)
    assert parse_rule("x[a=b=c].estimate>1").filters == (("a", "b=c"),)  # the first = splits


@pytest.mark.parametrize("rule,part", [("x[judge].estimate>1", "judge"), ("x[ =v].estimate>1", " =v"),
                                       ("x[a=1,b].estimate>1", "b"), ("detected:x[view]", "view")])
def test_a_filter_without_key_or_equals_is_named(rule, part):
    with _raises(f"--fail-on {rule!r}: filter {part!r} is not KEY=VALUE"):
        parse_rule(rule)


def test_threshold_fields_with_spaces_and_signs():
    r = parse_rule("m2 [judge=j].win_rate  >=  -2.5e1")
    assert (r.kind, r.name, r.filters, r.column, r.op, r.value) == (
        "threshold", "m2", (("judge", "j"),), "win_rate", ">=", -25.0)
    assert parse_rule("a.b.c._col<1").name == "a.b.c" and parse_rule("a.b.c._col<1").column == "_col"
    assert parse_rule("x.c9!=inf").value == math.inf


def test_compare_rules_are_thresholds_on_significant_rows():
    r = parse_rule("compare:position_preference[view=strict].diff>0")
    assert (r.text, r.kind, r.name, r.filters, r.column, r.op, r.value) == (
        "compare:position_preference[view=strict].diff>0", "compare", "position_preference",
        (("view", "strict"),), "diff", ">", 0.0)
    assert parse_rule("compare:x.diff<=-0.5").value == -0.5


def test_a_threshold_that_is_no_number_is_named():
    with _raises("--fail-on 'x.estimate>1,5': '1,5' is not a number"):
        parse_rule("x.estimate>1,5")
    with _raises("--fail-on 'compare:x.diff>NaN': a threshold must be a number, not NaN"):
        parse_rule("compare:x.diff>NaN")


@pytest.mark.parametrize("bad", ["", "detected:", "rank-flip:", "compare:detected:x", "x.estimate",
                                 "x.estimate>", "x.9c>1", "x.estimate=1", "x[a=b.estimate>1", "detected:x]"])
def test_anything_else_lists_the_forms(bad):
    with _raises(f"--fail-on {bad.strip()!r}: {FORMS}"):
        parse_rule(bad)


def test_parse_rules_keeps_order_and_accepts_none():
    assert parse_rules(None) == [] and parse_rules([]) == []
    assert [r.kind for r in parse_rules(["x.e<1", "any-detected", "detected:y"])] == [
        "threshold", "any-detected", "detected"]


@pytest.mark.parametrize("op,expected", [("<", [True, False, False]), ("<=", [True, True, False]),
                                         (">", [False, False, True]), (">=", [False, True, True]),
                                         ("==", [False, True, False]), ("!=", [True, False, True])])
def test_each_operator_on_below_equal_above(op, expected):
    assert [OPERATORS[op](v, 1.0) for v in (0.5, 1.0, 1.5)] == expected
    assert parse_rule(f"x.c{op}1").op == op  # the longest operator is read (<= is not < then =1)


# ---- formatting -------------------------------------------------------------------------------------------
def test_fields_round_floats_to_four_significant_digits_only():
    assert _fields({"model": "m", "n": 12345, "ok": True, "x": 0.123456, "y": np.float64(98765.4)}) == (
        "model=m, n=12345, ok=True, x=0.1235, y=9.877e+04")
    assert _fields({}) == ""


def test_plain_unwraps_numpy_scalars_and_strings_the_rest():
    class Thing:
        def __str__(self) -> str:
            return "thing!"

    assert _plain(np.int64(3)) == 3 and type(_plain(np.int64(3))) is int
    assert _plain(np.bool_(True)) is True
    assert _plain(Thing()) == "thing!"


def test_gate_result_lines_json_and_exit_code():
    empty = GateResult(["a"])
    assert empty.exit_code == 0 and empty.lines() == [] and empty.tripped == [] and empty.no_value == []
    res = GateResult(["r1", "r2"], tripped=[{"rule": "r1", "row": {"metric": "m", "estimate": np.float64(0.5)}}],
                     no_value=[{"rule": "r2", "row": {"metric": "k", "n": np.int64(4)}}])
    assert res.exit_code == 1
    assert res.lines() == ["r1: metric=m, estimate=0.5"]
    expected = {"rules": ["r1", "r2"], "tripped": [{"rule": "r1", "row": {"metric": "m", "estimate": 0.5}}],
                "no_value": [{"rule": "r2", "row": {"metric": "k", "n": 4}}], "exit_code": 1}
    assert res.to_json() == json.dumps(expected, indent=2, sort_keys=True) + "\n"


def test_suggest_offers_up_to_three_close_names():
    assert _suggest("abcd", ["abcx", "abxx", "abcd", "zzzz", "abcy"]) == (
        "; did you mean 'abcd' or 'abcy' or 'abcx'?")  # best first, ties by name descending (difflib)
    assert _suggest("abcd", ["abzz"]) == "; did you mean 'abzz'?"  # ratio 0.5: the cutoff is inclusive
    assert _suggest("abcd", ["azzz"]) == ""  # ratio 0.25
    assert _suggest("abcd", []) == ""


def test_known_lists_twelve_sorted_names_then_the_count():
    twelve = [f"n{i:02d}" for i in range(12)][::-1]
    assert _known(twelve) == " (known: " + ", ".join(sorted(twelve)) + ")"
    assert _known([*twelve, "n12"]) == " (known: " + ", ".join(sorted(twelve)) + ", ... (13 in all))"
    assert _known([*twelve, "n12", "n12", 7]) == (" (known: 7, " + ", ".join(f"n{i:02d}" for i in range(11))
                                                  + ", ... (14 in all))")


# ---- selection ----------------------------------------------------------------------------------------------
TABLE = pd.DataFrame({"metric": ["pos", "pos", "pos", "len", "acc"],
                      "judge": ["j1", "j1", "j2", "j1", "j2"],
                      "view": ["lenient", "strict", "lenient", "lenient", "lenient"],
                      "status": ["detected", "not detected", "detected", "detected", "detected"],
                      "estimate": [0.3, 0.1, 0.2, -0.4, 0.8],
                      "significant": [True, False, False, True, True]})


def _subject(table: pd.DataFrame = TABLE, **kw) -> Subject:
    kinds = kw.pop("kinds", frozenset({"any-detected", "detected", "threshold", "compare", "rank-flip"}))
    return Subject("judgelab test", table, "metric", kinds, frozenset({"pos", "len"}), **kw)


def test_select_by_name_and_every_filter():
    rule = parse_rule("detected:pos")
    assert list(_select(TABLE, "metric", "pos", (), rule, "metric").index) == [0, 1, 2]
    assert list(_select(TABLE, "metric", "pos", (("judge", "j1"),), rule, "metric").index) == [0, 1]
    assert list(_select(TABLE, "metric", "pos", (("judge", "j1"), ("view", "strict")), rule, "metric").index) == [1]


def test_select_names_what_is_missing():
    rule = parse_rule("detected:po")
    with _raises("--fail-on 'detected:po': no metric named 'po'; did you mean 'pos'?"):
        _select(TABLE, "metric", "po", (), rule, "metric")
    with _raises("--fail-on 'detected:po': no thing named 'zzzzzz' (known: acc, len, pos)"):
        _select(TABLE, "metric", "zzzzzz", (), rule, "thing")
    with _raises("--fail-on 'detected:po': no column 'judg' to filter on; did you mean 'judge'?"):
        _select(TABLE, "metric", "pos", (("judg", "j1"),), rule, "metric")
    with _raises("--fail-on 'detected:po': no column 'qqqq' to filter on"):
        _select(TABLE, "metric", "pos", (("qqqq", "j1"),), rule, "metric")
    with _raises("--fail-on 'detected:po': no row has judge='j3'; did you mean 'j2' or 'j1'?"):
        _select(TABLE, "metric", "pos", (("judge", "j3"),), rule, "metric")
    with _raises("--fail-on 'detected:po': no row has judge='zzzz'"):
        _select(TABLE, "metric", "pos", (("judge", "zzzz"),), rule, "metric")
    # each filter value exists somewhere, but not together with this name
    with _raises("--fail-on 'detected:po': no metric 'len' has judge=j1, view=strict"):
        _select(TABLE, "metric", "len", (("judge", "j1"), ("view", "strict")), rule, "metric")


def test_select_compares_names_and_filters_as_text():
    table = pd.DataFrame({"model": [1, 2, 2], "seed": [7, 7, 8], "x": [0.0, 1.0, 2.0]})
    rule = parse_rule("2[seed=8].x>0")
    assert list(_select(table, "model", "2", (("seed", "8"),), rule, "model")["x"]) == [2.0]


def test_row_id_skips_absent_and_empty_fields():
    row = pd.Series({"view": "lenient", "metric": "pos", "score": np.nan, "judge": None, "tags": [1, 2]})
    assert _row_id(row, ("view", "metric", "score", "judge", "tags", "absent")) == {
        "view": "lenient", "metric": "pos", "tags": [1, 2]}


# ---- evaluation ---------------------------------------------------------------------------------------------
def test_a_rule_kind_the_command_lacks_is_named_with_its_kinds():
    s = _subject(kinds=frozenset({"threshold", "detected"}))
    with _raises("--fail-on 'rank-flip:bias_aware': judgelab test has no rank-flip rule "
                 "(its rules: detected, threshold)"):
        evaluate(parse_rules(["rank-flip:bias_aware"]), s)


def test_any_detected_trips_on_detected_bias_rows_with_their_ids():
    res = evaluate(parse_rules(["any-detected"]), _subject(id_columns=("judge", "view", "metric")))
    assert res.rules == ["any-detected"]
    assert res.tripped == [
        {"rule": "any-detected", "row": {"judge": "j1", "view": "lenient", "metric": "pos", "status": "detected",
                                         "estimate": 0.3}},
        {"rule": "any-detected", "row": {"judge": "j2", "view": "lenient", "metric": "pos", "status": "detected",
                                         "estimate": 0.2}},
        {"rule": "any-detected", "row": {"judge": "j1", "view": "lenient", "metric": "len", "status": "detected",
                                         "estimate": -0.4}}]
    assert res.no_value == [] and res.exit_code == 1


def test_detected_reads_the_named_rows_and_defaults_ids_to_the_name():
    res = evaluate(parse_rules(["detected:pos[view=lenient]", "detected:acc"]), _subject())
    assert res.tripped == [
        {"rule": "detected:pos[view=lenient]", "row": {"metric": "pos", "status": "detected", "estimate": 0.3}},
        {"rule": "detected:pos[view=lenient]", "row": {"metric": "pos", "status": "detected", "estimate": 0.2}},
        {"rule": "detected:acc", "row": {"metric": "acc", "status": "detected", "estimate": 0.8}}]
    assert evaluate(parse_rules(["detected:pos[view=strict]"]), _subject()).tripped == []
    with _raises("--fail-on 'detected:xyz': no metric named 'xyz' (known: acc, len, pos)"):
        evaluate(parse_rules(["detected:xyz"]), _subject())


def test_thresholds_trip_per_row_and_compare_only_where_significant():
    res = evaluate(parse_rules(["pos.estimate>0.15"]), _subject(id_columns=("judge", "view", "metric")))
    assert res.tripped == [
        {"rule": "pos.estimate>0.15", "row": {"judge": "j1", "view": "lenient", "metric": "pos", "estimate": 0.3}},
        {"rule": "pos.estimate>0.15", "row": {"judge": "j2", "view": "lenient", "metric": "pos", "estimate": 0.2}}]
    sig = evaluate(parse_rules(["compare:pos.estimate>0.15"]), _subject())
    assert sig.tripped == [{"rule": "compare:pos.estimate>0.15", "row": {"metric": "pos", "estimate": 0.3}}]
    # the value tripped on is the table's float, not the threshold
    assert type(sig.tripped[0]["row"]["estimate"]) is float


def test_a_missing_column_or_a_text_column_is_an_error():
    with _raises("--fail-on 'compare:po.estimate>0': no metric named 'po'; did you mean 'pos'?"):
        evaluate(parse_rules(["compare:po.estimate>0"]), _subject())
    with _raises("--fail-on 'pos.estimat>0': no column 'estimat'; did you mean 'estimate' or 'status'?"):
        evaluate(parse_rules(["pos.estimat>0"]), _subject())
    with _raises("--fail-on 'pos.qqq>0': no column 'qqq'"):
        evaluate(parse_rules(["pos.qqq>0"]), _subject())
    with _raises("--fail-on 'pos.status>0': column 'status' holds no numbers"):
        evaluate(parse_rules(["pos.status>0"]), _subject())


def test_empty_or_unreadable_values_are_listed_never_tripped():
    table = TABLE.assign(ci_high=[np.nan, "0.9", "n/a", 0.1, 0.2])
    res = evaluate(parse_rules(["pos.ci_high>0.5"]), _subject(table))
    assert [t["row"]["ci_high"] for t in res.tripped] == [0.9]
    assert len(res.no_value) == 2 and all(math.isnan(e["row"]["ci_high"]) for e in res.no_value)
    assert [e["rule"] for e in res.no_value] == ["pos.ci_high>0.5"] * 2
    # a column with no number at all (PPI without labels) is unchecked, not an error
    empty = evaluate(parse_rules(["pos.x<1"]), _subject(TABLE.assign(x=np.nan)))
    assert empty.tripped == [] and len(empty.no_value) == 3 and empty.exit_code == 0


FLIPS = pd.DataFrame({"correction": ["style_controlled", "style_controlled", "lc_win_rate"],
                      "model_1": ["a", "b", "a"], "model_2": ["c", "c", "b"],
                      "win_rate_1": [60.0, 55.0, 60.0], "win_rate_2": [40.0, 40.0, 55.0],
                      "corrected_1": [45.0, 38.0, 50.0], "corrected_2": [50.0, 41.0, 52.0],
                      "ci_overlap": [True, False, True], "extra": ["e1", "e2", "e3"]})


def test_rank_flips_trip_per_pair_with_the_scores():
    s = _subject(flips=FLIPS)
    res = evaluate(parse_rules(["rank-flip:style_controlled"]), s)
    assert res.tripped == [
        {"rule": "rank-flip:style_controlled", "row": {
            "correction": "style_controlled", "model_1": "a", "model_2": "c", "win_rate_1": 60.0,
            "win_rate_2": 40.0, "corrected_1": 45.0, "corrected_2": 50.0}},
        {"rule": "rank-flip:style_controlled", "row": {
            "correction": "style_controlled", "model_1": "b", "model_2": "c", "win_rate_1": 55.0,
            "win_rate_2": 40.0, "corrected_1": 38.0, "corrected_2": 41.0}}]
    one = evaluate(parse_rules(["rank-flip:style_controlled[ci_overlap=False,model_2=c]"]), s)
    assert [t["row"]["model_1"] for t in one.tripped] == ["b"]
    assert evaluate(parse_rules(["rank-flip:bias_aware"]), s).tripped == []
    # a command without flips has no pair to flip
    assert evaluate(parse_rules(["rank-flip:lc_win_rate"]), _subject()).exit_code == 0


def test_before_after_scores_of_a_compare_flip_are_shown():
    flips = pd.DataFrame({"correction": ["win_rate"], "model_1": ["a"], "model_2": ["b"], "before_1": [0.6],
                          "before_2": [0.4], "after_1": [0.3], "after_2": [0.5]})
    s = _subject(flips=flips, corrections=("win_rate",))
    assert evaluate(parse_rules(["rank-flip:win_rate"]), s).tripped[0]["row"] == {
        "correction": "win_rate", "model_1": "a", "model_2": "b", "before_1": 0.6, "before_2": 0.4,
        "after_1": 0.3, "after_2": 0.5}


def test_rank_flip_errors_name_the_correction_or_column():
    s = _subject(flips=FLIPS)
    with _raises("--fail-on 'rank-flip:style_control': no correction named 'style_control'; did you mean "
                 "'style_controlled'? (corrections: lc_win_rate, style_controlled, bias_aware)"):
        evaluate(parse_rules(["rank-flip:style_control"]), s)
    with _raises("--fail-on 'rank-flip:zzz': no correction named 'zzz' "
                 "(corrections: lc_win_rate, style_controlled, bias_aware)"):
        evaluate(parse_rules(["rank-flip:zzz"]), s)
    with _raises("--fail-on 'rank-flip:bias_aware[ci_overlapp=True]': rank flips have no column 'ci_overlapp'; "
                 "did you mean 'ci_overlap'?"):
        evaluate(parse_rules(["rank-flip:bias_aware[ci_overlapp=True]"]), s)
    with _raises("--fail-on 'rank-flip:bias_aware[q=1]': rank flips have no column 'q'"):
        evaluate(parse_rules(["rank-flip:bias_aware[q=1]"]), s)


def test_every_rule_is_evaluated_in_order_into_one_result():
    both = evaluate(parse_rules(["detected:acc", "any-detected", "rank-flip:lc_win_rate", "detected:acc"]),
                    _subject(flips=FLIPS))
    assert [t["rule"] for t in both.tripped] == ["detected:acc", "any-detected", "any-detected", "any-detected",
                                                "rank-flip:lc_win_rate", "detected:acc"]
    res = evaluate(parse_rules(["acc.estimate>=0.8", "len.estimate<0", "pos.estimate>5"]), _subject())
    assert [t["rule"] for t in res.tripped] == ["acc.estimate>=0.8", "len.estimate<0"]
    assert res.rules == ["acc.estimate>=0.8", "len.estimate<0", "pos.estimate>5"]


# ---- the commands' subjects ---------------------------------------------------------------------------------
def test_card_subject_reads_metrics_and_bias_rows():
    s = card_subject(TABLE)
    assert (s.command, s.name_column, s.kinds, s.id_columns) == (
        "judgelab audit", "metric", frozenset({"any-detected", "detected", "threshold"}), ("judge", "view", "metric"))
    assert s.table is TABLE and s.flips is None
    assert s.bias_names == {m for m, spec in METRICS.items() if spec.kind == "bias"}
    assert "position_preference" in s.bias_names and "accuracy_average" not in s.bias_names


def test_compare_subject_without_and_with_a_leaderboard():
    plain = compare_subject(TABLE)
    assert (plain.command, plain.name_column, plain.kinds, plain.id_columns, plain.flips) == (
        "judgelab compare without a leaderboard (no models to rank)", "metric",
        frozenset({"threshold", "compare"}), ("view", "metric"), None)
    assert plain.table is TABLE
    board = pd.DataFrame({"model": ["m1", "m2"], "score": ["win_rate", "win_rate"], "diff": [0.1, -0.2]})
    flips = pd.DataFrame({"correction": ["win_rate"], "model_1": ["m1"], "model_2": ["m2"]})
    s = compare_subject(TABLE, board, flips)
    assert (s.command, s.name_column, s.kinds, s.id_columns, s.corrections) == (
        "judgelab compare", "metric", frozenset({"threshold", "compare", "rank-flip"}), ("view", "metric", "score"),
        ("win_rate", "lc_win_rate", "style_controlled", "bias_aware"))
    assert s.flips is flips
    assert list(s.table["metric"]) == [*TABLE["metric"], "m1", "m2"] and list(s.table.index) == list(range(7))
    assert "model" not in s.table.columns
    res = evaluate(parse_rules(["m2[score=win_rate].diff<0"]), s)
    assert res.tripped == [{"rule": "m2[score=win_rate].diff<0",
                            "row": {"metric": "m2", "score": "win_rate", "diff": -0.2}}]


def test_board_subject_reads_models():
    table = pd.DataFrame({"model": ["a", "b"], "win_rate": [60.0, 40.0]})
    s = board_subject(table, FLIPS)
    assert (s.command, s.name_column, s.kinds, s.id_columns, s.corrections) == (
        "judgelab leaderboard", "model", frozenset({"threshold", "rank-flip"}), ("model",),
        ("lc_win_rate", "style_controlled", "bias_aware"))
    assert s.table is table and s.flips is FLIPS and s.bias_names == frozenset()


def test_report_prints_each_trip_and_unchecked_row(capsys):
    assert report(None) == 0
    assert capsys.readouterr() == ("", "")
    res = GateResult(["r"], tripped=[{"rule": "r", "row": {"metric": "m", "estimate": 0.123456}},
                                     {"rule": "r", "row": {"metric": "k", "estimate": 2.0}}],
                     no_value=[{"rule": "q", "row": {"metric": "p", "ci_high": math.nan}}])
    assert report(res) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("judgelab: gate tripped: r: metric=m, estimate=0.1235\n"
                   "judgelab: gate tripped: r: metric=k, estimate=2\n"
                   "judgelab: gate: q: no value for metric=p, ci_high=nan\n")
    assert report(GateResult(["r"])) == 0 and capsys.readouterr().err == ""


# ---- the option -------------------------------------------------------------------------------------------
def test_fail_on_is_a_repeatable_option_with_the_grammar_in_its_help():
    p = argparse.ArgumentParser(prog="x")
    add_gate_argument(p)
    assert p.parse_args([]).fail_on is None
    assert p.parse_args(["--fail-on", "any-detected", "--fail-on", "x.e>1"]).fail_on == ["any-detected", "x.e>1"]
    action = next(a for a in p._actions if a.dest == "fail_on")
    assert action.metavar == "RULE"
    assert action.help == (
        "exit 1 when RULE trips (repeatable; written to gate.json): any-detected, detected:METRIC, "
        "NAME.COLUMN>NUMBER (or <, <=, >=, ==, !=), rank-flip:CORRECTION, compare:NAME.COLUMN>NUMBER; "
        "NAME[KEY=VALUE,...] filters rows (docs/ci.md). Exit 2 for a rule that names no row")
    assert "[--fail-on RULE]" in p.format_usage()
