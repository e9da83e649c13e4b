"""LLMBar-style order statistics and call accounting on a table worked by hand (mutation-tested, issue 13)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from judgelab.io import read_verdicts, write_table
from judgelab.stats.agreement import CALL_SUMMARY_COLUMNS, STATUSES, call_summary, order_summary


def _rows() -> pd.DataFrame:
    cols = ["judge", "dataset", "pair_id", "order", "verdict_shown", "verdict", "correct", "status", "backend",
            "model", "simulated", "tokens_in", "tokens_out", "cost_usd"]
    rows = [
        # judge "b" first: outputs are sorted by judge whatever the input order
        ("b", "x", "p1", "BA", "B", "A", True, "ok", "sim", "m-b", True, 5, 1, 0.0),
        ("b", "x", "p2", "BA", "", "", False, "error", "sim", "m-b", True, 0, 0, 0.0),
        ("a", "x", "p1", "AB", "A", "A", True, "ok", "api", "m-a", False, 10, 2, 0.01),
        ("a", "x", "p1", "BA", "B", "A", True, "ok", "api", "m-a", False, 11, 2, 0.01),
        ("a", "x", "p2", "AB", "B", "B", False, "ok", "api", "m-a", False, 12, 3, 0.02),
        ("a", "x", "p2", "BA", "tie", "tie", False, "fallback", "api", "m-a", False, 13, 3, 0.02),
        ("a", "y", "p3", "AB", "", "", False, "unparsed", "api", "m-a", False, 14, 4, 0.03),
        ("a", "y", "p3", "BA", "", "", False, "refusal", "api", "m-a", False, 15, 4, 0.03),
        ("c", "y", "p1", "AB", "", "", False, "error", "api", "m-c", False, 0, 0, 0.0),
    ]
    return pd.DataFrame(rows, columns=cols)


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_order_summary_by_hand():
    out = order_summary(_rows())
    assert list(out.columns) == ["judge", "n_pairs", "acc_AB", "acc_BA", "acc_average", "acc_ci_low", "acc_ci_high",
                                 "correct_both", "n_pairs_both_parsed", "both_parsed_share", "positional_agreement",
                                 "positional_agreement_all", "tie_rate", "n_calls", "n_parsed", "first_shown_share",
                                 "first_shown_ci_low", "first_shown_ci_high", "n_errors", "parse_failure_rate"]
    assert out["judge"].tolist() == ["a", "b", "c"]  # sorted, plain names (not 1-tuples)
    a = out.set_index("judge").loc["a"]
    assert a["n_pairs"] == 3
    assert a["acc_AB"] == pytest.approx(1 / 3) and a["acc_BA"] == pytest.approx(1 / 3)
    assert a["acc_average"] == pytest.approx(2 / 6)
    lo, hi = _wilson(2, 6)
    assert (a["acc_ci_low"], a["acc_ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert a["correct_both"] == pytest.approx(1 / 3)
    # p1 agrees (A, A), p2 does not (B, tie), p3 has no verdict in either order: it agrees only in
    # LLMBar's "equal" (positional_agreement_all), not among the pairs parsed in both orders
    assert a["n_pairs_both_parsed"] == 2 and a["both_parsed_share"] == pytest.approx(2 / 3)
    assert a["positional_agreement"] == pytest.approx(1 / 2)
    assert a["positional_agreement_all"] == pytest.approx(2 / 3)
    assert a["tie_rate"] == pytest.approx(1 / 6)
    # shown first: A, B, B, tie (two unparsed) -> 1 of the 3 decisive verdicts names the first-shown response
    # (the tie counts neither way)
    assert (a["n_calls"], a["n_parsed"], a["n_errors"]) == (6, 4, 0)
    assert a["first_shown_share"] == pytest.approx(1 / 3)
    lo, hi = _wilson(1, 3)
    assert (a["first_shown_ci_low"], a["first_shown_ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert a["parse_failure_rate"] == pytest.approx(2 / 6)


def test_order_summary_with_one_order_only():
    out = order_summary(_rows()).set_index("judge")
    b, c = out.loc["b"], out.loc["c"]
    assert b["n_pairs"] == 0 and c["n_pairs"] == 0
    assert math.isnan(b["acc_AB"]) and b["acc_BA"] == pytest.approx(0.5)
    assert c["acc_AB"] == 0.0 and math.isnan(c["acc_BA"])
    assert math.isnan(b["correct_both"]) and math.isnan(b["positional_agreement"])
    assert math.isnan(b["both_parsed_share"]) and math.isnan(b["positional_agreement_all"])
    assert b["tie_rate"] == 0.0
    assert (b["n_calls"], b["n_parsed"], b["n_errors"], b["first_shown_share"]) == (2, 1, 1, 0.0)
    assert b["parse_failure_rate"] == 0.0
    assert (c["n_calls"], c["n_parsed"], c["n_errors"]) == (1, 0, 1)
    assert math.isnan(c["first_shown_share"]) and math.isnan(c["first_shown_ci_low"])
    assert math.isnan(c["parse_failure_rate"])  # nothing answered
    lo, hi = _wilson(1, 2)
    assert (b["acc_ci_low"], b["acc_ci_high"]) == (pytest.approx(lo), pytest.approx(hi))


def test_order_summary_by_two_keys():
    out = order_summary(_rows(), by=("judge", "dataset"))
    assert list(zip(out["judge"], out["dataset"], strict=True)) == [("a", "x"), ("a", "y"), ("b", "x"), ("c", "y")]
    ay = out[(out["judge"] == "a") & (out["dataset"] == "y")].iloc[0]
    assert ay["n_pairs"] == 1 and ay["n_pairs_both_parsed"] == 0 and ay["acc_average"] == 0.0
    assert math.isnan(ay["positional_agreement"]) and ay["positional_agreement_all"] == 1.0


def test_order_summary_without_shown_and_status_columns():
    out = order_summary(_rows().drop(columns=["verdict_shown", "status"])).set_index("judge")
    a = out.loc["a"]
    assert a["n_parsed"] == 4 and math.isnan(a["first_shown_share"]) and math.isnan(a["first_shown_ci_high"])
    assert a["n_errors"] == 0 and math.isnan(a["parse_failure_rate"])
    # NaN verdicts (a table read back by a CSV reader that made empties missing) count as no verdict
    nan_df = _rows().assign(verdict=lambda d: d["verdict"].replace("", None))
    pd.testing.assert_frame_equal(order_summary(nan_df), order_summary(_rows()))


def test_call_summary_by_hand():
    out = call_summary(_rows())
    assert list(out.columns) == ["judge", "backend", "model", "simulated", "calls",
                                 *[f"n_{s}" for s in STATUSES], "parse_failures", "parse_failure_rate",
                                 "tokens_in", "tokens_out", "cost_usd"]
    assert out["judge"].tolist() == ["a", "b", "c"]
    a, b, c = (out.set_index("judge").loc[j] for j in "abc")
    assert (a["backend"], a["model"], a["simulated"], a["calls"]) == ("api", "m-a", False, 6)
    assert (b["backend"], b["model"], b["simulated"], b["calls"]) == ("sim", "m-b", True, 2)
    assert {s: a[f"n_{s}"] for s in STATUSES} == {"ok": 3, "fallback": 1, "unparsed": 1, "refusal": 1, "error": 0}
    assert {s: b[f"n_{s}"] for s in STATUSES} == {"ok": 1, "fallback": 0, "unparsed": 0, "refusal": 0, "error": 1}
    # failures = unparsed + refusal, over answered calls (errors got no answer)
    assert a["parse_failures"] == 2 and a["parse_failure_rate"] == pytest.approx(2 / 6)
    assert b["parse_failures"] == 0 and b["parse_failure_rate"] == 0.0
    assert c["parse_failures"] == 0 and math.isnan(c["parse_failure_rate"])  # nothing answered
    assert (a["tokens_in"], a["tokens_out"], a["cost_usd"]) == (75, 18, pytest.approx(0.12))
    assert (b["tokens_in"], b["tokens_out"]) == (5, 1)


def test_call_summary_reads_only_its_columns_and_gives_the_whole_tables_summary(tmp_path):
    # its rule reads CALL_SUMMARY_COLUMNS of the verdict tables: the summary must equal the one of the
    # whole tables, whatever else they hold (here the raw answer) and whichever column a table lacks
    whole = _rows().assign(raw_text=lambda d: "answer of " + d["judge"])
    paths = []
    for judge, g in whole.groupby("judge"):
        path = tmp_path / f"{judge}.parquet"
        write_table(g.drop(columns=["simulated"]) if judge == "c" else g, path)  # c's table has no simulated
        paths.append(str(path))
    few = read_verdicts(paths, columns=CALL_SUMMARY_COLUMNS)
    assert set(few.columns) == set(CALL_SUMMARY_COLUMNS) and "raw_text" not in few.columns
    pd.testing.assert_frame_equal(call_summary(few), call_summary(read_verdicts(paths)))
    csv = tmp_path / "a.csv"
    write_table(whole[whole["judge"] == "a"], csv)
    assert list(read_verdicts([str(csv)], columns=CALL_SUMMARY_COLUMNS).columns) == [
        c for c in whole.columns if c in CALL_SUMMARY_COLUMNS]  # the table's order, from a CSV too


def test_call_summary_counts_an_unparsed_only_judge():
    df = _rows()
    df = df[df["judge"] == "a"].assign(status=["unparsed", "unparsed", "ok", "ok", "ok", "error"])
    r = call_summary(df).iloc[0]
    assert r["parse_failures"] == 2 and r["parse_failure_rate"] == pytest.approx(2 / 5)


def test_one_sided_pairs_and_missing_values():
    # q1: both parsed, agree; q2: both parsed, disagree; q3: both parsed, agree; q4/q5: one order unparsed
    rows = [("q1", "A", "A", True, True), ("q2", "A", "B", True, False), ("q3", "B", "B", False, False),
            ("q4", "A", None, True, False), ("q5", None, "B", False, True)]
    recs = []
    for pid, v_ab, v_ba, c_ab, c_ba in rows:
        recs.append({"judge": "j", "pair_id": pid, "order": "AB", "verdict": v_ab, "verdict_shown": v_ab,
                     "correct": c_ab, "status": "ok" if v_ab else "unparsed"})
        recs.append({"judge": "j", "pair_id": pid, "order": "BA", "verdict": v_ba,
                     "verdict_shown": {"A": "B", "B": "A", None: None}[v_ba], "correct": c_ba,
                     "status": "ok" if v_ba else "unparsed"})
    df = pd.DataFrame(recs)
    r = order_summary(df).iloc[0]
    assert r["n_pairs"] == 5 and r["n_pairs_both_parsed"] == 3 and r["both_parsed_share"] == pytest.approx(3 / 5)
    assert r["positional_agreement"] == pytest.approx(2 / 3)
    assert r["positional_agreement_all"] == pytest.approx(2 / 5)  # None != "B": one-sided pairs disagree
    assert r["correct_both"] == pytest.approx(1 / 5)  # q1 only; q2, q4, q5 are correct in one order
    # missing shown verdicts are not parsed verdicts: 8 of 10 calls parsed; the first-shown response is named by
    # q1 AB, q2 AB, q2 BA, q3 BA, q4 AB and q5 BA
    assert r["n_parsed"] == 8 and r["first_shown_share"] == pytest.approx(6 / 8)
    no_shown = order_summary(df.drop(columns=["verdict_shown"])).iloc[0]
    assert no_shown["n_parsed"] == 8
    assert math.isnan(no_shown["first_shown_ci_low"]) and math.isnan(no_shown["first_shown_ci_high"])
