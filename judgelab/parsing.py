"""Turning raw judge text into values, for every output kind, with explicit failures.

Every parser returns a :class:`Parsed` with a status:

* ``ok``       -- the format the prompt asked for was found;
* ``fallback`` -- it was not, but a fallback rule recovered a value (e.g. a JSON
  verdict prompt answered with ``[[A]]``).  Counted separately, because a high
  fallback rate means the prompt and the judge disagree about the format;
* ``refusal``  -- no value, and the text reads as a refusal;
* ``unparsed`` -- no value (no verdict, conflicting verdicts, out-of-range score).

Nothing is coerced: a score of 6, a roman "vi" or a letter outside the scheme is
``unparsed`` (reported as -1 in score tables), never clipped to the nearest score.
Formats follow the papers' prompts: FastChat's ``[[A]]``/``[[B]]``/``[[C]]`` markers,
Prometheus' ``[RESULT] n``, LLMBar's "Output (a)", the single-letter A/B answers of
paper 002, and ``<think>...</think> Yes`` of 001.

Two readings of a pairwise text (the bias card's two views):

* the *lenient* reading (:func:`parse_pairwise`): judgelab's own rules.  A bracket
  marker is read in context: a comparison of two markers ("[[B]] is better than [[A]]",
  markdown emphasis around the markers included) is one vote for the favoured one,
  listed options ("either [[A]] or [[B]]") are no vote, and of the votes left the last
  one is the verdict (judges restate the format before answering);
* the *strict* reading (:data:`STRICT_RULES`, :func:`strict_verdict`): the extraction the
  source's authors published, transcribed exactly, so counts made with it reproduce
  theirs.  FastChat's ``run_judge_pair`` is no last-match rule: it checks whether
  ``"[[A]]"`` occurs anywhere, then ``"[[B]]"``, then ``"[[C]]"``; Position-Bias-Analyzer
  takes the first ``[[A-D]]`` match.  The two disagree with each other and with the
  lenient reading on texts that hold several markers ("[[C]] for the second question,
  but [[A]] for the entire conversation": FastChat A, Position-Bias-Analyzer C,
  lenient A, the last word).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judgelab.records import CallStatus, OutputKind


@dataclass(frozen=True)
class Parsed:
    value: Any
    status: CallStatus
    method: str
    #: how strongly a pairwise verdict prefers its side, where the format says so
    #: (Arena-Hard: 2 for ``A>>B``, 1 for ``A>B``, 0 for ``A=B``); None otherwise
    strength: int | None = None


UNPARSED = Parsed(None, CallStatus.UNPARSED, "none")

_REFUSAL = re.compile(
    r"\b(I'?m sorry|I am sorry|I can(?:no|')t (?:help|assist|comply|provide|evaluate|judge)"
    r"|I (?:will|won'?t|must) (?:not|decline)|as an AI(?: language model)?[, ]+I)",
    re.IGNORECASE,
)


def _is_refusal(text: str) -> bool:
    return bool(_REFUSAL.search(text))


# ---------------------------------------------------------------------------------
# pairwise verdicts


def normalize_verdict(raw: Any) -> str | None:
    """Map the many spellings of a verdict to ``A``/``B``/``tie`` (None if not one)."""
    if raw is None:
        return None
    s = str(raw).strip().strip("[]().*'\"` ").lower()
    s = re.sub(r"^(response|output|assistant|answer|option)\s*", "", s).strip("()[] ")
    if s in ("a", "1", "first"):
        return "A"
    if s in ("b", "2", "second"):
        return "B"
    if s in ("tie", "c", "equal", "draw", "both", "neither", "same", "none"):
        return "tie"
    return None


_JSON_KEYS = ("verdict", "winner", "choice", "preference", "better", "better_response", "answer")
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object in the text (fenced or bare), outermost only."""
    objs: list[dict[str, Any]] = []
    candidates = [m.group(1) for m in _FENCE.finditer(text)] or [text]
    dec = json.JSONDecoder(strict=False)  # judges put raw newlines inside JSON strings
    for cand in candidates:
        i = 0
        while True:
            j = cand.find("{", i)
            if j < 0:
                break
            try:
                obj, end = dec.raw_decode(cand, j)
            except json.JSONDecodeError:
                i = j + 1
                continue
            if isinstance(obj, dict):
                objs.append(obj)
            i = end
    return objs


def _verdicts_from_json(text: str) -> list[str]:
    out = []
    for obj in _json_objects(text):
        lowered = {str(k).lower(): v for k, v in obj.items()}
        for k in _JSON_KEYS:
            if k in lowered:
                v = normalize_verdict(lowered[k])
                if v is not None:
                    out.append(v)
                break
    return out


_BRACKETS = re.compile(r"\[\[\s*([ABC])\s*\]\]")
_OUTPUT_AB = re.compile(r"\bOutput\s*\(\s*([ab])\s*\)", re.IGNORECASE)
# Arena-Hard's five labels ``[[A>>B]]`` .. ``[[B>>A]]`` (and their mirrored spellings ``[[B<A]]``)
_ARENA = re.compile(r"\[\[\s*([AB])\s*(>>|>|=|<<|<)\s*([AB])\s*\]\]")
#: Arena-Hard score labels -> (verdict, strength): 2 = "significantly better", 1 = "slightly better", 0 = tie.
ARENA_HARD_LABELS: dict[str, tuple[str, int]] = {
    "A>>B": ("A", 2), "A>B": ("A", 1), "A=B": ("tie", 0), "B>A": ("B", 1), "B>>A": ("B", 2),
}
# a label word, then (same line) the verdict. "answer"/"result" are weak labels ("My own answer:" is a
# heading in Arena-Hard judgments): after them the letter must stand alone ("Final answer: B.").
_LABEL_TAIL = (
    r"[ \t]*(?:is)?[ \t]*[:=]?[ \t]*[*_]*[ \t]*(?:response|output|assistant)?[ \t]*\(?\[?[ \t]*"
)
_LABELLED = re.compile(
    r"(?:verdict|winner|choice|better(?: response)?|preferred(?: response)?)" + _LABEL_TAIL +
    # lower-case "a" before a word is the article ("the result is a tie"), and "A tie" is no vote for A
    r"((?-i:A)|a(?![ \t]+\w)|B|tie)\b(?![ \t]+(?:tie|draw)\b)"
    r"|(?<!'s )(?<!own )(?:answer|result)" + _LABEL_TAIL + r"(A|B|tie)\b(?=[ \t]*(?:$|[.!,;)\]*_]))"
    # the label ends its line and the verdict stands alone on a following line ("Final answer:\n\n**B**")
    r"|(?<!'s )(?<!own )(?:verdict|winner|choice|answer|result|better(?: response)?|preferred(?: response)?)"
    r"[ \t]*(?:is)?[ \t]*[:=]?[ \t]*[*_]*[ \t]*\n\s*[*_]*[ \t]*(?:response|output|assistant)?[ \t]*\(?\[?[ \t]*"
    r"(A|B|tie)[ \t]*[.!*_)\]]*[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_LETTER = re.compile(r"^\W*([AB])\W*$")
# "'A' is the correct answer." -- the letter, quoted or bold, then a plain claim that it is the answer,
# and nothing else: the whole text must be this one statement (no "not", no question, no second letter)
_LETTER_IS_ANSWER = re.compile(
    r"^[^\w\s]*([AB])[^\w\s]*\s+is\s+(?i:(?:the\s+)?(?:correct|right|better|best)"
    r"(?:\s+(?:answer|response|output|option|choice|one))?)[\s.!*_`'\"]*$"
)
_SINGLE_BRACKET = re.compile(r"(?<!\[)\[\s*([ABC])\s*\](?!\])[\s.!*_`'\"]*$")
# "Therefore, Assistant A is better." -- an explicit verdict statement, read only in the last sentence
_STATEMENT = re.compile(
    r"\b(?:assistant|response|output|answer|model|option|candidate)\s*\(?\s*([AB12])\s*\)?"
    r"(?:'s\s+(?:answer|response|output))?\s+(?:is|was)\s+"
    r"(?:(?:clearly|slightly|significantly|much|far|somewhat|overall|the|definitely|marginally)\s+)*"
    r"(?:better|superior|preferable|stronger|the\s+winner|the\s+better\s+(?:one|response|answer|choice))\b",
    re.IGNORECASE,
)
_NOT_A_STATEMENT = re.compile(r"\b(?:neither|nor|either|both|if|whether|tie|equal(?:ly)?|not)\b|\?", re.IGNORECASE)
# a judge that declines to choose ("I cannot select either Output (a) or Output (b)") names both
# options; it is a refusal, and it is detected before any rule reads an option as a verdict
_DECLINE = re.compile(
    r"\b(?:I|we)(?:'m|'re|\s+am|\s+are)?\s+(?:cannot|can\s*not|can'?t|could\s*not|couldn'?t|unable\s+to"
    r"|not\s+able\s+to|won'?t|will\s+not|(?:must\s+)?(?:decline|refuse)\s+to)\s+"
    r"(?:(?:select|choose|pick|decide|prefer|favou?r|recommend|endorse|rank)\b"
    r"|(?:evaluate|judge|compare|assess|rate)\s+(?:them\b|(?:these|the|either|both|this|those)\s+(?:two\s+)?"
    r"(?:responses?|outputs?|answers?|options?|assistants?|completions?)\b))",
    re.IGNORECASE,
)
# "either Output (a) or Output (b)", "between [[A]] and [[B]]": options listed, not chosen
_LISTED = r"\b(?:either|neither|between|both)\s+{m}\s*(?:,|or|nor|and)\s+{m}"
# a comparison of two mentions; the comparative word decides which one it favours
_BETTER = r"better|superior|preferable|stronger"
_WORSE = r"worse|inferior|weaker"


def _option_verdicts(text: str, marker: re.Pattern[str], letter: Callable[[str], str]) -> list[str]:
    """The verdicts that option mentions (``[[A]]``, ``Output (a)``) state, in text order.

    A mention counts as a vote for its option, except: mentions listed together
    ("either Output (a) or Output (b)") are no vote; a comparison of two mentions
    ("[[B]] is better than [[A]]", "I prefer / choose Output (b) over Output (a)") is one vote
    for the favoured option, and a comparison with no direction ("[[A]] is longer than
    [[B]]") is none.  Hand-written: the papers' parsers take the last mention, which
    reads "I conclude that [[B]] is better than [[A]]" as A.
    """
    # a marker inside a phrase may carry markdown emphasis or quotes ("**[[B]]** is better than **[[A]]**")
    m = rf"[*_`'\"]*{marker.pattern}[*_`'\"]*"
    spans = [  # (pattern, which mention the phrase votes for: 0 first, 1 second, None no vote)
        (_LISTED.format(m=m), "listed"),
        (rf"\b(?:prefer(?:s|red)?|choos(?:e|es|ing)|chose|pick(?:s|ed)?|select(?:s|ed)?|favou?r(?:s|ed)?)"
         rf"\s+{m}\s+(?:over|to|rather\s+than|instead\s+of)\s+{m}", "first"),
        (rf"{m}\s+(?:is|was)\s+preferred\s+(?:over|to)\s+{m}", "first"),
        (rf"{m}[^.\n\[\]]{{0,60}}?\b(?:(?:\w+er|worse|preferable|more\s+\w+|less\s+\w+)\s+than"
         rf"|(?:superior|inferior|preferable)\s+to)\s+{m}", "compare"),
    ]
    events: list[tuple[int, str | None]] = []
    used: list[tuple[int, int]] = []
    for pat, kind in spans:
        for mt in re.finditer(pat, text, re.IGNORECASE):
            a, b = mt.span()
            if any(a < u1 and b > u0 for u0, u1 in used):
                continue
            used.append((a, b))
            found = [letter(x.group(1)) for x in marker.finditer(mt.group(0))]
            first, second = found[0], found[-1]
            low = mt.group(0).lower()
            vote: str | None = None
            if kind == "first":
                vote = first
            elif kind == "compare" and re.search(rf"\b(?:{_BETTER})\s+(?:than|to)\b", low):
                vote = first
            elif kind == "compare" and re.search(rf"\b(?:{_WORSE})\s+(?:than|to)\b", low):
                vote = second
            events.append((b, vote if first != second else None))
    for mk in marker.finditer(text):
        if not any(mk.start() < u1 and mk.end() > u0 for u0, u1 in used):
            events.append((mk.end(), letter(mk.group(1))))
    return [v for _, v in sorted(events, key=lambda e: e[0]) if v is not None]


def _declined(text: str) -> re.Match[str] | None:
    return _DECLINE.search(text)


def _pair_json(text: str) -> Parsed | None:
    vs = _verdicts_from_json(text)
    if not vs:
        return None
    if len(set(vs)) > 1:
        return Parsed(None, CallStatus.UNPARSED, "json:conflicting")
    return Parsed(vs[0], CallStatus.OK, "json")


def _pair_brackets(text: str) -> Parsed | None:
    if not _BRACKETS.search(text):
        return None
    vs = _option_verdicts(text, _BRACKETS, lambda g: "tie" if g == "C" else g)
    if not vs:
        return None
    # last match wins: judges restate the options before answering
    return Parsed(vs[-1], CallStatus.OK, "brackets")


def arena_hard_label(raw: Any) -> tuple[str, int] | None:
    """``(verdict, strength)`` of an Arena-Hard label (``A>>B``, ``B<A``, ``[[A=B]]``), None if not one.

    Mirrored spellings mean the same (``B<A`` is ``A>B``); a label comparing a slot with
    itself (``A>A``) is none.
    """
    if raw is None:
        return None
    m = re.fullmatch(r"\s*\[?\[?\s*([AB])\s*(>>|>|=|<<|<)\s*([AB])\s*\]?\]?\s*", str(raw))
    if not m or m.group(1) == m.group(3):
        return None
    left, op, right = m.groups()
    if op == "=":
        return ARENA_HARD_LABELS["A=B"]
    if op.startswith("<"):
        left, right, op = right, left, op.replace("<", ">")
    return ARENA_HARD_LABELS[f"{left}{op}{right}"]


def _pair_arena(text: str) -> Parsed | None:
    read = [arena_hard_label(mt.group(0)) for mt in _ARENA.finditer(text)]
    labels = [lab for lab in read if lab is not None]
    if not labels:
        return None
    if len(set(labels)) > 1:  # Arena-Hard's own rule: all labels of one judgment must agree
        return Parsed(None, CallStatus.UNPARSED, "arena_hard:conflicting")
    verdict, strength = labels[0]
    return Parsed(verdict, CallStatus.OK, "arena_hard", strength)


def _pair_output_ab(text: str) -> Parsed | None:
    if not _OUTPUT_AB.search(text):
        return None
    vs = _option_verdicts(text, _OUTPUT_AB, str.upper)
    if not vs:
        return None
    return Parsed(vs[-1], CallStatus.OK, "output_ab")


def _pair_letter(text: str) -> Parsed | None:
    t = text.strip()
    m = _LETTER.match(t)
    if m:
        return Parsed(m.group(1), CallStatus.OK, "letter")
    # paper 002 parses the first A/B token of a short answer ("A.", "B\n"); a short text that
    # names both letters ("A or B?", "[[A=B]]") or compares them is no answer
    m = re.match(r"^\W*([AB])\b", t)
    if m and len(t) <= 16 and len(re.findall(r"\b[AB]\b", t)) == 1 and not re.search(r"[<>=]", t):
        return Parsed(m.group(1), CallStatus.OK, "letter")
    m = _LETTER_IS_ANSWER.match(t)
    if m:
        return Parsed(m.group(1), CallStatus.OK, "letter")
    return None


def _pair_labelled(text: str) -> Parsed | None:
    ms = [next(g for g in groups if g) for groups in _LABELLED.findall(text)]
    if not ms:
        return None
    return Parsed(normalize_verdict(ms[-1]), CallStatus.OK, "labelled")


def _pair_single_bracket(text: str) -> Parsed | None:
    """``[A]`` / ``[B]`` / ``[C]`` (single brackets), only as the last thing the judge wrote."""
    m = _SINGLE_BRACKET.search(text)
    if not m:
        return None
    return Parsed("tie" if m.group(1) == "C" else m.group(1), CallStatus.OK, "single_bracket")


def _last_sentence(text: str) -> str:
    parts = [p for p in re.split(r"(?<=[.!?])\s+|\n+", text.strip()) if re.search(r"\w", p)]
    return parts[-1] if parts else ""


def _pair_statement(text: str) -> Parsed | None:
    """"Therefore, Assistant A is better." in the last sentence (no conditional, no negation, no tie)."""
    last = _last_sentence(text)
    ms = _STATEMENT.findall(last)
    if not ms or _NOT_A_STATEMENT.search(last) or len({normalize_verdict(x) for x in ms}) > 1:
        return None
    return Parsed(normalize_verdict(ms[-1]), CallStatus.OK, "statement")


def _pair_position_bias_analyzer(text: str) -> Parsed | None:
    """Position-Bias-Analyzer's MT-Bench prompt asks for FastChat's markers; read them leniently
    like ``brackets`` (the format's own name is kept, so the strict view applies that source's rule)."""
    got = _pair_brackets(text)
    return None if got is None else Parsed(got.value, got.status, "position_bias_analyzer", got.strength)


_PAIR_PARSERS: dict[str, Callable[[str], Parsed | None]] = {
    "json": _pair_json,
    "brackets": _pair_brackets,
    "position_bias_analyzer": _pair_position_bias_analyzer,
    "arena_hard": _pair_arena,
    "output_ab": _pair_output_ab,
    "letter": _pair_letter,
    "labelled": _pair_labelled,
    "single_bracket": _pair_single_bracket,
    "statement": _pair_statement,
}
_PAIR_FALLBACK_ORDER = ("json", "arena_hard", "brackets", "output_ab", "labelled", "single_bracket", "statement",
                        "letter")
# formats whose marker is explicit enough to stand after a declined choice ("I cannot decide at first ... [[A]]")
_STRICT_FORMATS = ("json", "arena_hard", "brackets", "position_bias_analyzer")


def parse_pairwise(text: str | None, fmt: str = "json") -> Parsed:
    """Parse a pairwise verdict asked for in format ``fmt``.

    The expected format is tried first; an ambiguous answer in that format (two
    different JSON verdicts) is ``unparsed`` and is not rescued by a fallback.
    A judge that declines to choose ("I cannot select either Output (a) or Output (b)")
    is a ``refusal`` unless an explicit marker (JSON, ``[[X]]``, an Arena-Hard label)
    follows the statement.
    """
    if text is None or not text.strip():
        return Parsed(None, CallStatus.UNPARSED, "empty")
    if fmt not in _PAIR_PARSERS:
        raise ValueError(f"unknown pairwise format {fmt!r}; known: {sorted(_PAIR_PARSERS)}")
    declined = _declined(text)
    if declined is not None:
        after = text[declined.end():]
        for name in (fmt, *_STRICT_FORMATS):
            if name in _STRICT_FORMATS:
                got = _PAIR_PARSERS[name](after)
                if got is not None and got.value is not None:
                    return got if name == fmt else _as_fallback(got)
        return Parsed(None, CallStatus.REFUSAL, "refusal:declined")
    got = _PAIR_PARSERS[fmt](text)
    if got is not None:
        return got
    for name in _PAIR_FALLBACK_ORDER:
        if name == fmt:
            continue
        got = _PAIR_PARSERS[name](text)
        if got is not None:
            if got.value is None:
                return got
            return _as_fallback(got)
    if _is_refusal(text):
        return Parsed(None, CallStatus.REFUSAL, "refusal")
    return UNPARSED


def _as_fallback(got: Parsed) -> Parsed:
    return Parsed(got.value, CallStatus.FALLBACK, f"fallback:{got.method}", got.strength)


# ---------------------------------------------------------------------------------
# the sources' own extraction rules (the strict view)


@dataclass(frozen=True)
class StrictRule:
    """A source's published extraction of a pairwise verdict from the judge's text.

    ``read`` returns ``A``/``B``/``tie`` in the slots as shown, or None where the authors'
    code finds no verdict; ``source`` cites the code transcribed."""

    name: str
    read: Callable[[str], str | None]
    source: str


def _fastchat_rule(text: str) -> str | None:
    # transcribed from run_judge_pair (output_format "[[A]]"): substring tests in this priority order
    if "[[A]]" in text:
        return "A"
    if "[[B]]" in text:
        return "B"
    if "[[C]]" in text:
        return "tie"
    return None


_PBA_MARKER = re.compile(r"\[\[([ABCD])\]\]")


def _position_bias_analyzer_rule(text: str) -> str | None:
    # transcribed from match_answer(s, "MTBench"): the first of re.findall(r'\[\[([ABCD])\]\]', s).
    # C is the prompt's tie; D ("neither") is offered only in the authors' 4-option mode and has no
    # place in judgelab's A/B/tie scheme, so it reads as no verdict here (their 3-option runs never offer it)
    found = _PBA_MARKER.findall(text)
    if not found:
        return None
    return {"A": "A", "B": "B", "C": "tie"}.get(found[0])


#: parse format (the ``parse_method`` a text was read with) -> the source's published rule
STRICT_RULES: dict[str, StrictRule] = {
    "brackets": StrictRule(
        "brackets", _fastchat_rule,
        "lm-sys/FastChat fastchat/llm_judge/common.py run_judge_pair (commit 007ecd07): "
        '"[[A]]" in judgment -> A, elif "[[B]]" -> B, elif "[[C]]" -> tie, else error'),
    "position_bias_analyzer": StrictRule(
        "position_bias_analyzer", _position_bias_analyzer_rule,
        "Slimshilin/Position-Bias-Analyzer judging_the_judges/repetitional_consistency/"
        "repetitonal_consistency_util.py match_answer (= subeval/subjective/analyze_util.py; commit 0eb0ce93): "
        "first match of \\[\\[([ABCD])\\]\\]"),
}


def strict_rule_for(parse_method: str) -> StrictRule | None:
    """The published rule behind a ``parse_method`` (``brackets``, ``brackets:...``), None when the
    verdict was not read from text in a format with a published rule (recorded labels, fallbacks)."""
    fmt = parse_method.split(":", 1)[0]
    return STRICT_RULES.get(fmt)


def strict_verdict(text: str | None, parse_method: str) -> str | None:
    """The verdict (slots as shown) the source's own code reads in ``text``; see :data:`STRICT_RULES`."""
    rule = strict_rule_for(parse_method)
    if rule is None or not text:
        return None
    return rule.read(text)


# ---------------------------------------------------------------------------------
# 1-5 scores in several score-ID schemes (paper 004)

SCORE_IDS: dict[str, tuple[str, ...]] = {
    # index i holds the ID of score i+1
    "numeric": ("1", "2", "3", "4", "5"),
    "letter": ("E", "D", "C", "B", "A"),
    "roman": ("i", "ii", "iii", "iv", "v"),
}


def score_id(score: int, scheme: str) -> str:
    """The ID that denotes ``score`` (1-5) in ``scheme``."""
    return SCORE_IDS[scheme][score - 1]


def _token_to_score(token: str, scheme: str) -> int | None:
    t = token.strip().strip("[]().*'\"`:").strip()
    ids = SCORE_IDS[scheme]
    if scheme == "numeric":
        m = re.fullmatch(r"(\d+)(?:\.0+)?(?:\s*/\s*5)?", t)
        if not m:
            return None
        v = int(m.group(1))
        return v if 1 <= v <= 5 else None
    low = t.lower()
    for i, sid in enumerate(ids):
        if low == sid.lower():
            return i + 1
    return None


_SCORE_TOKEN = r"[*_]*\s*\[?\(?\s*([0-9]+(?:\.[0-9]+)?(?:\s*/\s*5)?|[A-Za-z]{1,4})(?![A-Za-z0-9])"
# markdown emphasis is allowed around the marker and the score ("[RESULT] **4**", "**[RESULT]** 4")
_RESULT = re.compile(r"\[RESULT\][*_]*\s*:?\s*" + _SCORE_TOKEN, re.IGNORECASE)
_SCORE_LABEL = re.compile(
    r"(?:final\s+)?(?:score|rating|grade)[*_]*\s*(?:is|of)?\s*[:=]?\s*" + _SCORE_TOKEN,
    re.IGNORECASE,
)


def parse_score(text: str | None, scheme: str = "numeric") -> Parsed:
    """Parse a 1-5 score written in ``scheme`` (numeric 1-5, letter E-A, roman i-v)."""
    if scheme not in SCORE_IDS:
        raise ValueError(f"unknown score-ID scheme {scheme!r}; known: {sorted(SCORE_IDS)}")
    if text is None or not text.strip():
        return Parsed(None, CallStatus.UNPARSED, "empty")
    ms = _RESULT.findall(text)
    if ms:
        v = _token_to_score(ms[-1], scheme)
        if v is None:
            return Parsed(None, CallStatus.UNPARSED, "result:out_of_scheme")
        return Parsed(v, CallStatus.OK, "result")
    for obj in _json_objects(text):
        lowered = {str(k).lower(): v for k, v in obj.items()}
        if "score" in lowered:
            v = _token_to_score(str(lowered["score"]), scheme)
            if v is None:
                return Parsed(None, CallStatus.UNPARSED, "json:out_of_scheme")
            return Parsed(v, CallStatus.FALLBACK, "fallback:json")
    ms = _SCORE_LABEL.findall(text)
    if ms:
        v = _token_to_score(ms[-1], scheme)
        if v is None:
            return Parsed(None, CallStatus.UNPARSED, "label:out_of_scheme")
        return Parsed(v, CallStatus.FALLBACK, "fallback:label")
    v = _token_to_score(text, scheme)  # a bare ID and nothing else
    if v is not None:
        return Parsed(v, CallStatus.FALLBACK, "fallback:bare")
    if _is_refusal(text):
        return Parsed(None, CallStatus.REFUSAL, "refusal")
    return UNPARSED


# ---------------------------------------------------------------------------------
# yes / no labels after a reasoning trace (paper 001)

_THINK_END = re.compile(r"</think>", re.IGNORECASE)
_YESNO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def split_think(text: str) -> tuple[str, str]:
    """``(reasoning, answer)`` around the last ``</think>``; reasoning is '' if absent."""
    parts = _THINK_END.split(text)
    if len(parts) == 1:
        return "", text
    reasoning = re.sub(r"^\s*<think>", "", "</think>".join(parts[:-1]), flags=re.IGNORECASE)
    return reasoning.strip(), parts[-1]


_THINK_START = re.compile(r"<think>", re.IGNORECASE)
# where an answer states yes/no: its first word, a label ("Final answer: No"), or its last word after a colon
_YESNO_FIRST = re.compile(r"^[\W_]*(yes|no)\b", re.IGNORECASE)
_YESNO_LABELLED = re.compile(
    r"\b(?:answer|label|verdict|judg(?:e)?ment|decision|conclusion|biased)[*_]*\s*(?:is)?\s*[:=]?\s*[*_\"'`]*\s*"
    r"(yes|no)\b",
    re.IGNORECASE,
)
_YESNO_LAST = re.compile(r"(?:^|[:\n])[\W_]*(yes|no)[\W_]*$", re.IGNORECASE)


def _yes_no_answer(answer: str) -> tuple[str | None, str]:
    """The yes/no an answer states, and the rule that read it (``conflicting`` / ``none`` if none).

    Only places where an answer states its label count: the first word ("Yes, it is
    biased"), a labelled statement ("Final answer: no"), a final "...: Yes" or a last line
    "No".  A yes/no inside a sentence ("there is no sign of ...") is no answer.
    """
    first = _YESNO_FIRST.match(answer)
    if first:
        sentence = re.split(r"[.!?\n]", answer.strip(), maxsplit=1)[0]
        if len({w.lower() for w in _YESNO.findall(sentence)}) > 1:  # "Yes and no."
            return None, "conflicting"
        return first.group(1).lower(), "first_word"
    labelled = _YESNO_LABELLED.findall(answer)
    if labelled:
        if len({w.lower() for w in labelled}) > 1:
            return None, "conflicting"
        return labelled[-1].lower(), "labelled"
    last = _YESNO_LAST.search(answer.strip())
    if last:
        return last.group(1).lower(), "last_word"
    return None, "none"


def parse_label(text: str | None, fmt: str = "think") -> Parsed:
    """Parse yes/no from the answer after ``</think>`` (the whole text when there is no think block).

    The reasoning is never read as the answer: a trace with no final answer, or one
    cut off inside ``<think>``, is ``unparsed`` whatever yes/no words it contains.
    """
    if text is None or not text.strip():
        return Parsed(None, CallStatus.UNPARSED, "empty")
    has_think = _THINK_END.search(text) is not None  # even after empty reasoning
    if not has_think and _THINK_START.search(text):
        if _is_refusal(text):
            return Parsed(None, CallStatus.REFUSAL, "refusal")
        return Parsed(None, CallStatus.UNPARSED, "think:unterminated")
    _, answer = split_think(text)
    value, rule = _yes_no_answer(answer)
    if value is not None:
        if has_think:
            return Parsed(value, CallStatus.OK, "after_think")
        if fmt != "think":
            return Parsed(value, CallStatus.OK, "word")
        return Parsed(value, CallStatus.FALLBACK, "fallback:no_think")
    if _is_refusal(text):
        return Parsed(None, CallStatus.REFUSAL, "refusal")
    if rule == "conflicting":
        return Parsed(None, CallStatus.UNPARSED, "conflicting")
    return Parsed(None, CallStatus.UNPARSED, "no_answer" if has_think else "none")


def parse_text(text: str | None) -> Parsed:
    if text is None or not text.strip():
        return Parsed(None, CallStatus.UNPARSED, "empty")
    return Parsed(text.strip(), CallStatus.OK, "text")


def parse(kind: OutputKind | str, text: str | None, *, fmt: str = "json",
          score_ids: str = "numeric") -> Parsed:
    """Dispatch on output kind."""
    kind = OutputKind(kind)
    if kind is OutputKind.PAIRWISE:
        return parse_pairwise(text, fmt)
    if kind is OutputKind.SCORE:
        return parse_score(text, score_ids)
    if kind is OutputKind.LABEL:
        return parse_label(text, fmt)
    return parse_text(text)
