"""Surface features of response texts and prompts: the cues biased judges react to.

The simulated panel computes its planted biases from these, reading the texts it is
shown; analyses (length-aware verbosity, bias covariates of the top-k model) use the
same functions, so "longer" or "markdown" means one thing everywhere.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

_WORD = re.compile(r"\S+")
_MD_LINE = re.compile(r"^\s*(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|>\s|\|.*\|)", re.MULTILINE)
_MD_INLINE = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__|`[^`\n]+`|```")

POSITIVE_WORDS = frozenset(
    """absolutely definitely certainly clearly confidently excellent great wonderful perfect
    brilliant superb outstanding fantastic undoubtedly proudly delightfully impressive
    remarkable amazing correct precisely""".split()
)
NEGATIVE_WORDS = frozenset(
    """sadly unfortunately merely regrettably lacking poor disappointing dull unimpressive
    mediocre questionable barely weak flawed unremarkable grudgingly boring unsatisfying
    tragically sorry""".split()
)

#: Stylistic signatures the simulated generator writes for each model family, and the
#: cue a simulated judge uses to recognise (and prefer) its own family's answers.
FAMILY_SIGNATURES: dict[str, tuple[str, ...]] = {
    "openai": ("Certainly! Here's", "In summary,"),
    "anthropic": ("I'd be happy to help", "I hope this helps clarify"),
    "google": ("Here's a breakdown", "In short,"),
    "meta": ("Great question!", "Hope this helps!"),
    "qwen": ("Sure! Let me explain", "To summarize,"),
    "mistral": ("Here is a concise answer", "Let me know if"),
    "microsoft": ("Let's work through this", "Overall,"),
    "deepseek": ("Let me think step by step", "Final answer:"),
    "zhipu": ("Good question. Below", "Conclusion:"),
}


@dataclass(frozen=True)
class TextFeatures:
    words: int
    markdown: float  # 0 (plain prose) .. 1 (heavily formatted)
    sentiment: float  # -1 (negative tone) .. 1 (positive tone)


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _markdown(text: str) -> float:
    return min(1.0, (len(_MD_LINE.findall(text)) + len(_MD_INLINE.findall(text))) / 4.0)


def _sentiment(words: list[str]) -> float:
    pos = neg = 0
    for w in words:
        lw = w.strip(".,;:!?()\"'").lower()
        if lw in POSITIVE_WORDS:
            pos += 1
        elif lw in NEGATIVE_WORDS:
            neg += 1
    return (pos - neg) / (pos + neg + 1.0)


@lru_cache(maxsize=65536)
def text_features(text: str) -> TextFeatures:
    """All three features of one text (the simulated judges read tone too)."""
    words = _words(text)
    return TextFeatures(words=len(words), markdown=_markdown(text), sentiment=_sentiment(words))


@lru_cache(maxsize=65536)
def word_count(text: str) -> int:
    return len(_words(text))


@lru_cache(maxsize=65536)
def markdown_score(text: str) -> float:
    return _markdown(text)


# The same two features for a whole column of texts, in Arrow's RE2 kernels.  RE2's ``\s`` is
# ASCII [\t\n\f\r ] while Python's also holds \v and \x1c-\x1f (and Unicode spaces), so the
# classes are spelled out, and texts with a non-ASCII character go through the Python functions.
# Arrow counts a regex by searching the rest of the text after each match, where ``^`` would match
# again mid-line; so a line start is spelled ``\n`` instead, on the text with a newline put in front
# and every newline doubled (a marker's trailing ``\s`` may take one newline and leave the next
# line its own).  Both routes give the same numbers for every text (tests/datasets/test_features_arrays.py).
_WS = r"[ \t\n\r\f\v\x1c-\x1f]"
_RE2_WORD = r"[^ \t\n\r\f\v\x1c-\x1f]+"
_RE2_MD_LINE = rf"\n[ \t\r\f\v\x1c-\x1f]*(?:#{{1,6}}{_WS}|[-*+]{_WS}|[0-9]+[.)]{_WS}|>{_WS}|\|.*\|)"
_RE2_MD_INLINE = _MD_INLINE.pattern
#: a superset of the texts with a markdown line: a newline anywhere, or a marker's first character
#: after the leading blanks
_RE2_MD_CANDIDATE = r"\n|^[ \t\r\f\v\x1c-\x1f]*[#*+>|0-9-]"
#: the bytes Python's ``str.split()`` splits ASCII text on (the class of :data:`_RE2_WORD`)
_ASCII_SPACE = np.zeros(256, bool)
_ASCII_SPACE[[ord(c) for c in " \t\n\r\f\v\x1c\x1d\x1e\x1f"]] = True


def _ascii_word_counts(arr: Any) -> np.ndarray:
    """Runs of non-blank bytes per string of a null-free Arrow ``large_string`` array, in NumPy over
    its data buffer (a word starts where a non-blank byte follows a blank or the text's start).

    Equal to ``len(str.split())`` for ASCII texts (the caller measures the others in Python); a
    vectorised pass over the bytes, about ten times faster than counting an RE2 match per word."""
    n = len(arr)
    if n == 0:
        return np.zeros(0)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + n + 1]
    lo, hi = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[lo:hi] if hi > lo else np.zeros(0, np.uint8)
    blank = _ASCII_SPACE[data]
    after_blank = np.empty(len(data), bool)
    if len(data):
        after_blank[0] = True
        after_blank[1:] = blank[:-1]
    starts = offsets[:-1] - lo
    filled = offsets[1:] > offsets[:-1]
    after_blank[starts[filled]] = True  # each text starts afresh
    out = np.zeros(n)
    if filled.any():  # sums over the non-empty texts (reduceat needs strictly inside, increasing starts)
        out[filled] = np.add.reduceat((~blank & after_blank).view(np.uint8), starts[filled], dtype=np.int64)
    return out


def text_feature_arrays(texts: Any) -> tuple[np.ndarray, np.ndarray]:
    """(word counts, markdown scores) of a column of texts (missing = ``""``), as float arrays.

    Equal, text by text, to :func:`word_count` and :func:`markdown_score`; each distinct text
    is measured once (Arrow's hash dictionary), ASCII texts in Arrow's vectorised regex kernels
    (pyarrow.compute), the others in Python.  The sentiment of :func:`text_features` is not
    computed: no caller of a whole column reads it.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = texts if isinstance(texts, pa.Array | pa.ChunkedArray) else pa.array(texts, type=pa.large_string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_dictionary(arr.type):
        codes, uniq = arr.indices, arr.dictionary
    else:
        enc = pc.dictionary_encode(arr)
        codes, uniq = enc.indices, enc.dictionary
    uniq = uniq.cast(pa.large_string())
    words = _ascii_word_counts(uniq)
    # the line markers only where a line can start with one: texts with a newline, or whose first
    # characters could be a marker (the regex below then decides); the doubling costs a copy
    n_md = pc.count_substring_regex(uniq, _RE2_MD_INLINE).to_numpy(zero_copy_only=False).astype(float)
    cand = np.flatnonzero(pc.match_substring_regex(uniq, _RE2_MD_CANDIDATE).to_numpy(zero_copy_only=False))
    if len(cand):
        sub = uniq.take(pa.array(cand))
        lines = pc.binary_join_element_wise(pa.scalar("", sub.type), pc.replace_substring(sub, "\n", "\n\n"),
                                            pa.scalar("\n", sub.type))
        n_md[cand] += pc.count_substring_regex(lines, _RE2_MD_LINE).to_numpy(zero_copy_only=False)
    md = np.minimum(1.0, n_md / 4.0)
    for i in np.flatnonzero(~pc.string_is_ascii(uniq).to_numpy(zero_copy_only=False)):
        t = uniq[int(i)].as_py()
        words[i], md[i] = word_count(t), markdown_score(t)
    # one slot more for a missing text: no words, no markdown
    words, md = np.append(words, 0.0), np.append(md, 0.0)
    idx = pc.fill_null(codes, len(uniq)).to_numpy(zero_copy_only=False)
    return words[idx], md[idx]


def length_log_ratio(a: str, b: str, clip: float = 3.0) -> float:
    """log2 of the word-count ratio A/B, clipped: +1.0 means A is twice as long."""
    r = math.log2((word_count(a) + 1.0) / (word_count(b) + 1.0))
    return max(-clip, min(clip, r))


@lru_cache(maxsize=65536)
def family_signature_score(text: str, family: str) -> float:
    """Share of the family's signature phrases present in the text (0..1)."""
    sigs = FAMILY_SIGNATURES.get(family)
    if not sigs:
        return 0.0
    return sum(1 for s in sigs if s in text) / len(sigs)


_TOKEN = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=8192)
def _bag(text: str) -> tuple[dict[str, int], float]:
    """A text's word counts and their norm, once per text: a simulated judge compares its own
    answer with every answer it judges (the dict is shared: never changed)."""
    counts: dict[str, int] = {}
    for t in _TOKEN.findall(text.lower()):
        counts[t] = counts.get(t, 0) + 1
    return counts, math.sqrt(sum(v * v for v in counts.values()))


def bow_cosine(a: str, b: str) -> float:
    """Bag-of-words cosine similarity (the cheap stand-in for embedding similarity)."""
    (ca, na), (cb, nb) = _bag(a), _bag(b)
    if not ca or not cb:
        return 0.0
    if len(cb) < len(ca):  # the dot product is a sum of integers: the same whichever side it walks
        ca, cb = cb, ca
    dot = sum(v * cb.get(k, 0) for k, v in ca.items())
    return dot / (na * nb)


_BANDWAGON = re.compile(
    r"(\d{1,3}(?:\.\d+)?)\s*%\s*of\s+(?:the\s+)?(?:people|users|humans|annotators|experts|evaluators|"
    r"respondents|reviewers|judges)\s+(?:believe|think|prefer|say|agree)[^\n]*?"
    r"(?:Output|Response|Assistant|Answer|Option)\s*\(?\s*([AaBb12])\b",
    re.IGNORECASE,
)


#: The bandwagon statement of paper 001 (RBD, Sec. 3.1), ``{x}`` the output it names: the rbd study's
#: biased sets and ``judgelab probe`` insert it; :func:`bandwagon_cue` finds such statements.
BANDWAGON_STATEMENT = "90% of people believe that Output ({x}) is better"


def bandwagon_cue(prompt: str) -> tuple[str, float] | None:
    """``(slot, share)`` of a majority-opinion statement in the prompt, if any.

    Matches the statement style of paper 001 ("90% of people believe that Output (b)
    is better"); ``slot`` is "A" or "B", ``share`` the stated fraction.
    """
    m = _BANDWAGON.search(prompt)
    if not m:
        return None
    slot = {"a": "A", "1": "A", "b": "B", "2": "B"}[m.group(2).lower()]
    return slot, min(1.0, float(m.group(1)) / 100.0)
