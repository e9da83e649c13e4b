"""Simulated writers for the strategies study (paper 003): debiasing prompt styles and references.

Prompt styles.  The simulated judge recognises each debiasing prompt by its marker sentence
(:data:`judgelab.strategies.prompts.STYLE_MARKERS`) and answers in the layout that prompt
asks for: criterion scores for the rubric (S4), a step-by-step analysis before the JSON for
chain of thought (S5), both for the merged prompts (S7, S8).  The scores are consistent with
the verdict (the verdict is decided first, by the judge's ordered-logit model; the paper records
the verdict field, not the criterion sums).  Longer answers cost more output tokens, as the
real prompts do.  How a judge's *decision* changes under a style is its profile's
``prompt_styles`` (:class:`judgelab.judges.simulated.StyleEffect`).

Generation.  ``strategies_reference`` writes the reference answer S6/S7 show the judge (a template
text over the question's words, labelled as simulated).
"""

from __future__ import annotations

import re

from judgelab.judges.simulated import (
    GENERATORS,
    PROMPT_STYLES,
    SIMULATED_TEXT_NOTE,
    PromptStyle,
    _Draws,
    _topic_words,
    _write_pairwise,
)
from judgelab.records import JudgeRequest
from judgelab.strategies.prompts import CRITERIA, STYLE_MARKERS


def _scores(verdict: str, d: _Draws) -> dict[str, dict[str, int]]:
    """Criterion scores whose sums agree with the verdict (winner higher, tie equal)."""
    base = [3 + int(d[3] * 7 + i) % 2 for i in range(len(CRITERIA))]  # 3 or 4 per criterion
    hi = [min(5, s + 1) for s in base]
    if verdict == "tie":
        a = b = base
    elif verdict == "A":
        a, b = hi, base
    else:
        a, b = base, hi
    return {"A": dict(zip(CRITERIA, a, strict=True)), "B": dict(zip(CRITERIA, b, strict=True))}


def _scores_json(scores: dict[str, dict[str, int]]) -> str:
    side = lambda s: "{" + ", ".join(f'"{k}": {v}' for k, v in s.items()) + "}"  # noqa: E731
    return '{"A": ' + side(scores["A"]) + ', "B": ' + side(scores["B"]) + "}"


def _steps(reasoning: str, verdict: str) -> str:
    return (f"Step 1: I identify what a complete answer to the question needs. "
            f"Step 2: I check both responses for errors and omissions. "
            f"Step 3: {reasoning} "
            f"Step 4: weighing substance, the verdict is {verdict}.")


def _rubric(fmt: str, verdict: str, reasoning: str, d: _Draws) -> str:
    if fmt != "json":
        return _write_pairwise(fmt, verdict, reasoning)
    return ('{"scores": ' + _scores_json(_scores(verdict, d)) + ', "reasoning": "' + reasoning
            + '", "verdict": "' + verdict + '"}')


def _cot(fmt: str, verdict: str, reasoning: str, d: _Draws) -> str:
    if fmt != "json":
        return _steps(reasoning, verdict) + "\n\n" + _write_pairwise(fmt, verdict, reasoning)
    return _steps(reasoning, verdict) + '\n\n```json\n{"verdict": "' + verdict + '"}\n```'


def _merged(fmt: str, verdict: str, reasoning: str, d: _Draws) -> str:
    if fmt != "json":
        return _write_pairwise(fmt, verdict, reasoning)
    return ('{"analysis": "' + _steps(reasoning, verdict) + '", "scores": ' + _scores_json(_scores(verdict, d))
            + ', "verdict": "' + verdict + '"}')


PROMPT_STYLES.add("rubric", PromptStyle(STYLE_MARKERS["rubric"], _rubric))
PROMPT_STYLES.add("cot", PromptStyle(STYLE_MARKERS["cot"], _cot))
PROMPT_STYLES.add("reference", PromptStyle(STYLE_MARKERS["reference"], None))
PROMPT_STYLES.add("cot_rubric", PromptStyle(STYLE_MARKERS["cot_rubric"], _merged))
PROMPT_STYLES.add("full", PromptStyle(STYLE_MARKERS["full"], _merged))

REFERENCE_TASK = "strategies_reference"


@GENERATORS.register(REFERENCE_TASK)
def _gen_reference(req: JudgeRequest, judge, d: _Draws) -> str:
    question = str(req.truth.get("gen", {}).get("question", req.messages[-1].content))
    topic = _topic_words(question, n=8)
    k = int(d[1] * len(topic))
    return (f"Reference answer. The key point concerns {topic[k % len(topic)]} and "
            f"{topic[(k + 1) % len(topic)]}; a correct answer states the facts about "
            f"{topic[(k + 2) % len(topic)]} plainly and reaches the right result. {SIMULATED_TEXT_NOTE}")


EXPAND_TASK = "strategies_expand"
_RESTATEMENTS = (
    "To put the same point another way, this is what the answer above already says.",
    "In other words, the idea stays exactly the same and is simply spelled out more slowly here.",
    "It helps to restate this clearly, since it is the central part of the answer.",
    "This point is worth repeating, because it is the part that matters most for the question.",
    "Said once more in plain words, nothing new is added, only the same content again.",
    "Keeping this in mind makes the rest of the answer easier to follow.",
)


@GENERATORS.register(EXPAND_TASK)
def _gen_expand(req: JudgeRequest, judge, d: _Draws) -> str:
    """Pad the source answer with restatements (no new facts) to about ``ratio`` times its words,
    spread round-robin over its sentences."""
    gen = req.truth.get("gen", {})
    source = str(gen.get("source", ""))
    sentences = re.split(r"(?<=[.!?])\s+", source.strip())
    n, target = len(source.split()), float(gen.get("ratio", 2.8)) * len(source.split())
    extra: list[list[str]] = [[] for _ in sentences]
    k = int(d[1] * len(_RESTATEMENTS))
    i = 0
    while True:
        filler = _RESTATEMENTS[k % len(_RESTATEMENTS)]
        if n + len(filler.split()) / 2 > target:  # stop at the count nearest the target
            break
        extra[i % len(sentences)].append(filler)
        n += len(filler.split())
        k, i = k + 1, i + 1
    return " ".join(" ".join([s, *e]) for s, e in zip(sentences, extra, strict=True))
