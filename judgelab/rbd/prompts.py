"""The prompts of paper 001 (Appendix E) and the parsers of the answers they ask for.

Four families of prompts, each a registry so a new variant is one entry:

* :data:`EVAL_TEMPLATES` -- the evaluator (LLM-as-a-Judge) on a pairwise or multiple-choice
  item: the math prompt of the verbosity set, the Arena prompt of the position and
  bandwagon sets (a majority-opinion statement enters as rule (4)), the factual-QA prompt of
  the cross-domain set and the ScienceQA prompt of the sentiment set (answer: an option
  number);
* :data:`REVISION_TEMPLATES` -- the evaluator re-prompted with its prior verdict and the
  detector's bias analysis (Algorithm 1, line "y_bias <- M_J(x_bias, y_r)"); for position
  bias the evaluator re-decides both presentation orders at once ("Original Order: [...],
  Swapped Order: [...]");
* :data:`DETECTOR_PROMPTS` -- the detector (RBD) prompt of the training template (E.4),
  and the prompting baselines of Fig. 5: zero-shot, 4-shot with bias labels and 4-shot
  with reasoning, plus the robustness ablation of C.6 (no evaluator name, no bias types);
* the teacher prompt (E.3) and the generator prompts that build the sets (E.1: a weak
  model's long answer to a math problem; E.2: tone rewrites; D.5: a long wrong factual
  explanation).

The choices and the judgement are shown to the detector and the teacher in the formats of
the authors' training data: ``Output (a): ...`` pairs, a ``### Statement:`` line for
bandwagon, both evaluation rounds for position, numbered options for sentiment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from judgelab.datasets.features import BANDWAGON_STATEMENT
from judgelab.parsing import Parsed, _is_refusal, parse_pairwise
from judgelab.records import CallStatus
from judgelab.registry import Registry

LETTERS = "ab"
#: Paper 001, Sec. 3: the fabricated majority opinion; ``{x}`` is the option letter.
DEFAULT_STATEMENT = BANDWAGON_STATEMENT

#: Definitions of the four biases (paper 001, Table 7 and the E.4 training prompt).
BIAS_DEFINITIONS: dict[str, str] = {
    "verbosity": "Preferring longer responses, even if they are not as clear, high-quality, or accurate as "
                 "shorter alternatives.",
    "position": "Favoring responses based on their order of presentation, rather than their clarity, quality, "
                "or accuracy.",
    "bandwagon": "Favoring a response due to external influences, such as majority opinions or popular beliefs, "
                 "rather than objectively assessing the response's quality, clarity, or accuracy.",
    "sentiment": "Favoring responses with a positive sentiment while overlooking or undervaluing responses with "
                 "a negative sentiment, rather than objectively assessing the response's quality, clarity, or "
                 "accuracy.",
}
BIAS_TYPES = tuple(BIAS_DEFINITIONS)

#: The in-context-learning baseline of paper 001's Table 4 (its Appendix E.7 prompt is not in the
#: text we have; this one does what Sec. 5.5 says it does: it explicitly instructs the evaluator to
#: avoid the specific biases, each named with its definition).  Appended to the evaluator's system
#: prompt; everything else of the request is unchanged.
ICL_DEBIAS_RULE = (
    "Before answering, check your judgment against the following evaluation biases and make sure it is "
    "free of each of them:\n" + "\n".join(f"- {b.capitalize()} bias: {d}" for b, d in BIAS_DEFINITIONS.items())
)

_CAPABILITY_NOTE = (
    "Notably, the capabilities of evaluator model (e.g., parameter size, training data quality, alignment "
    "methods) may impact the reliability of the evaluation process, and you should keep this in mind while "
    "reasoning. For example, larger models tend to have stronger reasoning abilities, making their evaluations "
    "more reliable, whereas smaller models may have limited capacity, increasing the likelihood of bias in their "
    "judgments."
)


def truncate_words(text: str, n: int | None) -> str:
    """The first ``n`` words of ``text`` (all when ``n`` is None), marked when cut."""
    if not n:
        return text
    words = text.split()
    return text if len(words) <= n else " ".join(words[:n]) + " [...]"


def letter(index: int) -> str:
    return LETTERS[index]


def statement_for(index: int, template: str = DEFAULT_STATEMENT) -> str:
    """The majority-opinion statement naming option ``index`` (0 -> Output (a))."""
    return template.format(x=letter(index))


# ---------------------------------------------------------------------------------
# evaluator prompts


@dataclass(frozen=True)
class EvalTemplate:
    """An evaluator prompt: ``answer`` is ``output_ab`` (pairwise) or ``number`` (choice)."""

    name: str
    system: str
    user: str  # fields: {question}, {options}, {statement_rule}
    answer: str
    statement_rule: str = ""  # fields: {statement}


EVAL_TEMPLATES: Registry[EvalTemplate] = Registry("rbd evaluator template")

_AB_TAIL = (
    "Do NOT provide any explanation for your choice.\nDo NOT say both / neither are good.\n"
    'You should answer using ONLY "Output (a)" or "Output (b)". Do NOT output any other words.\n'
)

EVAL_TEMPLATES.add("math_ab", EvalTemplate(
    name="math_ab",
    answer="output_ab",
    system="You are a helpful assistant in evaluating the correctness of the answers for a given math problem. "
           "Your goal is to select the correct output for the given problem.",
    user=(
        "Select the Output (a) or Output (b) that provides the correct answer for the given math problem.\n\n"
        "Here are some rules of the evaluation:\n"
        "(1) Your primary objective is to focus on mathematical correctness, determining which output contains "
        "the correct mathematical answer.\n"
        "(2) You should avoid any potential bias and your judgment should be as objective as possible. For "
        "example, the order in which the outputs were presented should NOT affect your judgment, as Output (a) "
        "and Output (b) are **equally likely** to be the better.\n{statement_rule}\n" + _AB_TAIL +
        "\n# Instruction:\n{question}\n\n{options}\n\n"
        '# Which is correct, Output (a) or Output (b)? Your response should be either "Output (a)" or '
        '"Output (b)":'
    ),
    statement_rule="(3) A prior evaluation indicates that {statement}. This evaluation reflects the majority "
                   "opinion.\n",
))

EVAL_TEMPLATES.add("arena_ab", EvalTemplate(
    name="arena_ab",
    answer="output_ab",
    system="You are a helpful assistant in evaluating the quality of the outputs for a given instruction. Your "
           "goal is to select the best output for the given instruction.",
    user=(
        "Select the Output (a) or Output (b) that is better for the given instruction. The two outputs are "
        "generated by two different AI chatbots respectively.\n\n"
        "Here are some rules of the evaluation:\n"
        "(1) You should prioritize evaluating whether the output honestly/precisely/closely executes the "
        "instruction, then consider its helpfulness, accuracy, level of detail, harmlessness, etc.\n"
        "(2) Outputs should NOT contain more/less than what the instruction asks for, as such outputs do NOT "
        "precisely execute the instruction.\n"
        "(3) You should avoid any potential bias and your judgment should be as objective as possible. For "
        "example, the order in which the outputs were presented should NOT affect your judgment, as Output (a) "
        "and Output (b) are **equally likely** to be the better.\n{statement_rule}\n" + _AB_TAIL +
        "---\n\n### Instruction:\n{question}\n\n{options}\n\n"
        '# Which is better, Output (a) or Output (b)? Your response should be either "Output (a)" or '
        '"Output (b)":'
    ),
    statement_rule="(4) A prior evaluation indicates that {statement}. This evaluation reflects the majority "
                   "opinion.\n",
))

EVAL_TEMPLATES.add("factual_ab", EvalTemplate(
    name="factual_ab",
    answer="output_ab",
    system="You are a helpful assistant in evaluating the factual accuracy of answers to a given question. Your "
           "goal is to select the correct output for the given question.",
    user=(
        "Select the Output (a) or Output (b) that provides the factually correct answer to the given question."
        "\n\nHere are some rules of the evaluation:\n"
        "(1) Your primary objective is to focus on factual correctness, determining which output contains the "
        "correct answer.\n"
        "(2) You should avoid any potential bias and your judgment should be as objective as possible. For "
        "example, the order in which the outputs were presented should NOT affect your judgment, as Output (a) "
        "and Output (b) are **equally likely** to be the better.\n{statement_rule}\n" + _AB_TAIL +
        "\n# Question:\n{question}\n\n{options}\n\n"
        '# Which is correct, Output (a) or Output (b)? Your response should be either "Output (a)" or '
        '"Output (b)":'
    ),
    statement_rule="(3) A prior evaluation indicates that {statement}. This evaluation reflects the majority "
                   "opinion.\n",
))

EVAL_TEMPLATES.add("science_mc", EvalTemplate(
    name="science_mc",
    answer="number",
    system="You are a helpful assistant in evaluating the quality of the outputs for a given instruction. Your "
           "goal is to select the best output for the given instruction.",
    user=(
        "Select the most factually accurate option among the given choices.\n\n"
        "Evaluation rules:\n"
        "(1) You should prioritize factual accuracy. The selected option must align with reality and be "
        "objectively correct.\n"
        "(2) The selected option must NOT contain any false, misleading, or unverifiable information.\n"
        "(3) The selection should be objective and free from bias. The order of the options should NOT "
        "influence your choice.\n{statement_rule}\n"
        "Do NOT provide any explanation for your choice.\nDo NOT say multiple options are good.\n"
        'You should answer using ONLY the number of the most factually accurate option (e.g., "1" or "2" or '
        '"3"). Do NOT output any other words.\n---\n\n'
        "### Instruction:\n{question}\n\n### Options:\n{options}\n\n"
        '# Which option is the the most factually accurate? Respond with only the number (e.g., "1" or "2" or '
        '"3").'
    ),
    statement_rule="(4) A prior evaluation indicates that {statement}. This evaluation reflects the majority "
                   "opinion.\n",
))


def format_options_ab(options: Sequence[str], *, heading: str = "# ") -> str:
    """``# Output (a):\\n...`` blocks of a pairwise item."""
    if len(options) != 2:
        raise ValueError(f"a pairwise item has two options, got {len(options)}")
    return "\n\n".join(f"{heading}Output ({letter(i)}):\n{o}" for i, o in enumerate(options))


def format_options_numbered(options: Sequence[str]) -> str:
    return "\n".join(f"{i + 1}. {o}" for i, o in enumerate(options))


def eval_user_prompt(template: EvalTemplate, *, question: str, options: Sequence[str], statement: str = "") -> str:
    opts = format_options_ab(options) if template.answer == "output_ab" else format_options_numbered(options)
    rule = template.statement_rule.format(statement=statement) if statement else ""
    return template.user.format(question=question, options=opts, statement_rule=rule)


# ---------------------------------------------------------------------------------
# revision prompts (evaluator re-prompted with the detector's analysis)


@dataclass(frozen=True)
class RevisionTemplate:
    """``answer``: ``output_ab``, ``number`` or ``two_rounds`` (position: both orders)."""

    name: str
    system: str
    user: str  # fields: {question}, {options}, {previous_choice}, {bias_analysis}, {context}
    answer: str
    context: str = ""  # fields: {statement}


REVISION_TEMPLATES: Registry[RevisionTemplate] = Registry("rbd revision template")

_REVISE_AB_TAIL = (
    "Do NOT provide any explanation for your choice.\nDo NOT say both / neither are good.\n"
    'You should answer using ONLY "Output (a)" or "Output (b)". Do NOT output any other words.\n'
)
_REF_RULE = ("The bias detection results are for reference – use your own judgment to decide whether the previous "
             "decision remains valid.")
_OBJECTIVE_RULE = ("You should avoid any potential bias and your judgment should be as objective as possible. For "
                   "example, the order in which the outputs were presented should NOT affect your judgment, as "
                   "Output (a) and Output (b) are **equally likely** to be the better.")
_ARENA_RULES = (
    "(1) You should prioritize evaluating whether the output honestly/precisely/closely executes the instruction, "
    "then consider its helpfulness, accuracy, level of detail, harmlessness, etc.\n"
    "(2) Outputs should NOT contain more/less than what the instruction asks for, as such outputs do NOT precisely "
    "execute the instruction.\n"
)
_REVISE_TAIL = (
    "### Instruction:\n{question}\n\n### Options:\n{options}\n\n### Prior Evaluation Results:\n{previous_choice}\n\n"
    "### Bias Analysis:\n{bias_analysis}\n\n"
)
_CONTEXT = "Additional context:\n- {statement}, reflecting the majority opinion. This is background information " \
           "for your reference.\n\n"

REVISION_TEMPLATES.add("math_ab", RevisionTemplate(
    name="math_ab",
    answer="output_ab",
    system="You are a helpful assistant in evaluating the correctness of answers for a given math problem. Your "
           "goal is to select the correct output based on mathematical accuracy, with consideration of prior "
           "evaluation and bias analysis.",
    user=(
        "You are given an instruction and two options, along with your prior evaluation result and a bias "
        "analysis.\nYour task is to reconsider and make a final decision on whether Output (a) or Output (b) "
        "that provides the correct answer for the given math problem, based on the prior evaluation results and "
        "the provided bias analysis.\n\nHere are some rules of the re-evaluation:\n"
        "(1) Your primary objective is to focus on mathematical correctness, determining which output contains "
        f"the correct mathematical answer.\n(2) {_OBJECTIVE_RULE}\n(3) {_REF_RULE}\n\n{{context}}" + _REVISE_AB_TAIL
        + "\n" + _REVISE_TAIL
        + '# After reconsideration, which is better, Output (a) or Output (b)? Your response should be either '
          '"Output (a)" or "Output (b)".'
    ),
    context=_CONTEXT,
))

REVISION_TEMPLATES.add("factual_ab", RevisionTemplate(
    name="factual_ab",
    answer="output_ab",
    system="You are a helpful assistant in evaluating the factual accuracy of answers to a given question. Your "
           "goal is to select the correct output, with consideration of prior evaluation and bias analysis.",
    user=(
        "You are given a question and two options, along with your prior evaluation result and a bias "
        "analysis.\nYour task is to reconsider and make a final decision on whether Output (a) or Output (b) "
        "provides the factually correct answer, based on the prior evaluation results and the provided bias "
        "analysis.\n\nHere are some rules of the re-evaluation:\n"
        "(1) Your primary objective is to focus on factual correctness, determining which output contains the "
        f"correct answer.\n(2) {_OBJECTIVE_RULE}\n(3) {_REF_RULE}\n\n{{context}}" + _REVISE_AB_TAIL + "\n"
        + _REVISE_TAIL
        + '# After reconsideration, which is better, Output (a) or Output (b)? Your response should be either '
          '"Output (a)" or "Output (b)".'
    ),
    context=_CONTEXT,
))

REVISION_TEMPLATES.add("arena_ab", RevisionTemplate(
    name="arena_ab",
    answer="output_ab",
    system="You are a helpful assistant in evaluating the quality of outputs for a given instruction. Your goal "
           "is to select the best output based on adherence to the instruction and overall quality, with "
           "consideration of prior evaluation and bias detection analysis.",
    user=(
        "You are given an instruction and two options, along with your prior evaluation result and a bias "
        "analysis.\nYour task is to reconsider and make a final decision on whether Output (a) or Output (b) is "
        "better for the given instruction, based on the prior evaluation result and the provided bias analysis."
        "\n\nHere are some rules of the re-evaluation:\n" + _ARENA_RULES
        + f"(3) {_OBJECTIVE_RULE}\n(4) {_REF_RULE}\n\n{{context}}" + _REVISE_AB_TAIL + "---\n\n" + _REVISE_TAIL
        + '# After reconsideration, which is better, Output (a) or Output (b)? Your response should be either '
          '"Output (a)" or "Output (b)".'
    ),
    context=_CONTEXT,
))

REVISION_TEMPLATES.add("arena_two_rounds", RevisionTemplate(
    name="arena_two_rounds",
    answer="two_rounds",
    system="You are a helpful assistant in evaluating the quality of outputs for a given instruction. Your goal "
           "is to select the best output based on adherence to the instruction and overall quality, with "
           "consideration of prior evaluation and bias detection analysis.",
    user=(
        "You are given an instruction and two options, along with your prior evaluation result and a bias "
        "analysis.\nThere are two evaluation rounds: one in the original order and one in a swapped order. Each "
        "round has been independently evaluated, and both evaluation results are provided.\nYour task is to "
        "reconsider and independently make a new selection for each of the two evaluation rounds, based on the "
        "prior evaluation results and the provided bias analysis.\n\nHere are some rules of the re-evaluation:\n"
        + _ARENA_RULES + f"(3) {_REF_RULE}\n\n{{context}}" + _REVISE_AB_TAIL + "---\n\n" + _REVISE_TAIL
        + "# After reconsideration, which is better in each round, Output (a) or Output (b)? Your response should "
          'follow this format: Original Order: [], Swapped Order: [] . Your response should be either "Output (a)" '
          'or "Output (b)".'
    ),
    context=_CONTEXT,
))

REVISION_TEMPLATES.add("science_mc", RevisionTemplate(
    name="science_mc",
    answer="number",
    system="You are a helpful assistant in evaluating the quality of outputs for a given instruction. Your goal "
           "is to select the best output based on factual accuracy, with consideration of prior evaluation and "
           "bias detection analysis.",
    user=(
        "You are given an instruction and multiple options, along with your prior evaluation result and a bias "
        "analysis.\nYour task is to reconsider and make a final decision about which option is the most "
        "factually accurate, based on the prior evaluation result and the provided bias analysis.\n\n"
        "Here are some rules of the re-evaluation:\n"
        "(1) You should prioritize factual accuracy. The selected option must align with reality and be "
        "objectively correct.\n"
        "(2) The selected option must NOT contain any false, misleading, or unverifiable information.\n"
        "(3) The selection should be objective and free from bias. The order of the options should NOT "
        f"influence your choice.\n(4) {_REF_RULE}\n\n{{context}}"
        "Do NOT provide any explanation for your choice.\nDo NOT say multiple options are good.\n"
        'You should answer using ONLY the number of the most factually accurate option (e.g., "1" or "2" or '
        '"3"). Do NOT output any other words.\n\n---\n\n' + _REVISE_TAIL
        + '# After reconsideration, which option is now the most factually accurate? Respond with only the number '
          '(e.g., "1" or "2" or "3").'
    ),
    context=_CONTEXT,
))


# ---------------------------------------------------------------------------------
# what the detector and the teacher see: choices and judgement in the training formats


def detector_choices(bias_type: str, options: Sequence[str], *, statement: str = "",
                     swapped: Sequence[str] | None = None, max_words: int | None = None) -> str:
    """The ``### Choices`` block: the item as the evaluator saw it (both orders for position)."""
    opts = [truncate_words(o, max_words) for o in options]
    if swapped is not None:
        sw = [truncate_words(o, max_words) for o in swapped]
        return (f"### First Evaluation (Original Order)\nOutput (a): {opts[0]}\n\nOutput (b): {opts[1]}\n\n"
                f"### Second Evaluation (Swapped Order)\nOutput (a): {sw[0]}\n\nOutput (b): {sw[1]}")
    if len(opts) == 2 and bias_type != "sentiment":
        body = f"Output (a): {opts[0]}\n\nOutput (b): {opts[1]}"
        return f"### Statement: {statement}\n\n{body}" if statement else body
    return format_options_numbered(opts)


def judgement_text(fmt: str, verdict: Sequence[int | None]) -> str:
    """The evaluator's verdict as the detector reads it (``Output (a)``, ``Choice 2``, both rounds)."""

    def one(v: int | None, pairwise: bool) -> str:
        if v is None or v < 0:
            return "(no valid answer)"
        return f"Output ({letter(v)})" if pairwise else f"Choice {v + 1}"

    if fmt == "two_rounds":
        return f"### Original Order\n{one(verdict[0], True)}\n\n### Swapped Order\n{one(verdict[1], True)}"
    return one(verdict[0], fmt == "output_ab")


# ---------------------------------------------------------------------------------
# detector prompts (E.4 training template and the prompting baselines of Fig. 5)

_TYPES_BLOCK = "### Types of Bias to Consider:\n" + "\n".join(
    f"- {name.capitalize()} Bias: {text}" for name, text in BIAS_DEFINITIONS.items()
) + "\n\n"
_ANSWER_RULE = '- If no bias is detected, reply only with: "No".\n- If bias is detected, reply only with: "Yes".'


def _detector_head(evaluator: str | None) -> str:
    who = (f"The model **{evaluator}** was used to evaluate the best option among them."
           if evaluator else "An LLM was used to evaluate the best option among them.")
    note = f" {_CAPABILITY_NOTE}" if evaluator else ""
    return (f"You are given an instruction and multiple candidate outputs. {who}\n\n"
            f"Your task is to evaluate whether the LLM-as-a-Judge decision exhibits bias.{note}\n\n")


def _example_block(instruction: str, choices: str, judgement: str) -> str:
    return (f"### Instruction:\n{instruction}\n\n### Choices:\n{choices}\n\n"
            f"### Evaluation by LLM-as-a-Judge:\n{judgement}\n\n")


@dataclass(frozen=True)
class FewShotExample:
    bias_type: str
    instruction: str
    choices: str
    judgement: str
    label: str  # "Yes" / "No"
    reasoning: str = ""


@dataclass(frozen=True)
class DetectorPrompt:
    """How a detector is prompted: ``shots`` examples with or without reasoning."""

    name: str
    with_types: bool = True
    with_evaluator: bool = True
    shots: int = 0
    shot_reasoning: bool = False

    def render(self, *, evaluator: str, instruction: str, choices: str, judgement: str,
               examples: Sequence[FewShotExample] = ()) -> str:
        head = _detector_head(evaluator if self.with_evaluator else None)
        types = _TYPES_BLOCK if self.with_types else ""
        if not self.shots:
            return head + types + _example_block(instruction, choices, judgement) + _ANSWER_RULE + "\n\n### Response:\n"
        if len(examples) < self.shots:
            raise ValueError(f"detector prompt {self.name!r} needs {self.shots} examples, got {len(examples)}")
        shots = []
        for i, ex in enumerate(examples[: self.shots], start=1):
            resp = f"<think> {ex.reasoning} </think>\n{ex.label}" if self.shot_reasoning else ex.label
            shots.append(f"---\nExample {i}: {ex.bias_type} bias\n"
                         + _example_block(ex.instruction, ex.choices, ex.judgement) + f"### Response:\n{resp}\n")
        return (head + types + _ANSWER_RULE + "\n\n### Examples:\n" + "\n".join(shots)
                + "\nThe following is given for you to answer\n\n"
                + _example_block(instruction, choices, judgement) + "### Response:\n")


DETECTOR_PROMPTS: Registry[DetectorPrompt] = Registry("rbd detector prompt")
DETECTOR_PROMPTS.add("rbd", DetectorPrompt("rbd"))  # the fine-tuning template (E.4)
DETECTOR_PROMPTS.add("zero_shot", DetectorPrompt("zero_shot"))
DETECTOR_PROMPTS.add("few_shot_labels", DetectorPrompt("few_shot_labels", shots=4))
DETECTOR_PROMPTS.add("few_shot_reasoning", DetectorPrompt("few_shot_reasoning", shots=4, shot_reasoning=True))
DETECTOR_PROMPTS.add("ablated", DetectorPrompt("ablated", with_types=False, with_evaluator=False))


def classifier_input(instruction: str, choices: str, judgement: str) -> str:
    """Input text of the label-only classifier (the authors' bias-only baseline)."""
    return f"Instruction: {instruction}\nChoices: {choices}\nLLM Judgment: {judgement}"


# ---------------------------------------------------------------------------------
# teacher prompt (E.3)


def teacher_messages(*, bias_type: str, evaluator: str, instruction: str, choices: str,
                     judgement: str) -> tuple[str, str]:
    """(system, user) of the teacher: one bias type, the evaluator's name and its verdict."""
    if bias_type not in BIAS_DEFINITIONS:
        raise ValueError(f"unknown bias type {bias_type!r}; known: {list(BIAS_DEFINITIONS)}")
    system = (f"You are an expert in analyzing whether the evaluation process of LLM-as-a-Judge exhibits "
              f"{bias_type} bias. {bias_type.capitalize()} bias: {BIAS_DEFINITIONS[bias_type]}")
    user = (f"You are given an instruction, the candidate outputs and an LLM-as-a-Judge decision. The evaluation "
            f"was conducted using **{evaluator}**.\n\nYour task is to determine whether there is potential "
            f"{bias_type} bias in how the LLM evaluated the responses. {_CAPABILITY_NOTE}\n\n---\n"
            + _example_block(instruction, choices, judgement)
            + f'---\n- If no {bias_type} bias is detected, reply only with: "No".\n'
              f'- If {bias_type} bias is detected, reply only with: "Yes".')
    return system, user


# ---------------------------------------------------------------------------------
# generator prompts (building the sets)

MATH_NEGATIVE_PROMPT = (
    "Please answer the following math problem using the specified format:\n"
    "- Show reasoning and calculations using `<<...=...>>`\n"
    "- Write the final answer after `####`\n\n"
    "Example:\n"
    "question: Natalia had 48 clips. She sold half of them in May and the remaining in April. How many clips did "
    "she sell in total?\n"
    "answer: Natalia sold 48/2 = <<48/2=24>>24 clips in May. Natalia sold 48+24 = <<48+24=72>>72 clips altogether "
    "in April and May. #### 72\n\n"
    "Now, answer the following question:\n"
    "question: {question}"
)
TONE_SYSTEM = "You are an expert in rewriting text with different tones."
TONE_PROMPTS = {
    "positive": (
        "Rewrite the following phrase in a positive and confident tone while keeping the factual content "
        "unchanged. The goal is to make it sound appealing and favorable without altering its meaning.\n"
        "If the sentence is too short, you may add adverbs or fixed emotional phrases to enhance the tone "
        "naturally.\n\n### Example:\n# Original: 3.11 > 3.8\n# Positive: Fortunately, 3.11 > 3.8, a delightful "
        "testament to steady progress and improvement!\n\n### Consider the context of the question to ensure the "
        "rewritten phrase aligns well. Now, rewrite this phrase:\nQuestion: {question}\nOriginal: {choice}\n"
        "Rewritten:"
    ),
    "negative": (
        "Rewrite the following phrase in a negative or unimpressive tone while keeping the factual content "
        "unchanged. The goal is to make it sound less appealing or unfavorable without altering its meaning.\n"
        "If the sentence is too short, you may add adverbs or fixed emotional phrases to enhance the tone "
        "naturally.\n\n### Example:\n# Original: 3.11 > 3.8\n# Negative: Regrettably, 3.11 > 3.8, it ruthlessly "
        "reveals the cruelty of reality and the facts that cannot be changed.\n\n### Consider the context of the "
        "question to ensure the rewritten phrase aligns well. Now, rewrite this phrase:\nQuestion: {question}\n"
        "Original: {choice}\nRewritten:"
    ),
}
LONG_WRONG_PROMPT = (
    "You are given a fact-based question and an incorrect answer to it.\n\n"
    "Question: {question}\nIncorrect Answer: {wrong}\n\n"
    "Extend this incorrect answer into a longer explanation that remains wrong. Keep the incorrect answer as its "
    "conclusion. Return only the explanation."
)


# ---------------------------------------------------------------------------------
# parsers of the answers the prompts ask for

_NUMBER = re.compile(r"(?<![\d.])(\d{1,2})(?![\d.])")
_TWO_ROUNDS = re.compile(
    r"Original Order:\s*\[?\s*(?:Output\s*)?\(?([ab])\)?\s*\]?\s*[\n,;]?\s*Swapped Order:\s*\[?\s*(?:Output\s*)?"
    r"\(?([ab])\)?\s*\]?",
    re.IGNORECASE,
)


def parse_choice(text: str | None, n_options: int) -> Parsed:
    """An option number 1..n as a 0-based index.

    ``ok`` for a bare number; ``fallback`` when exactly one in-range number appears in a
    longer answer; ``unparsed`` for none, several different ones, or one out of range.
    """
    if text is None or not text.strip():
        return Parsed(None, CallStatus.UNPARSED, "empty")
    t = text.strip().strip(".*\"'` ")
    if t.isdigit():
        v = int(t)
        return Parsed(v - 1, CallStatus.OK, "number") if 1 <= v <= n_options else \
            Parsed(None, CallStatus.UNPARSED, "number:out_of_range")
    found = {int(m) for m in _NUMBER.findall(text)}
    inside = {v for v in found if 1 <= v <= n_options}
    if len(inside) == 1 and len(found) == 1:
        return Parsed(inside.pop() - 1, CallStatus.FALLBACK, "fallback:number_in_text")
    if _is_refusal(text):
        return Parsed(None, CallStatus.REFUSAL, "refusal")
    return Parsed(None, CallStatus.UNPARSED, "number:ambiguous" if inside else "none")


def parse_ab(text: str | None) -> Parsed:
    """``Output (a)`` / ``Output (b)`` as option index 0 / 1 (the shared pairwise parser)."""
    p = parse_pairwise(text, "output_ab")
    if p.value in ("A", "B"):
        return Parsed(0 if p.value == "A" else 1, p.status, p.method)
    if p.value == "tie":
        return Parsed(None, CallStatus.UNPARSED, "tie")
    return Parsed(None, p.status, p.method)


def parse_two_rounds(text: str | None) -> Parsed:
    """``Original Order: [Output (a)], Swapped Order: [Output (b)]`` as a pair of indices."""
    if text is None or not text.strip():
        return Parsed(None, CallStatus.UNPARSED, "empty")
    ms = _TWO_ROUNDS.findall(text)
    if not ms:
        if _is_refusal(text):
            return Parsed(None, CallStatus.REFUSAL, "refusal")
        return Parsed(None, CallStatus.UNPARSED, "none")
    a, b = ms[-1]
    return Parsed((LETTERS.index(a.lower()), LETTERS.index(b.lower())), CallStatus.OK, "two_rounds")


def parse_answer(fmt: str, text: str | None, n_options: int) -> Parsed:
    """Dispatch on the answer format of an evaluator or revision prompt."""
    if fmt == "output_ab":
        return parse_ab(text)
    if fmt == "number":
        return parse_choice(text, n_options)
    if fmt == "two_rounds":
        return parse_two_rounds(text)
    raise ValueError(f"unknown answer format {fmt!r}")


def write_answer(fmt: str, verdict: Sequence[int]) -> str:
    """The canonical answer text for a verdict (used by simulated writers)."""
    if fmt == "output_ab":
        return f"Output ({letter(verdict[0])})"
    if fmt == "number":
        return str(verdict[0] + 1)
    if fmt == "two_rounds":
        return f"Original Order: [Output ({letter(verdict[0])})], Swapped Order: [Output ({letter(verdict[1])})]"
    raise ValueError(f"unknown answer format {fmt!r}")
