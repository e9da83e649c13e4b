"""The simulated detector and evaluator of study rbd, and Algorithm 1 on top of them.

* a simulated detector's planted recall and specificity are recovered by the detector scores;
* a simulated evaluator re-prompted with a flag keeps a wrong verdict with probability
  ``stubbornness`` and a right one with ``keep_correct``; the measured stubbornness and
  overconfidence match their closed form; switching among several options favours the gold
  one by the judge's competence;
* Algorithm 1: a perfect detector with an open-minded evaluator fixes every biased item and
  then stops at "No"; a fully stubborn evaluator changes nothing (stubbornness 1,
  overconfidence 1); unparsed detector answers never flag; a position item is revised in both
  rounds; the iteration cap T is respected; a rerun asks no judge anything.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.judges import make_judge
from judgelab.judges.runner import run_requests
from judgelab.rbd import metrics as M
from judgelab.rbd.detector import DetectorCase, DetectorSpec, run_detector
from judgelab.rbd.loop import LoopDetector, behaviour, loop_items, revision_request, run_loop, table2
from judgelab.rbd.prompts import parse_answer
from judgelab.rbd.sets import RbdItem


def sim(name: str, seed: int = 0, **profile) -> object:
    return make_judge(JudgeSpec.from_dict({"name": name, "backend": "simulated", "model": f"sim/{name}",
                                           "sampling": {"temperature": 0.0, "seed": seed},
                                           "options": {"profile": profile}}))


def pair_items(n: int, *, set_name: str = "verbosity", bias: str = "verbosity") -> list[RbdItem]:
    out = []
    for i in range(n):
        g = i % 2
        common = dict(set=set_name, item_id=f"{set_name}-{i}", base_id=str(i), bias_type=bias,
                      answer_format="output_ab", question=f"Question {i}: what is {i} plus {i}?", split="test",
                      eval_template="arena_ab", revision_template="arena_ab" if bias != "position" else "arena_two_rounds")
        opts = [f"The answer is {2 * i}.", f"The answer is {2 * i + 1}, after a long derivation."]
        d_opts = opts if g == 0 else opts[::-1]
        if bias == "position":
            out += [RbdItem(variant="D", options=d_opts, gold=g, **common),
                    RbdItem(variant="D_bias", options=d_opts[::-1], gold=1 - g, **common)]
        else:
            out += [RbdItem(variant="D", options=d_opts, gold=g, **common),
                    RbdItem(variant="D_bias", options=d_opts, gold=g, **common)]
    return out


def verdict_table(items: list[RbdItem], judge: str, wrong_bias: set[int], wrong_d: frozenset[int] = frozenset()):
    rows = []
    for it in items:
        k = int(it.base_id)
        wrong = k in (wrong_bias if it.variant == "D_bias" else wrong_d)
        rows.append({"judge": judge, "item_id": it.item_id, "variant": it.variant,
                     "verdict": 1 - it.gold if wrong else it.gold})
    return pd.DataFrame(rows)


def test_simulated_detector_recovers_planted_recall_and_specificity(tmp_path):
    n = 1500
    cases = [DetectorCase(case_id=f"c{i}", subset="test", set="verbosity", item_id=f"i{i}", evaluator="e",
                          evaluator_model="sim/e", bias_type="verbosity", answer_format="output_ab",
                          question=f"Question {i}", options=[f"short {i}", f"a much longer answer number {i}"],
                          swapped_options=[], statement="", verdict=[i % 3 % 2], truth="yes" if i % 2 else "no")
             for i in range(n)]
    det = sim("det", label_recall=0.85, label_specificity=0.6)
    with CallCache(tmp_path / "c.sqlite") as cache:
        pred = run_detector(det, DetectorSpec(name="det", judge={}), cases, cache)
    s = M.detector_scores(list(pred["truth"]), list(pred["pred"]))
    se = math.sqrt(0.25 / (n / 2))
    assert abs(s.recall - 0.85) < 3 * se
    assert abs(s.tn / (s.tn + s.fp) - 0.6) < 3 * se
    assert s.n_missing == 0
    assert pred["reasoning"].str.len().gt(0).all()


@pytest.mark.parametrize(("s_w", "k_c"), [(0.3, 0.9), (0.7, 0.5)])
def test_revision_keeps_at_the_planted_rates_closed_form(tmp_path, s_w, k_c):
    n = 1600
    items = pair_items(n)
    wrong = {i for i in range(n) if i % 4 != 0}  # 3/4 of the flagged verdicts are wrong
    ev = sim("ev", stubbornness=s_w, keep_correct=k_c)
    li = loop_items(items, verdict_table(items, "ev", wrong), evaluator="ev", evaluator_model="sim/ev",
                    sets=["verbosity"])
    reqs = [revision_request(it, it.case.verdict, "<think>The long option was preferred.</think> Yes") for it in li]
    with CallCache(tmp_path / "c.sqlite") as cache:
        resp = run_requests(ev, reqs, cache)
    revised = [list(np.atleast_1d(parse_answer("output_ab", r.raw_text, 2).value)) for r in resp]
    b = M.stubbornness_overconfidence([True] * n, [it.case.verdict for it in li], revised, [it.gold for it in li])
    n_w, n_r = len(wrong), n - len(wrong)
    exp_s = (s_w * n_w + k_c * n_r) / n
    exp_o = s_w * n_w / (s_w * n_w + k_c * n_r)
    assert abs(b.stubbornness - exp_s) < 3 * math.sqrt(exp_s * (1 - exp_s) / n)
    assert abs(b.overconfidence - exp_o) < 3 * math.sqrt(exp_o * (1 - exp_o) / b.n_unchanged)


def test_switching_among_several_options_favours_gold_by_competence(tmp_path):
    n, competence = 1200, 1.5
    items = []
    for i in range(n):
        opts = [f"option {k} for item {i}" for k in range(4)]
        items.append(RbdItem(set="sentiment", item_id=f"s{i}", base_id=str(i), variant="D_bias",
                             bias_type="sentiment", answer_format="number", question=f"Q{i}", options=opts, gold=0,
                             eval_template="science_mc", revision_template="science_mc"))
    ev = sim("ev", stubbornness=0.0, competence=competence)
    from judgelab.rbd.loop import LoopItem

    cases = [DetectorCase(case_id=it.item_id, subset="loop", set=it.set, item_id=it.item_id, evaluator="ev",
                          evaluator_model="sim/ev", bias_type="sentiment", answer_format="number", question=it.question,
                          options=it.options, swapped_options=[], statement="", verdict=[3], truth="yes")
             for it in items]
    li = [LoopItem(case=c, d_item=None, b_item=it, verdict_d=0, gold_d=0, gold=[0]) for c, it in zip(cases, items,
                                                                                                     strict=True)]
    with CallCache(tmp_path / "c.sqlite") as cache:
        resp = run_requests(ev, [revision_request(x, [3], "Yes") for x in li], cache)
    picks = np.array([parse_answer("number", r.raw_text, 4).value for r in resp])
    assert not (picks == 3).any()  # never keeps (stubbornness 0 on a wrong verdict)
    p_gold = math.exp(competence) / (math.exp(competence) + 2)
    assert abs((picks == 0).mean() - p_gold) < 3 * math.sqrt(p_gold * (1 - p_gold) / n)


def _loop(tmp_path, items, verdicts, ev, det, *, T=3, sets=("verbosity",)):
    li = loop_items(items, verdicts, evaluator=ev.name, evaluator_model=ev.spec.model, sets=list(sets))
    with CallCache(tmp_path / "c.sqlite") as cache:
        traj, it, calls = run_loop(ev, [LoopDetector(DetectorSpec(name=det.name, judge={}), det)], li, cache,
                                   max_iterations=T)
    return li, traj, it, calls


def test_perfect_detector_and_open_evaluator_fix_every_biased_item(tmp_path):
    n = 60
    items = pair_items(n)
    wrong = set(range(0, n, 3))
    ev = sim("ev", stubbornness=0.0, keep_correct=1.0)
    det = sim("det", label_recall=1.0, label_specificity=1.0)
    _, traj, it, calls = _loop(tmp_path, items, verdict_table(items, "ev", wrong), ev, det)
    t2 = table2(it, traj, 3).set_index("iterations")
    assert t2.loc[1, "acc_without"] == pytest.approx(1 - len(wrong) / n)
    assert t2.loc[1, "acc_with"] == 1.0 and t2.loc[1, "consistency_with"] == 1.0
    # flagged items are checked again and pass ("No"): the loop stops after iteration 2
    assert traj["iteration"].max() == 2
    assert set(traj[traj["iteration"] == 2]["item_id"]) == {f"verbosity-{i}" for i in wrong}
    assert (traj[traj["iteration"] == 2]["detector_label"] == "no").all()
    assert int(traj["flagged"].sum()) == len(wrong)
    assert set(calls["role"]) == {"detector", "evaluator"} and (calls["role"] == "evaluator").sum() == len(wrong)
    beh = behaviour(it, traj).set_index("set")
    assert beh.loc["(all)", "stubbornness"] == 0.0 and math.isnan(beh.loc["(all)", "overconfidence"])


def test_stubborn_evaluator_changes_nothing_and_cap_is_respected(tmp_path):
    n = 40
    items = pair_items(n)
    wrong = set(range(0, n, 2))
    ev = sim("ev", stubbornness=1.0, keep_correct=1.0)
    det = sim("det", label_recall=1.0, label_specificity=1.0)
    _, traj, it, _ = _loop(tmp_path, items, verdict_table(items, "ev", wrong), ev, det, T=2)
    assert traj["iteration"].max() == 2  # still flagged after the first round, cut at T = 2
    t2 = table2(it, traj, 2)
    assert (t2["primary_gain"] == 0).all()
    beh = behaviour(it, traj).set_index("set")
    assert beh.loc["(all)", "stubbornness"] == 1.0 and beh.loc["(all)", "overconfidence"] == 1.0


def test_unparsed_detector_answers_never_flag(tmp_path):
    items = pair_items(30)
    ev = sim("ev")
    det = sim("det", malformed_rate=1.0)  # "<think>...</think>" with no label
    _, traj, _, calls = _loop(tmp_path, items, verdict_table(items, "ev", set(range(0, 30, 2))), ev, det)
    assert (traj["detector_label"] == "").all() and not traj["flagged"].any()
    assert (traj["iteration"] == 1).all() and (calls["status"] == "unparsed").all()


def test_position_items_are_revised_in_both_rounds(tmp_path):
    n = 40
    items = pair_items(n, set_name="position", bias="position")
    wrong = set(range(0, n, 2))  # the swapped round is wrong: a position-biased item
    ev = sim("ev", stubbornness=0.0, keep_correct=1.0)
    det = sim("det", label_recall=1.0, label_specificity=1.0)
    li, traj, it, _ = _loop(tmp_path, items, verdict_table(items, "ev", wrong), ev, det, sets=["position"])
    assert all(x.answer_format == "two_rounds" and len(x.case.verdict) == 2 for x in li)
    first = traj[traj["iteration"] == 1]
    assert (first["flagged"] == first["item_id"].isin({f"position-{i}" for i in wrong})).all()
    revised = first[first["flagged"]]
    assert all(len(v) == 2 for v in revised["verdict_after"])
    t2 = table2(it, traj, 3).set_index("iterations")
    assert t2.loc[1, "primary_metric"] == "consistency"
    assert t2.loc[1, "consistency_without"] == pytest.approx(0.5) and t2.loc[1, "consistency_with"] == 1.0


def test_rerun_of_the_loop_asks_nothing(tmp_path):
    items = pair_items(30)
    ev = sim("ev", stubbornness=0.2, keep_correct=0.8)
    det = sim("det", label_recall=0.8, label_specificity=0.8)
    verdicts = verdict_table(items, "ev", set(range(0, 30, 3)))
    _, t1, _, c1 = _loop(tmp_path, items, verdicts, ev, det)
    with CallCache(tmp_path / "c.sqlite") as cache:
        before = {r["judge"]: r["new_calls"] for r in cache.stats()}
    _, t2, _, c2 = _loop(tmp_path, items, verdicts, ev, det)
    pd.testing.assert_frame_equal(t1, t2)
    pd.testing.assert_frame_equal(c1, c2)
    with CallCache(tmp_path / "c.sqlite") as cache:
        after = {r["judge"]: r["new_calls"] for r in cache.stats()}
    assert before == after and before["det"] > 0 and before["ev"] > 0  # the second run asked nothing


def test_detector_requests_built_once_give_the_loop_of_requests_built_each_round(tmp_path, monkeypatch):
    """``run_loop`` builds each item's detector case and request once per verdict shown and per
    detector prompt (``_detector_case_request``), shared by the detectors prompted alike and by the
    rounds that show a verdict again; the loop must be the one whose every round builds its own:
    the same trajectory, items and calls (keys included) with detectors prompted alike and not
    (another prompt, other few-shot examples, truncated options) and an evaluator that keeps
    some flagged verdicts (shown again the next round) and changes others."""
    from judgelab.rbd import loop as loop_mod
    from judgelab.rbd.detector import detector_request
    from judgelab.rbd.prompts import FewShotExample

    items = pair_items(40) + pair_items(20, set_name="position", bias="position")
    sets = ["verbosity", "position"]
    ev = sim("ev", stubbornness=0.5, keep_correct=0.6)
    verdicts = pd.concat([verdict_table(items[:80], "ev", set(range(0, 40, 2))),
                          verdict_table(items[80:], "ev", set(range(0, 20, 3)))])
    shots = [FewShotExample(bias_type=b, instruction=f"q {b}", choices="Output (a): x\n\nOutput (b): y",
                            judgement="Output (a)", label=lab, reasoning=f"why {b}")
             for b, lab in (("verbosity", "Yes"), ("position", "Yes"), ("verbosity", "No"), ("position", "No"))]

    def detectors():
        return [LoopDetector(DetectorSpec(name="d1", judge={}), sim("d1", label_recall=0.9, label_specificity=0.5)),
                LoopDetector(DetectorSpec(name="d2", judge={}), sim("d2", label_recall=0.7, label_specificity=0.7)),
                LoopDetector(DetectorSpec(name="d3", prompting="ablated", judge={}), sim("d3", label_recall=0.8)),
                LoopDetector(DetectorSpec(name="d4", prompting="few_shot_labels", judge={}), sim("d4"), shots),
                LoopDetector(DetectorSpec(name="d5", prompting="few_shot_labels", judge={}), sim("d5"), shots[::-1]),
                LoopDetector(DetectorSpec(name="d6", judge={}, max_words=3), sim("d6", label_recall=0.9))]

    built = []

    def counted(case, spec, examples=()):
        built.append(case.case_id)
        return detector_request(case, spec, examples)

    def run(name):
        li = loop_items(items, verdicts, evaluator="ev", evaluator_model=ev.spec.model, sets=sets)
        with CallCache(tmp_path / f"{name}.sqlite") as cache:
            return run_loop(ev, detectors(), li, cache, max_iterations=3)

    monkeypatch.setattr(loop_mod, "detector_request", counted)
    fast = run("fast")
    n_fast = len(built)

    def each_round(built_memo, key, item, verdict, det):  # the plain path: built anew every round
        c = item.case.with_verdict(verdict, item.truth(verdict))
        return c, loop_mod.detector_request(c, det.spec, det.examples)

    built.clear()
    monkeypatch.setattr(loop_mod, "_detector_case_request", each_round)
    plain = run("plain")
    for a, b in zip(fast, plain, strict=True):  # the calls' keys and answers among them
        pd.testing.assert_frame_equal(a, b)
    calls = fast[2]
    n_detector_calls = int((calls["role"] == "detector").sum())
    assert len(built) == n_detector_calls  # the plain path builds one request per detector call
    assert n_fast <= n_detector_calls - 60  # d2 asked d1's 60 first-round requests (and rounds share some)
    assert (calls["iteration"] > 1).any() and (calls["role"] == "evaluator").any()
