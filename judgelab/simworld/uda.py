"""The simulated UDA tournament of paper 000 (all output is marked "[simulated text]").

Two text writers, both deterministic in their seed:

* :func:`write_answer` -- an answer model's (or a judge's) answer to a prompt: the family's
  signature phrases (:data:`judgelab.datasets.features.FAMILY_SIGNATURES`, which the simulated panel
  recognises as its own family's), sentences mixing the prompt's topic words with a
  vocabulary particular to the family (so answers of one family resemble each other more
  than answers of two families do, as real models' styles do), a length set by the model's
  verbosity and optional markdown structure;
* :func:`near_copy` -- the judge's own answer when its own model is in the tournament (in
  paper 000 the ten judges are the ten answer models): the model's answer with a share of
  its sentences left out, so e_k is close to, not equal to, the judge's own model's answer.

The simulated panel reads self-preference from the similarity of a candidate to the judge's
own answer; these writers are what makes that similarity carry the model's identity.

Writer task ``uda_answer`` of the simulated backend (paper 000's answer prompt).
``truth["gen"]``:

* ``family_answer`` -- the answer of the judge's own model in this tournament, when there is
  one (paper 000's judges are its answer models): the judge answers with a near copy of it;
* otherwise a family-signed answer from :func:`write_answer` (``sentences``, ``markdown``
  optional).

:func:`synthetic_prompts` draws the tournament's open-ended prompts.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

import numpy as np

from judgelab.datasets.features import FAMILY_SIGNATURES
from judgelab.judges.simulated import GENERATORS, SIMULATED_TEXT_NOTE

_WORD_BANK = (
    "accurate adaptive balanced careful central clear coherent complete concise consistent context core "
    "critical detailed direct durable efficient elegant essential evident explicit flexible focused formal "
    "general gradual honest ideal immediate important informal initial key layered limited logical major "
    "measured minimal modest modular natural neutral notable novel optimal ordered overall partial patient "
    "plain practical precise primary prudent rapid rational readable reasonable relevant reliable robust "
    "rigorous scalable secure selective simple smooth solid sound specific stable steady strict strong "
    "structured subtle suitable systematic thorough timely typical unified useful valid visible vital"
).split()
_NOUNS = (
    "approach aspect balance baseline benefit budget case choice claim constraint context criterion detail "
    "example factor feature framework goal guideline idea impact insight layer limit method metric model "
    "option outcome pattern plan point principle priority process property reason resource result risk rule "
    "scope signal solution step strategy structure summary system technique tradeoff value view"
).split()
_TOPICS = (
    "budgeting caching climate compilers databases diet encryption energy farming gardening genetics "
    "geometry history investing language learning logistics marketing music networking nutrition painting "
    "parenting photography physics poetry privacy recycling robotics sleep statistics teamwork testing "
    "tourism translation urbanism vaccines volcanoes writing"
).split()
_PROMPT_FORMS = (
    "Explain how {a} influences {b}, with an example from {c}.",
    "What are the main tradeoffs between {a} and {b} in {c}?",
    "Write a short guide to {a} for someone who knows {b} but not {c}.",
    "Compare {a} and {b}, and say when {c} matters most.",
    "Give practical advice on {a} for a team working on {b} and {c}.",
)


def _seed_of(*parts: object) -> int:
    return int.from_bytes(hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest(), "little")


def family_vocabulary(family: str, size: int = 12) -> list[str]:
    """Adjectives a family's answers favour: a fixed, family-specific draw from the word bank."""
    return list(_family_vocabulary(family, size))


@lru_cache(maxsize=256)
def _family_vocabulary(family: str, size: int) -> np.ndarray:
    """:func:`family_vocabulary` as the array :func:`write_answer` draws from, drawn once per family
    (a paper-size uda plan writes 10,000 answers); read-only, as it is shared."""
    rng = np.random.default_rng(_seed_of("vocab", family))
    vocab = np.array([str(w) for w in rng.choice(_WORD_BANK, size=size, replace=False)])
    vocab.setflags(write=False)
    return vocab


#: :data:`_NOUNS` as the array ``rng.choice`` makes of it (the same draws: it draws indices)
_NOUNS_ARRAY = np.array(_NOUNS)
_NOUNS_ARRAY.setflags(write=False)


def synthetic_prompts(n: int, seed: int) -> list[str]:
    """``n`` distinct open-ended prompts over a fixed topic list."""
    rng = np.random.default_rng(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        a, b, c = rng.choice(_TOPICS, size=3, replace=False)
        form = _PROMPT_FORMS[int(rng.integers(len(_PROMPT_FORMS)))]
        text = form.format(a=a, b=b, c=c)
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def _topic_words(prompt: str) -> list[str]:
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z\-]{3,}", prompt)]
    return list(dict.fromkeys(words)) or ["question"]


def write_answer(prompt: str, family: str, *, sentences: int = 5, markdown: bool = False, seed: int = 0) -> str:
    """A family-signed answer to ``prompt`` (see module docstring)."""
    rng = np.random.default_rng(_seed_of("answer", family, seed, prompt))
    sig = FAMILY_SIGNATURES.get(family, ("Here is an answer.", "That is all."))
    vocab = _family_vocabulary(family, 12)
    topic = _topic_words(prompt)
    lines = []
    for _ in range(max(1, int(sentences))):
        adj1, adj2 = rng.choice(vocab, size=2, replace=False)
        n1, n2 = rng.choice(_NOUNS_ARRAY, size=2, replace=False)
        t = topic[int(rng.integers(len(topic)))]
        lines.append(f"A {adj1} {n1} for {t} keeps the {adj2} {n2} in view.")
    if markdown:
        body = "## Answer\n\n" + "\n".join(f"- **{k + 1}.** {s}" for k, s in enumerate(lines))
    else:
        body = " ".join(lines)
    return f"{sig[0]} {body} {sig[1]} {SIMULATED_TEXT_NOTE}"


def near_copy(text: str, *, drop: float = 0.25, seed: int = 0) -> str:
    """``text`` with about ``drop`` of its sentences (or lines) left out, never all of them."""
    rng = np.random.default_rng(_seed_of("copy", seed, text[:200]))
    parts = [p for p in re.split(r"(?<=[.!?])\s+|\n+", text.replace(SIMULATED_TEXT_NOTE, "").strip()) if p.strip()]
    keep = [p for p in parts if rng.random() >= drop] or parts[:1]
    return " ".join(keep) + f" {SIMULATED_TEXT_NOTE}"


@GENERATORS.register("uda_answer")
def _gen_uda_answer(req, judge, d) -> str:
    gen = req.truth.get("gen", {})
    seed = int(d[3] * 2**31)
    own = gen.get("family_answer")
    if own:
        return near_copy(str(own), drop=float(gen.get("drop", 0.25)), seed=seed)
    prompt = req.messages[-1].content
    return write_answer(prompt, judge.spec.family, sentences=int(gen.get("sentences", 5)),
                        markdown=bool(gen.get("markdown", False)), seed=seed)
