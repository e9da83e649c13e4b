"""The detector's reasoning reaches the evaluator and matters: a planted-truth recovery test.

Paper 001's claim is that a *reasoning* bias detector helps the evaluator correct itself.  The
simulated evaluator's ``reasoning_use`` r plants how much its revision reads the analysis it is
shown (judgelab/simworld/rbd.py): a flagged wrong verdict is kept with s + (1 - s) r (1 - i)
for an analysis of informativeness i.  The closed form is recovered from revision calls; in the
full loop (Algorithm 1), a detector that reasons fixes more biased items than the same labels
with no analysis, which would be false if the loop passed an empty analysis to the re-prompt.
"""

from __future__ import annotations

import math

import pytest

from judgelab.cache import CallCache
from judgelab.judges.runner import run_requests
from judgelab.rbd import metrics as M
from judgelab.rbd.loop import loop_items, revision_request, table2
from judgelab.rbd.prompts import parse_answer
from judgelab.simworld.rbd import analysis_informativeness
from tests.rbd.test_loop import _loop, pair_items, sim, verdict_table

FULL = ("<think>Output (a) has 12 words and Output (b) has 64; Output (b) is the longer one. The judge chose "
        "Output (b). I check whether the longer answer is actually correct or merely more elaborate, comparing "
        "the final results the two outputs state, and find the longer one wrong.</think>\nYes")


def test_informativeness_reads_the_analysis_in_the_prompt():
    items = pair_items(1)
    li = loop_items(items, verdict_table(items, "ev", {0}), evaluator="ev", evaluator_model="sim/ev",
                    sets=["verbosity"])[0]
    full = revision_request(li, li.case.verdict, FULL).prompt_text()
    label_only = revision_request(li, li.case.verdict, "Yes").prompt_text()
    empty = revision_request(li, li.case.verdict, "").prompt_text()
    assert analysis_informativeness(full) == 1.0
    assert analysis_informativeness(label_only) == 0.0 and analysis_informativeness(empty) == 0.0
    vague = revision_request(li, li.case.verdict, "<think>" + "hmm " * 20 + "</think> Yes").prompt_text()
    assert 0.0 < analysis_informativeness(vague) < 0.5  # words, but about nothing in the options


@pytest.mark.parametrize(("s_w", "r_use"), [(0.2, 1.0), (0.1, 0.5)])
def test_keep_rate_follows_the_planted_reasoning_use(tmp_path, s_w, r_use):
    n = 1200
    items = pair_items(n)
    wrong = set(range(n))  # every flagged verdict is wrong
    ev = sim("ev", stubbornness=s_w, keep_correct=1.0, reasoning_use=r_use)
    li = loop_items(items, verdict_table(items, "ev", wrong), evaluator="ev", evaluator_model="sim/ev",
                    sets=["verbosity"])
    rates = {}
    for name, analysis in (("full", FULL), ("label_only", "Yes")):
        reqs = [revision_request(it, it.case.verdict, analysis) for it in li]
        with CallCache(tmp_path / f"{name}.sqlite") as cache:
            resp = run_requests(ev, reqs, cache)
        kept = [parse_answer("output_ab", r.raw_text, 2).value == it.case.verdict[0] for r, it in zip(resp, li,
                                                                                                    strict=True)]
        rates[name] = sum(kept) / n
    exp = {"full": s_w, "label_only": s_w + (1 - s_w) * r_use}
    for name, e in exp.items():
        assert abs(rates[name] - e) < 3 * math.sqrt(e * (1 - e) / n) + 1e-9, (name, rates[name], e)


def test_reasoning_detector_fixes_more_than_its_labels_alone(tmp_path):
    """Same evaluator, same perfect labels: the simulated detector's analysis vs a label-only
    detector (malformed-free, answers just Yes/No).  The reasoning run fixes (nearly) every
    biased item; the label-only run leaves most of them, as r = 0.8 plants."""
    n = 80
    items = pair_items(n)
    wrong = set(range(0, n, 2))
    ev = sim("ev", stubbornness=0.0, keep_correct=1.0, reasoning_use=0.8)
    reasoning_det = sim("det", label_recall=1.0, label_specificity=1.0)
    _, traj, it, _ = _loop(tmp_path / "r", items, verdict_table(items, "ev", wrong), ev, reasoning_det, T=1)
    analyses = traj[traj["flagged"]]
    assert len(analyses) == len(wrong)
    gain_reasoning = table2(it, traj, 1).iloc[0]["primary_gain"]

    # the label-only arm: the same loop with the detector's text cut down to its label
    from judgelab.rbd import loop as loop_mod

    real = loop_mod.revision_request
    loop_mod.revision_request = lambda item, verdict, analysis: real(item, verdict, analysis.strip().split()[-1])
    try:
        _, traj_l, it_l, _ = _loop(tmp_path / "l", items, verdict_table(items, "ev", wrong), ev, reasoning_det, T=1)
    finally:
        loop_mod.revision_request = real
    gain_label = table2(it_l, traj_l, 1).iloc[0]["primary_gain"]
    assert gain_reasoning > gain_label + 0.2, (gain_reasoning, gain_label)
    assert M.accuracy([v[0] for v in it["initial"]], [g[0] for g in it["gold"]]) == pytest.approx(0.5)
