"""order_summary: consistency counted only where both orders have a verdict; position bias shown."""

from __future__ import annotations

import pandas as pd
import pytest

from judgelab.judges.pairwise import VERDICT_COLUMNS
from judgelab.prompts import to_original_frame
from judgelab.stats.agreement import order_summary


def table(calls: list[tuple[str, str, str, str]], judge: str = "j") -> pd.DataFrame:
    """Rows from (pair_id, order, verdict as shown or "" , status); gold is A for every pair."""
    rows = []
    for pid, order, shown, status in calls:
        verdict = to_original_frame(shown or None, order) or ""
        rows.append({c: None for c in VERDICT_COLUMNS} | {
            "pair_id": pid, "order": order, "judge": judge, "verdict_shown": shown, "verdict": verdict,
            "expected_verdict": "A", "correct": verdict == "A", "status": status, "simulated": False,
        })
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def mostly_unparsed() -> pd.DataFrame:
    """10 pairs: 8 unparsed in both orders, 1 consistent (A then B shown), 1 answering A twice."""
    calls = []
    for i in range(8):
        calls += [(f"p{i}", "AB", "", "unparsed"), (f"p{i}", "BA", "", "unparsed")]
    calls += [("p8", "AB", "A", "ok"), ("p8", "BA", "B", "ok")]  # both map to A: consistent, correct
    calls += [("p9", "AB", "A", "ok"), ("p9", "BA", "A", "ok")]  # A shown first twice: A then B
    return table(calls)


def test_unparsed_pairs_do_not_count_as_agreement():
    s = order_summary(mostly_unparsed()).iloc[0]
    assert s["n_pairs"] == 10
    assert s["n_pairs_both_parsed"] == 2 and s["both_parsed_share"] == pytest.approx(0.2)
    assert s["positional_agreement"] == pytest.approx(0.5)  # old counting: 9/10
    assert s["positional_agreement_all"] == pytest.approx(0.9)  # LLMBar's "equal", kept apart
    assert s["parse_failure_rate"] == pytest.approx(16 / 20)
    assert s["n_calls"] == 20 and s["n_parsed"] == 4 and s["n_errors"] == 0
    assert s["first_shown_share"] == pytest.approx(3 / 4)
    assert s["correct_both"] == pytest.approx(0.1)


def test_a_judge_answering_first_shown_is_visibly_extreme():
    calls = []
    for i in range(100):
        calls += [(f"p{i}", "AB", "A", "ok"), (f"p{i}", "BA", "A", "ok")]
    calls[-1] = ("p99", "BA", "B", "ok")
    calls[-2] = ("p99", "AB", "B", "ok")
    s = order_summary(table(calls)).iloc[0]
    assert s["first_shown_share"] == pytest.approx(198 / 200)
    assert s["first_shown_ci_low"] > 0.95
    # always-A in both orders is never consistent once mapped back to the stored order
    assert s["positional_agreement"] == pytest.approx(0.0)
    assert s["acc_average"] == pytest.approx(0.5)
    assert s["parse_failure_rate"] == 0


def test_no_pair_parsed_in_both_orders_gives_nan_not_one():
    calls = [("p0", "AB", "A", "ok"), ("p0", "BA", "", "unparsed"), ("p1", "AB", "", "refusal"),
             ("p1", "BA", "", "error")]
    s = order_summary(table(calls)).iloc[0]
    assert s["n_pairs_both_parsed"] == 0 and s["both_parsed_share"] == 0
    assert pd.isna(s["positional_agreement"])
    assert s["positional_agreement_all"] == pytest.approx(0.5)
    assert s["n_errors"] == 1 and s["parse_failure_rate"] == pytest.approx(2 / 3)


def test_groups_are_separate():
    both = pd.concat([mostly_unparsed(), table([("q", "AB", "A", "ok"), ("q", "BA", "B", "ok")], judge="k")])
    s = order_summary(both).set_index("judge")
    assert s.loc["k", "positional_agreement"] == 1.0 and s.loc["k", "both_parsed_share"] == 1.0
    assert s.loc["j", "positional_agreement"] == pytest.approx(0.5)


def test_audit_figure_draws_position_bias_even_with_nan_rows(tmp_path):
    from judgelab.plots.orders import accuracy_figure

    both = pd.concat([mostly_unparsed(),
                      table([("q", "AB", "", "unparsed"), ("q", "BA", "", "unparsed")], judge="k"),
                      table([(f"r{i}", o, "A", "ok") for i in range(7) for o in ("AB", "BA")], judge="all-A")])
    s = order_summary(both, by=("judge", "simulated"))
    s["dataset"] = "set"
    assert pd.isna(s.set_index("judge").loc["k", "first_shown_share"])
    accuracy_figure(s, str(tmp_path / "acc.png"))
    assert (tmp_path / "acc.png").stat().st_size > 10_000


def test_ties_count_neither_first_nor_second():
    """40 first-shown, 40 second-shown and 20 ties: no position preference (0.5 with a CI around it),
    not 0.40 with a CI excluding 0.5 as when ties counted as 'not first'."""
    calls = []
    for i in range(50):
        shown_ab, shown_ba = ("A", "A") if i < 20 else ("B", "B") if i < 40 else ("tie", "tie")
        calls += [(f"p{i}", "AB", shown_ab, "ok"), (f"p{i}", "BA", shown_ba, "ok")]
    s = order_summary(table(calls)).iloc[0]
    assert s["n_parsed"] == 100 and s["tie_rate"] == pytest.approx(0.2)
    assert s["first_shown_share"] == pytest.approx(0.5)
    assert s["first_shown_ci_low"] < 0.5 < s["first_shown_ci_high"]
