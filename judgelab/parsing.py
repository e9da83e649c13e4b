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
Rules follow the conventions of the papers' own parsers: FastChat's ``[[A]]``
markers (last match wins), Prometheus' ``[RESULT] n``, LLMBar's "Output (a)",
the single-letter A/B answers of paper 002, and ``<think>...</think> Yes`` of 001.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judgelab.records import CallStatus, OutputKind

PAIR_VALUES = ("A", "B", "tie")


@dataclass(frozen=True)
class Parsed:
    value: Any
    status: CallStatus
    method: str


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
_LABELLED = re.compile(
    r"(?:verdict|winner|answer|choice|result|better(?: response)?)\s*(?:is)?\s*[:=]?\s*\**\s*"
    # lower-case "a" before a word is the article ("the result is a tie"), and "A tie" is no vote for A
    r"(?:response|output|assistant)?\s*\(?\[?\s*((?-i:A)|a(?![ \t]+\w)|B|tie)\b(?![ \t]+(?:tie|draw)\b)",
    re.IGNORECASE,
)
_LETTER = re.compile(r"^\W*([AB])\W*$")


def _pair_json(text: str) -> Parsed | None:
    vs = _verdicts_from_json(text)
    if not vs:
        return None
    if len(set(vs)) > 1:
        return Parsed(None, CallStatus.UNPARSED, "json:conflicting")
    return Parsed(vs[0], CallStatus.OK, "json")


def _pair_brackets(text: str) -> Parsed | None:
    ms = _BRACKETS.findall(text)
    if not ms:
        return None
    last = ms[-1]  # last match wins: judges restate the options before answering
    return Parsed("tie" if last == "C" else last, CallStatus.OK, "brackets")


def _pair_output_ab(text: str) -> Parsed | None:
    ms = _OUTPUT_AB.findall(text)
    if not ms:
        return None
    return Parsed(ms[-1].upper(), CallStatus.OK, "output_ab")


def _pair_letter(text: str) -> Parsed | None:
    m = _LETTER.match(text.strip())
    if m:
        return Parsed(m.group(1), CallStatus.OK, "letter")
    # paper 002 parses the first A/B token of a short answer ("A.", "B\n")
    m = re.match(r"^\W*([AB])\b", text.strip())
    if m and len(text.strip()) <= 16:
        return Parsed(m.group(1), CallStatus.OK, "letter")
    return None


def _pair_labelled(text: str) -> Parsed | None:
    ms = _LABELLED.findall(text)
    if not ms:
        return None
    return Parsed(normalize_verdict(ms[-1]), CallStatus.OK, "labelled")


_PAIR_PARSERS: dict[str, Callable[[str], Parsed | None]] = {
    "json": _pair_json,
    "brackets": _pair_brackets,
    "output_ab": _pair_output_ab,
    "letter": _pair_letter,
    "labelled": _pair_labelled,
}
_PAIR_FALLBACK_ORDER = ("json", "brackets", "output_ab", "labelled", "letter")


def parse_pairwise(text: str | None, fmt: str = "json") -> Parsed:
    """Parse a pairwise verdict asked for in format ``fmt``.

    The expected format is tried first; an ambiguous answer in that format (two
    different JSON verdicts) is ``unparsed`` and is not rescued by a fallback.
    """
    if text is None or not text.strip():
        return Parsed(None, CallStatus.UNPARSED, "empty")
    if fmt not in _PAIR_PARSERS:
        raise ValueError(f"unknown pairwise format {fmt!r}; known: {sorted(_PAIR_PARSERS)}")
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
            return Parsed(got.value, CallStatus.FALLBACK, f"fallback:{got.method}")
    if _is_refusal(text):
        return Parsed(None, CallStatus.REFUSAL, "refusal")
    return UNPARSED


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


_SCORE_TOKEN = r"\[?\(?\s*([0-9]+(?:\.[0-9]+)?(?:\s*/\s*5)?|[A-Za-z]{1,4})\b"
_RESULT = re.compile(r"\[RESULT\]\s*:?\s*" + _SCORE_TOKEN, re.IGNORECASE)
_SCORE_LABEL = re.compile(
    r"(?:final\s+)?(?:score|rating|grade)\s*(?:is|of)?\s*[:=]?\s*\**\s*" + _SCORE_TOKEN,
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


def parse_label(text: str | None, fmt: str = "think") -> Parsed:
    """Parse yes/no: the first yes/no word after ``</think>`` (else the last one anywhere)."""
    if text is None or not text.strip():
        return Parsed(None, CallStatus.UNPARSED, "empty")
    _, answer = split_think(text)
    has_think = _THINK_END.search(text) is not None  # even after empty reasoning
    m = _YESNO.search(answer)
    if m and (has_think or fmt != "think"):
        return Parsed(m.group(1).lower(), CallStatus.OK, "after_think" if has_think else "word")
    if m:
        return Parsed(m.group(1).lower(), CallStatus.FALLBACK, "fallback:no_think")
    ms = _YESNO.findall(text)
    if ms:
        return Parsed(ms[-1].lower(), CallStatus.FALLBACK, "fallback:in_reasoning")
    if _is_refusal(text):
        return Parsed(None, CallStatus.REFUSAL, "refusal")
    return UNPARSED


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
