"""From calls to strategy verdicts, checked on a hand-made calls table (paper 003, Sec. 3.3).

Every expected verdict below is worked out by hand from the paper's rules: S1 keeps a verdict when
both orders agree and answers tie otherwise; S2 and S3 take the strict majority of all their calls
(tie when every call answered without a majority, no verdict when a missing answer could have
decided it); a missing or unparsed answer is never a vote, and an instance without a verdict is
wrong.  Every call's outcome (ok, fallback, unparsed, refusal, error, never made) is counted on the
row, malformed answers by kind, and a reference-guided strategy pays its share of the judge's
reference generation (one per question, split over that question's pairs).
"""

from __future__ import annotations

import logging

import pandas as pd
import pytest

from judgelab.strategies import StrategySettings
from judgelab.strategies.aggregate import (
    STRATEGY_VERDICT_COLUMNS,
    aggregate_strategies,
    cross_family_members,
    malformed_kind,
)
from judgelab.strategies.run import REFERENCE_GEN_ID, question_key

SETTINGS = StrategySettings()
B0, BA = "baseline|AB|t=judge", "baseline|BA|t=judge"
T0, T3, T7 = "baseline|AB|t=0", "baseline|AB|t=0.3", "baseline|AB|t=0.7"
REF = "reference|AB|t=judge"
TWO = '{"verdict": "A"} then {"verdict": "B"}'

JUDGES = {  # name -> backend, model, family, simulated, judge_seed
    "j": ("simulated", "mj", "google", True, 7),
    "k": ("openai_http", "mk", "anthropic", False, 3),
    "l": ("vllm", "ml", "openai", False, 5),
}
# (judge, call_id, pair_id, verdict, status, parse_method, raw_text); tokens and cost are distinct per call
CALLS = [
    ("j", B0, "p1", "A", "ok", "json", '{"verdict": "A"}'),
    ("j", B0, "p2", "", "unparsed", "json:conflicting", TWO),
    ("j", B0, "p3", "B", "fallback", "fallback:brackets", "[[B]]"),
    ("j", B0, "p4", "", "refusal", "refusal", "I cannot judge this."),
    ("j", BA, "p1", "A", "ok", "json", "{}"),
    ("j", BA, "p2", "A", "ok", "json", "{}"),
    ("j", BA, "p3", "A", "ok", "json", "{}"),
    # p4 has no swapped call: a missing call
    ("j", T0, "p1", "A", "ok", "json", "{}"), ("j", T3, "p1", "A", "ok", "json", "{}"),
    ("j", T7, "p1", "B", "ok", "json", "{}"),
    ("j", T0, "p2", "A", "ok", "json", "{}"), ("j", T3, "p2", "B", "ok", "json", "{}"),
    ("j", T7, "p2", "tie", "ok", "json", "{}"),
    ("j", T0, "p3", "", "unparsed", "none", "It is hard to say."), ("j", T3, "p3", "B", "ok", "json", "{}"),
    ("j", T7, "p3", "B", "ok", "json", "{}"),
    ("j", T0, "p4", "", "error", "", ""), ("j", T3, "p4", "", "unparsed", "none", '{"verd'),
    ("j", T7, "p4", "A", "ok", "json", "{}"),
    ("j", REF, "p1", "B", "ok", "json", "{}"), ("j", REF, "p2", "tie", "ok", "json", "{}"),
    ("j", REF, "p4", "A", "ok", "json", "{}"),  # no reference call for p3 (its question got no reference)
    ("k", B0, "p1", "B", "ok", "json", "{}"), ("k", B0, "p2", "tie", "ok", "json", "{}"),
    ("k", B0, "p3", "B", "ok", "json", "{}"), ("k", B0, "p4", "A", "ok", "json", "{}"),
    ("l", B0, "p1", "B", "ok", "json", "{}"), ("l", B0, "p2", "", "unparsed", "json:conflicting", TWO),
    ("l", B0, "p3", "B", "ok", "json", "{}"),  # l has no call for p4
    # p5: only j's baseline and two of its three temperatures were asked; k and l have no call
    ("j", B0, "p5", "B", "ok", "json", "{}"), ("j", T3, "p5", "B", "ok", "json", "{}"),
    ("j", T7, "p5", "B", "ok", "json", "{}"),
]
PAIRS = pd.DataFrame([
    {"pair_id": "p1", "prompt": "Q1", "expected_verdict": "A", "bias_type": "STYLE", "category": "math"},
    {"pair_id": "p2", "prompt": "Q1", "expected_verdict": "tie", "bias_type": "POSITION", "category": "math"},
    {"pair_id": "p3", "prompt": "Q2", "expected_verdict": "B", "bias_type": "LENGTH", "category": "code"},
    {"pair_id": "p4", "prompt": "Q3", "expected_verdict": "A", "bias_type": "none", "category": "code"},
    {"pair_id": "p5", "prompt": "Q4", "expected_verdict": "B", "bias_type": "none", "category": "code"},
])
# reference generations of judge j: Q1 is shared by two pairs, Q3 has one, Q9 is not in this pair set
REF_GEN = {"Q1": (100, 40, 0.3), "Q3": (30, 10, 0.09), "Q9": (7, 7, 0.07)}


def cost_of(i: int) -> tuple[int, int, float]:
    return 10 + i, 100 + 3 * i, 0.001 * (i + 1)


def calls_table() -> pd.DataFrame:
    rows = []
    for i, (judge, cid, pid, verdict, status, method, raw) in enumerate(CALLS):
        backend, model, family, simulated, seed = JUDGES[judge]
        tin, tout, cost = cost_of(i)
        rows.append({"dataset": "toy", "kind": "pairwise", "judge": judge, "call_id": cid, "pair_id": pid,
                     "verdict": verdict, "status": status, "parse_method": method, "raw_text": raw,
                     "tokens_in": tin, "tokens_out": tout, "cost_usd": cost, "backend": backend, "model": model,
                     "family": family, "simulated": simulated, "judge_seed": seed, "question_key": ""})
    for q, (tin, tout, cost) in REF_GEN.items():
        rows.append({"dataset": "toy", "kind": "text", "judge": "j", "call_id": REFERENCE_GEN_ID, "pair_id": "",
                     "verdict": "", "status": "ok", "parse_method": "", "raw_text": "a reference",
                     "tokens_in": tin, "tokens_out": tout, "cost_usd": cost, "backend": "simulated", "model": "mj",
                     "family": "google", "simulated": True, "judge_seed": 7, "question_key": question_key(q)})
    return pd.DataFrame(rows)


def spent(judges: str, call_ids: tuple[str, ...], pid: str) -> tuple[float, float, float]:
    """Summed tokens and cost of the listed calls that were made (straight from CALLS)."""
    tot = [0.0, 0.0, 0.0]
    for i, (judge, cid, p, *_rest) in enumerate(CALLS):
        if judge in judges and cid in call_ids and p == pid:
            tot = [a + b for a, b in zip(tot, cost_of(i), strict=True)]
    return tot[0], tot[1], tot[2]


@pytest.fixture
def sv() -> pd.DataFrame:
    # function scope: mutmut maps each test to the functions it calls, so each test must call them itself
    out = aggregate_strategies(calls_table(), PAIRS, {"j": ["B0", "S1", "S2", "S3", "S6"], "k": ["S3", "B0"]},
                               SETTINGS, {"j": ["j", "k", "l"]})
    return out.set_index(["judge", "strategy", "pair_id"], drop=False)


# verdict, n_calls, n_missing, {status: n}, {malformed kind: n} per (strategy, pair) of judge j
EXPECTED = {
    ("B0", "p1"): ("A", 1, 0, {"ok": 1}, {}),
    ("B0", "p2"): (None, 1, 0, {"unparsed": 1}, {"two_verdicts": 1}),
    ("B0", "p3"): ("B", 1, 0, {"fallback": 1}, {"no_json": 1}),
    ("B0", "p4"): (None, 1, 0, {"refusal": 1}, {}),
    ("S1", "p1"): ("A", 2, 0, {"ok": 2}, {}),  # both orders agree
    ("S1", "p2"): (None, 2, 0, {"unparsed": 1, "ok": 1}, {"two_verdicts": 1}),  # one order unparsed
    ("S1", "p3"): ("tie", 2, 0, {"fallback": 1, "ok": 1}, {"no_json": 1}),  # B vs A: tie on disagreement
    ("S1", "p4"): (None, 1, 1, {"refusal": 1}, {}),  # refused, swapped call never made
    ("S2", "p1"): ("A", 3, 0, {"ok": 3}, {}),  # A, A, B
    ("S2", "p2"): ("tie", 3, 0, {"ok": 3}, {}),  # A, B, tie: all answered, no majority
    ("S2", "p3"): ("B", 3, 0, {"unparsed": 1, "ok": 2}, {"prose_only": 1}),  # -, B, B: 2 of 3
    ("S2", "p4"): (None, 3, 0, {"error": 1, "unparsed": 1, "ok": 1}, {"broken_json": 1}),  # -, -, A
    ("S3", "p1"): ("B", 3, 0, {"ok": 3}, {}),  # j A, k B, l B
    ("S3", "p2"): (None, 3, 0, {"unparsed": 2, "ok": 1}, {"two_verdicts": 2}),  # -, tie, -
    ("S3", "p3"): ("B", 3, 0, {"fallback": 1, "ok": 2}, {"no_json": 1}),
    ("S3", "p4"): (None, 2, 1, {"refusal": 1, "ok": 1}, {}),  # -, A, never asked: 1 of 3 is no majority
    ("S6", "p1"): ("B", 1, 0, {"ok": 1}, {}),
    ("S6", "p2"): ("tie", 1, 0, {"ok": 1}, {}),
    ("S6", "p3"): (None, 0, 1, {}, {}),
    ("S6", "p4"): ("A", 1, 0, {"ok": 1}, {}),
    ("B0", "p5"): ("B", 1, 0, {"ok": 1}, {}),
    ("S1", "p5"): (None, 1, 1, {"ok": 1}, {}),  # the swapped order was never asked
    ("S2", "p5"): ("B", 2, 1, {"ok": 2}, {}),  # -, B, B: two of three calls are a majority
    ("S3", "p5"): (None, 1, 2, {"ok": 1}, {}),  # B, -, -: one vote of three
    ("S6", "p5"): (None, 0, 1, {}, {}),
}
GOLD = dict(zip(PAIRS["pair_id"], PAIRS["expected_verdict"], strict=True))


def test_one_row_per_judge_strategy_instance_in_the_documented_columns(sv):
    assert list(sv.columns) == STRATEGY_VERDICT_COLUMNS
    assert len(sv) == 5 * 5 + 1 * 5  # k has no S3 ensemble: no S3 rows, never empty ones
    assert set(sv.loc["k", "strategy"]) == {"B0"}
    assert "l" not in set(sv["judge"])  # a member is not judged unless asked for
    assert (sv["dataset"] == "toy").all()


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_strategy_verdicts_and_call_outcomes_by_hand(sv, key):
    strat, pid = key
    verdict, n_calls, missing, statuses, kinds = EXPECTED[key]
    r = sv.loc[("j", strat, pid)]
    assert r["verdict"] == (verdict or "")
    assert bool(r["has_verdict"]) is (verdict is not None)
    assert bool(r["correct"]) is (verdict == GOLD[pid])  # no verdict is wrong, a tie right only on tie gold
    assert (r["n_calls"], r["n_missing_calls"]) == (n_calls, missing)
    for s in ("ok", "fallback", "unparsed", "refusal", "error"):
        assert r[f"n_{s}"] == statuses.get(s, 0), s
    for k in ("two_verdicts", "no_json", "prose_only", "broken_json"):
        assert r[f"n_{k}"] == kinds.get(k, 0), k
    assert r["expected_verdict"] == GOLD[pid]
    p = PAIRS.set_index("pair_id").loc[pid]
    assert (r["bias_type"], r["category"]) == (p["bias_type"], p["category"])


def test_judge_description_columns_come_from_the_judge(sv):
    for judge in ("j", "k"):
        backend, model, family, simulated, seed = JUDGES[judge]
        rows = sv.loc[judge]
        assert (rows["backend"] == backend).all() and (rows["model"] == model).all()
        assert (rows["family"] == family).all() and (rows["simulated"] == simulated).all()
        assert (rows["judge_seed"] == seed).all()
    assert set(sv.loc[("j", "S3"), "members"]) == {"j,k,l"}
    assert set(sv.loc[("j", "S2"), "members"]) == {"j"} and set(sv.loc[("k", "B0"), "members"]) == {"k"}


def test_k_baseline_is_its_own_calls(sv):
    got = sv.loc[("k", "B0")].set_index("pair_id")
    assert got["verdict"].to_dict() == {"p1": "B", "p2": "tie", "p3": "B", "p4": "A", "p5": ""}
    assert got["correct"].to_dict() == {"p1": False, "p2": True, "p3": True, "p4": True, "p5": False}
    assert got["n_missing_calls"].to_dict() == {"p1": 0, "p2": 0, "p3": 0, "p4": 0, "p5": 1}


@pytest.mark.parametrize("pid", ["p1", "p2", "p3", "p4", "p5"])
def test_tokens_and_cost_sum_every_component_call(sv, pid):
    own = {"B0": (B0,), "S1": (B0, BA), "S2": (T0, T3, T7)}
    for strat, cids in own.items():
        r = sv.loc[("j", strat, pid)]
        assert (r["tokens_in"], r["tokens_out"], r["cost_usd"]) == pytest.approx(spent("j", cids, pid))
    # S3 pays for every member's baseline call
    r = sv.loc[("j", "S3", pid)]
    assert (r["tokens_in"], r["tokens_out"], r["cost_usd"]) == pytest.approx(spent("jkl", (B0,), pid))


def test_reference_generation_is_amortised_over_the_pairs_of_its_question(sv):
    # Q1 (p1, p2) splits its generation in two; Q3 (p4) pays it whole; Q2 (p3) had none
    share = {"p1": [x / 2 for x in REF_GEN["Q1"]], "p2": [x / 2 for x in REF_GEN["Q1"]],
             "p3": [0, 0, 0], "p4": list(REF_GEN["Q3"]), "p5": [0, 0, 0]}
    for pid, extra in share.items():
        r = sv.loc[("j", "S6", pid)]
        call = spent("j", (REF,), pid)
        assert (r["tokens_in"], r["tokens_out"], r["cost_usd"]) == pytest.approx(
            tuple(a + b for a, b in zip(call, extra, strict=True)))
    total = sv.loc[("j", "S6"), "cost_usd"].sum()
    made = sum(spent("j", (REF,), p)[2] for p in GOLD)
    assert total == pytest.approx(made + REF_GEN["Q1"][2] + REF_GEN["Q3"][2])  # each generation paid once
    # strategies without a reference never pay for one
    assert sv.loc[("j", "B0", "p1"), "cost_usd"] == pytest.approx(spent("j", (B0,), "p1")[2])


def test_unknown_judge_and_empty_tables():
    calls = calls_table()
    with pytest.raises(KeyError, match="no calls table rows for judge 'zz' in dataset 'toy'"):
        aggregate_strategies(calls, PAIRS, {"zz": ["B0"]}, SETTINGS)
    with pytest.raises(KeyError, match="in dataset ''"):
        aggregate_strategies(calls.iloc[:0], PAIRS, {"j": ["B0"]}, SETTINGS)
    empty = aggregate_strategies(calls, PAIRS, {}, SETTINGS)
    assert empty.empty and list(empty.columns) == STRATEGY_VERDICT_COLUMNS


def test_s3_without_members_gives_no_rows():
    sv = aggregate_strategies(calls_table(), PAIRS, {"j": ["B0", "S3"]}, SETTINGS)
    assert set(sv["strategy"]) == {"B0"} and len(sv) == 5


@pytest.mark.parametrize(("status", "method", "raw", "kind"), [
    ("ok", "json", '{"verdict": "A"}', ""),
    ("fallback", "fallback:brackets", "[[A]]", "no_json"),
    ("refusal", "refusal", "I cannot help.", "refusal"),
    ("error", "", "", "error"),
    ("unparsed", "json:conflicting", TWO, "two_verdicts"),
    ("unparsed", "none", '{"verdict": ', "broken_json"),
    ("unparsed", "none", "Both are fine.", "prose_only"),
    ("unparsed", "none", None, "prose_only"),
])
def test_malformed_kinds(status, method, raw, kind):
    assert malformed_kind(status, method, raw) == kind


PANEL = [("pro", "google"), ("flash", "google"), ("ctl", "none"), ("claude", "anthropic"), ("anon", ""),
         ("mystery", "unknown"), ("gpt", "openai"), ("gpt-mini", "openai"), ("llama", "meta")]


def test_cross_family_members_one_judge_per_other_family():
    m = cross_family_members(PANEL, 3)
    # the first judge of each other family, in panel order; a same-family judge never joins
    assert m["pro"] == ["pro", "claude", "gpt"] and m["flash"] == ["flash", "claude", "gpt"]
    assert m["claude"] == ["claude", "pro", "gpt"]
    assert m["gpt-mini"] == ["gpt-mini", "pro", "claude"]
    # judges without a family ("none", "", "unknown") get an ensemble but never join one
    assert m["ctl"] == ["ctl", "pro", "claude"] and m["anon"] == ["anon", "pro", "claude"]
    assert not {"ctl", "anon", "mystery"} & {x for v in m.values() for x in v[1:]}
    assert all(len(v) == 3 and len(set(v)) == 3 for v in m.values())
    m4 = cross_family_members(PANEL, 4)
    assert m4["pro"] == ["pro", "claude", "gpt", "llama"]
    # excluded judges (controls) never join another judge's ensemble
    ex = cross_family_members(PANEL, 3, exclude=["claude"])
    assert ex["pro"] == ["pro", "gpt", "llama"] and ex["claude"] == ["claude", "pro", "gpt"]


def test_cross_family_members_too_few_families_gives_no_ensemble(caplog):
    judges = [("pro", "google"), ("flash", "google"), ("claude", "anthropic")]
    with caplog.at_level(logging.WARNING, logger="judgelab.strategies.aggregate"):
        m = cross_family_members(judges, 3)
    assert m == {}
    assert "judge flash: only 2 cross-family members available (3 needed); no S3" in caplog.messages
    assert cross_family_members(judges, 2) == {"pro": ["pro", "claude"], "flash": ["flash", "claude"],
                                               "claude": ["claude", "pro"]}


def test_explicit_ensembles():
    judges = [("pro", "google"), ("claude", "anthropic"), ("gpt", "openai"), ("llama", "meta")]
    named = cross_family_members(judges, 3, explicit={
        "absent": ["x", "y"],  # a judge of another data set's panel: ignored, the rest still read
        "pro": ["claude", "pro", "llama"],  # the judge itself is put first, once
        "gpt": ["llama", "claude", "pro"],  # an explicit ensemble may have another size
    })
    assert named["pro"] == ["pro", "claude", "llama"]
    assert named["gpt"] == ["gpt", "llama", "claude", "pro"]
    assert named["claude"] == ["claude", "pro", "gpt"] and "absent" not in named
    with pytest.raises(ValueError) as err:
        cross_family_members(judges, 3, explicit={"pro": ["claude", "x1", "x2"]})
    assert str(err.value) == ("config strategies/ensembles/pro: 'x1', 'x2' not judges of this panel "
                              "(claude, gpt, llama, pro)")
