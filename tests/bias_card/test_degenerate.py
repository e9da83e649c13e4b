"""The bias card on degenerate judges: never an exception, never a detection without a finite,
non-zero SE and a CI that excludes the null; parse failures lead; tests clustered like their CIs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import binom, binomtest

from judgelab.bias_card import CardSettings, bias_card
from judgelab.bias_card.card import METRICS, card_view
from judgelab.bias_card.metrics import JUDGE_METRICS, STATUSES
from judgelab.bias_card.report import card_markdown
from judgelab.stats.clustered import binomial_mde
from judgelab.stats.mcnemar import mcnemar_test
from tests.helpers.bias_card_logs import LONG, SHORT, Call, both_orders, lengths, table

FAST = CardSettings(n_resamples=200)
#: logs without gold whose pairs differ only in the cue by construction: the cue rows are identified
CONTROLLED = CardSettings(n_resamples=200, controlled_pairs=True)


def _md(card: pd.DataFrame, s: CardSettings = FAST) -> str:
    return card_markdown(card, title="t", settings=s, n_verdicts={}, simulated=False)


def _check_card(card: pd.DataFrame, s: CardSettings) -> None:
    """The invariants every card must keep, whatever the judge."""
    assert set(card["status"]) <= set(STATUSES)
    for r in card.itertuples():
        if r.status == "detected":
            assert r.estimable and r.identified and METRICS[r.metric].kind in ("bias", "accuracy")
            assert math.isfinite(r.se) and r.se > 0, r
            assert not r.ci_low <= r.null_value <= r.ci_high, r
            assert r.p_value < s.alpha, r
        if not r.estimable:
            assert r.status == "not estimable" and r.reason, r
        if math.isfinite(r.ci_low) and r.metric != "arena_hard_score" and r.estimable and r.n > 0:
            assert r.ci_high > r.ci_low, r  # shares never get a zero-width interval
    md = _md(card, s)
    for line in md.splitlines():
        if line.startswith("Biases detected:"):
            named = [m for m in METRICS if f" {m} " in f" {line[16:]}"]
            assert named
            for m in named:
                assert set(card.loc[card["metric"] == m, "status"]) & {"detected"}, (m, line)


# --------------------------------------------------------------------------------------------- judges


def constant_stored_a(n: int) -> list[Call]:
    return [c for i in range(n) for c in both_orders(f"q{i}", f"p{i}", "A", "B", **lengths(i))]


def first_shown(n: int, items: int | None = None) -> list[Call]:
    return [c for i in range(n) for c in both_orders(f"q{i % (items or n)}", f"p{i}", "A", "A", **lengths(i))]


def never_parses(n: int) -> list[Call]:
    return [c for i in range(n) for c in both_orders(f"q{i}", f"p{i}", "", "", **lengths(i))]


def always_tie(n: int) -> list[Call]:
    return [c for i in range(n) for c in both_orders(f"q{i}", f"p{i}", "tie", "tie", **lengths(i))]


def random_judge(n: int, seed: int) -> list[Call]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        for order in ("AB", "BA"):
            shown = str(rng.choice(["A", "B", "tie", ""], p=[0.4, 0.4, 0.1, 0.1]))
            status = "unparsed" if not shown else str(rng.choice(["ok", "fallback"], p=[0.8, 0.2]))
            out.append(Call(f"q{i % max(1, n // 3)}", f"p{i}", order, shown, status,
                            gold=str(rng.choice(["A", "B"])), **lengths(int(rng.integers(0, 20)))))
    return out


JUDGES = {
    "constant": lambda n, seed: constant_stored_a(n),
    "first_shown": lambda n, seed: first_shown(n),
    "never_parses": lambda n, seed: never_parses(n),
    "always_tie": lambda n, seed: always_tie(n),
    "one_verdict": lambda n, seed: first_shown(1)[:1],
    "random": random_judge,
}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(JUDGES)), n=st.integers(1, 30), seed=st.integers(0, 10_000),
       alpha=st.sampled_from([0.01, 0.05, 0.1]))
def test_no_degenerate_judge_breaks_the_card_or_is_detected_without_evidence(kind, n, seed, alpha):
    s = CardSettings(n_resamples=100, alpha=alpha, seed=seed)
    card = bias_card(table(JUDGES[kind](n, seed)), s)
    assert len(card) == 2 * len(JUDGE_METRICS)  # every metric, both views, whatever happened
    _check_card(card, s)


def test_each_degenerate_judge_gets_the_status_its_data_support():
    c = card_view(bias_card(table(never_parses(30)), FAST))
    assert c.loc["parse_failures", "estimate"] == 1.0
    bias = [m for m in METRICS if METRICS[m].kind == "bias"]
    assert (c.loc[bias, "status"] == "not estimable").all()
    c = card_view(bias_card(table(always_tie(30)), FAST))
    assert c.loc["position_preference", "status"] == "not estimable"  # no decisive verdict
    assert c.loc["tie_rate", "estimate"] == 1.0 and c.loc["parse_failures", "estimate"] == 0.0  # a tie is parsed
    assert "decisive" in c.loc["position_preference", "reason"]
    c = card_view(bias_card(table(first_shown(1)[:1]), FAST))
    assert (c["status"] != "detected").all()
    # a judge naming stored A in both orders: no position preference, the logit is fine
    c = card_view(bias_card(table(constant_stored_a(30)), FAST))
    assert c.loc["position_preference", "estimate"] == 0.0
    assert c.loc["position_preference", "status"] in ("not detected", "underpowered")


# --------------------------------------------------------------------------------------------- SmolLM2


def test_smollm2_always_first_shown_is_not_estimable_for_the_logit_and_never_crashes():
    """SmolLM2-135M logits: 24 verdicts, every one the first-shown answer.  Was: 'Biases detected:
    length_controlled -0.000 [-0.000,-0.000] p=0' and position 1.000 [1.000, 1.000]."""
    card = bias_card(table(first_shown(12)), FAST)
    c = card_view(card)
    for m in ("length_controlled", "markdown_controlled"):
        assert c.loc[m, "status"] == "not estimable"
        assert "separation" in c.loc[m, "reason"]
    pos = c.loc["position_preference"]
    assert pos["estimate"] == 1.0 and pos["ci_high"] == pytest.approx(1.0)
    # Wilson on 24 verdicts: (b + 1) / 2 >= 0.862 at z = 1.96 (t on 11 df: a little wider)
    assert 0.5 < pos["ci_low"] < 2 * 0.862 - 1
    assert pos["status"] == "detected" and pos["se"] > 0
    md = _md(card)
    detected = next(ln for ln in md.splitlines() if ln.startswith("Biases detected:"))
    assert "position_preference 1.000" in detected and "_controlled" not in detected
    assert "Not estimable: " in md and "length_controlled (every decisive verdict names the same slot" in md
    _check_card(card, FAST)


def test_smollm2_mostly_unparsed_leads_with_parse_failures():
    """SmolLM2-135M generation mode: 21 of 24 answers unparsed, the 3 parsed ones all first-shown.
    Was: 'No bias detected at this sample size', position 0.125 counting unparsed answers as neutral."""
    calls = never_parses(12)
    calls[0] = Call("q0", "p0", "AB", "A")
    calls[1] = Call("q0", "p0", "BA", "A")
    calls[2] = Call("q1", "p1", "AB", "A")
    card = bias_card(table(calls), FAST)
    c = card_view(card)
    assert c.loc["parse_failures", "estimate"] == pytest.approx(21 / 24)
    pos = c.loc["position_preference"]
    assert pos["estimate"] == 1.0 and pos["n"] == 3  # over the parsed verdicts only
    assert pos["status"] == "not estimable" and "fewer than 10 decisive verdicts (3)" in pos["reason"]
    assert c.loc["position_preference", "parsed_share"] == pytest.approx(3 / 24)
    md = _md(card)
    body = md.split("## j", 1)[1].splitlines()
    assert body[2].startswith("**Parse failures: 88% of 24 calls gave no verdict**")
    assert "No bias detected" not in md and "No bias could be tested" in md


def test_a_failing_statistic_leaves_a_row_that_says_why(monkeypatch):
    import judgelab.bias_card.card as card_mod

    def boom(*a, **k):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(card_mod, "_logit_rows", boom)
    c = card_view(bias_card(table(constant_stored_a(20)), FAST))
    assert c.loc["length_controlled", "status"] == "not estimable"
    assert c.loc["length_controlled", "reason"] == "failed: ZeroDivisionError: float division by zero"
    assert c.loc["accuracy_average", "status"] != "not estimable"  # the rest of the card is there


def test_cli_audits_a_judge_that_always_names_the_first_shown_answer(tmp_path, capsys):
    from judgelab import cli
    from judgelab.io import write_table

    write_table(table(first_shown(30, items=10)), tmp_path / "log.csv")
    assert cli.main(["audit", "--format", "judgelab", str(tmp_path / "log.csv"), "--out", str(tmp_path / "a"),
                     "--resamples", "100"]) == 0
    card = pd.read_csv(tmp_path / "a" / "bias_card.csv")
    assert set(card["view"]) == {"strict", "lenient"}
    assert "not estimable" in (tmp_path / "a" / "bias_card.md").read_text()
    assert cli.main(["audit", "--format", "judgelab", str(tmp_path / "log.csv"), "--out", str(tmp_path / "b"),
                     "--resamples", "50", "--views", "strict", "--alpha", "0.01", "--min-decisive", "100"]) == 0
    strict = pd.read_csv(tmp_path / "b" / "bias_card.csv").set_index("metric")
    assert set(strict["view"]) == {"strict"}
    assert strict.loc["position_preference", "reason"] == "fewer than 100 decisive verdicts (60)"
    assert "alpha 0.01" in (tmp_path / "b" / "bias_card.md").read_text()
    capsys.readouterr()


# --------------------------------------------------------------------------------------------- clustering


def test_order_gap_is_tested_on_items_like_its_ci():
    """20 items x 10 pairs: 12 items right only as stored, 8 only swapped.  McNemar over pairs says
    p = 0.0058; over items the evidence is 12 vs 8 (sign test p = 0.50)."""
    calls = []
    for i in range(20):
        for k in range(10):
            ab, ba = ("A", "A") if i < 12 else ("B", "B")  # shown; gold A: AB right & BA wrong, or the reverse
            calls += both_orders(f"q{i}", f"q{i}p{k}", ab, ba)
    assert mcnemar_test(120, 80).pvalue == pytest.approx(0.0058, abs=1e-4)
    assert binomtest(12, 20).pvalue == pytest.approx(0.503, abs=1e-3)
    c = card_view(bias_card(table(calls), FAST))
    gap = c.loc["accuracy_order_gap"]
    assert gap["estimate"] == pytest.approx((80 - 120) / 200)  # swapped minus stored
    assert gap["statistic"] == pytest.approx(40**2 / (12 * 10**2 + 8 * 10**2))  # Durkalski: 0.8
    assert gap["p_value"] == pytest.approx(0.371, abs=1e-3)
    assert gap["ci_low"] < 0 < gap["ci_high"] and gap["status"] != "detected"
    assert "120 right only as stored, 80 only swapped" in gap["note"]


def test_binomial_tests_use_the_effective_n():
    """20 items of 10 verdicts each, whole items picking the longer (12) or the shorter (8)
    response: the verdicts of one item are one unit of evidence, not ten."""
    calls = []
    for i in range(20):
        for k in range(5):
            longer_first = i < 12
            calls += both_orders(f"q{i}", f"q{i}p{k}", "A" if longer_first else "B", "B" if longer_first else "A",
                                 gold="")
    c = card_view(bias_card(table(calls), FAST))
    r = c.loc["length_preference"]
    assert r["estimate"] == pytest.approx(0.6) and r["n"] == 200
    assert binomtest(120, 200).pvalue < 0.01  # what independent verdicts would claim
    assert r["p_value"] > 0.3 and r["status"] != "detected"
    # the SE the test uses is on the effective n (about 20 items), not on the 200 verdicts
    assert r["se"] > 2 * math.sqrt(0.25 / 200)


def test_one_item_has_a_design_effect_of_one():
    """80 verdicts of one item, 48 for the longer answer: p = 0.093 (binomial on 80), never the
    0.014 of a design effect at its 0.5 floor (n_eff 160)."""
    calls = []
    for k in range(40):
        shown = ("A", "B") if k < 24 else ("B", "A")  # stored A (longer) in both orders, or B in both
        calls += both_orders("q0", f"p{k}", *shown, gold="")
    c = card_view(bias_card(table(calls), FAST))
    r = c.loc["length_preference"]
    assert r["n"] == 80 and r["estimate"] == pytest.approx(0.6)
    assert r["p_value"] == pytest.approx(binomtest(48, 80).pvalue)
    assert r["p_value"] == pytest.approx(0.093, abs=1e-3)


def test_logit_standard_errors_are_clustered():
    """Copying every verdict five times inside its item adds no information: the cluster-robust
    SE stays put, where an unclustered one would shrink by sqrt(5)."""
    rng = np.random.default_rng(1)
    calls, copies = [], []
    for i in range(60):
        kw = lengths(int(rng.integers(0, 20)))
        shown = [str(rng.choice(["A", "B"], p=[0.6, 0.4])) for _ in range(2)]
        calls += both_orders(f"q{i}", f"p{i}", *shown, **kw)
        for k in range(5):
            copies += both_orders(f"q{i}", f"p{i}-{k}", *shown, **kw)
    one = card_view(bias_card(table(calls), FAST)).loc["length_controlled"]
    five = card_view(bias_card(table(copies), FAST)).loc["length_controlled"]
    assert one["status"] != "not estimable" and five["estimate"] == pytest.approx(one["estimate"], rel=1e-6)
    assert five["se"] / one["se"] > 0.85


# --------------------------------------------------------------------------------------------- alpha, power


def _longer_picks(k: int, n: int) -> list[Call]:
    """n single-pair items shown once, the first k verdicts for the longer response."""
    return [Call(f"q{i}", f"p{i}", "AB", "A" if i < k else "B", gold="") for i in range(n)]


def test_alpha_and_power_come_from_the_settings():
    log = table(_longer_picks(62, 100))
    at05 = card_view(bias_card(log, CardSettings(n_resamples=100, controlled_pairs=True))).loc["length_preference"]
    assert at05["p_value"] == pytest.approx(binomtest(62, 100).pvalue) and at05["status"] == "detected"
    at01 = card_view(bias_card(log, CardSettings(n_resamples=100, alpha=0.01, controlled_pairs=True))
                     ).loc["length_preference"]
    assert at01["status"] != "detected"
    assert at01["mde"] > at05["mde"]
    p90 = card_view(bias_card(log, CardSettings(n_resamples=100, power=0.9, controlled_pairs=True))
                    ).loc["length_preference"]
    assert p90["mde"] > at05["mde"]
    gap = [card_view(bias_card(table(random_judge(60, 3)), CardSettings(
        n_resamples=100, power=p))).loc["accuracy_order_gap", "mde"] for p in (0.8, 0.95)]
    assert gap[1] > gap[0]


def test_binomial_mde_has_the_stated_power():
    """At p0 + mde, the two-sided exact binomial test on n trials rejects with about the stated power
    (Cohen's h: asin(sqrt(p1)) = asin(sqrt(p0)) + h / 2)."""
    for n, power in ((100, 0.8), (400, 0.9)):
        s = CardSettings(power=power)
        p1 = 0.5 + binomial_mde(n, 0.5, s.alpha, s.power)
        crit = [k for k in range(n + 1) if binomtest(k, n, 0.5).pvalue < 0.05]
        got = float(sum(binom.pmf(k, n, p1) for k in crit))
        assert got == pytest.approx(power, abs=0.05)


# --------------------------------------------------------------------------------------------- identification


def test_not_identified_metrics_never_reach_the_headline():
    """One game per pair (AlpacaEval): a judge always naming the first slot has b = 1, but position
    is not identified (it mixes with gold), so it is no detection."""
    calls = [Call(f"q{i}", f"p{i}", "AB", "A", gold="") for i in range(60)]
    card = bias_card(table(calls), FAST)
    c = card_view(card)
    assert c.loc["position_preference", "estimate"] == 1.0
    assert c.loc["position_preference", "status"] == "not identified"
    assert c.loc["position_preference", "p_value"] < 1e-6  # the test ran; the design cannot attribute it
    md = _md(card)
    assert "Biases detected: position_preference" not in md
    assert "Not identified (never a detection): position_preference (only one presentation order" in md


def test_a_share_at_one_keeps_a_nonzero_interval():
    c = card_view(bias_card(table(_longer_picks(100, 100)), CONTROLLED)).loc["length_preference"]
    assert c["estimate"] == 1.0 and c["ci_high"] == pytest.approx(1.0) and 0.9 < c["ci_low"] < 1.0
    assert c["se"] > 0 and c["status"] == "detected"


def test_responses_equal_in_length_leave_the_length_rows_without_data():
    calls = [c for i in range(20) for c in both_orders(f"q{i}", f"p{i}", "A", "B", response_a=SHORT,
                                                        response_b=SHORT)]
    c = card_view(bias_card(table(calls), FAST))
    assert c.loc["length_preference", "status"] == "not estimable"
    assert c.loc["length_preference", "reason"] == "no eligible verdicts"
    assert LONG != SHORT


def test_underpowered_only_when_the_mde_exceeds_the_threshold():
    """No preference at all: with 400 independent verdicts the MDE (about 0.07) is below the 0.10
    threshold, so the card says 'not detected'; with 20 it could have missed a 0.10 effect."""
    big = card_view(bias_card(table(_longer_picks(200, 400)), CONTROLLED)).loc["length_preference"]
    assert big["p_value"] > 0.9 and big["mde"] < 0.1 and big["status"] == "not detected"
    assert not big["underpowered"]
    small = card_view(bias_card(table(_longer_picks(10, 20)), CONTROLLED)).loc["length_preference"]
    assert small["mde"] > 0.1 and small["status"] == "underpowered" and small["underpowered"]


def test_min_decisive_is_inclusive_and_the_first_row_of_a_pair_counts():
    at = card_view(bias_card(table(_longer_picks(10, 10)), CONTROLLED)).loc["length_preference"]
    assert at["estimable"] and at["status"] == "detected"  # 10 of 10 with min_decisive 10
    below = card_view(bias_card(table(_longer_picks(9, 9)), CONTROLLED)).loc["length_preference"]
    assert below["status"] == "not estimable" and below["reason"] == "fewer than 10 verdicts to test (9)"
    # a pair recorded twice in one order: its first record is the one paired with the other order
    calls = [c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B")]
    calls.append(Call("q0", "p0", "AB", "B"))
    c = card_view(bias_card(table(calls), FAST))
    assert c.loc["positional_agreement", "estimate"] == 1.0 and c.loc["positional_agreement", "n"] == 12


def test_self_preference_without_a_quality_control_is_never_a_detection():
    """Always picking the own family's response (stored B) is P = 1, but without gold, controlled
    pairs or a model term quality is not controlled: the row is 'not identified' and stays out of
    the headline."""
    log = table([c for i in range(40) for c in both_orders(f"q{i}", f"p{i}", "B", "A", gold="")])
    log["family_b"] = "openai"
    card = bias_card(log, FAST)
    c = card_view(card).loc["self_preference"]
    assert c["estimate"] == 1.0 and c["p_value"] < 1e-6
    assert c["status"] == "not identified" and not c["identified"]
    assert c["note"].startswith("not identified: confounded with answer quality")
    detected = [ln for ln in _md(card).splitlines() if ln.startswith("Biases detected:")]
    assert not any("self_preference" in ln for ln in detected)


def test_a_logit_se_above_the_cap_is_not_estimable():
    rng = np.random.default_rng(1)
    calls = [c for i in range(60) for c in both_orders(f"q{i}", f"p{i}", *rng.choice(["A", "B"], 2),
                                                        **lengths(int(rng.integers(0, 20))))]
    ok = card_view(bias_card(table(calls), FAST)).loc["length_controlled"]
    assert ok["estimable"] and 0 < ok["se"] < 10
    capped = card_view(bias_card(table(calls), CardSettings(n_resamples=50, max_logit_se=ok["se"] / 2)))
    r = capped.loc["length_controlled"]
    assert r["status"] == "not estimable" and r["reason"].startswith("quasi-separation: standard error")
