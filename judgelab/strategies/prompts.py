"""Prompt templates of the debiasing strategies of paper 003 (Sec. 3.3), as registry entries.

Every strategy asks for the same thing the paper records: a structured JSON object whose
``verdict`` field ("A", "B" or "tie") is the judge's decision, next to whatever the strategy
adds (criterion scores, step-by-step analysis, a reference check).  The verdict is never
derived from criterion sums (paper: "the verdict field is what we record").

=============== ====================================================================
template        used by
=============== ====================================================================
json_verdict    B0, S1, S2, S3 -- the backbone's minimal JSON-verdict prompt (shared)
rubric5_json    S4 -- five criteria (accuracy, relevance, completeness, clarity,
                reasoning depth), each scored 1-5, verdict as a separate field
cot_json        S5 -- explicit step-by-step analysis before the verdict field
reference_json  S6 -- a reference answer is shown; the responses are checked against it
cot_rubric_json S8 -- the merged CoT + rubric prompt (one structured response)
full_json       S7 -- CoT + rubric + reference answer in one prompt
=============== ====================================================================

Each template carries one marker sentence (:data:`STYLE_MARKERS`) that names what the
prompt asks for; the simulated panel recognises its prompt style by that sentence
(``judgelab.simworld.strategies``), the way a real model reads the instruction.
The reference answer of S6/S7 is passed through the template's ``{context}`` slot.
"""

from __future__ import annotations

from judgelab.prompts import PAIRWISE_TEMPLATES, PairwiseTemplate

SYSTEM = "You are an impartial judge evaluating the quality of two AI assistant responses."

#: The sentence that identifies each prompt style (unique per template).
STYLE_MARKERS: dict[str, str] = {
    "rubric": "Score each response from 1 to 5 on each of five criteria",
    "cot": "Think step by step and write out your analysis before you give the verdict",
    "reference": "Use the reference answer to check the correctness of each response",
    "cot_rubric": "In one structured answer, reason step by step and score both responses on the five criteria",
    "full": "Using the reference answer, reason step by step and score both responses on the five criteria",
}

CRITERIA = ("accuracy", "relevance", "completeness", "clarity", "reasoning_depth")

_PAIR = "[Question]\n{question}\n\n[Response A]\n{response_a}\n\n[Response B]\n{response_b}\n\n"
_SCORES = ('"scores": {{"A": {{"accuracy": 1-5, "relevance": 1-5, "completeness": 1-5, "clarity": 1-5, '
           '"reasoning_depth": 1-5}}, "B": {{...same keys...}}}}')
_VERDICT = '"verdict": "A" | "B" | "tie"'

TEMPLATES: dict[str, PairwiseTemplate] = {
    "rubric5_json": PairwiseTemplate(
        name="rubric5_json", fmt="json", system=SYSTEM, json_only=True,
        user=(
            "Compare the two responses to the user's question using a calibrated rubric. "
            + STYLE_MARKERS["rubric"] + ": accuracy, relevance, completeness, clarity and reasoning depth "
            "(1 = very poor, 3 = adequate, 5 = excellent). Then decide which response is better overall, or "
            "whether they are of equal quality; you may consult your criterion scores, but the verdict is a "
            "separate decision.\n\n" + _PAIR + "{context}"
            "Respond with a JSON object only: {{" + _SCORES + ', "reasoning": "<one or two sentences>", '
            + _VERDICT + "}}"
        ),
    ),
    "cot_json": PairwiseTemplate(
        name="cot_json", fmt="json", system=SYSTEM, task="cot",
        user=(
            "Compare the two responses to the user's question and decide which is better, or whether they "
            "are of equal quality. " + STYLE_MARKERS["cot"] + ": first work out what a good answer must "
            "contain, then check each response for errors and omissions, then compare them.\n\n" + _PAIR
            + "{context}After your analysis, end with a JSON object: {{\"verdict\": \"A\" | \"B\" | \"tie\"}}"
        ),
    ),
    "reference_json": PairwiseTemplate(
        name="reference_json", fmt="json", system=SYSTEM, json_only=True,
        user=(
            "Compare the two responses to the user's question and decide which is better, or whether they "
            "are of equal quality. " + STYLE_MARKERS["reference"] + "; a response that disagrees with the "
            "reference on a fact or a result is wrong on that point.\n\n" + _PAIR + "{context}"
            'Respond with a JSON object only: {{"reasoning": "<one or two sentences>", ' + _VERDICT + "}}"
        ),
    ),
    "cot_rubric_json": PairwiseTemplate(
        name="cot_rubric_json", fmt="json", system=SYSTEM, json_only=True, task="cot",
        user=(
            "Compare the two responses to the user's question and decide which is better, or whether they "
            "are of equal quality. " + STYLE_MARKERS["cot_rubric"] + " (accuracy, relevance, completeness, "
            "clarity, reasoning depth; 1-5 each). The verdict is a separate decision.\n\n" + _PAIR + "{context}"
            'Respond with a JSON object only: {{"analysis": "<step-by-step reasoning>", ' + _SCORES + ", "
            + _VERDICT + "}}"
        ),
    ),
    "full_json": PairwiseTemplate(
        name="full_json", fmt="json", system=SYSTEM, json_only=True, task="cot",
        user=(
            "Compare the two responses to the user's question and decide which is better, or whether they "
            "are of equal quality. " + STYLE_MARKERS["full"] + " (accuracy, relevance, completeness, clarity, "
            "reasoning depth; 1-5 each); a response that disagrees with the reference on a fact or a result "
            "is wrong on that point. The verdict is a separate decision.\n\n" + _PAIR + "{context}"
            'Respond with a JSON object only: {{"analysis": "<step-by-step reasoning>", ' + _SCORES + ", "
            + _VERDICT + "}}"
        ),
    ),
}

REFERENCE_GENERATION = (
    "Write a concise, correct reference answer to the following question. It will be used to check "
    "other answers, so state the key facts, steps and final result plainly.\n\n[Question]\n{question}"
)


def reference_context(reference: str) -> str:
    """The reference-answer block placed in a template's ``{context}`` slot (S6, S7)."""
    return f"[Reference Answer]\n{reference.strip()}\n\n"


for _t in TEMPLATES.values():
    if _t.name not in PAIRWISE_TEMPLATES:
        PAIRWISE_TEMPLATES.add(_t.name, _t)
for _name, _marker in STYLE_MARKERS.items():  # each marker appears in exactly one template
    assert sum(_marker in t.user for t in TEMPLATES.values()) == 1, _name
