"""Algorithm 1 of paper 001: the evaluator, the detector and re-prompting, up to T times.

::

    y_bias <- M_J(x_bias)                       # the evaluator's verdict on D_bias
    for t in 1..T:
        y_r <- M_R(x_bias, y_bias, I_MJ, I_bias)  # "<think> reasoning </think> Yes/No"
        if split(y_r) == No: y_final <- y_bias; break
        y_bias <- M_J(x_bias, y_r)              # re-prompt with the prior verdict and the analysis
    return y_final                              # (the last revision when T is reached)

Each iteration is one batch per detector and one batch of re-prompts for the evaluator,
through the call cache.  Conventions: the detector flags only on a parsed *Yes* (an
unparsed detector answer leaves the verdict as it is, and is counted); an unparsed
re-prompt answer leaves the item without a verdict (wrong) and ends its loop.  For
position bias (footnote 4) the item is both presentation orders: the detector sees both
verdicts and the evaluator re-decides both rounds at once.  A simulated detector is told
the truth of Eq. 1 for the verdict it is shown (its competence signal); real detectors are
not.

Columns of the trajectory table (one row per evaluator, detector, item and iteration):
``judge``, ``detector``, ``prompting``, ``set``, ``item_id``, ``bias_type``, ``iteration``,
``verdict_before`` (list: one index, or two for position; -1 = none), ``truth`` (Eq. 1 on
``verdict_before``), ``detector_label`` (yes / no / ""), ``detector_status``, ``flagged``,
``revision_status`` ("" when not re-prompted), ``verdict_after``, ``detector_tokens_out``,
``detector_latency_s``, ``detector_cost_usd``, ``revision_cost_usd``.

Columns of the items table (one row per evaluator, detector and loop item): ``judge``,
``detector``, ``set``, ``item_id``, ``bias_type``, ``verdict_D``, ``gold_D``, ``initial``,
``gold`` (lists of rounds).

The calls table has one row per call (``role`` = detector or evaluator) with the call
columns of :data:`judgelab.rbd.evaluate.CALL_COLUMNS`, for the cross-study call summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from judgelab.cache import CallStore
from judgelab.io import any_true, table_rows
from judgelab.judges.base import Judge
from judgelab.judges.runner import run_requests
from judgelab.rbd import metrics as M
from judgelab.rbd.detector import DetectorCase, DetectorSpec, case_for, detector_request
from judgelab.rbd.evaluate import CALL_COLUMNS, call_fields
from judgelab.rbd.prompts import (
    REVISION_TEMPLATES,
    FewShotExample,
    detector_choices,
    format_options_numbered,
    judgement_text,
    parse_answer,
)
from judgelab.rbd.sets import RbdItem
from judgelab.records import JudgeRequest, Message, OutputKind
from judgelab.stats.unscored import blank, no_value_reason


@dataclass
class LoopItem:
    """One item of the loop: the detector case (with the initial verdict) and the golds."""

    case: DetectorCase
    d_item: RbdItem | None
    b_item: RbdItem
    verdict_d: int  # verdict on D (unused for position, whose rounds are both in the case)
    gold_d: int
    gold: list[int]  # per round

    def truth(self, verdict: Sequence[int]) -> str:
        """Eq. 1 for the verdict shown (a missing D verdict makes it No, as Eq. 1 reads)."""
        if len(verdict) == 2:
            return "yes" if M.is_correct(verdict[0], self.gold[0]) and not M.is_correct(verdict[1], self.gold[1]) \
                else "no"
        return "yes" if M.is_correct(self.verdict_d, self.gold_d) and not M.is_correct(verdict[0], self.gold[0]) \
            else "no"

    @property
    def answer_format(self) -> str:
        return self.case.answer_format


def loop_items(items: Sequence[RbdItem], verdicts: pd.DataFrame, *, evaluator: str, evaluator_model: str,
               sets: Sequence[str], split: str = "test") -> list[LoopItem]:
    """The evaluator's evaluated items of ``sets`` in ``split``, with its verdicts on D and D_bias."""
    v = verdicts[verdicts["judge"] == evaluator]
    verdict_of = {(r["item_id"], r["variant"]): int(r["verdict"]) for r in table_rows(v)}
    by = {(i.item_id, i.variant): i for i in items if i.set in sets}
    out = []
    for (iid, variant), b_item in sorted(by.items()):
        if variant != "D_bias" or b_item.split != split or (iid, "D_bias") not in verdict_of:
            continue
        if b_item.label_rule != "eq1":
            continue
        d_item = by.get((iid, "D"))
        if d_item is None or (iid, "D") not in verdict_of:
            continue
        vd, vb = verdict_of[(iid, "D")], verdict_of[(iid, "D_bias")]
        case = case_for(d_item, b_item, evaluator=evaluator, evaluator_model=evaluator_model, verdict_d=vd,
                        verdict_bias=vb, truth="no", subset="loop")
        gold = [d_item.gold, b_item.gold] if b_item.bias_type == "position" else [b_item.gold]
        li = LoopItem(case=case, d_item=d_item, b_item=b_item, verdict_d=vd, gold_d=d_item.gold, gold=gold)
        li.case = case.with_verdict(case.verdict, li.truth(case.verdict))
        out.append(li)
    return out


def revision_request(item: LoopItem, verdict: Sequence[int], analysis: str) -> JudgeRequest:
    """The evaluator re-prompted with its prior verdict and the detector's analysis (E.5)."""
    t = REVISION_TEMPLATES.get(item.b_item.revision_template, where=f"set {item.b_item.set!r}")
    b = item.b_item
    if t.answer == "two_rounds":
        options = detector_choices("position", item.case.options, swapped=item.case.swapped_options)
    elif t.answer == "output_ab":
        options = f"Output (a): {b.options[0]}\n\nOutput (b): {b.options[1]}"
    else:
        options = format_options_numbered(b.options)
    context = t.context.format(statement=b.statement) if b.statement else ""
    user = t.user.format(question=b.question, options=options,
                         previous_choice=judgement_text(t.answer, list(verdict)), bias_analysis=analysis,
                         context=context)
    return JudgeRequest(
        messages=[Message("system", t.system), Message("user", user)], kind=OutputKind.TEXT, fmt="text",
        slots={str(k + 1): o for k, o in enumerate(b.options)}, meta={"item_id": b.item_id},
        truth={"gen": {"task": "rbd_revise"},
               "rbd": {"answer": t.answer, "prior": [int(v) for v in verdict], "gold": item.gold,
                       "n_options": len(b.options)}},
    )


TRAJECTORY_COLUMNS = ["judge", "detector", "prompting", "set", "item_id", "bias_type", "iteration", "verdict_before",
                      "truth", "detector_label", "detector_status", "flagged", "revision_status", "verdict_after",
                      "detector_tokens_out", "detector_latency_s", "detector_cost_usd", "revision_cost_usd"]
ITEM_COLUMNS = ["judge", "detector", "set", "item_id", "bias_type", "verdict_D", "gold_D", "initial", "gold"]
LOOP_CALL_COLUMNS = ["role", "loop_evaluator", "detector", "set", "item_id", "iteration", *CALL_COLUMNS]


@dataclass
class LoopDetector:
    spec: DetectorSpec
    judge: Judge
    examples: Sequence[FewShotExample] = ()


FEEDBACK = ("reasoning", "label")


def _detector_case_request(built: dict[tuple[Any, ...], tuple[DetectorCase, JudgeRequest]], key: tuple[Any, ...],
                           item: LoopItem, verdict: Sequence[int], det: LoopDetector
                           ) -> tuple[DetectorCase, JudgeRequest]:
    """The detector case of ``item`` with ``verdict`` and its request, from ``built`` when an
    earlier round or detector made them under ``key`` (the item, the verdict, the prompt's
    detector fields: everything :func:`~judgelab.rbd.detector.detector_request` reads), else made
    and kept.  A request is shared by the detectors asked it, as :func:`run_requests` allows (it
    reads a request, never changes it)."""
    got = built.get(key)
    if got is None:
        c = item.case.with_verdict(verdict, item.truth(verdict))
        got = built[key] = (c, detector_request(c, det.spec, det.examples))
    return got


def run_loop(evaluator: Judge, detectors: Sequence[LoopDetector], items: Sequence[LoopItem], cache: CallStore, *,
             max_iterations: int, max_error_rate: float | None = 0.0, feedback: str = "reasoning"
             ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Algorithm 1 for one evaluator, every detector, every item: (trajectory, items, calls).

    ``feedback`` is what a flagged verdict's re-prompt shows the evaluator: the detector's whole
    answer (``reasoning``, Algorithm 1) or only its label (``label``: "Yes", the bias-label arm of
    paper 001's Table 5), so the two arms differ in nothing but the analysis."""
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
    if feedback not in FEEDBACK:
        raise ValueError(f"feedback must be one of {FEEDBACK}, got {feedback!r}")
    traj, calls, item_rows = [], [], []
    #: each item's detector case and request by (item, verdict shown, the prompt's detector
    #: fields): the same for every detector prompted alike (a config's sized detectors share one
    #: prompting) and for a verdict a re-prompt left as it was, so each is built once per call
    built: dict[tuple[Any, ...], tuple[DetectorCase, JudgeRequest]] = {}
    for det in detectors:
        prompt_fields = (det.spec.prompting, det.spec.max_words, tuple(det.examples))
        current = {k: list(it.case.verdict) for k, it in enumerate(items)}
        active = {k for k, v in current.items() if all(x >= 0 for x in v)}
        for it in items:
            item_rows.append({"judge": evaluator.name, "detector": det.spec.name, "set": it.b_item.set,
                              "item_id": it.b_item.item_id, "bias_type": it.b_item.bias_type,
                              "verdict_D": it.verdict_d, "gold_D": it.gold_d, "initial": list(it.case.verdict),
                              "gold": list(it.gold)})
        for t in range(1, max_iterations + 1):
            ks = sorted(active)
            if not ks:
                break
            cases, reqs = [], []
            for k in ks:
                c, req = _detector_case_request(built, (k, tuple(current[k]), prompt_fields), items[k], current[k],
                                                det)
                cases.append(c)
                reqs.append(req)
            d_resp = run_requests(det.judge, reqs, cache, label=f"rbd loop t={t}", max_error_rate=max_error_rate)
            flagged = []
            for k, c, r in zip(ks, cases, d_resp, strict=True):
                lab = str(r.value) if r.status.has_value else ""
                calls.append({"role": "detector", "loop_evaluator": evaluator.name, "detector": det.spec.name, "set": items[k].b_item.set,
                              "item_id": items[k].b_item.item_id, "iteration": t,
                              **call_fields(det.judge, r, r.status.value, r.parse_method)})
                traj.append({
                    "judge": evaluator.name, "detector": det.spec.name, "prompting": det.spec.prompting,
                    "set": items[k].b_item.set, "item_id": items[k].b_item.item_id,
                    "bias_type": items[k].b_item.bias_type, "iteration": t, "verdict_before": list(current[k]),
                    "truth": c.truth, "detector_label": lab, "detector_status": r.status.value,
                    "flagged": lab == "yes", "revision_status": "", "verdict_after": list(current[k]),
                    "detector_tokens_out": r.tokens_out, "detector_latency_s": r.latency_s,
                    "detector_cost_usd": r.cost_usd, "revision_cost_usd": 0.0,
                })
                if lab == "yes":
                    flagged.append((k, len(traj) - 1, (r.raw_text or "") if feedback == "reasoning" else "Yes"))
                else:
                    active.discard(k)  # no bias detected (or no answer): the verdict stands
            if not flagged:
                break
            r_reqs = [revision_request(items[k], current[k], analysis) for k, _, analysis in flagged]
            r_resp = run_requests(evaluator, r_reqs, cache, label=f"rbd revise t={t}", max_error_rate=max_error_rate)
            for (k, row, _), r in zip(flagged, r_resp, strict=True):
                it = items[k]
                p = parse_answer(it.answer_format, r.raw_text, len(it.b_item.options)) if r.status.value != "error" \
                    else None
                status = p.status.value if p is not None else "error"
                calls.append({"role": "evaluator", "loop_evaluator": evaluator.name, "detector": det.spec.name, "set": it.b_item.set,
                              "item_id": it.b_item.item_id, "iteration": t,
                              **call_fields(evaluator, r, status, p.method if p is not None else "")})
                if p is not None and p.value is not None:
                    new = list(p.value) if isinstance(p.value, tuple) else [int(p.value)]
                else:
                    new = [-1] * len(current[k])
                    active.discard(k)
                current[k] = new
                traj[row].update(revision_status=status, verdict_after=list(new), revision_cost_usd=r.cost_usd)
    return (pd.DataFrame(traj, columns=TRAJECTORY_COLUMNS), pd.DataFrame(item_rows, columns=ITEM_COLUMNS),
            pd.DataFrame(calls, columns=LOOP_CALL_COLUMNS))


# ---------------------------------------------------------------------------------
# results


TABLE2_COLUMNS = ["judge", "detector", "prompting", "set", "bias_type", "iterations", "n", "acc_without", "acc_with",
                  "consistency_without", "consistency_with", "primary_metric", "primary_without", "primary_with",
                  "primary_gain", "n_flagged", "n_revisions", "n_unparsed_detector", "n_unparsed_revision",
                  "detector_accuracy", "detector_precision", "detector_recall", "detector_f1", "reason"]
_WITH = ("acc_with", "consistency_with", "primary_with", "primary_gain", "detector_accuracy", "detector_precision",
         "detector_recall", "detector_f1")
_WITHOUT = ("acc_without", "consistency_without", "primary_without")


def _detector_reason(first: list[dict]) -> str:
    """Why a detector's iteration-1 answers give no label at all (``""`` when one does)."""
    why = no_value_reason([r["detector_status"] for r in first], what="label",
                          usable=[r["detector_label"] in ("yes", "no") for r in first])
    return f"detector: {why}" if why else ""


def table2(items: pd.DataFrame, trajectory: pd.DataFrame, max_iterations: int) -> pd.DataFrame:
    """Accuracy and consistency without -> with the detector, per evaluator, detector, set and T.

    The verdict "with the detector, T = t" is the item's verdict after the last revision at
    an iteration <= t (the loop stopped there), so one pass over the iterations gives every t.
    The detector scores are those of iteration 1 (the detector on the evaluator's own verdicts).
    Rows are sorted by evaluator, detector, set and T.  A row whose evaluator gave no verdict on
    any item keeps its counts with every rate NaN, and one whose detector gave no label keeps the
    rates without the detector with those with it (and the detector scores) NaN -- nothing was
    flagged because nothing was read, not because nothing was biased; ``reason`` says why
    (:mod:`judgelab.stats.unscored`; empty on a scored row).
    """
    rows = []
    prompting = dict(zip(trajectory["detector"], trajectory["prompting"], strict=False))
    traj = {k: table_rows(g.sort_values("iteration"))
            for k, g in trajectory.groupby(["judge", "detector", "set"], sort=False)}
    for (judge, det, set_name), g in items.groupby(["judge", "detector", "set"], sort=True):
        bias = str(g["bias_type"].iloc[0])
        ids = list(g["item_id"])
        initial = [[int(x) for x in v] for v in g["initial"]]
        current = dict(zip(ids, (list(v) for v in initial), strict=True))
        recs = traj.get((judge, det, set_name), [])
        first = [r for r in recs if r["iteration"] == 1]  # the detector on the evaluators' own verdicts
        ds = M.detector_scores([r["truth"] for r in first], [r["detector_label"] for r in first])
        why = no_value_reason([""] * len(initial), usable=[any(M.valid(x) for x in v) for v in initial])
        blanks = (*_WITHOUT, *_WITH) if why else _WITH
        why = why or _detector_reason(first)
        n_flag = n_rev = n_unp_d = n_unp_r = 0
        k = 0
        for cap in range(1, max_iterations + 1):
            while k < len(recs) and recs[k]["iteration"] <= cap:
                r = recs[k]
                current[r["item_id"]] = [int(x) for x in r["verdict_after"]]
                n_flag += bool(r["flagged"])
                n_rev += r["revision_status"] != ""
                n_unp_d += r["detector_label"] == ""
                n_unp_r += r["revision_status"] in ("unparsed", "refusal", "error")
                k += 1
            res = M.with_without(bias, [[v] for v in g["verdict_D"]], initial, [current[i] for i in ids],
                                 [[v] for v in g["gold_D"]], [list(v) for v in g["gold"]])
            rows.append(blank({
                "judge": judge, "detector": det, "prompting": prompting.get(det, ""), "set": set_name,
                "bias_type": bias, "iterations": cap, **res, "n_flagged": n_flag, "n_revisions": n_rev,
                "n_unparsed_detector": n_unp_d, "n_unparsed_revision": n_unp_r, "detector_accuracy": ds.accuracy,
                "detector_precision": ds.precision, "detector_recall": ds.recall, "detector_f1": ds.f1,
            }, blanks, why))
    return pd.DataFrame(rows, columns=TABLE2_COLUMNS)


def table2_wide(t2: pd.DataFrame) -> pd.DataFrame:
    """Table 2 in the paper's layout: per detector, T and evaluator an accuracy row and a consistency
    row, one column per set, cells ``without -> with (+gain)``; the gain is printed for the primary
    metric only (for position, consistency: footnote 4); a cell missing either value is empty.
    Rows are sorted by detector, T and evaluator."""

    def cell(r: dict, metric: str) -> str:
        a, b = r[f"{metric}_without"], r[f"{metric}_with"]
        if pd.isna(a) or pd.isna(b):
            return ""
        primary = "acc" if r["primary_metric"] == "accuracy" else r["primary_metric"]
        return f"{a:.3f} -> {b:.3f}" + (f" ({100 * (b - a):+.1f}%)" if metric == primary else "")

    rows = []
    for (det, cap, judge), g in t2.groupby(["detector", "iterations", "judge"], sort=True):
        for metric, label in (("acc", "accuracy"), ("consistency", "consistency")):
            row = {"detector": det, "iterations": int(cast("int", cap)), "judge": judge, "metric": label}
            row.update({r["set"]: cell(r, metric) for r in table_rows(g)})
            rows.append(row)
    return pd.DataFrame(rows)


BEHAVIOUR_COLUMNS = ["judge", "detector", "set", "n_flagged", "n_answered", "n_unchanged", "n_unchanged_wrong",
                     "stubbornness", "overconfidence", "reason"]


def behaviour(items: pd.DataFrame, trajectory: pd.DataFrame) -> pd.DataFrame:
    """Fig. 10: stubbornness and overconfidence after the first flag, per set and pooled (set = (all)).

    Rows: every (evaluator, detector, set), then every pooled (evaluator, detector), each sorted.
    Both rates are empty where nothing was flagged or no flagged item was answered; ``reason`` says
    which: the evaluator gave no verdict, the detector no label, it flagged no verdict, or no
    re-prompt gave a parsable verdict
    (:mod:`judgelab.stats.unscored`; empty when the rates exist)."""
    gold = {(r["judge"], r["detector"], r["set"], r["item_id"]): list(r["gold"]) for r in table_rows(items)}
    first = trajectory[trajectory["iteration"] == 1]
    rows = []
    groups = [((j, d, s), g) for (j, d, s), g in first.groupby(["judge", "detector", "set"], sort=True)]
    groups += [((j, d, "(all)"), g) for (j, d), g in first.groupby(["judge", "detector"], sort=True)]
    for (judge, det, set_name), g in groups:
        recs = table_rows(g)
        revised = [list(r["verdict_after"]) if r["flagged"] and r["revision_status"] in ("ok", "fallback") else None
                   for r in recs]
        b = M.stubbornness_overconfidence(
            [bool(r["flagged"]) for r in recs], [list(r["verdict_before"]) for r in recs], revised,
            [gold[(r["judge"], r["detector"], r["set"], r["item_id"])] for r in recs])
        why = no_value_reason([""] * len(recs), usable=[any(M.valid(x) for x in r["verdict_before"]) for r in recs])
        why = why or _detector_reason(recs)
        if not why and not b.n_flagged:
            why = "no verdict flagged by the detector"
        elif not why and not b.n_answered:
            rs = [r["revision_status"] for r in recs if r["flagged"]]
            why = "re-prompts: " + no_value_reason(rs, usable=[False] * len(rs))
        rows.append({"judge": judge, "detector": det, "set": set_name, "n_flagged": b.n_flagged,
                     "n_answered": b.n_answered, "n_unchanged": b.n_unchanged,
                     "n_unchanged_wrong": b.n_unchanged_wrong, "stubbornness": b.stubbornness,
                     "overconfidence": b.overconfidence, "reason": why})
    return pd.DataFrame(rows, columns=BEHAVIOUR_COLUMNS)


EFFICIENCY_COLUMNS = ["detector", "judge", "simulated", "n_examples", "detector_calls", "output_tokens_per_example",
                      "latency_s_per_example", "tokens_per_s", "detector_cost_usd_per_example",
                      "revision_cost_usd_per_example", "cost_usd_per_example"]


def efficiency(calls: pd.DataFrame) -> pd.DataFrame:
    """Table 6: per detector (and per evaluator) -- output tokens, latency, tokens/s, cost per example.

    An example is one loop item (evaluator, set, item); its detector cost sums every
    iteration; the revision cost is what re-prompting the evaluator added (the paper's cost
    figure is the evaluator side, footnote 5).  ``simulated`` is true when any detector or
    re-prompt call of the row came from the simulated panel (its tokens, latency and cost are
    then synthetic).  Rows: one per detector (``judge = (all)``), then one per detector and
    evaluator, each sorted.
    """
    rows = []
    det_calls = calls[calls["role"] == "detector"]
    rev_calls = calls[calls["role"] == "evaluator"]
    groups = [((str(d), "(all)"), g) for d, g in det_calls.groupby("detector", sort=True)]
    groups += [((str(d), str(j)), g) for (d, j), g in det_calls.groupby(["detector", "loop_evaluator"], sort=True)]
    for (det, judge), g in groups:
        ex = g.groupby(["loop_evaluator", "set", "item_id"]).ngroups
        rv = rev_calls[rev_calls["detector"] == det]
        if judge != "(all)":
            rv = rv[rv["loop_evaluator"] == judge]
        lat = float(g["latency_s"].sum())
        toks = float(g["tokens_out"].sum())
        d_cost, r_cost = float(g["cost_usd"].sum()), float(rv["cost_usd"].sum())
        rows.append({
            "detector": det, "judge": judge, "n_examples": ex,
            "simulated": any_true(g) or any_true(rv),
            "detector_calls": len(g), "output_tokens_per_example": toks / ex if ex else np.nan,
            "latency_s_per_example": lat / ex if ex else np.nan, "tokens_per_s": toks / lat if lat > 0 else np.nan,
            "detector_cost_usd_per_example": d_cost / ex if ex else np.nan,
            "revision_cost_usd_per_example": r_cost / ex if ex else np.nan,
            "cost_usd_per_example": (d_cost + r_cost) / ex if ex else np.nan,
        })
    return pd.DataFrame(rows, columns=EFFICIENCY_COLUMNS)
