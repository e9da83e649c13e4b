"""The absolute-scoring prompt of paper 004 (Figure 3), built from its parts.

Paper 004 (after Prometheus 2, Kim et al. 2024c) writes the scoring prompt as

    P = (T, C*, [R], S)                                             (Eq. 1)

a task description T, the target instance C* (instruction and response; never
perturbed), an optional reference answer R with its score, and the score rubric
S.  A perturbation changes R or S, and T is rewritten *with* it so the prompt
stays coherent (the score IDs the answer must use, whether a reference is given
and which score it has).  This module builds each part separately, so a variant
touches only its own parts:

* rubric order -- ``ascending`` (score 1 first; the unperturbed prompt),
  ``descending`` (score 5 first) or ``random`` (a seeded permutation per item that
  is neither ascending nor descending);
* score IDs -- ``numeric`` 1-5, ``letter`` E-A, ``roman`` i-v (the rubric lines, the
  reference header and T's answer instructions all use the scheme);
* reference answer -- none (the unperturbed prompt) or one with score 1..5.

With ascending order, numeric IDs and the score-5 reference the builder writes the
Prometheus absolute-grading prompt character for character (tested against every
row of the Prometheus MT-Bench and Vicuna-Bench files, whose ``instruction`` field is
that prompt).  :func:`parse_prometheus_prompt` is the inverse, used to load them.

Variants are a registry (:data:`VARIANTS`); a new perturbation is one entry.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from judgelab.io import InputError
from judgelab.parsing import SCORE_IDS, score_id
from judgelab.registry import Registry

RUBRIC_ORDERS = ("ascending", "descending", "random")
FAMILIES = ("baseline", "rubric_order", "score_ids", "reference")


@dataclass(frozen=True)
class Variant:
    """One prompt perturbation: which rubric order, score IDs and reference score."""

    name: str
    family: str  # baseline | rubric_order | score_ids | reference
    rubric_order: str = "ascending"
    score_ids: str = "numeric"
    reference_score: int | None = None  # None: no reference answer in the prompt
    label: str = ""  # how the paper's tables/figures name it

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"variant {self.name!r}: unknown family {self.family!r}")
        if self.rubric_order not in RUBRIC_ORDERS:
            raise ValueError(f"variant {self.name!r}: unknown rubric order {self.rubric_order!r}")
        if self.score_ids not in SCORE_IDS:
            raise ValueError(f"variant {self.name!r}: unknown score-ID scheme {self.score_ids!r}")
        if self.reference_score is not None and self.reference_score not in range(1, 6):
            raise ValueError(f"variant {self.name!r}: reference score must be 1..5")


VARIANTS: Registry[Variant] = Registry("scoring prompt variant")


def _add(v: Variant) -> None:
    VARIANTS.add(v.name, v)


# The unperturbed prompt (paper 004, "Judge Prompt"): ascending rubric, Arabic numerals, no reference.
_add(Variant("baseline", "baseline", label="Unperturbed"))
_add(Variant("descending", "rubric_order", rubric_order="descending", label="Descending"))
_add(Variant("random", "rubric_order", rubric_order="random", label="Random"))
_add(Variant("letter", "score_ids", score_ids="letter", label="Letter"))
_add(Variant("roman", "score_ids", score_ids="roman", label="Roman"))
for _k in range(1, 6):
    _add(Variant(f"ref{_k}", "reference", reference_score=_k, label=f"Reference {_k}"))


# The gold protocol (paper 004, Datasets): the same prompt with the full-mark reference.
# Not a perturbation (it is not in VARIANTS), but asked for by name in the gold rule.
GOLD_VARIANT = Variant("gold", "reference", reference_score=5, label="Gold (reference 5)")


def get_variant(name: str) -> Variant:
    if name == GOLD_VARIANT.name:
        return GOLD_VARIANT
    return VARIANTS.get(name, where="scoring.perturbations")


@dataclass(frozen=True)
class Rubric:
    """A 1-5 score rubric: the criterion and one description per score (index 0 = score 1)."""

    criterion: str
    descriptions: tuple[str, str, str, str, str]

    def __post_init__(self) -> None:
        if len(self.descriptions) != 5:
            raise ValueError("a rubric has exactly five score descriptions")

    def description(self, score: int) -> str:
        return self.descriptions[score - 1]


# -- parts ----------------------------------------------------------------------------

_SCORE_PHRASE = {
    # (T item 2: "write a score that is ...", T item 3: "[RESULT] (...)")
    "numeric": ("an integer between 1 and 5", "an integer number between 1 and 5"),
    "letter": ("a letter grade among E, D, C, B and A, where E is the lowest and A the highest",
               "a letter grade among E, D, C, B and A"),
    "roman": ("a Roman numeral among i, ii, iii, iv and v, where i is the lowest and v the highest",
              "a Roman numeral among i, ii, iii, iv and v"),
}


def task_description(variant: Variant) -> str:
    """T: rewritten with the reference (and its score) and the score-ID scheme."""
    ids = variant.score_ids
    if variant.reference_score is None:
        given = "An instruction (might include an Input inside it), a response to evaluate, and a score rubric representing a evaluation criteria are given."
    else:
        ref = score_id(variant.reference_score, ids)
        given = (f"An instruction (might include an Input inside it), a response to evaluate, a reference answer that "
                 f"gets a score of {ref}, and a score rubric representing a evaluation criteria are given.")
    what, fmt = _SCORE_PHRASE[ids]
    return (
        "###Task Description:\n"
        f"{given}\n"
        "1. Write a detailed feedback that assess the quality of the response strictly based on the given score rubric, not evaluating in general.\n"
        f"2. After writing a feedback, write a score that is {what}. You should refer to the score rubric.\n"
        f'3. The output format should look as follows: "Feedback: (write a feedback for criteria) [RESULT] ({fmt})"\n'
        "4. Please do not generate any other opening, closing, and explanations."
    )


def target_instance(instruction: str, response: str) -> str:
    """C*: the instruction and the response; never perturbed."""
    return f"###The instruction to evaluate:\n{instruction}\n\n###Response to evaluate:\n{response}"


def reference_part(reference: str, score: int, scheme: str) -> str:
    """R: the reference answer under a header naming its score in the prompt's scheme."""
    return f"###Reference Answer (Score {score_id(score, scheme)}):\n{reference}"


def rubric_sequence(order: str, *, seed: int = 0, item_key: str = "") -> list[int]:
    """The order in which scores 1-5 are listed.

    ``random`` is a permutation drawn from (seed, item) -- the same item always gets
    the same order, different items different ones -- redrawn while it is the
    ascending or descending order, so a "random" prompt is always a perturbation.
    """
    if order == "ascending":
        return [1, 2, 3, 4, 5]
    if order == "descending":
        return [5, 4, 3, 2, 1]
    if order != "random":
        raise ValueError(f"unknown rubric order {order!r}; known: {RUBRIC_ORDERS}")
    digest = hashlib.sha256(f"{seed}|{item_key}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "little"))
    seq = [1, 2, 3, 4, 5]
    while seq in ([1, 2, 3, 4, 5], [5, 4, 3, 2, 1]):
        rng.shuffle(seq)
    return seq


def rubric_part(rubric: Rubric, scheme: str, sequence: list[int]) -> str:
    """S: the criterion and the five score lines in the given order and scheme."""
    lines = [f"Score {score_id(s, scheme)}: {rubric.description(s)}" for s in sequence]
    return "###Score Rubrics:\n[" + rubric.criterion + "]\n" + "\n".join(lines)


FEEDBACK_CUE = "###Feedback: "


def build_prompt(
    variant: Variant,
    *,
    instruction: str,
    response: str,
    rubric: Rubric,
    references: dict[int, str] | None = None,
    seed: int = 0,
    item_key: str = "",
) -> str:
    """P' = (T', C*, [R'], S'): the full scoring prompt for one item under one variant.

    ``references`` maps a score (1-5) to the reference answer written for it; a
    variant with a reference score needs that entry.
    """
    parts = [task_description(variant), target_instance(instruction, response)]
    if variant.reference_score is not None:
        refs = references or {}
        if variant.reference_score not in refs or refs[variant.reference_score] is None:
            raise InputError(f"item {item_key!r}: no reference answer with score {variant.reference_score} "
                             f"for variant {variant.name!r} (none was accepted by the review; with "
                             "scoring.generation.on_reject: drop such items leave the variant, counted)")
        parts.append(reference_part(refs[variant.reference_score], variant.reference_score, variant.score_ids))
    parts.append(rubric_part(rubric, variant.score_ids, rubric_sequence(variant.rubric_order, seed=seed, item_key=item_key)))
    return "\n\n".join(parts) + "\n\n" + FEEDBACK_CUE


# -- reading the Prometheus files ------------------------------------------------------

_H_INSTR = "\n\n###The instruction to evaluate:\n"
_H_RESP = "\n\n###Response to evaluate:\n"
_H_REF = "\n\n###Reference Answer (Score 5):\n"
_H_RUB = "\n\n###Score Rubrics:\n"
_H_FEED = "\n\n" + FEEDBACK_CUE


@dataclass(frozen=True)
class PromptParts:
    instruction: str
    response: str
    reference: str
    rubric: Rubric


def parse_prometheus_prompt(text: str, *, where: str) -> PromptParts:
    """Split a Prometheus absolute-grading prompt (with a score-5 reference) into parts.

    Responses may contain markdown headers, so the section markers are searched with
    their surrounding blank lines, the response/reference boundary from the right.
    """
    try:
        i1 = text.index(_H_INSTR)
        i2 = text.index(_H_RESP, i1)
        i3 = text.rindex(_H_REF)
        i4 = text.rindex(_H_RUB)
        i5 = text.rindex(_H_FEED)
    except ValueError:
        raise InputError(f"{where}: not a Prometheus absolute-grading prompt with a score-5 reference "
                         "(missing one of the ###-section headers)") from None
    if not (i1 < i2 < i3 < i4 < i5) or text[i5:] != _H_FEED:
        raise InputError(f"{where}: Prometheus prompt sections are out of order")
    rub = text[i4 + len(_H_RUB): i5]
    starts = []
    pos = 0
    for k in range(1, 6):
        j = rub.find(f"\nScore {k}: ", pos)
        if j < 0:
            raise InputError(f"{where}: score rubric lacks the line 'Score {k}: '")
        starts.append(j)
        pos = j + 1
    head = rub[: starts[0]]
    if not (head.startswith("[") and head.endswith("]")):
        raise InputError(f"{where}: score rubric criterion is not enclosed in [...]")
    descs = []
    for k in range(5):
        end = starts[k + 1] if k < 4 else len(rub)
        descs.append(rub[starts[k] + len(f"\nScore {k + 1}: "): end])
    return PromptParts(
        instruction=text[i1 + len(_H_INSTR): i2],
        response=text[i2 + len(_H_RESP): i3],
        reference=text[i3 + len(_H_REF): i4],
        rubric=Rubric(head[1:-1], tuple(descs)),  # type: ignore[arg-type]
    )
