"""Paper 000's two prompts (appendix "Prompts for Answer Generation and Judging"), verbatim.

* The **answer prompt** elicits each judge's own answer to every prompt (its embedding is
  e_k of Algorithm 1).
* The **judging prompt** (template ``uda_pairwise``) asks for exactly one of [[A]], [[B]],
  [[C]] after an analysis ("Analysis: ... Result: [[x]]"); [[C]] is a tie.  It is parsed by
  the shared ``brackets`` parser (last marker wins).  The extracted paper text renders the
  input placeholders as "### question", "### answer_i", "### answer_j"; they are the
  question and the two answers, placed between the paper's Start/End markers.

Importing this module registers ``uda_pairwise`` in :data:`judgelab.prompts.PAIRWISE_TEMPLATES`.
"""

from __future__ import annotations

from judgelab.prompts import PAIRWISE_TEMPLATES, PairwiseTemplate
from judgelab.records import JudgeRequest, Message, OutputKind

ANSWER_SYSTEM = (
    "You are the most advanced artificial intelligence ever created by humankind, possessing extensive "
    "knowledge of the world. Please answer the following question:"
)

JUDGE_SYSTEM = (
    "Please act as an impartial adjudicator and assess the quality of the two AI assistants’ responses to the "
    "user’s query below. Your evaluation should adopt the user’s perspective and consider dimensions such as the "
    "assistants’ helpfulness."
)

JUDGE_USER = (
    "Scoring Criteria 1. Compare the quality of the two responses in relation to the user’s query and provide a "
    "concise justification. Avoid positional bias; the order of presentation must not influence your decision. "
    "2. If the question is a highly specialized, objective factual query that you cannot accurately adjudicate, "
    "return [[C]] to prevent misinformation. 3. If either response contains errors, explicitly identify them. Do "
    "not endorse mutually contradictory statements as simultaneously correct (i.e., do not mark opposing claims "
    "from A and B as both being right). 4. Output exactly one of: [[A]] – Assistant A’s response is of higher "
    "quality. [[B]] – Assistant B’s response is of higher quality. [[C]] – The two responses are of equal "
    "quality.\n\n"
    "Additional Notes - Begin by checking for factual accuracy; if an error is present, prioritize it in your "
    "judgment. - Scores must be based on objective criteria, not subjective preference. - Response length is "
    "irrelevant; evaluate whether the content genuinely addresses the user’s need from the user’s perspective. "
    "- Evaluate quality strictly from the user’s standpoint. Example User question: What is the English term "
    "for “Mining transportation and maintenance fees”? Assistant A: The English term is “maintenance fee,” which "
    "generally denotes the cost required to keep facilities or equipment in good working condition, including "
    "repairs, upkeep, and related expenses. Assistant B: The correct English term is “Mine transportation "
    "maintenance fee.” Analysis: Assistant A’s response contains a factual error; the accurate translation is "
    "“Mine transportation maintenance fee.” Assistant B’s answer is correct and satisfies the user’s "
    "requirement. Result: [[B]]\n\n"
    "Return Format\nAnalysis: ... Result: [[x]]\n\n"
    "Input\n[User Question – Start]\n{question}\n[User Question – End]\n\n"
    "[Assistant A – Start]\n{response_a}\n[Assistant A – End]\n\n"
    "[Assistant B – Start]\n{response_b}\n[Assistant B – End]\n\n"
    "{context}"
    "Please evaluate the quality of the two responses according to the scoring criteria above and provide your "
    "final judgment."
)

TEMPLATE_NAME = "uda_pairwise"

if TEMPLATE_NAME not in PAIRWISE_TEMPLATES:
    PAIRWISE_TEMPLATES.add(TEMPLATE_NAME, PairwiseTemplate(name=TEMPLATE_NAME, fmt="brackets", user=JUDGE_USER,
                                                          system=JUDGE_SYSTEM, allows_tie=True))


def answer_request(prompt: str, *, truth: dict | None = None, meta: dict | None = None) -> JudgeRequest:
    """The paper's answer-generation request for one prompt (free text)."""
    return JudgeRequest(
        messages=[Message("system", ANSWER_SYSTEM), Message("user", prompt)], kind=OutputKind.TEXT, fmt="text",
        truth=dict(truth or {}), meta=dict(meta or {}),
    )
