"""Algorithm 1 of paper 001 (judgelab/rbd/loop.py) step by step, with scripted judges.

The simulated panel (tests/rbd/test_loop.py) checks the loop against planted rates; here a
*scripted* detector and evaluator answer exactly what each test says, so every row of the
trajectory, items and calls tables, and every figure of Table 2, Fig. 10 and Table 6 built
from them, is known by hand:

* the detector's input is Eq. 1 on the verdict it is shown, with the evaluator's model name
  (I_MJ) and, for few-shot prompting, its examples;
* a flagged verdict is re-prompted with the prior verdict and the detector's analysis; an
  unflagged one (No, or no parsable label) stands and leaves the loop; a flagged item is
  checked again until the detector says No or T is reached; an unparsed or failed re-prompt
  leaves the item without a verdict (-1) and ends its loop; every call is counted;
* failures raise unless tolerated, and are then recorded as ``error`` rows;
* Table 2 counts flags, revisions and unparsed answers per T, and scores the detector on the
  first iteration; Fig. 10's stubbornness counts fallback-parsed revisions as answers;
  Table 6 divides tokens, latency and cost by the loop items each detector saw.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.judges.base import Judge
from judgelab.judges.runner import TooManyErrors
from judgelab.rbd import metrics as M
from judgelab.rbd.detector import DetectorCase, DetectorSpec
from judgelab.rbd.loop import (
    BEHAVIOUR_COLUMNS,
    EFFICIENCY_COLUMNS,
    ITEM_COLUMNS,
    LOOP_CALL_COLUMNS,
    TABLE2_COLUMNS,
    TRAJECTORY_COLUMNS,
    LoopDetector,
    LoopItem,
    behaviour,
    efficiency,
    loop_items,
    revision_request,
    run_loop,
    table2,
    table2_wide,
)
from judgelab.rbd.prompts import REVISION_TEMPLATES, FewShotExample
from judgelab.rbd.sets import RbdItem
from judgelab.records import JudgeRequest, RawAnswer
from tests.rbd.test_loop import pair_items, verdict_table


class Scripted(Judge):
    """A backend whose answer to each request is ``reply(request)`` (None = a failed call)."""

    def __init__(self, name: str, reply: Callable[[JudgeRequest], str | None], *, tokens_out: int = 10,
                 latency_s: float = 0.5, output_per_1k: float = 1.0) -> None:
        super().__init__(JudgeSpec.from_dict({"name": name, "backend": "scripted", "model": f"scripted/{name}",
                                              "price": {"output_per_1k": output_per_1k}}))
        self.reply, self.tokens_out, self.latency_s = reply, tokens_out, latency_s
        self.asked: list[JudgeRequest] = []

    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        out = []
        for r in requests:
            self.asked.append(r)
            text = self.reply(r)
            out.append(RawAnswer(text=None, error="scripted failure") if text is None else
                       RawAnswer(text=text, tokens_in=100, tokens_out=self.tokens_out, latency_s=self.latency_s))
        return out


def _item_of(req: JudgeRequest) -> str:
    return str(req.meta.get("item_id") or req.meta["case_id"].split("|", 1)[1])


def gold_detector(golds: dict[str, int], *, unparsed: frozenset[str] = frozenset(),
                  failing: frozenset[str] = frozenset(), flag_all: bool | None = None):
    """Says Yes iff the shown (D_bias) verdict is wrong -- Eq. 1 when the D verdict is right --
    read from its own answer key, not from the loop's truth; scripted exceptions per item."""

    def reply(req: JudgeRequest) -> str | None:
        item = _item_of(req)
        if item in failing:
            return None
        if item in unparsed:
            return "<think>The evaluation may or may not be biased.</think>"
        shown = req.truth["rbd"]["chosen"]
        wrong = shown[-1] != golds[item] if flag_all is None else flag_all
        return f"<think>The judge chose option {shown[-1]}; the longer output is not the correct one.</think> " \
               + ("Yes" if wrong else "No")

    return reply


def _loop(tmp_path, ev: Judge, dets: list[LoopDetector], items, verdicts, *, T: int = 3, sets=("verbosity",),
          **kw):
    li = loop_items(items, verdicts, evaluator=ev.name, evaluator_model=ev.spec.model, sets=list(sets))
    tmp_path.mkdir(parents=True, exist_ok=True)
    with CallCache(tmp_path / "c.sqlite") as cache:
        return (li, *run_loop(ev, dets, li, cache, max_iterations=T, **kw))


def _det(judge: Judge, prompting: str = "rbd", examples=()) -> LoopDetector:
    return LoopDetector(DetectorSpec(name=judge.name, prompting=prompting, judge={}), judge, examples)


# ---------------------------------------------------------------------------------
# loop items and Eq. 1


def test_truth_is_eq1_on_the_shown_verdict():
    b = pair_items(1)[1]
    one = LoopItem(case=None, d_item=None, b_item=b, verdict_d=0, gold_d=0, gold=[0])
    assert one.truth([1]) == "yes" and one.truth([0]) == "no"  # right on D, wrong on D_bias: biased
    wrong_d = LoopItem(case=None, d_item=None, b_item=b, verdict_d=1, gold_d=0, gold=[0])
    assert wrong_d.truth([1]) == "no" and wrong_d.truth([0]) == "no"  # wrong on D: not a bias case
    for li in (one, wrong_d):
        for v in (0, 1):
            assert li.truth([v]) == M.bias_label(li.verdict_d, v, li.gold_d, li.gold[0])
    # position: the two presentation orders, gold 0 in the stored order and 1 swapped
    pos = LoopItem(case=None, d_item=None, b_item=b, verdict_d=-1, gold_d=0, gold=[0, 1])
    assert pos.truth([0, 0]) == "yes"  # right in the stored order, wrong after the swap
    assert pos.truth([0, 1]) == "no" and pos.truth([1, 0]) == "no" and pos.truth([1, 1]) == "no"


def test_loop_items_pair_each_biased_item_with_its_D_verdict_of_the_one_evaluator():
    items = pair_items(7)
    by = {(i.item_id, i.variant): i for i in items}
    diag = [replace(by[("verbosity-0", v)], label_rule="always_no") for v in ("D", "D_bias")]
    train = [replace(by[("verbosity-3", v)], split="train") for v in ("D", "D_bias")]
    other_set = [i for i in pair_items(2, set_name="sentiment")]
    items = diag + [i for i in items if i.base_id not in ("0", "3", "6")] + train + other_set \
        + [by[("verbosity-6", "D_bias")]]  # item 6 has no D variant
    wrong = {1, 4}
    v = verdict_table(items, "ev", wrong)
    v = v[~((v["item_id"] == "verbosity-1") & (v["variant"] == "D"))]  # no D verdict: no Eq. 1
    v = v[~((v["item_id"] == "verbosity-2") & (v["variant"] == "D_bias"))]  # the evaluator gave none
    other = verdict_table(items, "other", set(range(7)), frozenset(range(7)))  # another evaluator: ignored
    li = loop_items(items, pd.concat([other, v]), evaluator="ev", evaluator_model="sim/ev-model",
                    sets=["verbosity"])
    assert [x.b_item.item_id for x in li] == ["verbosity-4", "verbosity-5"]
    for x in li:
        assert x.b_item.variant == "D_bias" and x.d_item.variant == "D" and x.d_item.item_id == x.b_item.item_id
        assert x.case.evaluator == "ev" and x.case.evaluator_model == "sim/ev-model" and x.case.subset == "loop"
        k = int(x.b_item.base_id)
        assert x.verdict_d == x.gold_d == x.d_item.gold  # D verdicts are right
        assert x.case.verdict == [1 - x.b_item.gold if k in wrong else x.b_item.gold]
        assert x.case.truth == ("yes" if k in wrong else "no") == x.truth(x.case.verdict)


# ---------------------------------------------------------------------------------
# the revision prompt (E.5)


def _user(req: JudgeRequest) -> str:
    assert [m.role for m in req.messages] == ["system", "user"]
    return req.messages[1].content


def test_revision_prompt_shows_the_item_the_prior_verdict_and_the_analysis():
    items = pair_items(2)
    li = loop_items(items, verdict_table(items, "ev", {1}), evaluator="ev", evaluator_model="m",
                    sets=["verbosity"])[1]
    b = li.b_item
    req = revision_request(li, [0], "<think>Output (a) is merely longer.</think> Yes")
    t = REVISION_TEMPLATES.get("arena_ab")
    user = _user(req)
    assert req.messages[0].content == t.system
    assert b.question in user
    assert f"Output (a): {b.options[0]}\n\nOutput (b): {b.options[1]}" in user
    assert "### Prior Evaluation Results:\nOutput (a)\n" in user
    assert "### Bias Analysis:\n<think>Output (a) is merely longer.</think> Yes" in user
    head = t.user.split("{context}")[0]
    assert head + "Do NOT provide" in user  # no statement: no context block at all
    assert req.slots == {"1": b.options[0], "2": b.options[1]} and req.meta["item_id"] == b.item_id
    assert req.truth["rbd"]["prior"] == [0] and req.truth["rbd"]["gold"] == li.gold
    assert "### Prior Evaluation Results:\nOutput (b)\n" in _user(revision_request(li, [1], "x"))

    # a statement (bandwagon) is shown as context
    sb = replace(b, statement="90% of people prefer Output (b)")
    with_st = LoopItem(case=li.case, d_item=li.d_item, b_item=sb, verdict_d=0, gold_d=0, gold=li.gold)
    assert "Additional context:\n- 90% of people prefer Output (b), reflecting the majority" in \
        _user(revision_request(with_st, [1], "x"))

    bad = replace(b, revision_template="no_such_template")
    with pytest.raises(Exception, match="set 'verbosity'"):
        revision_request(LoopItem(case=li.case, d_item=None, b_item=bad, verdict_d=0, gold_d=0, gold=[0]), [0], "x")


def test_revision_prompt_of_a_choice_and_of_both_presentation_orders():
    mc = RbdItem(set="sentiment", item_id="s1", base_id="1", variant="D_bias", bias_type="sentiment",
                 answer_format="number", question="Which is true?", options=["red", "green", "blue"], gold=0,
                 eval_template="science_mc", revision_template="science_mc")
    case = DetectorCase(case_id="ev|s1", subset="loop", set="sentiment", item_id="s1", evaluator="ev",
                        evaluator_model="m", bias_type="sentiment", answer_format="number", question=mc.question,
                        options=mc.options, swapped_options=[], statement="", verdict=[2], truth="yes")
    user = _user(revision_request(LoopItem(case, None, mc, 0, 0, [0]), [2], "analysis"))
    assert "### Options:\n1. red\n2. green\n3. blue\n" in user and "### Prior Evaluation Results:\nChoice 3\n" in user

    items = pair_items(2, set_name="position", bias="position")
    li = loop_items(items, verdict_table(items, "ev", {1}), evaluator="ev", evaluator_model="m",
                    sets=["position"])[1]
    d, s = li.d_item.options, li.b_item.options
    user = _user(revision_request(li, [1, 1], "analysis"))
    assert (f"### First Evaluation (Original Order)\nOutput (a): {d[0]}\n\nOutput (b): {d[1]}\n\n"
            f"### Second Evaluation (Swapped Order)\nOutput (a): {s[0]}\n\nOutput (b): {s[1]}") in user
    assert "### Original Order\nOutput (b)\n\n### Swapped Order\nOutput (b)" in user


# ---------------------------------------------------------------------------------
# Algorithm 1, row by row


def _evaluator(plan: dict[str, str], golds: dict[str, int]) -> Scripted:
    """fix: the gold option, as ``[[A]]`` (a fallback parse); stubborn: the prior; refuse: a refusal;
    babble: no verdict."""

    def reply(req: JudgeRequest) -> str:
        item, prior = _item_of(req), req.truth["rbd"]["prior"]
        what = plan[item]
        if what == "fix":
            return f"[[{'AB'[golds[item]]}]]"
        if what == "stubborn":
            return f"Output ({'ab'[prior[0]]})"
        if what == "fix_number":
            return str(golds[item] + 1)
        if what == "refuse":
            return "I cannot decide between them."
        return "Both outputs have merits."

    return Scripted("ev", reply, tokens_out=2, latency_s=0.1, output_per_1k=0.5)


def test_flagged_verdicts_are_revised_until_the_detector_says_no_or_T(tmp_path):
    items = pair_items(7)
    golds = {i.item_id: i.gold for i in items}
    # 0-3 and 6 wrong on D_bias (right on D: Eq. 1 yes), 4-5 right
    plan = {"verbosity-0": "fix", "verbosity-1": "stubborn", "verbosity-2": "refuse", "verbosity-6": "babble"}
    ev = _evaluator(plan, golds)
    det = Scripted("det", gold_detector(golds, unparsed=frozenset({"verbosity-3"})))
    li, traj, its, calls = _loop(tmp_path, ev, [_det(det)], items, verdict_table(items, "ev", {0, 1, 2, 3, 6}))

    assert not traj.isna().any().any() and not calls.isna().any().any() and not its.isna().any().any()
    assert list(traj.columns) == TRAJECTORY_COLUMNS and list(its.columns) == ITEM_COLUMNS
    assert traj.groupby("iteration").size().to_dict() == {1: 7, 2: 2, 3: 1}
    assert (traj["judge"] == "ev").all() and (traj["detector"] == "det").all() and (traj["prompting"] == "rbd").all()
    assert (traj["set"] == "verbosity").all() and (traj["bias_type"] == "verbosity").all()
    for r in traj.to_dict("records"):
        g = golds[r["item_id"]]
        assert r["truth"] == ("yes" if r["verdict_before"] != [g] else "no")  # Eq. 1 (D is right)
        assert r["flagged"] == (r["detector_label"] == "yes")
        assert (r["revision_status"] != "") == r["flagged"]
        if not r["flagged"]:
            assert r["verdict_after"] == r["verdict_before"] and r["revision_cost_usd"] == 0.0
        else:
            assert r["revision_cost_usd"] == pytest.approx(2 / 1000 * 0.5)
        assert r["detector_tokens_out"] == 10 and r["detector_latency_s"] == 0.5
        assert r["detector_cost_usd"] == pytest.approx(0.01)
    rows = {(r["item_id"], r["iteration"]): r for r in traj.to_dict("records")}
    fixed = rows[("verbosity-0", 1)]
    assert fixed["revision_status"] == "fallback" and fixed["verdict_after"] == [golds["verbosity-0"]]
    assert rows[("verbosity-0", 2)]["detector_label"] == "no"  # checked again: no bias left
    assert [rows[("verbosity-1", t)]["flagged"] for t in (1, 2, 3)] == [True] * 3  # cut at T = 3
    for item, status in (("verbosity-2", "refusal"), ("verbosity-6", "unparsed")):
        lost = rows[(item, 1)]
        assert lost["revision_status"] == status and lost["verdict_after"] == [-1]
        assert (item, 2) not in rows  # no verdict left: the loop ends for it
    silent = rows[("verbosity-3", 1)]
    assert silent["detector_label"] == "" and silent["detector_status"] == "unparsed" and not silent["flagged"]
    assert silent["detector_status"] != rows[("verbosity-4", 1)]["detector_status"] == "ok"
    # nothing asked twice: the unchanged stubborn item's later checks and re-prompts are cache hits
    assert len(det.asked) == 8 and len(ev.asked) == 4

    # the calls table: one row per detector check and per re-prompt, named like the trajectory
    assert list(calls.columns) == LOOP_CALL_COLUMNS
    assert (calls["loop_evaluator"] == "ev").all() and (calls["detector"] == "det").all()
    dcalls, ecalls = calls[calls["role"] == "detector"], calls[calls["role"] == "evaluator"]
    key = ["item_id", "iteration"]
    assert dcalls[key].values.tolist() == traj[key].values.tolist()
    assert ecalls[key].values.tolist() == traj[traj["flagged"]][key].values.tolist()
    assert list(dcalls["status"]) == list(traj["detector_status"])
    assert list(ecalls["status"]) == list(traj[traj["flagged"]]["revision_status"])
    assert (dcalls["judge"] == "det").all() and (ecalls["judge"] == "ev").all() and (calls["set"] == "verbosity").all()
    assert calls["parse_method"].map(lambda m: isinstance(m, str) and m != "").all()
    assert its["initial"].map(len).eq(1).all() and list(its["item_id"]) == [x.b_item.item_id for x in li]

    t2 = table2(its, traj, 3).set_index("iterations")
    assert not t2[["judge", "detector", "prompting", "set", "bias_type"]].isna().any().any()
    assert t2.loc[1, "prompting"] == "rbd" and t2.loc[1, "bias_type"] == "verbosity"
    assert list(t2["n_flagged"]) == [4, 5, 6] and list(t2["n_revisions"]) == [4, 5, 6]
    assert list(t2["n_unparsed_detector"]) == [1, 1, 1] and list(t2["n_unparsed_revision"]) == [2, 2, 2]
    assert list(t2["acc_without"]) == pytest.approx([2 / 7] * 3) and list(t2["acc_with"]) == pytest.approx([3 / 7] * 3)
    # the detector scored on iteration 1: truth yes for 0-3 and 6, said yes for 0-2 and 6, nothing for 3
    s = t2.loc[1]
    assert (s["detector_accuracy"], s["detector_precision"], s["detector_recall"]) == pytest.approx((6 / 7, 1.0, 0.8))
    assert s["detector_f1"] == pytest.approx(8 / 9)

    beh = behaviour(its, traj)
    assert list(beh.columns) == BEHAVIOUR_COLUMNS and list(beh["set"]) == ["verbosity", "(all)"]
    for r in beh.to_dict("records"):  # flagged 0-2 and 6; 2 and 6 have no answer; 1 kept its wrong verdict
        assert (r["judge"], r["detector"]) == ("ev", "det")
        assert (r["n_flagged"], r["n_answered"], r["n_unchanged"], r["n_unchanged_wrong"]) == (4, 2, 1, 1)
        assert (r["stubbornness"], r["overconfidence"]) == (0.5, 1.0)

    eff = efficiency(calls)
    assert list(eff["judge"]) == ["(all)", "ev"]
    for r in eff.to_dict("records"):  # 7 items reached the detector; 10 checks and 6 re-prompts
        assert (r["detector"], r["n_examples"], r["detector_calls"], r["simulated"]) == ("det", 7, 10, False)
        assert r["output_tokens_per_example"] == pytest.approx(100 / 7)
        assert r["latency_s_per_example"] == pytest.approx(5.0 / 7) and r["tokens_per_s"] == pytest.approx(20.0)
        assert r["detector_cost_usd_per_example"] == pytest.approx(0.1 / 7)
        assert r["revision_cost_usd_per_example"] == pytest.approx(0.006 / 7)
        assert r["cost_usd_per_example"] == pytest.approx(0.106 / 7)


def test_choice_items_are_revised_to_the_parsed_option(tmp_path):
    items = []
    for i in range(3):
        for variant in ("D", "D_bias"):
            items.append(RbdItem(set="sentiment", item_id=f"s{i}", base_id=str(i), variant=variant,
                                 bias_type="sentiment", answer_format="number", question=f"Q{i}",
                                 options=[f"o{i}a", f"o{i}b", f"o{i}c"], gold=i, eval_template="science_mc",
                                 revision_template="science_mc"))
    golds = {f"s{i}": i for i in range(3)}
    v = pd.DataFrame([{"judge": "ev", "item_id": it.item_id, "variant": it.variant,
                       "verdict": (it.gold + 1) % 3 if it.variant == "D_bias" else it.gold} for it in items])
    ev = _evaluator({k: "fix_number" for k in golds}, golds)
    _, traj, its, _ = _loop(tmp_path, ev, [_det(Scripted("det", gold_detector(golds)))], items, v,
                            sets=["sentiment"])
    first = traj[traj["iteration"] == 1]
    assert first["flagged"].all() and [x[0] for x in first["verdict_after"]] == [0, 1, 2]
    t2 = table2(its, traj, 3).iloc[-1]
    assert (t2["acc_without"], t2["acc_with"]) == (0.0, 1.0)


def test_detector_prompt_names_the_evaluator_and_carries_the_few_shot_examples(tmp_path):
    items = pair_items(4)
    golds = {i.item_id: i.gold for i in items}
    shots = [FewShotExample(bias_type="verbosity", instruction=f"instruction {k}", choices="Output (a): x",
                            judgement="Output (a)", label="Yes" if k % 2 else "No", reasoning=f"shot reasoning {k}")
             for k in range(4)]
    det = Scripted("det", gold_detector(golds))
    ev = _evaluator(dict.fromkeys(golds, "fix"), golds)
    li = loop_items(items, verdict_table(items, "ev", {0, 1}), evaluator="ev", evaluator_model="vendor/ev-7b",
                    sets=["verbosity"])
    with CallCache(tmp_path / "c.sqlite") as cache:
        run_loop(ev, [_det(det, "few_shot_reasoning", shots)], li, cache, max_iterations=1)
    assert len(det.asked) == 4
    for req in det.asked:
        text = req.prompt_text()
        assert "vendor/ev-7b" in text  # I_MJ of Algorithm 1
        assert all(f"shot reasoning {k}" in text for k in range(4))


def test_each_detector_starts_from_the_evaluators_own_verdicts(tmp_path):
    items = pair_items(4)
    golds = {i.item_id: i.gold for i in items}
    ev = _evaluator(dict.fromkeys(golds, "fix"), golds)
    # listed in reverse name order: every table comes out sorted
    dets = [_det(Scripted("zz_flags_all", gold_detector(golds, flag_all=True))),
            _det(Scripted("aa_flags_none", gold_detector(golds, flag_all=False)))]
    _, traj, its, calls = _loop(tmp_path, ev, dets, items, verdict_table(items, "ev", {0, 1}), T=1)
    assert len(its) == 8
    for name in ("aa_flags_none", "zz_flags_all"):  # the second detector does not see the first's revisions
        first = traj[(traj["detector"] == name) & (traj["iteration"] == 1)]
        assert list(first["verdict_before"]) == list(its[its["detector"] == name]["initial"])
    t2 = table2(its, traj, 1)
    assert list(t2["detector"]) == ["aa_flags_none", "zz_flags_all"]
    none_row, all_row = t2.iloc[0], t2.iloc[1]
    assert none_row["acc_with"] == none_row["acc_without"] == 0.5 and none_row["n_flagged"] == 0
    assert all_row["acc_with"] == 1.0 and all_row["n_flagged"] == 4  # its flags did not reach the other
    assert list(behaviour(its, traj)["detector"]) == ["aa_flags_none", "zz_flags_all"] * 2
    assert list(efficiency(calls)["detector"]) == ["aa_flags_none", "zz_flags_all"] * 2


# ---------------------------------------------------------------------------------
# failures, empty inputs


def test_failed_calls_raise_unless_tolerated_then_are_error_rows(tmp_path):
    items = pair_items(4)
    golds = {i.item_id: i.gold for i in items}
    verdicts = verdict_table(items, "ev", {0, 1})
    failing_det = Scripted("det", gold_detector(golds, failing=frozenset({"verbosity-0"})))
    ev = _evaluator(dict.fromkeys(golds, "fix"), golds)
    with pytest.raises(TooManyErrors):
        _loop(tmp_path / "a", ev, [_det(failing_det)], items, verdicts)
    failing_ev = Scripted("ev", lambda req: None if _item_of(req) == "verbosity-1" else "Output (a)")
    det = Scripted("det", gold_detector(golds))
    with pytest.raises(TooManyErrors):
        _loop(tmp_path / "b", failing_ev, [_det(det)], items, verdicts)

    _, traj, its, calls = _loop(tmp_path / "c", failing_ev, [_det(failing_det)], items, verdicts,
                                max_error_rate=None)
    rows = {(r["item_id"], r["iteration"]): r for r in traj.to_dict("records")}
    lost = rows[("verbosity-0", 1)]  # the detector failed: the verdict stands, the failure is counted
    assert lost["detector_status"] == "error" and lost["detector_label"] == "" and not lost["flagged"]
    assert lost["verdict_after"] == lost["verdict_before"] and ("verbosity-0", 2) not in rows
    failed = rows[("verbosity-1", 1)]  # the re-prompt failed: no verdict, out of the loop
    assert failed["flagged"] and failed["revision_status"] == "error" and failed["verdict_after"] == [-1]
    assert ("verbosity-1", 2) not in rows
    err = calls[(calls["role"] == "evaluator") & (calls["item_id"] == "verbosity-1")].iloc[0]
    assert err["status"] == "error" and err["parse_method"] == "" and err["raw_text"] == ""
    t2 = table2(its, traj, 3).iloc[-1]
    assert (t2["n_unparsed_detector"], t2["n_unparsed_revision"]) == (1, 1)


def test_items_without_a_verdict_are_kept_but_never_checked(tmp_path):
    items = pair_items(1)
    v = verdict_table(items, "ev", set())
    v.loc[v["variant"] == "D_bias", "verdict"] = -1  # the evaluator's answer could not be parsed
    ev, det = Scripted("ev", lambda r: "Output (a)"), Scripted("det", lambda r: "<think>x</think> Yes")
    _, traj, its, calls = _loop(tmp_path, ev, [_det(det)], items, v)
    assert not det.asked and not ev.asked
    assert len(its) == 1 and its["initial"].iloc[0] == [-1]
    assert traj.empty and list(traj.columns) == TRAJECTORY_COLUMNS
    assert calls.empty and list(calls.columns) == LOOP_CALL_COLUMNS
    t2 = table2(its, traj, 2)  # a set of one item the detector never saw (nor its prompting)
    assert list(t2.columns) == TABLE2_COLUMNS and list(t2["iterations"]) == [1, 2] and (t2["prompting"] == "").all()
    assert table2(its.iloc[:0], traj, 2).empty and list(table2(its.iloc[:0], traj, 2).columns) == TABLE2_COLUMNS
    # its only item has no verdict: no accuracy of 0 before or after, the reason instead
    assert t2["acc_with"].isna().all() and t2["acc_without"].isna().all() and (t2["n_flagged"] == 0).all()
    assert set(t2["reason"]) == {"no parsable verdict: 1 of 1 without a usable verdict"}
    assert t2["detector_recall"].isna().all() and t2["bias_type"].eq("verbosity").all()
    assert behaviour(its, traj).empty and list(behaviour(its, traj).columns) == BEHAVIOUR_COLUMNS
    assert efficiency(calls).empty and list(efficiency(calls).columns) == EFFICIENCY_COLUMNS

    with CallCache(tmp_path / "e.sqlite") as cache:
        out = run_loop(ev, [_det(det)], [], cache, max_iterations=1)
        assert [list(f.columns) for f in out] == [TRAJECTORY_COLUMNS, ITEM_COLUMNS, LOOP_CALL_COLUMNS]
        assert all(f.empty for f in out)
        with pytest.raises(ValueError, match="max_iterations"):
            run_loop(ev, [_det(det)], [], cache, max_iterations=0)


# ---------------------------------------------------------------------------------
# Table 2 (paper layout) and Table 6 from hand-made tables


_CELL = re.compile(r"(\d\.\d{3}) -> (\d\.\d{3})(?: \(([+-]\d+\.\d)%\))?")


def test_table2_wide_prints_without_with_and_the_gain_of_the_primary_metric_only():
    def row(judge, cap, set_name, bias, acc, con):
        primary = "consistency" if bias == "position" else "accuracy"
        return {"judge": judge, "detector": "d", "set": set_name, "bias_type": bias, "iterations": cap,
                "acc_without": acc[0], "acc_with": acc[1], "consistency_without": con[0], "consistency_with": con[1],
                "primary_metric": primary}

    t2 = pd.DataFrame([
        row("j", 2, "verbosity", "verbosity", (0.5, 0.875), (0.25, 0.5)),
        row("j", 1, "verbosity", "verbosity", (0.5, 0.75), (0.25, 0.375)),
        row("j", 1, "position", "position", (0.4, 0.4), (0.5, 0.625)),
        row("j", 1, "sentiment", "sentiment", (0.5, np.nan), (np.nan, 0.5)),
        row("i", 1, "verbosity", "verbosity", (0.125, 0.25), (0.0, 0.25)),
    ])
    wide = table2_wide(t2)
    assert [tuple(r) for r in wide[["detector", "iterations", "judge", "metric"]].values] == [
        ("d", 1, "i", "accuracy"), ("d", 1, "i", "consistency"), ("d", 1, "j", "accuracy"),
        ("d", 1, "j", "consistency"), ("d", 2, "j", "accuracy"), ("d", 2, "j", "consistency")]
    src = {(r["judge"], r["iterations"], r["set"]): r for r in t2.to_dict("records")}
    n_gain = 0
    for r in wide.to_dict("records"):
        metric = "acc" if r["metric"] == "accuracy" else "consistency"
        for s in ("verbosity", "position", "sentiment"):
            cell = r.get(s)
            if (r["judge"], r["iterations"], s) not in src:
                assert cell is None or pd.isna(cell)
                continue
            a, b = src[(r["judge"], r["iterations"], s)][f"{metric}_without"], \
                src[(r["judge"], r["iterations"], s)][f"{metric}_with"]
            if pd.isna(a) or pd.isna(b):
                assert cell == ""
                continue
            m = _CELL.fullmatch(cell)
            assert m is not None, cell
            assert (float(m[1]), float(m[2])) == pytest.approx((a, b), abs=5e-4)
            primary = (s == "position") == (metric == "consistency")
            assert (m[3] is not None) == primary, (r, s)
            if primary:
                n_gain += 1
                assert float(m[3]) == pytest.approx(100 * (b - a), abs=0.05)
    assert n_gain == 4


def test_efficiency_divides_each_detectors_calls_by_the_items_it_saw():
    def c(role, det, ev, item, it, tokens, lat, cost, sim=False):
        return {"role": role, "loop_evaluator": ev, "detector": det, "set": "s", "item_id": item, "iteration": it,
                "tokens_out": tokens, "latency_s": lat, "cost_usd": cost, "simulated": sim}

    calls = pd.DataFrame([
        c("detector", "B", "e1", "x1", 1, 10, 0.0, 0.0, sim=True),
        c("evaluator", "B", "e1", "x1", 1, 5, 0.1, 0.5, sim=True),
        c("detector", "A", "e1", "x1", 1, 100, 1.0, 0.01),
        c("detector", "A", "e1", "x1", 2, 50, 0.5, 0.005),
        c("detector", "A", "e1", "x2", 1, 30, 0.25, 0.003),
        c("evaluator", "A", "e1", "x1", 1, 5, 0.1, 0.02),
        c("detector", "A", "e2", "y1", 1, 20, 0.25, 0.002),
        c("evaluator", "A", "e2", "y1", 1, 5, 0.1, 0.04, sim=True),
    ])
    eff = efficiency(calls)
    assert list(eff.columns) == EFFICIENCY_COLUMNS
    got = {(r["detector"], r["judge"]): r for r in eff.to_dict("records")}
    assert list(got) == [("A", "(all)"), ("B", "(all)"), ("A", "e1"), ("A", "e2"), ("B", "e1")]
    # (n examples, detector calls, tokens, latency, detector cost, revision cost, simulated)
    want = {("A", "(all)"): (3, 4, 200, 2.0, 0.020, 0.06, True), ("A", "e1"): (2, 3, 180, 1.75, 0.018, 0.02, False),
            ("A", "e2"): (1, 1, 20, 0.25, 0.002, 0.04, True), ("B", "(all)"): (1, 1, 10, 0.0, 0.0, 0.5, True),
            ("B", "e1"): (1, 1, 10, 0.0, 0.0, 0.5, True)}
    for k, (ex, n, tok, lat, dc, rc, sim) in want.items():
        r = got[k]
        assert (r["n_examples"], r["detector_calls"], r["simulated"]) == (ex, n, sim), k
        assert r["output_tokens_per_example"] == pytest.approx(tok / ex)
        assert r["latency_s_per_example"] == pytest.approx(lat / ex)
        assert r["detector_cost_usd_per_example"] == pytest.approx(dc / ex)
        assert r["revision_cost_usd_per_example"] == pytest.approx(rc / ex)
        assert r["cost_usd_per_example"] == pytest.approx((dc + rc) / ex)
        if lat > 0:
            assert r["tokens_per_s"] == pytest.approx(tok / lat)
        else:
            assert math.isnan(r["tokens_per_s"])  # no measured time: no throughput
