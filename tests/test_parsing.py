"""Parsers for pairwise verdicts, 1-5 scores and yes/no labels: examples and properties.

The properties pin the contract the analyses rely on: every score 1-5 written in
every score-ID scheme parses back to itself, nothing outside a scheme is coerced
to a score, and every answer the simulated judge writes parses back to the
verdict it meant.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgelab.judges.simulated import REFUSAL_TEXT, _malformed_pairwise, _write_pairwise
from judgelab.parsing import (
    SCORE_IDS,
    normalize_verdict,
    parse,
    parse_label,
    parse_pairwise,
    parse_score,
    score_id,
)
from judgelab.records import CallStatus, OutputKind

# Free text that cannot itself contain a verdict or score marker: no brackets,
# braces, parentheses, quotes or colons, and none of the words the fallback rules
# look for (checked below, since letters can spell them).
_SAFE_ALPHABET = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;!?-\n"
_MARKER_WORDS = ("score", "rating", "grade", "result", "verdict", "winner", "answer", "choice", "better",
                 "output", "response", "sorry")


def _safe(text: str) -> bool:
    low = text.lower()
    return not any(w in low for w in _MARKER_WORDS)


safe_text = st.text(alphabet=_SAFE_ALPHABET, max_size=200).filter(_safe)
schemes = st.sampled_from(sorted(SCORE_IDS))
scores = st.integers(min_value=1, max_value=5)
cases = st.sampled_from(["as_is", "lower", "upper"])


def _case(s: str, how: str) -> str:
    return {"as_is": s, "lower": s.lower(), "upper": s.upper()}[how]


# ---------------------------------------------------------------------------------
# scores


def test_score_ids_tables():
    assert [score_id(s, "numeric") for s in range(1, 6)] == ["1", "2", "3", "4", "5"]
    assert [score_id(s, "letter") for s in range(1, 6)] == ["E", "D", "C", "B", "A"]
    assert [score_id(s, "roman") for s in range(1, 6)] == ["i", "ii", "iii", "iv", "v"]


@pytest.mark.parametrize(
    ("text", "scheme", "value", "status"),
    [
        ("[RESULT] iv", "roman", 4, CallStatus.OK),
        ("[RESULT] IV", "roman", 4, CallStatus.OK),
        ("Feedback: solid work. [RESULT] 3", "numeric", 3, CallStatus.OK),
        ("[RESULT] A", "letter", 5, CallStatus.OK),
        ("[RESULT] e", "letter", 1, CallStatus.OK),
        ("[RESULT]: 2", "numeric", 2, CallStatus.OK),
        ("[RESULT] (4)", "numeric", 4, CallStatus.OK),
        ("[RESULT] 4/5", "numeric", 4, CallStatus.OK),
        ("Score: B", "letter", 4, CallStatus.FALLBACK),
        ("Score: iii", "roman", 3, CallStatus.FALLBACK),
        ("The final score is 2.", "numeric", 2, CallStatus.FALLBACK),
        ('{"feedback": "ok", "score": 5}', "numeric", 5, CallStatus.FALLBACK),
        ("v", "roman", 5, CallStatus.FALLBACK),
        ("4", "numeric", 4, CallStatus.FALLBACK),
        # the last [RESULT] wins (judges restate the format before answering)
        ("Write [RESULT] 1 to 5. Feedback: good. [RESULT] 5", "numeric", 5, CallStatus.OK),
    ],
)
def test_parse_score_examples(text, scheme, value, status):
    p = parse_score(text, scheme)
    assert (p.value, p.status) == (value, status)


@pytest.mark.parametrize(
    ("text", "scheme"),
    [
        ("[RESULT] 6", "numeric"),
        ("[RESULT] 0", "numeric"),
        ("[RESULT] 10", "numeric"),
        ("[RESULT] 4.5", "numeric"),
        ("[RESULT] -3", "numeric"),
        ("[RESULT] vi", "roman"),
        ("[RESULT] iiii", "roman"),
        ("[RESULT] F", "letter"),
        ("[RESULT] 4", "letter"),  # an ID from another scheme is not coerced either
        ("[RESULT] B", "roman"),
        ("[RESULT] iv", "numeric"),
        ("Score: 7", "numeric"),
        ("Score: vi", "roman"),
        ('{"score": 9}', "numeric"),
        ("Feedback: The response is adequate in places. [RESULT] ", "numeric"),  # missing score
        ("Feedback: a fine answer with no score given.", "numeric"),
        ("", "numeric"),
        ("   ", "roman"),
        (None, "letter"),
    ],
)
def test_parse_score_out_of_scheme_is_unparsed(text, scheme):
    p = parse_score(text, scheme)
    assert p.value is None
    assert p.status is CallStatus.UNPARSED


def test_parse_score_refusal_and_unknown_scheme():
    assert parse_score(REFUSAL_TEXT, "numeric").status is CallStatus.REFUSAL
    with pytest.raises(ValueError, match="unknown score-ID scheme"):
        parse_score("[RESULT] 3", "hex")


@given(score=scores, scheme=schemes, how=cases, feedback=safe_text)
def test_parse_score_round_trip_result(score, scheme, how, feedback):
    sid = _case(score_id(score, scheme), how)
    for text in (f"[RESULT] {sid}", f"Feedback: {feedback} [RESULT] {sid}", f"Feedback: {feedback}\n[RESULT] {sid}\n"):
        p = parse_score(text, scheme)
        assert (p.value, p.status, p.method) == (score, CallStatus.OK, "result"), text


@given(score=scores, scheme=schemes, how=cases, feedback=safe_text)
def test_parse_score_round_trip_score_label(score, scheme, how, feedback):
    sid = _case(score_id(score, scheme), how)
    for text in (f"Score: {sid}", f"Feedback: {feedback}\nScore: {sid}", f"{feedback} Score: {sid}."):
        p = parse_score(text, scheme)
        assert (p.value, p.status) == (score, CallStatus.FALLBACK), text


@given(scheme=schemes, feedback=safe_text,
       bad=st.sampled_from(["0", "6", "7", "42", "vi", "vii", "x", "F", "G", "Z", "iiv"]))
def test_parse_score_never_coerces(scheme, feedback, bad):
    for text in (f"[RESULT] {bad}", f"Feedback: {feedback} [RESULT] {bad}", f"Score: {bad}"):
        p = parse_score(text, scheme)
        assert p.value is None and p.status is CallStatus.UNPARSED, text


@given(scheme=schemes, feedback=safe_text)
def test_parse_score_without_any_score_is_never_ok(scheme, feedback):
    p = parse_score(f"Feedback: {feedback}", scheme)
    assert p.status is not CallStatus.OK
    if p.value is not None:  # only a bare ID can be read, and only as a fallback
        assert p.status is CallStatus.FALLBACK and 1 <= p.value <= 5


# ---------------------------------------------------------------------------------
# pairwise verdicts


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('```json\n{"verdict": "A"}\n```', "A"),
        ('Here you go:\n```json\n{"reasoning": "B is {more} complete", "winner": "Response B"}\n```', "B"),
        ('```\n{"verdict": "tie"}\n```', "tie"),
        ('{"verdict": "A"}', "A"),
        ('{"winner": "Response B"}', "B"),
        ('{"reasoning": "both fine", "verdict": "tie"}', "tie"),
        ('{"Verdict": "response a"}', "A"),
        ('{"winner": "[[B]]"}', "B"),
        # raw newlines inside a JSON string (common in real answers) do not hide the verdict
        ('{"reasoning": "A is shorter.\nB is complete.", "verdict": "B"}', "B"),
        ('Let me think.\n{"verdict": "B"} and again {"verdict": "B"}', "B"),
    ],
)
def test_pairwise_json_verdicts(text, value):
    p = parse_pairwise(text, "json")
    assert (p.value, p.status, p.method) == (value, CallStatus.OK, "json")


def test_pairwise_conflicting_json_is_unparsed():
    text = '{"verdict": "A", "reasoning": "first look"}\nOn reflection:\n{"verdict": "B", "reasoning": "x"}'
    p = parse_pairwise(text, "json")
    assert (p.value, p.status) == (None, CallStatus.UNPARSED)
    # conflicting verdicts are not rescued by a fallback either
    p = parse_pairwise(text + "\n[[A]]", "json")
    assert (p.value, p.status) == (None, CallStatus.UNPARSED)
    # the simulated judge's own malformed answers are never read as a verdict
    for u in (0.1, 0.5, 0.9):
        for fmt in ("json", "brackets", "letter", "output_ab"):
            p = parse_pairwise(_malformed_pairwise(fmt, u, "Response A is more detailed"), fmt)
            assert p.value is None and p.status is CallStatus.UNPARSED, (fmt, u)


@pytest.mark.parametrize("fmt", ["json", "brackets", "letter", "output_ab", "labelled"])
def test_pairwise_prose_only_is_unparsed(fmt):
    text = "Both responses have strengths and weaknesses, and it is hard to choose between them."
    p = parse_pairwise(text, fmt)
    assert (p.value, p.status) == (None, CallStatus.UNPARSED)


@pytest.mark.parametrize(
    ("text", "fmt", "value", "status", "method"),
    [
        ("Compare [[A]] with [[B]]... after thought: [[A]] then finally [[B]]", "brackets", "B", CallStatus.OK,
         "brackets"),
        ("[[A]] is tempting, but [[B]]", "brackets", "B", CallStatus.OK, "brackets"),
        ("Both are equally good. [[C]]", "brackets", "tie", CallStatus.OK, "brackets"),
        ("[[ A ]]", "brackets", "A", CallStatus.OK, "brackets"),
        ("Output (b)", "output_ab", "B", CallStatus.OK, "output_ab"),
        ("Output (a) is better than Output (b). Final: Output (A)", "output_ab", "A", CallStatus.OK, "output_ab"),
        ("A", "letter", "A", CallStatus.OK, "letter"),
        ("B.", "letter", "B", CallStatus.OK, "letter"),
        (" **B** ", "letter", "B", CallStatus.OK, "letter"),
        ("A\n", "letter", "A", CallStatus.OK, "letter"),
        ("Verdict: B", "labelled", "B", CallStatus.OK, "labelled"),
        ("The better response is Response A.", "labelled", "A", CallStatus.OK, "labelled"),
        ("reasoning...\nVerdict: tie", "labelled", "tie", CallStatus.OK, "labelled"),
        ("Verdict: A because it is complete.", "labelled", "A", CallStatus.OK, "labelled"),
        ("Winner: a", "labelled", "A", CallStatus.OK, "labelled"),
        ("The result is a tie. Verdict: B", "labelled", "B", CallStatus.OK, "labelled"),
        # the expected format is missing but a fallback finds a verdict
        ("[[A]]", "json", "A", CallStatus.FALLBACK, "fallback:brackets"),
        ("[[C]]", "json", "tie", CallStatus.FALLBACK, "fallback:brackets"),
        ('{"verdict": "B"}', "brackets", "B", CallStatus.FALLBACK, "fallback:json"),
        ("Output (a)", "json", "A", CallStatus.FALLBACK, "fallback:output_ab"),
        ("Verdict: B", "json", "B", CallStatus.FALLBACK, "fallback:labelled"),
        ("B", "json", "B", CallStatus.FALLBACK, "fallback:letter"),
        ("A", "brackets", "A", CallStatus.FALLBACK, "fallback:letter"),
    ],
)
def test_pairwise_formats_and_fallbacks(text, fmt, value, status, method):
    p = parse_pairwise(text, fmt)
    assert (p.value, p.status, p.method) == (value, status, method)


@pytest.mark.parametrize("fmt", ["json", "brackets", "letter", "output_ab", "labelled"])
@pytest.mark.parametrize(
    "text",
    [
        "I'm sorry, but I can't help with that.",
        REFUSAL_TEXT,
        "I cannot evaluate these responses.",
        "As an AI language model, I do not take sides here.",
    ],
)
def test_pairwise_refusal(fmt, text):
    p = parse_pairwise(text, fmt)
    assert (p.value, p.status) == (None, CallStatus.REFUSAL)


@pytest.mark.parametrize("text", ["", "   \n\t", None])
def test_pairwise_empty_is_unparsed(text):
    p = parse_pairwise(text, "json")
    assert (p.value, p.status) == (None, CallStatus.UNPARSED)


def test_pairwise_unknown_format():
    with pytest.raises(ValueError, match="unknown pairwise format"):
        parse_pairwise("[[A]]", "xml")


@pytest.mark.parametrize(
    "text",
    [
        "The result is a tie.",
        "My verdict is a tie: both responses are equally good.",
        "The answer is a matter of taste; neither response stands out.",
        "Final verdict: A tie.",
    ],
)
def test_pairwise_labelled_does_not_read_the_article_a_as_a_verdict(text):
    # "result is a tie" must not become a vote for slot A (that would plant a position bias)
    for fmt in ("json", "labelled"):
        assert parse_pairwise(text, fmt).value != "A", (fmt, text)


@pytest.mark.parametrize(
    ("raw", "value"),
    [("A", "A"), ("Response B", "B"), ("tie", "tie"), ("[[C]]", "tie"), ("Output (a)", "A"), ("assistant 2", "B"),
     ("first", "A"), ("equal", "tie"), ("maybe", None), (None, None), ("", None)],
)
def test_normalize_verdict(raw, value):
    assert normalize_verdict(raw) == value


reasoning_text = st.text(alphabet=_SAFE_ALPHABET, min_size=0, max_size=300)


@given(verdict=st.sampled_from(["A", "B", "tie"]), reasoning=reasoning_text,
       fmt=st.sampled_from(["json", "brackets", "labelled"]))
def test_simulated_writer_round_trips_with_ties(verdict, reasoning, fmt):
    text = _write_pairwise(fmt, verdict, reasoning)
    p = parse_pairwise(text, fmt)
    assert (p.value, p.status) == (verdict, CallStatus.OK), text


@given(verdict=st.sampled_from(["A", "B"]), reasoning=reasoning_text, fmt=st.sampled_from(["letter", "output_ab"]))
def test_simulated_writer_round_trips_a_b(verdict, reasoning, fmt):
    text = _write_pairwise(fmt, verdict, reasoning)
    p = parse_pairwise(text, fmt)
    assert (p.value, p.status) == (verdict, CallStatus.OK), text


@given(verdict=st.sampled_from(["A", "B", "tie"]),
       # a lone "A"/"B" in a short reasoning is itself a letter answer ("A\n\n[[B]]" asked as letter reads A)
       reasoning=reasoning_text.filter(lambda s: not re.search(r"\b[AB]\b", s)),
       written=st.sampled_from(["json", "brackets"]), asked=st.sampled_from(["json", "brackets", "letter", "output_ab"]))
def test_other_format_is_recovered_as_fallback(verdict, reasoning, written, asked):
    text = _write_pairwise(written, verdict, reasoning)
    p = parse_pairwise(text, asked)
    assert p.value == verdict, text
    if asked == written:
        assert p.status is CallStatus.OK
    elif (written, asked) == ("brackets", "letter") and not re.search(r"\w", reasoning) and verdict != "tie":
        assert p.status is CallStatus.OK  # a lone "[[A]]" is a letter answer too
    else:
        assert p.status is CallStatus.FALLBACK, text


# ---------------------------------------------------------------------------------
# yes / no labels


@pytest.mark.parametrize(
    ("text", "value", "status"),
    [
        ("<think>The evaluation follows length, not content.</think> Yes", "yes", CallStatus.OK),
        ("<think>Nothing superficial here.</think>\nNo.", "no", CallStatus.OK),
        ("<THINK>hmm</THINK> YES", "yes", CallStatus.OK),
        ("<think>a</think> b </think> No", "no", CallStatus.OK),  # after the last </think>
        ("No", "no", CallStatus.FALLBACK),
        ("Yes, it is biased.", "yes", CallStatus.FALLBACK),
        ("<think>I would say yes at first, then no.</think>", "no", CallStatus.FALLBACK),
        ("<think>The evaluation may or may not be biased.</think>", None, CallStatus.UNPARSED),
        ("Maybe.", None, CallStatus.UNPARSED),
        ("", None, CallStatus.UNPARSED),
        (None, None, CallStatus.UNPARSED),
        ("I'm sorry, I can't help with that.", None, CallStatus.REFUSAL),
    ],
)
def test_parse_label(text, value, status):
    p = parse_label(text)
    assert (p.value, p.status) == (value, status)


def test_parse_label_plain_format_accepts_bare_word():
    assert parse_label("No", fmt="plain").status is CallStatus.OK


@given(reasoning=safe_text.filter(lambda s: s.strip() and not re.search(r"\b(yes|no)\b", s, re.IGNORECASE)),
       ans=st.sampled_from(["yes", "no"]), how=cases)
def test_parse_label_round_trip(reasoning, ans, how):
    p = parse_label(f"<think>{reasoning}</think> {_case(ans, how)}")
    assert (p.value, p.status) == (ans, CallStatus.OK)


# ---------------------------------------------------------------------------------
# dispatch


def test_parse_dispatch():
    assert parse(OutputKind.PAIRWISE, "[[B]]", fmt="brackets").value == "B"
    assert parse("score", "[RESULT] ii", score_ids="roman").value == 2
    assert parse(OutputKind.LABEL, "<think>x</think> yes", fmt="think").value == "yes"
    t = parse(OutputKind.TEXT, "  some text \n")
    assert (t.value, t.status) == ("some text", CallStatus.OK)
    assert parse(OutputKind.TEXT, "  ").status is CallStatus.UNPARSED
