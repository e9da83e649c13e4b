"""The uda writer's answers are drawn as written: a family's vocabulary is drawn once and shared,
and each answer draws from it (and from the nouns) exactly what the plain draw from the word lists
gives -- the same words in the same order, so a plan's generated tournament is unchanged."""

from __future__ import annotations

import numpy as np

from judgelab.datasets.features import FAMILY_SIGNATURES
from judgelab.judges.simulated import SIMULATED_TEXT_NOTE
from judgelab.simworld import uda


def plain_vocabulary(family: str, size: int = 12) -> list[str]:
    rng = np.random.default_rng(uda._seed_of("vocab", family))
    return [str(w) for w in rng.choice(uda._WORD_BANK, size=size, replace=False)]


def plain_answer(prompt: str, family: str, *, sentences: int, markdown: bool, seed: int) -> str:
    """The answer drawn from the word lists themselves, the family's vocabulary drawn anew."""
    rng = np.random.default_rng(uda._seed_of("answer", family, seed, prompt))
    sig = FAMILY_SIGNATURES.get(family, ("Here is an answer.", "That is all."))
    vocab = plain_vocabulary(family)
    topic = uda._topic_words(prompt)
    lines = []
    for _ in range(max(1, sentences)):
        adj1, adj2 = rng.choice(vocab, size=2, replace=False)
        n1, n2 = rng.choice(uda._NOUNS, size=2, replace=False)
        lines.append(f"A {adj1} {n1} for {topic[int(rng.integers(len(topic)))]} keeps the {adj2} {n2} in view.")
    body = ("## Answer\n\n" + "\n".join(f"- **{k + 1}.** {s}" for k, s in enumerate(lines))) if markdown \
        else " ".join(lines)
    return f"{sig[0]} {body} {sig[1]} {SIMULATED_TEXT_NOTE}"


def test_answers_are_the_plain_draws():
    prompts = [*uda.synthetic_prompts(6, seed=3), "", "Ünïcödé question about caching — 😀?"]
    for family in [*sorted(FAMILY_SIGNATURES)[:4], "no-such-family"]:
        for i, prompt in enumerate(prompts):
            for markdown in (False, True):
                n, seed = 1 + i % 5, 17 * i
                assert uda.write_answer(prompt, family, sentences=n, markdown=markdown, seed=seed) \
                    == plain_answer(prompt, family, sentences=n, markdown=markdown, seed=seed)


def test_the_vocabulary_is_the_plain_draw_and_a_callers_own_copy():
    for family in ("openai", "meta", "x"):
        words = uda.family_vocabulary(family)
        assert words == plain_vocabulary(family) and len(set(words)) == 12
        words.clear()  # a caller's list: the shared draw is not changed
        assert uda.family_vocabulary(family) == plain_vocabulary(family)
    assert uda.family_vocabulary("openai", 5) == plain_vocabulary("openai", 5)
