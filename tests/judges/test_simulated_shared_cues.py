"""The simulated judge reads what a pairwise prompt tells every judge alike once per prompt.

A plan asks ten stand-ins the same 45,000 pairs; the style, the slots' contrasts and a bandwagon
statement are read once and shared (``_SharedCues``), and the prompt is hashed part by part.  Each
answer must be the one the judge gives reading the prompt afresh: the verdict from its own
:meth:`~judgelab.judges.simulated.SimulatedJudge.preference_logit` and the prompt's draws, the
prompt's length as ``tokens_in``, whatever the memo held before."""

from __future__ import annotations

import hashlib
import math

import pytest

from judgelab.judges import simulated
from judgelab.judges.simulated import PROMPT_STYLES, PromptStyle, SimulatedJudge, _Draws, _style_of
from judgelab.parsing import parse_pairwise
from judgelab.prompts import pairwise_request
from judgelab.records import JudgeRequest, Message, OutputKind
from tests.judges.test_simulated import make

TEXTS = ["Short.", "A longer answer with **bold** words and\n- a list\n- of points, which is great and wonderful.",
         "I think this is terrible and wrong; it fails.", "Paris is the capital of France. " * 12]


def requests(context: str = "") -> list[JudgeRequest]:
    return [pairwise_request("json_verdict", question=f"Question {i}?", first=a, second=b, context=context,
                             truth={"quality_a": float(i % 3), "quality_b": 1.0, "own_answers": {"openai": TEXTS[1]}})
            for i, (a, b) in enumerate((a, b) for a in TEXTS for b in TEXTS if a != b)]


def fresh(judge: SimulatedJudge, req: JudgeRequest) -> tuple[str, int]:
    """(verdict, tokens_in) read afresh: the preference logit, the draws of the whole prompt."""
    prompt = req.prompt_text()
    d = _Draws(hashlib.blake2b(prompt.encode(), key=judge._salt[:64], digest_size=32).digest())
    z, _ = judge.preference_logit(req, prompt)
    margin = judge.decision_params(prompt)[2]
    noisy = z + math.log(d[0] / (1 - d[0]))
    return ("A" if noisy > margin else ("B" if noisy < -margin else "tie")), len(prompt) // 4 + 1


@pytest.mark.parametrize("context", ["", "90% of people believe that Output (b) is better.\n\n"])
def test_answers_from_shared_cues_are_the_fresh_ones(context):
    judges = [make(f"j{k}", {"verbosity": 0.4 * k, "position": 0.3, "bandwagon": 0.9, "self_preference": 0.6},
                   seed=k) for k in range(3)]
    simulated._SHARED_CUES["cues"].clear()
    for judge in judges:  # the first fills the memo, the others read it; each request built anew
        for req, ans in zip(requests(context), judge.answer(requests(context)), strict=True):
            verdict, tokens_in = fresh(judge, req)
            assert parse_pairwise(ans.text, "json").value == verdict
            assert ans.tokens_in == tokens_in


def test_several_messages_hash_as_their_joined_prompt():
    judge = make("j", {"position": 0.5})
    req = JudgeRequest(messages=[Message("system", "Be fair."), Message("user", "Which is better, A or B?"),
                                 Message("user", "Answer [[A]] or [[B]].")], kind=OutputKind.PAIRWISE, fmt="brackets",
                       slots={"A": TEXTS[0], "B": TEXTS[1]})
    (ans,) = judge.answer([req])
    verdict, tokens_in = fresh(judge, req)
    assert parse_pairwise(ans.text, "brackets").value == verdict and ans.tokens_in == tokens_in


def test_a_newly_registered_style_is_read_not_the_remembered_one():
    judge = make("j", {"position": 0.0})
    req = requests()[0]
    judge.answer([req])  # remembered without the style
    marker = "Question 0?"
    PROMPT_STYLES.add("test-shared-cues", PromptStyle(marker=marker, writer=lambda fmt, v, r, d: f"STYLED {v}"))
    try:
        assert _style_of(req.prompt_text(), judge._markers()) == "test-shared-cues"
        (ans,) = judge.answer([req])
        assert ans.text.startswith("STYLED ")
    finally:
        PROMPT_STYLES._entries.pop("test-shared-cues", None)
    (ans,) = judge.answer([req])
    assert not ans.text.startswith("STYLED ")
