"""Evaluators on D and D_bias, bias labels (Eq. 1) and the bias-existence summary (Fig. 3).

Every evaluator answers every evaluated item of every set, in both variants, with the
paper's evaluator prompt (:data:`judgelab.rbd.prompts.EVAL_TEMPLATES`): pairwise items as
pairwise requests answered ``Output (a)``/``Output (b)`` (the simulated panel reads both
options, so its planted position, verbosity and bandwagon biases act on them),
multiple-choice items as text requests answered with an option number.

Columns of a verdict table (one row per item, variant and evaluator):

=================== ================================================================
``set``, ``item_id``, ``base_id``, ``variant``, ``split``, ``bias_type``  from the set
``answer_format``   ``output_ab`` or ``number``
``judge``, ``backend``, ``model``, ``family``, ``simulated``, ``judge_seed``  the evaluator
``template``        evaluator prompt name
``verdict``         0-based option index, -1 when there is none
``gold``            0-based index of the positive option
``correct``         verdict == gold
``status``          ok / fallback / unparsed / refusal / error (a pairwise tie: unparsed)
``parse_method``, ``raw_text``, ``tokens_in``, ``tokens_out``, ``cost_usd``,
``latency_s``, ``key``   the call, as in every verdict table
=================== ================================================================

Columns of the labels table (one row per set, evaluator and item): ``set``, ``item_id``,
``judge``, ``split``, ``bias_type``, ``answer_format``, ``label_rule``, ``verdict_D``,
``verdict_bias``, ``gold_D``, ``gold_bias``, ``correct_D``, ``correct_bias``, ``status_D``,
``status_bias`` and ``b`` (Eq. 1: ``yes``/``no``; ``""`` when a verdict is missing;
``no`` for every answered item of a diagnostic set).

Columns of the summary (one row per set and evaluator, plus ``judge = (all)`` pooled
rows): ``n_items``, ``acc_D``, ``acc_D_bias``, ``consistency``, ``acc_drop``,
``n_labelled``, ``n_biased``, ``bias_share`` with its Wilson 95% interval
(``bias_ci_low``/``bias_ci_high``), ``n_missing_D``, ``n_missing_bias``, ``simulated``,
``reason``: an evaluator with no parsed verdict on a set keeps its row, the accuracies and
shares NaN (a missing verdict would count as wrong: 0 %), ``reason`` saying why
(:mod:`judgelab.stats.unscored`; empty on a scored row).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from judgelab.cache import CallStore
from judgelab.io import table_rows
from judgelab.judges.base import Judge
from judgelab.judges.runner import run_requests
from judgelab.rbd import metrics as M
from judgelab.rbd.prompts import EVAL_TEMPLATES, ICL_DEBIAS_RULE, eval_user_prompt, parse_choice
from judgelab.rbd.sets import RbdItem
from judgelab.records import CallStatus, JudgeRequest, JudgeResponse, Message, OutputKind

CALL_COLUMNS = ["judge", "backend", "model", "family", "simulated", "judge_seed", "status", "parse_method",
                "raw_text", "tokens_in", "tokens_out", "cost_usd", "latency_s", "key"]
VERDICT_COLUMNS = ["set", "item_id", "base_id", "variant", "split", "bias_type", "answer_format", "template",
                   "verdict", "gold", "correct", *CALL_COLUMNS]


def evaluator_request(item: RbdItem, *, icl: bool = False) -> JudgeRequest:
    """The evaluator's request for one item (pairwise or multiple choice); ``icl`` appends the
    in-context debiasing instruction (:data:`judgelab.rbd.prompts.ICL_DEBIAS_RULE`, Table 4's
    prompt baseline) to the system prompt."""
    t = EVAL_TEMPLATES.get(item.eval_template, where=f"set {item.set!r}")
    user = eval_user_prompt(t, question=item.question, options=item.options, statement=item.statement)
    msgs = [Message("system", t.system + ("\n\n" + ICL_DEBIAS_RULE if icl else "")), Message("user", user)]
    meta = {"set": item.set, "item_id": item.item_id, "variant": item.variant}
    if t.answer == "output_ab":
        return JudgeRequest(messages=msgs, kind=OutputKind.PAIRWISE, fmt="output_ab",
                            slots={"A": item.options[0], "B": item.options[1]},
                            truth={"gold": "AB"[item.gold]}, meta=meta)
    return JudgeRequest(messages=msgs, kind=OutputKind.TEXT, fmt="text",
                        slots={str(k + 1): o for k, o in enumerate(item.options)},
                        truth={"gen": {"task": "rbd_choice"}, "rbd": {"gold": item.gold}}, meta=meta)


def read_verdict(resp: JudgeResponse, answer: str, n_options: int) -> tuple[int, str, str]:
    """``(verdict index or -1, status, parse method)`` of an evaluator answer."""
    if resp.status is CallStatus.ERROR:
        return -1, resp.status.value, resp.parse_method
    if answer == "output_ab":
        if resp.status.has_value and resp.value in ("A", "B"):
            return (0 if resp.value == "A" else 1), resp.status.value, resp.parse_method
        if resp.value == "tie":
            return -1, CallStatus.UNPARSED.value, "tie"
        return -1, resp.status.value, resp.parse_method
    p = parse_choice(resp.raw_text, n_options)
    return (int(p.value) if p.value is not None else -1), p.status.value, p.method


def call_fields(judge: Judge, resp: JudgeResponse, status: str, method: str) -> dict:
    return {
        "judge": judge.name, "backend": judge.spec.backend, "model": judge.spec.model, "family": judge.spec.family,
        "simulated": judge.simulated, "judge_seed": int(judge.spec.sampling.get("seed", 0) or 0), "status": status,
        "parse_method": method, "raw_text": resp.raw_text or "", "tokens_in": resp.tokens_in,
        "tokens_out": resp.tokens_out, "cost_usd": resp.cost_usd, "latency_s": resp.latency_s, "key": resp.key,
    }


def evaluate_items(judge: Judge, items: Sequence[RbdItem], cache: CallStore, *, label: str | None = None,
                   max_error_rate: float | None = 0.0, icl: bool = False,
                   requests: Sequence[JudgeRequest] | None = None) -> pd.DataFrame:
    """Ask ``judge`` about every item (each variant is one request); the verdict table
    (``template`` names the ICL arm ``<template>+icl``).  ``requests``: the items'
    :func:`evaluator_request` (with ``icl``), when the caller has them already (a plan's evaluators
    judge the same items: :func:`judgelab.rbd.calls.evaluate`)."""
    reqs = [evaluator_request(i, icl=icl) for i in items] if requests is None else list(requests)
    if len(reqs) != len(items):
        raise ValueError(f"{len(reqs)} requests for {len(items)} items")
    responses = run_requests(judge, reqs, cache, label=label, max_error_rate=max_error_rate)
    rows = []
    for item, resp in zip(items, responses, strict=True):
        t = EVAL_TEMPLATES.get(item.eval_template)
        v, status, method = read_verdict(resp, t.answer, len(item.options))
        rows.append({
            "set": item.set, "item_id": item.item_id, "base_id": item.base_id, "variant": item.variant,
            "split": item.split, "bias_type": item.bias_type, "answer_format": item.answer_format,
            "template": item.eval_template + ("+icl" if icl else ""), "verdict": v, "gold": item.gold, "correct": v == item.gold,
            **call_fields(judge, resp, status, method),
        })
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def select_items(items: Sequence[RbdItem], max_items: int | None) -> list[RbdItem]:
    """The evaluation subsample: the ``max_items`` items (both variants) with the smallest order_key."""
    keys = sorted({(i.order_key, i.item_id) for i in items})
    keep = {iid for _, iid in (keys if max_items is None else keys[:max_items])}
    return [i for i in items if i.item_id in keep]


LABEL_COLUMNS = ["set", "item_id", "judge", "split", "bias_type", "answer_format", "label_rule", "verdict_D",
                 "verdict_bias", "gold_D", "gold_bias", "correct_D", "correct_bias", "status_D", "status_bias", "b"]


def bias_labels(verdicts: pd.DataFrame, label_rules: dict[str, str]) -> pd.DataFrame:
    """b_i (Eq. 1) per set, evaluator and item, from the D and D_bias verdicts.

    ``label_rules`` maps a set to ``eq1`` or ``all_no`` (diagnostic sets: only D_bias exists
    and following the cue is not a bias).
    """
    rows = []
    for (set_name, judge), g in verdicts.groupby(["set", "judge"], sort=True):
        rule = label_rules.get(str(set_name), "eq1")
        # each variant's rows by item (one per item), as records: a row lookup per item in pandas
        # (.loc) costs more than the rest of this loop together
        d = {r["item_id"]: r for r in table_rows(g[g["variant"] == "D"])}
        b = {r["item_id"]: r for r in table_rows(g[g["variant"] == "D_bias"])}
        if len(d) + len(b) != int(g["variant"].isin(["D", "D_bias"]).sum()):
            raise ValueError(f"set {set_name}, judge {judge}: an item has two verdicts of one variant")
        for iid in sorted(b):
            rb = b[iid]
            vb = int(rb["verdict"])
            if rule == "all_no":
                vd, gd, sd, lab = -1, -1, "", "no" if vb >= 0 else ""
            else:
                if iid not in d:
                    continue
                rd = d[iid]
                vd, gd, sd = int(rd["verdict"]), int(rd["gold"]), str(rd["status"])
                lab = M.bias_label(vd, vb, gd, int(rb["gold"]))
            rows.append({
                "set": set_name, "item_id": iid, "judge": judge, "split": rb["split"], "bias_type": rb["bias_type"],
                "answer_format": rb["answer_format"], "label_rule": rule, "verdict_D": vd, "verdict_bias": vb,
                "gold_D": gd, "gold_bias": int(rb["gold"]), "correct_D": M.is_correct(vd, gd),
                "correct_bias": M.is_correct(vb, int(rb["gold"])), "status_D": sd, "status_bias": str(rb["status"]),
                "b": lab,
            })
    return pd.DataFrame(rows, columns=LABEL_COLUMNS)


SUMMARY_COLUMNS = ["set", "bias_type", "judge", "simulated", "n_items", "acc_D", "acc_D_bias", "consistency",
                   "acc_drop", "n_labelled", "n_biased", "bias_share", "bias_ci_low", "bias_ci_high", "n_missing_D",
                   "n_missing_bias", "reason"]
_SCORED = ("acc_D", "acc_D_bias", "consistency", "acc_drop", "bias_share", "bias_ci_low", "bias_ci_high")


def _summary_row(set_name: str, judge: str, g: pd.DataFrame, simulated: bool) -> dict:
    from judgelab.stats.intervals import wilson_interval  # slow import (statsmodels): only where it is used
    from judgelab.stats.unscored import blank, no_value_reason

    eq1 = (g["label_rule"] == "eq1").all()
    labelled = g[g["b"] != ""]
    n_b = int((labelled["b"] == "yes").sum())
    lo, hi = wilson_interval(n_b, len(labelled))
    acc_d = float(g["correct_D"].mean()) if eq1 else np.nan
    acc_b = float(g["correct_bias"].mean())
    statuses = [*g["status_bias"], *(g["status_D"] if eq1 else [])]
    usable = np.concatenate([g["verdict_bias"].to_numpy() >= 0, g["verdict_D"].to_numpy() >= 0 if eq1 else []])
    return blank({
        "set": set_name, "bias_type": g["bias_type"].iloc[0], "judge": judge, "simulated": simulated,
        "n_items": len(g), "acc_D": acc_d, "acc_D_bias": acc_b,
        "consistency": float((g["correct_D"] & g["correct_bias"]).mean()) if eq1 else np.nan,
        "acc_drop": acc_d - acc_b, "n_labelled": len(labelled), "n_biased": n_b,
        "bias_share": n_b / len(labelled) if len(labelled) else np.nan, "bias_ci_low": float(lo),
        "bias_ci_high": float(hi), "n_missing_D": int((g["verdict_D"] < 0).sum()) if eq1 else 0,
        "n_missing_bias": int((g["verdict_bias"] < 0).sum()),
    }, _SCORED, no_value_reason(statuses, usable=usable))


def evaluation_summary(labels: pd.DataFrame, simulated: dict[str, bool]) -> pd.DataFrame:
    """Fig. 3: accuracy on D and D_bias, consistency and share of biased examples."""
    rows = []
    for (set_name, judge), g in labels.groupby(["set", "judge"], sort=True):
        rows.append(_summary_row(str(set_name), str(judge), g, bool(simulated.get(str(judge), False))))
    for set_name, g in labels.groupby("set", sort=True):
        rows.append(_summary_row(str(set_name), "(all)", g, any(simulated.get(str(j), False) for j in g["judge"])))
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
