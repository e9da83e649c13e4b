"""The simulated panel: planted biases are recovered by the bias estimator.

Each test builds pairs that differ in exactly one cue (slot, length, markdown,
tone, a bandwagon statement, the judge family's signature), shows them in both
orders, and checks that the estimated signed bias score b (stats.bias) recovers
the planted score: the right sign, and a CI that covers the exact expected value
computed from the model's own ordered-logit probabilities for the cues it read.
A judge with no planted bias gets CIs that cover 0.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from judgelab.cache import CallCache
from judgelab.config import ConfigError, JudgeSpec
from judgelab.datasets.features import FAMILY_SIGNATURES
from judgelab.datasets.pairs import Pair
from judgelab.judges import make_judge
from judgelab.judges.pairwise import judge_pairs, pair_requests
from judgelab.judges.runner import run_requests
from judgelab.judges.simulated import (
    REFERENCE_CONTRASTS,
    SimulatedJudge,
    bias_score,
    coefficient_for_bias,
    pairwise_probs,
)
from judgelab.parsing import parse_pairwise, parse_score
from judgelab.prompts import pairwise_request
from judgelab.records import JudgeRequest, Message, OutputKind
from judgelab.stats.bias import bias_score as estimate_bias

N = 300
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def sentence(i: int, k: int) -> str:
    return f"Item {i} step {k}: the {WORDS[(i + k) % 12]} value follows from the {WORDS[(3 * i + k) % 12]} rule."


def base_text(i: int, n: int = 4) -> str:
    return " ".join(sentence(i, k) for k in range(n))


def make(judge_name: str, biases: dict, *, family: str = "openai", seed: int = 0, **profile) -> SimulatedJudge:
    spec = JudgeSpec.from_dict({
        "name": judge_name, "backend": "simulated", "model": "sim", "family": family,
        "sampling": {"temperature": 0.0, "seed": seed},
        "options": {"profile": {"biases": biases, **profile}},
    })
    judge = make_judge(spec)
    assert isinstance(judge, SimulatedJudge)
    return judge


def cue_pairs(kind: str, family: str = "openai") -> tuple[list[Pair], list[str]]:
    """Tie-gold pairs differing only in one cue; returns the pairs and the target side."""
    pairs, targets = [], []
    for i in range(N):
        plain = base_text(i)
        ctx = ""
        if kind == "position":
            a, b, target = plain, plain, "A"
        elif kind == "markdown":
            md = "## Answer\n\n" + "\n".join(f"- **Step {k}**: {sentence(i, k)}" for k in range(4))
            a, b, target = (md, plain, "A") if i % 2 == 0 else (plain, md, "B")
        elif kind == "verbosity":
            long = " ".join(f"{sentence(i, k)} This point is worth noting carefully here today." for k in range(4))
            a, b, target = (long, plain, "A") if i % 2 == 0 else (plain, long, "B")
        elif kind == "sentiment":
            pos = "Absolutely, clearly and confidently: " + plain + " Excellent and certainly correct."
            neg = "Sadly, merely and unfortunately: " + plain + " Regrettably a weak and poor note."
            a, b, target = (pos, neg, "A") if i % 2 == 0 else (neg, pos, "B")
        elif kind == "self_preference":
            sig = FAMILY_SIGNATURES[family]
            own = f"{sig[0]} {plain} {sig[1]}"
            other = f"Answer follows. {plain} End of answer."
            a, b, target = (own, other, "A") if i % 2 == 0 else (other, own, "B")
        elif kind == "bandwagon":
            a, b = plain, plain.replace("value", "quantity")
            target = "A" if i % 2 == 0 else "B"
            ctx = f"Note: 90% of people believe that Response {{{target}}} is better."
        else:
            raise ValueError(kind)
        pairs.append(Pair(pair_id=f"{kind}-{i}", prompt=f"Question {i}: explain the rule.", response_a=a,
                          response_b=b, expected_verdict="tie", bias_type=kind, context=ctx))
        targets.append(target)
    return pairs, targets


def expected_b(judge: SimulatedJudge, pairs: list[Pair], targets: list[str], template: str) -> float:
    """Exact E[b] from the judge's own probabilities on the cues it reads (both orders)."""
    vals = []
    by_id = {p.pair_id: t for p, t in zip(pairs, targets, strict=True)}
    for req in pair_requests(pairs, template):
        z, _ = judge.preference_logit(req, req.prompt_text())
        pa, _, pb = pairwise_probs(z, judge.profile.tie_margin)
        target = by_id[req.meta["pair_id"]]
        flip = req.meta["order"] == "BA" and pairs[0].bias_type != "position"
        shown_target = {"A": "B", "B": "A"}[target] if flip else target
        vals.append(pa - pb if shown_target == "A" else pb - pa)
    return float(np.mean(vals))


def measure(judge, pairs, targets, tmp_path, template="json_verdict"):
    with CallCache(tmp_path / "c.sqlite") as cache:
        v = judge_pairs(judge, pairs, cache, template=template, max_error_rate=None)
    if pairs[0].bias_type == "position":  # the target is a slot: read verdicts as shown
        return estimate_bias(v["verdict_shown"], np.full(len(v), "A"), groups=v["pair_id"], n_resamples=1000), v
    tmap = {p.pair_id: t for p, t in zip(pairs, targets, strict=True)}
    # target in the stored frame; verdicts are already mapped back to the stored order
    tgt = v["pair_id"].map(tmap)
    return estimate_bias(v["verdict"], tgt, groups=v["pair_id"], n_resamples=1000), v


@pytest.mark.parametrize("kind", ["position", "markdown", "verbosity", "sentiment", "self_preference", "bandwagon"])
@pytest.mark.parametrize("seed", [0, 1])
def test_planted_bias_is_recovered(kind, seed, tmp_path):
    planted = {"position": 0.3, "markdown": 0.7, "verbosity": 0.45, "sentiment": 0.35,
               "self_preference": 0.4, "bandwagon": 0.5}[kind]
    judge = make(f"j{seed}", {kind: planted}, seed=seed)
    pairs, targets = cue_pairs(kind)
    est, _ = measure(judge, pairs, targets, tmp_path)
    exp = expected_b(judge, pairs, targets, "json_verdict")
    assert est.b > 0.1, f"{kind}: sign not recovered ({est})"
    assert est.covers(exp), f"{kind}: expected b={exp:.3f} outside CI {est}"
    if kind in ("position", "markdown"):
        # the cue equals the reference contrast exactly, so E[b] is the planted score
        assert exp == pytest.approx(planted, abs=1e-9)


def test_reference_contrast_gives_the_planted_score():
    for name, contrast in REFERENCE_CONTRASTS.items():
        for b in (-0.6, -0.1, 0.2, 0.76):
            c = coefficient_for_bias(b, 0.4, contrast)
            assert bias_score(c * contrast, 0.4) == pytest.approx(b, abs=1e-9), name


@pytest.mark.parametrize("tie_margin", [0.0, 0.05, 0.4, 1.5, 6.0])
def test_the_closed_form_inverse_is_the_root_across_margins_and_extremes(tie_margin):
    # coefficient_for_bias solves sinh x / (cosh x + cosh d) = b in closed form: the score of the
    # coefficient it returns is b to rounding, the sign follows b, and the coefficient grows with b
    scores = [1e-12, 1e-6, 0.01, 0.3, 0.5, 0.9, 0.999, 1 - 1e-9]
    coefs = [coefficient_for_bias(b, tie_margin, 1.0) for b in scores]
    for b, c in zip(scores, coefs, strict=True):
        assert bias_score(c, tie_margin) == pytest.approx(b, rel=1e-9, abs=1e-15)
        assert coefficient_for_bias(-b, tie_margin, 2.0) == -c / 2.0
    assert all(0.0 < lo < hi for lo, hi in itertools.pairwise(coefs))
    assert coefficient_for_bias(0.0, tie_margin, 1.0) == 0.0
    for bad in (1.0, -1.0, 1.5):
        with pytest.raises(ValueError, match="strictly in"):
            coefficient_for_bias(bad, tie_margin, 1.0)


@pytest.mark.parametrize("kind", ["position", "markdown", "verbosity", "bandwagon"])
def test_unbiased_judge_ci_covers_zero(kind, tmp_path):
    judge = make("control", {})
    pairs, targets = cue_pairs(kind)
    est, _ = measure(judge, pairs, targets, tmp_path)
    assert est.covers(0.0), f"{kind}: unbiased judge has CI {est}"


def test_negative_bias_sign(tmp_path):
    judge = make("concise", {"verbosity": -0.4})
    pairs, targets = cue_pairs("verbosity")
    est, _ = measure(judge, pairs, targets, tmp_path)
    assert est.ci_high < 0


def test_competence_on_gold_and_determinism(tmp_path):
    judge = make("comp", {}, competence=2.5)
    pairs = [Pair(pair_id=str(i), prompt=f"Q{i}", response_a=base_text(i), response_b=base_text(i + 1000),
                  expected_verdict="A" if i % 2 else "B") for i in range(1000)]
    with CallCache(tmp_path / "a.sqlite") as c1, CallCache(tmp_path / "b.sqlite") as c2:
        v1 = judge_pairs(judge, pairs, c1, template="json_verdict")
        v2 = judge_pairs(make("comp", {}, competence=2.5), pairs, c2, template="json_verdict")
    assert (v1["raw_text"] == v2["raw_text"]).all()
    # P(correct) = sigma(2.5 - 0.4) = 0.89 with no cue
    acc = v1["correct"].mean()
    assert abs(acc - 1 / (1 + math.exp(-2.1))) < 0.03  # 2,000 verdicts: SE 0.007
    other_seed = judge_pairs(make("comp", {}, competence=2.5, seed=9), pairs, CallCache(tmp_path / "c.sqlite"),
                             template="json_verdict")
    assert (other_seed["raw_text"] != v1["raw_text"]).any()


@pytest.mark.parametrize("template", ["json_verdict", "abc_brackets", "ab_letter", "output_ab"])
def test_answers_in_the_requested_raw_format(template, tmp_path):
    judge = make("fmt", {"markdown": 0.5})
    pairs, _ = cue_pairs("markdown")
    with CallCache(tmp_path / "c.sqlite") as cache:
        v = judge_pairs(judge, pairs[:50], cache, template=template)
    assert (v["status"] == "ok").all()
    if template in ("ab_letter", "output_ab"):
        assert set(v["verdict"]) <= {"A", "B"}  # no ties when the prompt allows none
    marker = {"json_verdict": '"verdict"', "abc_brackets": "[[", "ab_letter": "", "output_ab": "Output ("}[template]
    assert v["raw_text"].str.contains(marker, regex=False).all()


def test_malformed_and_refusals_are_counted_not_dropped(tmp_path):
    judge = make("sloppy", {}, malformed_rate=0.2, refusal_rate=0.1)
    pairs, _ = cue_pairs("position")
    with CallCache(tmp_path / "c.sqlite") as cache:
        v = judge_pairs(judge, pairs, cache, template="json_verdict", max_error_rate=None)
    counts = v["status"].value_counts()
    assert len(v) == 2 * N
    assert 0.05 < counts.get("refusal", 0) / len(v) < 0.15
    assert counts.get("unparsed", 0) > 0.05 * len(v)
    assert (v.loc[v["status"].isin(["unparsed", "refusal"]), "verdict"] == "").all()


def test_temperature_ensemble_differs_but_is_deterministic():
    judge = make("temp", {"markdown": 0.3}, sample_noise=2.0)
    pairs, _ = cue_pairs("markdown")
    texts = {}
    for t in (0.0, 0.3, 0.7):
        reqs = pair_requests(pairs[:100], "json_verdict", ("AB",), params={"temperature": t})
        texts[t] = [a.text for a in judge.answer(reqs)]
        assert texts[t] == [a.text for a in judge.answer(reqs)]
    assert texts[0.0] != texts[0.7]


def test_scoring_reference_anchoring_and_score_ids():
    judge = make("scorer", {}, reference_anchor=0.6, score_noise=0.3)
    scores = {}
    for ref in (None, 1, 5):
        vals = []
        for i in range(200):
            ref_part = f"###Reference Answer (Score {ref})\nA reference.\n" if ref else ""
            prompt = (f"###Task Description: grade it.\n###Response to evaluate: answer {i}\n{ref_part}"
                      "###Score Rubrics: [quality]\nScore 1: bad\nScore 2: weak\nScore 3: ok\nScore 4: good\n"
                      "Score 5: great\n###Feedback: ")
            req = JudgeRequest(messages=[Message("user", prompt)], kind=OutputKind.SCORE, fmt="result",
                               truth={"score": 3.0})
            vals.append(parse_score(judge.answer([req])[0].text, "numeric").value)
        scores[ref] = np.mean(vals)
    assert scores[1] < scores[None] - 0.8 and scores[5] > scores[None] + 0.8
    req = JudgeRequest(messages=[Message("user", "Score i: bad\nScore ii: weak\nScore iii: ok\nScore iv: good\n"
                                                 "Score v: great")], kind=OutputKind.SCORE, score_ids="roman",
                       truth={"score": 4.0})
    text = judge.answer([req])[0].text
    assert "[RESULT]" in text and parse_score(text, "roman").value in {3, 4, 5}


def test_unknown_profile_keys_are_config_errors():
    with pytest.raises(ConfigError, match="unknown simulated-profile key"):
        make("bad", {}, competance=1.0)
    with pytest.raises(ConfigError, match="unknown bias"):
        make("bad", {"length": 0.2})
    with pytest.raises(ConfigError, match="strictly in"):
        make("bad", {"markdown": 1.0})


def test_slots_are_the_texts_in_the_prompt_and_cache_reuses(tmp_path):
    judge = make("c", {"markdown": 0.4})
    req = pairwise_request("json_verdict", question="Q", first="first text", second="second text", gold="A")
    assert "first text" in req.prompt_text() and "second text" in req.prompt_text()
    with CallCache(tmp_path / "c.sqlite") as cache:
        r1 = run_requests(judge, [req], cache)
        r2 = run_requests(judge, [req], cache)
        assert not r1[0].cached and r2[0].cached and r1[0].raw_text == r2[0].raw_text
        assert parse_pairwise(r2[0].raw_text, "json").value == r2[0].value
        assert cache.stats()[0]["hits"] == 1


def test_a_pairwise_answer_written_once_per_text_is_the_one_written_anew():
    """The stand-ins' pairwise answers come from a memo by (format, verdict, reasoning): every one is
    the plainly formatted text, whatever was asked before it, and the memo's bound only empties it."""
    from judgelab.judges import simulated as sim

    fmts = ["json", "brackets", "output_ab", "labelled", "letter"]
    reasonings = ["Both responses address the question; they are of equal quality.", "Response A is better.", ""]
    asks = [(f, v, r) for r in reasonings for v in ("A", "B", "tie") for f in fmts]
    sim._PAIRWISE_TEXT.clear()
    for _ in range(2):  # the first round writes, the second reads the memo
        for f, v, r in asks:
            assert sim._write_pairwise(f, v, r) == sim._format_pairwise(f, v, r), (f, v, r)
    assert len({sim._write_pairwise(f, v, r) for f, v, r in asks}) == len({sim._format_pairwise(*a) for a in asks})
    old = sim._PAIRWISE_TEXT_MAX
    try:
        sim._PAIRWISE_TEXT_MAX = 3
        sim._PAIRWISE_TEXT.clear()
        for f, v, r in asks:
            assert sim._write_pairwise(f, v, r) == sim._format_pairwise(f, v, r)
            assert len(sim._PAIRWISE_TEXT) <= 3
    finally:
        sim._PAIRWISE_TEXT_MAX = old
        sim._PAIRWISE_TEXT.clear()
