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


@lru_cache(maxsize=65536)
def text_features(text: str) -> TextFeatures:
    words = _WORD.findall(text)
    n_md = len(_MD_LINE.findall(text)) + len(_MD_INLINE.findall(text))
    pos = neg = 0
    for w in words:
        lw = w.strip(".,;:!?()\"'").lower()
        if lw in POSITIVE_WORDS:
            pos += 1
        elif lw in NEGATIVE_WORDS:
            neg += 1
    sentiment = (pos - neg) / (pos + neg + 1.0)
    return TextFeatures(words=len(words), markdown=min(1.0, n_md / 4.0), sentiment=sentiment)


def word_count(text: str) -> int:
    return text_features(text).words


def markdown_score(text: str) -> float:
    return text_features(text).markdown


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


def bow_cosine(a: str, b: str) -> float:
    """Bag-of-words cosine similarity (the cheap stand-in for embedding similarity)."""
    ta, tb = _TOKEN.findall(a.lower()), _TOKEN.findall(b.lower())
    if not ta or not tb:
        return 0.0
    ca: dict[str, int] = {}
    for t in ta:
        ca[t] = ca.get(t, 0) + 1
    cb: dict[str, int] = {}
    for t in tb:
        cb[t] = cb.get(t, 0) + 1
    dot = sum(v * cb.get(k, 0) for k, v in ca.items())
    na = math.sqrt(sum(v * v for v in ca.values()))
    nb = math.sqrt(sum(v * v for v in cb.values()))
    return dot / (na * nb)


_BANDWAGON = re.compile(
    r"(\d{1,3}(?:\.\d+)?)\s*%\s*of\s+(?:the\s+)?(?:people|users|humans|annotators|experts|evaluators|"
    r"respondents|reviewers|judges)\s+(?:believe|think|prefer|say|agree)[^\n]*?"
    r"(?:Output|Response|Assistant|Answer|Option)\s*\(?\s*([AaBb12])\b",
    re.IGNORECASE,
)


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
