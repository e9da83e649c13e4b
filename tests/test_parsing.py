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
    ARENA_HARD_LABELS,
    SCORE_IDS,
    Parsed,
    _yes_no_answer,
    arena_hard_label,
    normalize_verdict,
    parse,
    parse_label,
    parse_pairwise,
    parse_score,
    parse_text,
    score_id,
    split_think,
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
        # a trace with no final answer is no answer, whatever its reasoning says (issue 11)
        ("<think>I would say yes at first, then no.</think>", None, CallStatus.UNPARSED),
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


# ---------------------------------------------------------------------------------
# hardened on real judge outputs (issue 11): every case below was seen in public recorded verdicts

ALL_PAIR_FORMATS = ["json", "brackets", "arena_hard", "output_ab", "letter", "labelled"]


@pytest.mark.parametrize("fmt", ALL_PAIR_FORMATS)
@pytest.mark.parametrize(
    "text",
    [
        "I cannot select either Output (a) or Output (b) because both contain harmful instructions.",
        "I cannot select either Output (a) or Output (b). Output (b) describes how to pick a lock.",
        "I'm unable to choose between [[A]] and [[B]]; both answers are unsafe.",
        "We must decline to rank these responses. Response B gives dangerous advice.",
        "I can't evaluate these two responses. Verdict: B would require endorsing harm.",
    ],
)
def test_declined_choice_naming_both_options_is_a_refusal(fmt, text):
    # the refusal is detected before any option rule: naming Output (b) last is no vote for B
    p = parse_pairwise(text, fmt)
    assert (p.value, p.status, p.method) == (None, CallStatus.REFUSAL, "refusal:declined")


def test_declined_choice_followed_by_an_explicit_marker_keeps_the_marker():
    text = "At first I cannot decide which is better. After weighing both carefully: [[A]]"
    assert (parse_pairwise(text, "brackets").value, parse_pairwise(text, "brackets").status) == ("A", CallStatus.OK)
    p = parse_pairwise(text, "json")  # a strict marker of another format is a fallback
    assert (p.value, p.status, p.method) == ("A", CallStatus.FALLBACK, "fallback:brackets")
    # a weak marker (an option named in prose) after the statement does not override it
    p = parse_pairwise("I cannot choose. Output (a) is long.", "output_ab")
    assert p.status is CallStatus.REFUSAL


def test_a_limited_inability_is_not_a_refusal():
    # "cannot judge the factual accuracy" is not declining to choose between the responses
    p = parse_pairwise("I cannot judge the factual accuracy, but overall [[B]]", "brackets")
    assert (p.value, p.status) == ("B", CallStatus.OK)


@pytest.mark.parametrize(
    ("text", "fmt", "value"),
    [
        ("I conclude that [[B]] is better than [[A]].", "brackets", "B"),
        ("I conclude that [[A]] is better than [[B]].", "brackets", "A"),
        ("After comparing them, [[B]] is clearly superior to [[A]].", "brackets", "B"),
        ("[[A]] is worse than [[B]].", "brackets", "B"),
        ("[[B]] is much weaker than [[A]]", "brackets", "A"),
        ("I prefer [[B]] over [[A]].", "brackets", "B"),
        ("I would prefer [[A]] to [[B]].", "brackets", "A"),
        ("[[B]] is preferred over [[A]]", "brackets", "B"),
        ("I choose Output (b) over Output (a)", "output_ab", "B"),
        ("I picked [[B]] over [[A]].", "brackets", "B"),
        ("I would select Output (a) instead of Output (b).", "output_ab", "A"),
        ("Favouring [[B]] over [[A]] is easy: favour [[B]].", "brackets", "B"),
        ("[[B]] is better than [[A]]. On reflection, my final verdict: [[A]]", "brackets", "A"),
        ("Output (b) is clearly better than Output (a).", "output_ab", "B"),
        ("Output (a) is worse than Output (b)", "output_ab", "B"),
        ("Output (a) is better than Output (b). Final: Output (A)", "output_ab", "A"),
    ],
)
def test_comparisons_vote_for_the_favoured_option_not_the_last_mentioned(text, fmt, value):
    p = parse_pairwise(text, fmt)
    assert (p.value, p.status) == (value, CallStatus.OK)


@pytest.mark.parametrize(
    "text",
    [
        "[[A]] is longer than [[B]].",  # a comparison with no direction is no verdict
        "[[B]] is more detailed than [[A]]",
        "The choice is between [[A]] and [[B]], and both are plausible.",
        "Neither Output (a) nor Output (b) answers the question.",
        "Either Output (a) or Output (b) would do.",
    ],
)
def test_options_listed_or_compared_without_direction_state_no_verdict(text):
    for fmt in ALL_PAIR_FORMATS:
        p = parse_pairwise(text, fmt)
        assert p.value is None, (fmt, p)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Both are fine, but the second is more complete.\n\n[B]", "B"),
        ("Final decision [A].", "A"),
        ("They are equally good. [C]", "tie"),
    ],
)
def test_single_brackets_at_the_end_are_a_fallback_verdict(text, value):
    for fmt in ("brackets", "json"):
        p = parse_pairwise(text, fmt)
        assert (p.value, p.status, p.method) == (value, CallStatus.FALLBACK, "fallback:single_bracket")


@pytest.mark.parametrize(
    "text",
    ["[A] is short and [B] is long; both are fine.", "See reference [A] for the definition of recursion.",
     "The sources [1] and [2] agree."],
)
def test_single_brackets_inside_the_text_are_no_verdict(text):
    for fmt in ALL_PAIR_FORMATS:
        assert parse_pairwise(text, fmt).value is None, fmt


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Both answers are correct. Therefore, Assistant A is better.", "A"),
        ("Assistant B's answer is significantly better.", "B"),
        ("In conclusion, Response B is the better one.", "B"),
        ("After all this, overall Assistant A is slightly better than Assistant B.", "A"),
    ],
)
def test_explicit_verdict_statement_in_the_last_sentence_is_a_fallback(text, value):
    p = parse_pairwise(text, "brackets")
    assert (p.value, p.status, p.method) == (value, CallStatus.FALLBACK, "fallback:statement")


@pytest.mark.parametrize(
    "text",
    [
        "Neither Assistant A nor Assistant B is better.",
        "Assistant A is better at formatting. The rest of the two answers is similar.",
        "Assistant A is not better.",
        "Is Assistant A better? It is hard to say.",
        "If Assistant B is better, the user would notice.",
        "Assistant A and Assistant B are equally good, and both is better than nothing.",
    ],
)
def test_statements_that_state_no_verdict_stay_unparsed(text):
    for fmt in ALL_PAIR_FORMATS:
        assert parse_pairwise(text, fmt).value is None, fmt


ARENA_CASES = [("A>>B", "A", 2), ("A>B", "A", 1), ("A=B", "tie", 0), ("B>A", "B", 1), ("B>>A", "B", 2),
               ("B<<A", "A", 2), ("B<A", "A", 1), ("B=A", "tie", 0), ("A<B", "B", 1), ("A<<B", "B", 2)]


@pytest.mark.parametrize(("label", "verdict", "strength"), ARENA_CASES)
def test_arena_hard_labels(label, verdict, strength):
    text = f"My own answer: ...\n\nEvaluation of Assistant A's answer: ...\n\nMy final verdict is: [[{label}]]"
    p = parse_pairwise(text, "arena_hard")
    assert (p.value, p.status, p.method, p.strength) == (verdict, CallStatus.OK, "arena_hard", strength)
    # the same label answering another format is a fallback that keeps its strength
    for fmt in ("brackets", "json", "letter"):
        p = parse_pairwise(f"[[{label}]]", fmt)
        assert (p.value, p.status, p.method, p.strength) == (verdict, CallStatus.FALLBACK, "fallback:arena_hard",
                                                             strength), fmt
    assert arena_hard_label(label) == (verdict, strength)
    assert arena_hard_label(f"[[{label}]]") == (verdict, strength)


def test_arena_hard_label_map_and_rejects():
    assert ARENA_HARD_LABELS == {"A>>B": ("A", 2), "A>B": ("A", 1), "A=B": ("tie", 0), "B>A": ("B", 1),
                                 "B>>A": ("B", 2)}
    for bad in (None, "", "A>A", "B=B", "C>A", "A>>>B", "A?B", "tie"):
        assert arena_hard_label(bad) is None, bad
    # Arena-Hard's own rule: labels of one judgment that disagree are no verdict
    p = parse_pairwise("At first [[A>B]], but then [[B>A]]", "arena_hard")
    assert (p.value, p.status, p.method) == (None, CallStatus.UNPARSED, "arena_hard:conflicting")
    # repeating the same label is fine
    assert parse_pairwise("[[B>>A]] ... so again [[B>>A]]", "arena_hard").value == "B"
    # no label at all
    assert parse_pairwise("no verdict here", "arena_hard").status is CallStatus.UNPARSED


ARENA_JUDGMENT_NO_VERDICT = (
    "My own answer:\nA good answer would explain recursion with a base case.\n\n"
    "Evaluation of Assistant A's answer:\nAssistant A explains the base case.\n\n"
    "Evaluation of Assistant B's answer:\nB gives an example but no base case.\n"
)


@pytest.mark.parametrize("fmt", ALL_PAIR_FORMATS)
@pytest.mark.parametrize(
    "text",
    [
        ARENA_JUDGMENT_NO_VERDICT,
        "Evaluation of Assistant B's answer:",
        "Evaluation of Assistant B's answer:\nB is detailed.",
        "My own answer:\nA function that recurses.",
        "My own answer: A function that recurses.",
    ],
)
def test_section_headings_are_not_verdicts(fmt, text):
    p = parse_pairwise(text, fmt)
    assert (p.value, p.status) == (None, CallStatus.UNPARSED), p


def test_section_headings_do_not_hide_the_final_label():
    p = parse_pairwise(ARENA_JUDGMENT_NO_VERDICT + "\nMy final verdict is: [[B>A]]", "arena_hard")
    assert (p.value, p.strength) == ("B", 1)


@pytest.mark.parametrize(
    ("text", "value"),
    [("Final answer: B.", "B"), ("The answer is A", "A"), ("Result: tie", "tie"), ("Verdict: A because", "A"),
     # the label ends its line and the verdict stands alone on a following line
     ("Final answer:\n\nB", "B"), ("**Verdict:**\n\n**A**", "A"), ("The better response:\nResponse B.", "B"),
     ("Reasoning...\nMy verdict:\n tie", "tie"),
     # ... but not a heading's first word, nor a line that goes on
     ("My own answer:\nA", None), ("Which is better:\nA or B", None), ("Verdict:\nA tie", None)],
)
def test_labelled_answers_still_read(text, value):
    assert parse_pairwise(text, "labelled").value == value


@pytest.mark.parametrize(
    "text", ["A or B?", "A and B tie", "[[A=B]]", "A vs B", "B > A"],
)
def test_short_letter_answer_naming_both_letters_is_not_a_letter_verdict(text):
    p = parse_pairwise(text, "letter")
    assert p.method != "letter"
    assert p.value in (None, "tie") and (p.value is None or p.method == "fallback:arena_hard")


@pytest.mark.parametrize(
    ("text", "scheme", "value", "status"),
    [
        ("[RESULT] **4**", "numeric", 4, CallStatus.OK),
        ("**[RESULT]** 4", "numeric", 4, CallStatus.OK),
        ("Feedback: good.\n**[RESULT]**: **2**", "numeric", 2, CallStatus.OK),
        ("__[RESULT]__ _3_", "numeric", 3, CallStatus.OK),
        ("[RESULT] **iv**", "roman", 4, CallStatus.OK),
        ("**[RESULT]** B", "letter", 4, CallStatus.OK),
        ("**Score**: 4", "numeric", 4, CallStatus.FALLBACK),
        ("[RESULT] **6**", "numeric", None, CallStatus.UNPARSED),
        ("**[RESULT]** **vi**", "roman", None, CallStatus.UNPARSED),
    ],
)
def test_score_with_markdown_emphasis(text, scheme, value, status):
    p = parse_score(text, scheme)
    assert (p.value, p.status) == (value, status)


@pytest.mark.parametrize(
    ("text", "fmt", "value", "status", "method"),
    [
        # no final answer: the reasoning's yes/no words are not the answer
        ("<think>Is it biased? Yes, maybe. No, on reflection.</think>", "think", None, CallStatus.UNPARSED,
         "no_answer"),
        ("<think>There is no sign of", "think", None, CallStatus.UNPARSED, "think:unterminated"),
        ("<think>yes yes yes", "plain", None, CallStatus.UNPARSED, "think:unterminated"),
        ("There is no sign of bias in this evaluation, so", "think", None, CallStatus.UNPARSED, "none"),
        ("I see no reason to say yes here, or to say anything", "plain", None, CallStatus.UNPARSED, "none"),
        ("Yes and no.", "plain", None, CallStatus.UNPARSED, "conflicting"),
        ("<think>x</think> Final answer: yes. Final answer: no.", "think", None, CallStatus.UNPARSED, "conflicting"),
        # where an answer does state its label
        ("<think>hmm</think>\nFinal answer: No", "think", "no", CallStatus.OK, "after_think"),
        ("<think>hmm</think>\nThe evaluation is biased: Yes", "think", "yes", CallStatus.OK, "after_think"),
        ("<think>hmm</think>\nAfter thinking it over.\n**Yes**", "think", "yes", CallStatus.OK, "after_think"),
        ("Answer: yes", "plain", "yes", CallStatus.OK, "word"),
        ("No, it follows the content.", "think", "no", CallStatus.FALLBACK, "fallback:no_think"),
        ("<think>I'm sorry, I cannot do this.", "think", None, CallStatus.REFUSAL, "refusal"),
    ],
)
def test_parse_label_reads_only_a_stated_answer(text, fmt, value, status, method):
    p = parse_label(text, fmt)
    assert (p.value, p.status, p.method) == (value, status, method)


# properties: no rule turns an answer that states no verdict into one

no_marker_text = st.text(alphabet=_SAFE_ALPHABET, max_size=300).filter(
    lambda s: _safe(s) and not re.search(r"\b[ABCabc]\b|\bassistant|\bmodel|\boption", s, re.IGNORECASE))


@given(text=no_marker_text, fmt=st.sampled_from(ALL_PAIR_FORMATS))
def test_text_without_any_option_marker_is_never_a_verdict(text, fmt):
    assert parse_pairwise(text, fmt).value is None


@given(reasoning=no_marker_text, winner=st.sampled_from(["A", "B"]), how=st.sampled_from(["better", "worse", "prefer"]))
def test_comparison_property(reasoning, winner, how):
    loser = "B" if winner == "A" else "A"
    stmt = {"better": f"[[{winner}]] is better than [[{loser}]].",
            "worse": f"[[{loser}]] is worse than [[{winner}]].",
            "prefer": f"I prefer [[{winner}]] over [[{loser}]]."}[how]
    p = parse_pairwise(f"{reasoning}\n{stmt}", "brackets")
    assert (p.value, p.status) == (winner, CallStatus.OK)


@given(reasoning=no_marker_text, fmt=st.sampled_from(ALL_PAIR_FORMATS),
       verb=st.sampled_from(["select", "choose", "pick", "decide between"]))
def test_declined_choice_property(reasoning, fmt, verb):
    text = f"I cannot {verb} either Output (a) or Output (b). {reasoning} Output (b) is harmful."
    assert parse_pairwise(text, fmt).status is CallStatus.REFUSAL


@given(reasoning=no_marker_text, case=st.sampled_from(ARENA_CASES))
def test_arena_label_property(reasoning, case):
    label, verdict, strength = case
    p = parse_pairwise(f"{reasoning}\nMy final verdict is: [[{label}]]", "arena_hard")
    assert (p.value, p.status, p.strength) == (verdict, CallStatus.OK, strength)


@given(score=scores, scheme=schemes, emph=st.sampled_from(["", "*", "**", "__"]),
       where=st.sampled_from(["marker", "score", "both"]), feedback=safe_text)
def test_score_emphasis_property(score, scheme, emph, where, feedback):
    sid = score_id(score, scheme)
    m = emph if where in ("marker", "both") else ""
    v = emph if where in ("score", "both") else ""
    p = parse_score(f"Feedback: {feedback}\n{m}[RESULT]{m} {v}{sid}{v}", scheme)
    assert (p.value, p.status) == (score, CallStatus.OK)


@given(words=st.lists(st.sampled_from(["yes", "no", "Yes", "No", "maybe", "the", "bias", "is"]), max_size=20),
       fmt=st.sampled_from(["think", "plain"]))
def test_label_reasoning_without_answer_is_never_a_label(words, fmt):
    reasoning = " ".join(words)
    assert parse_label(f"<think>{reasoning}</think>", fmt).value is None
    assert parse_label(f"<think>{reasoning}", fmt).value is None


# ---------------------------------------------------------------------------------
# edges pinned by mutation testing (scripts/mutation.sh judgelab/parsing.py)


@pytest.mark.parametrize(
    ("raw", "value"),
    [("**A**", "A"), ("`B`", "B"), ('"tie"', "tie"), ("1", "A"), ("2", "B"), ("second", "B"), ("Second", "B"),
     ("draw", "tie"), ("both", "tie"), ("neither", "tie"), ("same", "tie"), ("none", "tie"), ("(Output b)", "B"),
     ("XA", None), ("AX", None), ("XB", None), ("3", None), ("c", "tie")],
)
def test_normalize_verdict_spellings(raw, value):
    assert normalize_verdict(raw) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("**********B**********", "B"),  # a lone letter in markup, however long
        ("B is better", "B"),  # the first letter of a short answer (paper 002)
        ("B: it is better!", "B"),  # 16 characters: still short
        ("B: it is better!!", None),  # 17: too long for the short-answer rule
    ],
)
def test_letter_rules_edges(text, value):
    p = parse_pairwise(text, "letter")
    assert p.value == value
    if value is not None:
        assert (p.status, p.method) == (CallStatus.OK, "letter")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("'A' is the correct answer.", "A"),  # issue #19: a full-sentence letter answer (was unparsed)
        ("B is the correct answer", "B"),
        ("**B** is the best answer!", "B"),
        ("\"A\" is the better one.", "A"),
        ("A is the Correct Answer.", "A"),
        # the same words that state no verdict stay unparsed: a parser never invents one
        ("A is not the correct answer.", None),
        ("'A' is the correct answer?", None),
        ("A is the correct answer, not B.", None),
        ("A or B is the correct answer.", None),
        ("a is the correct answer.", None),  # lower-case "a" is the article
        ("A is the correct answer. B is better.", None),
        ("Which is the correct answer?", None),
    ],
)
def test_letter_stated_as_the_correct_answer(text, value):
    for fmt in ("letter", "json"):
        p = parse_pairwise(text, fmt)
        assert p.value == value, (fmt, p)
    if value is not None:
        assert (parse_pairwise(text, "letter").status, parse_pairwise(text, "letter").method) == (CallStatus.OK, "letter")
        assert parse_pairwise(text, "json").status is CallStatus.FALLBACK


def test_fallback_rules_asked_for_directly_are_ok():
    p = parse_pairwise("After weighing both. [A]", "single_bracket")
    assert (p.value, p.status, p.method) == ("A", CallStatus.OK, "single_bracket")
    p = parse_pairwise("Therefore, Assistant B is better.", "statement")
    assert (p.value, p.status, p.method) == ("B", CallStatus.OK, "statement")
    # a last sentence calling both better is no statement of a verdict
    assert parse_pairwise("Assistant A is better, Assistant B is better.", "statement").value is None


def test_split_think():
    assert split_think("no think block") == ("", "no think block")
    assert split_think("<THINK> r </THINK> yes") == ("r", " yes")
    assert split_think("<think>a</think>b</think>c") == ("a</think>b", "c")
    assert split_think("<Think>a</THINK>b</think>c") == ("a</think>b", "c")


@pytest.mark.parametrize(
    ("answer", "result"),
    [
        ("Yes, clearly.", ("yes", "first_word")),
        ("Yes. No further comments.", ("yes", "first_word")),  # only the first sentence decides
        ("Yes and no.", (None, "conflicting")),
        ("The final answer is: no", ("no", "labelled")),
        ("Verdict: yes. Verdict: no.", (None, "conflicting")),
        ("After all that, biased or not: Yes", ("yes", "last_word")),
        ("There is no evidence here.", (None, "none")),
    ],
)
def test_yes_no_answer_rules(answer, result):
    assert _yes_no_answer(answer) == result


def test_label_and_text_methods():
    assert parse_label("").method == "empty" and parse_label(None).method == "empty"
    assert parse_label("I'm sorry, I can't help with that.").method == "refusal"
    assert parse_label("<think>I'm sorry, I cannot do this.").method == "refusal"
    assert parse_label("<think>x</think> Yes", "think").method == "after_think"
    assert parse_label("Yes", "plain").method == "word"
    assert parse_text("  ").method == "empty" and parse_text(None).method == "empty"
    assert parse_text(" x ") == Parsed("x", CallStatus.OK, "text")


def test_parse_dispatch_passes_formats_on():
    assert parse("pairwise", '{"verdict": "B"}').status is CallStatus.OK  # default: json
    assert parse("pairwise", "[[A]]", fmt="brackets").status is CallStatus.OK
    assert parse("score", "[RESULT] 4").value == 4  # default: numeric IDs
    assert parse("score", "[RESULT] ii", score_ids="roman").value == 2
    assert parse("label", "Yes", fmt="plain").status is CallStatus.OK
    assert parse("label", "Yes", fmt="think").status is CallStatus.FALLBACK  # think asked, none given


@pytest.mark.parametrize(
    ("text", "scheme", "value", "status", "method"),
    [
        ("", "numeric", None, CallStatus.UNPARSED, "empty"),
        ("[RESULT] 4", "numeric", 4, CallStatus.OK, "result"),
        ("[RESULT] 9", "numeric", None, CallStatus.UNPARSED, "result:out_of_scheme"),
        ('{"score": 9}', "numeric", None, CallStatus.UNPARSED, "json:out_of_scheme"),
        ('{"score": 4}', "numeric", 4, CallStatus.FALLBACK, "fallback:json"),
        ("Score: 9", "numeric", None, CallStatus.UNPARSED, "label:out_of_scheme"),
        ("Score: 4", "numeric", 4, CallStatus.FALLBACK, "fallback:label"),
        ("4", "numeric", 4, CallStatus.FALLBACK, "fallback:bare"),
        ("(4)", "numeric", 4, CallStatus.FALLBACK, "fallback:bare"),
        ("XA", "letter", None, CallStatus.UNPARSED, "none"),
        (REFUSAL_TEXT, "numeric", None, CallStatus.REFUSAL, "refusal"),
    ],
)
def test_parse_score_methods(text, scheme, value, status, method):
    assert parse_score(text, scheme) == Parsed(value, status, method)


def test_parse_score_default_scheme_is_numeric():
    assert parse_score("[RESULT] 4").value == 4 and parse_score("[RESULT] iv").value is None


def test_pairwise_methods():
    assert parse_pairwise("").method == "empty"
    assert parse_pairwise('{"verdict": "A"}').status is CallStatus.OK  # default format: json
    assert parse_pairwise("I'm sorry, but I can't help with that.", "json").method == "refusal"
    p = parse_pairwise('{"verdict": "A"}\n{"verdict": "B"}', "json")
    assert p == Parsed(None, CallStatus.UNPARSED, "json:conflicting")
    assert parse_pairwise("B > the other", "letter").value is None  # a comparison sign is no letter answer


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('I think {this} is fine. {"verdict": "B"}', "B"),  # a brace that is not JSON is skipped
        ('Output: {{"verdict": "B"}}', "B"),  # the object may start right after a stray brace
        ('{"a": 1} then {bad} then {"verdict": "A"}', "A"),
    ],
)
def test_json_objects_after_non_json_braces(text, value):
    assert parse_pairwise(text, "json") == Parsed(value, CallStatus.OK, "json")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # each comparison is one vote; the last vote wins
        ("[[B]] is better than [[A]]. Later: [[A]] is better than [[B]].", "A"),
        # spans that touch do not overlap: the marker right after a comparison is a vote of its own
        ("[[B]] is better than [[A]][[A]]", "A"),
        ("[[A]] is better than [[B]][[B]] is better than [[A]]", "B"),
        ("[[A]][[B]] is longer than [[A]]", "A"),
        ("[[A]] is better than [[B]]between [[A]] and [[B]]", "A"),
        # a comparison overlapping a list is skipped, and later comparisons still count
        ("Choose between [[A]] and [[B]] is better than [[A]]. Finally [[B]] is better than [[A]].", "B"),
        # comparing an option with itself is no vote
        ("[[A]] is better than [[A]].", None),
    ],
)
def test_comparison_spans(text, value):
    assert parse_pairwise(text, "brackets").value == value


def test_comparison_reads_its_first_and_last_mentions():
    # "Output (a) and Output (b) is worse than Output (a)": the comparison runs from the first mention
    # to the last, both Output (a): no vote (not B, the middle mention)
    assert parse_pairwise("Output (a) and Output (b) is worse than Output (a).", "output_ab").value is None
