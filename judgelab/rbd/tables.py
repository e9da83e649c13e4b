"""Paper 001's Tables 3, 4, 5 and Fig. 6 from the loop's outputs (rule ``rbd_paper_tables``).

Every number is a share of the same loop items (the test split of a set, as Table 2), read
per item so each effect sits beside its control and comes with a paired interval:

* **Table 3** (external benchmarks): accuracy on the LLMBar / JudgeBench sets
  (:data:`judgelab.rbd.sets.EXTERNAL_SETS`) without and with each configured detector
  (paper: RBD-8B and RBD-14B), per evaluator and averaged over evaluators;
* **Table 4** (baselines, one evaluator): its verdicts as they are (Vanilla), under the
  in-context debiasing prompt (Prompt), the fine-tuned judges' own verdicts (paper:
  Prometheus2-8x7B, Skywork-LLaMA-3.1-70B) and the evaluator with the detector (Ours);
* **Table 5** (feedback at inference): the evaluator's verdicts as they are (Original), after
  the loop re-prompted it with the detector's label only (Bias Label) and with its whole
  reasoning (Reasoning);
* **Fig. 6** (detector size): the accuracy and consistency gains of each size's detector,
  averaged over evaluators and the four bias sets.

The metric is the loop's (:func:`judgelab.rbd.metrics.with_without`): accuracy on D_bias, for
position the swapped order; consistency, correct on D and D_bias (for position: both orders).
Tables 4 and 5 use the paper's "accuracy, except consistency for position" (footnote 4).  The
verdict "with the detector" is the item's verdict after the last revision at an iteration <= T
(``T`` = ``rbd.loop.max_iterations``), as Table 2 reads it.

Intervals (95 %): a share has the Wilson interval (:func:`judgelab.stats.intervals.wilson_interval`);
a difference of two shares on the same items (a gain, Ours minus a baseline, reasoning minus
label) is the mean of the per-item differences with Student's t interval (scipy's
``ttest_1samp(...).confidence_interval``), items being the independent units.  An average over
evaluators (Table 3's AVERAGE rows) first averages each item over the evaluators, so an item
counts once however many evaluators judged it; Fig. 6 averages the (evaluator, bias set) cells'
gains with a t interval over cells.  Differences without any variance (every item's difference
equal, or a single unit) have no interval: the bounds are empty and ``reason`` says why, as a
p-value would be meaningless there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from judgelab.io import table_rows
from judgelab.rbd import metrics as M
from judgelab.rbd.prompts import BIAS_TYPES
from judgelab.rbd.sets import EXTERNAL_BENCHMARKS, EXTERNAL_SETS

NO_VARIANCE = "no variance in the paired differences: no interval"


# ---------------------------------------------------------------------------------
# per-item outcomes


def final_verdicts(items: pd.DataFrame, trajectory: pd.DataFrame, max_iterations: int) -> pd.DataFrame:
    """The loop items with their verdict before (``initial``) and after the loop at T
    (``final``: the last revision at an iteration <= T; the initial verdict when never revised)."""
    out = items.copy()
    last: dict[tuple, list[int]] = {}
    t = trajectory[trajectory["iteration"] <= max_iterations].sort_values("iteration", kind="stable")
    for judge, detector, set_name, item_id, after in t[
            ["judge", "detector", "set", "item_id", "verdict_after"]].itertuples(index=False):
        last[(judge, detector, set_name, item_id)] = [int(x) for x in after]
    keys = zip(out["judge"], out["detector"], out["set"], out["item_id"], strict=True)
    out["initial"] = [[int(x) for x in v] for v in out["initial"]]
    out["final"] = [last.get(k, v) for k, v in zip(keys, out["initial"], strict=True)]
    return out


def metric_of(bias_type: str) -> str:
    """Tables 4 and 5: accuracy, except consistency for position (paper 001, footnote 4)."""
    return M.PRIMARY_METRIC.get(bias_type, "accuracy")


def outcome(bias_type: str, metric: str, verdict: Sequence[int], gold: Sequence[int], verdict_d: int,
            gold_d: int) -> bool:
    """One item's 0/1 outcome under ``metric``, as :func:`judgelab.rbd.metrics.with_without` counts it."""
    if bias_type == "position":
        return M.rounds_correct(verdict, gold) if metric == "consistency" else M.is_correct(verdict[1], gold[1])
    if metric == "consistency":
        return M.is_correct(verdict_d, gold_d) and M.is_correct(verdict[0], gold[0])
    return M.is_correct(verdict[0], gold[0])


def _outcomes(rows: pd.DataFrame, column: str, metric: str) -> np.ndarray:
    return np.array([outcome(b, metric, v, g, int(vd), int(gd)) for b, v, g, vd, gd in zip(
        rows["bias_type"], rows[column], rows["gold"], rows["verdict_D"], rows["gold_D"], strict=True)], dtype=float)


# ---------------------------------------------------------------------------------
# statistics


def share(x: np.ndarray) -> tuple[float, float, float]:
    """(share, Wilson low, Wilson high) of 0/1 outcomes; NaNs for none."""
    from judgelab.stats.intervals import wilson_interval

    if not len(x):
        return np.nan, np.nan, np.nan
    lo, hi = wilson_interval(float(x.sum()), len(x))
    return float(x.mean()), lo, hi


def mean_difference(d: np.ndarray) -> tuple[float, float, float, str]:
    """(mean, t low, t high, reason) of paired differences; no interval without variance."""
    from scipy.stats import ttest_1samp

    d = np.asarray(d, dtype=float)
    if not len(d):
        return np.nan, np.nan, np.nan, "no items"
    m = float(d.mean())
    if len(d) < 2 or np.ptp(d) == 0:
        return m, np.nan, np.nan, NO_VARIANCE
    ci = ttest_1samp(d, 0.0).confidence_interval(0.95)
    return m, float(ci.low), float(ci.high), ""


def _join(*reasons: str) -> str:
    return "; ".join(dict.fromkeys(r for r in reasons if r))


def simulated_of(calls: pd.DataFrame, verdict_flags: Mapping[str, bool]) -> dict[tuple[str, str], bool]:
    """(evaluator, detector) -> whether any of its numbers is synthetic: the evaluator is
    simulated, or any detector or re-prompt call of its loop came from the simulated panel
    (a detector trained on a simulated teacher's traces is flagged so by the loop)."""
    out: dict[tuple[str, str], bool] = {}
    for (j, d), g in calls.groupby(["loop_evaluator", "detector"], sort=False):
        out[(str(j), str(d))] = bool(g["simulated"].astype(bool).any())
    return {k: v or bool(verdict_flags.get(k[0], False)) for k, v in out.items()}


def _sim(flags: Mapping[tuple[str, str], bool], verdict_flags: Mapping[str, bool], judge: str, det: str) -> bool:
    return bool(flags.get((judge, det), False) or verdict_flags.get(judge, False))


# ---------------------------------------------------------------------------------
# Table 3


TABLE3_COLUMNS = ["benchmark", "bias_type", "set", "judge", "detector", "iterations", "n", "acc_without",
                  "acc_without_ci_low", "acc_without_ci_high", "acc_with", "acc_with_ci_low", "acc_with_ci_high",
                  "gain", "gain_ci_low", "gain_ci_high", "simulated", "reason"]
AVERAGE = "AVERAGE"


def table3(final: pd.DataFrame, detectors: Sequence[str], max_iterations: int,
           sim_flags: Mapping[tuple[str, str], bool], verdict_flags: Mapping[str, bool]) -> pd.DataFrame:
    """Table 3: accuracy on each external set without and with each detector, per evaluator and
    averaged over evaluators (``judge = AVERAGE``); rows by benchmark, bias, detector, evaluator."""
    rows = []
    ext = final[final["set"].isin(list(EXTERNAL_SETS)) & final["detector"].isin(list(detectors))]
    for (set_name, det), g in ext.groupby(["set", "detector"], sort=True):
        bench, bias = EXTERNAL_SETS[str(set_name)]
        label = EXTERNAL_BENCHMARKS[bench][0]
        per_item = []
        for judge, gj in g.groupby("judge", sort=True):
            before, after = _outcomes(gj, "initial", "accuracy"), _outcomes(gj, "final", "accuracy")
            a0, a1 = share(before), share(after)
            gain, lo, hi, why = mean_difference(after - before)
            rows.append({"benchmark": label, "bias_type": bias, "set": set_name, "judge": judge, "detector": det,
                         "iterations": max_iterations, "n": len(gj), "acc_without": a0[0],
                         "acc_without_ci_low": a0[1], "acc_without_ci_high": a0[2], "acc_with": a1[0],
                         "acc_with_ci_low": a1[1], "acc_with_ci_high": a1[2], "gain": gain, "gain_ci_low": lo,
                         "gain_ci_high": hi, "simulated": _sim(sim_flags, verdict_flags, str(judge), str(det)),
                         "reason": why})
            per_item.append(pd.DataFrame({"item_id": gj["item_id"].to_numpy(), "b": before, "a": after}))
        items = pd.concat(per_item).groupby("item_id")[["b", "a"]].mean()  # each item once, over evaluators
        m0, m1 = (mean_difference(items[c].to_numpy()) for c in ("b", "a"))
        gain, lo, hi, why = mean_difference((items["a"] - items["b"]).to_numpy())
        rows.append({"benchmark": label, "bias_type": bias, "set": set_name, "judge": AVERAGE, "detector": det,
                     "iterations": max_iterations, "n": len(items), "acc_without": m0[0],
                     "acc_without_ci_low": m0[1], "acc_without_ci_high": m0[2], "acc_with": m1[0],
                     "acc_with_ci_low": m1[1], "acc_with_ci_high": m1[2], "gain": gain, "gain_ci_low": lo,
                     "gain_ci_high": hi,
                     "simulated": any(_sim(sim_flags, verdict_flags, str(j), str(det)) for j in g["judge"].unique()),
                     "reason": why})
    order = {b: k for k, b in enumerate(v[0] for v in EXTERNAL_BENCHMARKS.values())}
    df = pd.DataFrame(rows, columns=TABLE3_COLUMNS)
    if df.empty:
        return df
    df["_b"] = df["benchmark"].map(order)
    df["_j"] = df["judge"] == AVERAGE
    df["_d"] = df["detector"].map({d: k for k, d in enumerate(detectors)})
    return df.sort_values(["bias_type", "_b", "_d", "_j", "judge"], ascending=[False, True, True, True, True]) \
        .drop(columns=["_b", "_j", "_d"]).reset_index(drop=True)


def table3_wide(t3: pd.DataFrame) -> pd.DataFrame:
    """Table 3 in the paper's layout: rows bias type x evaluator (AVERAGE last), columns
    ``<benchmark> w/o`` then ``<benchmark> w/ <detector>`` per benchmark, accuracies to 3 places."""
    if t3.empty:
        return pd.DataFrame(columns=["bias_type", "judge"])
    cols: list[str] = []
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for r in table_rows(t3):
        wo, w = f"{r['benchmark']} w/o", f"{r['benchmark']} w/ {r['detector']}"
        for c in (wo, w):
            if c not in cols:
                cols.append(c)
        cell = cells.setdefault((r["bias_type"], r["judge"]), {})
        cell[wo] = f"{r['acc_without']:.3f}" if pd.notna(r["acc_without"]) else ""
        cell[w] = f"{r['acc_with']:.3f}" if pd.notna(r["acc_with"]) else ""
    keys = sorted(cells, key=lambda k: (k[0] != "verbosity", k[0], k[1] == AVERAGE, k[1]))
    return pd.DataFrame([{"bias_type": b, "judge": j, **{c: cells[(b, j)].get(c, "") for c in cols}}
                         for b, j in keys], columns=["bias_type", "judge", *cols])


# ---------------------------------------------------------------------------------
# Table 4


TABLE4_COLUMNS = ["bias_type", "set", "metric", "method", "kind", "judge", "n", "value", "ci_low", "ci_high",
                  "ours_minus", "ours_minus_ci_low", "ours_minus_ci_high", "simulated", "reason"]


def _baseline_outcomes(verdicts: pd.DataFrame, set_name: str, ids: Sequence[str], bias: str,
                       metric: str) -> pd.Series:
    """A baseline's per-item outcome on the loop items ``ids`` of a set, from its verdicts on D and
    D_bias (a missing verdict is wrong, as everywhere in the study)."""
    v = verdicts[verdicts["set"] == set_name]
    vv = {(item_id, variant): (int(verdict), int(gold)) for item_id, variant, verdict, gold in
          v[["item_id", "variant", "verdict", "gold"]].itertuples(index=False)}
    out = {}
    for iid in ids:
        if (iid, "D_bias") not in vv:
            continue
        vb, gb = vv[(iid, "D_bias")]
        vd, gd = vv.get((iid, "D"), (-1, 0))
        if bias == "position":
            out[iid] = outcome(bias, metric, [vd, vb], [gd, gb], -1, 0)
        else:
            out[iid] = outcome(bias, metric, [vb], [gb], vd, gd)
    return pd.Series(out, dtype=float)


def table4(final: pd.DataFrame, *, evaluator: str, detector: str, bias_sets: Mapping[str, str],
           baselines: Mapping[str, tuple[str, pd.DataFrame]], sim_flags: Mapping[tuple[str, str], bool],
           verdict_flags: Mapping[str, bool], left_out: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Table 4: per bias set, the evaluator as it is (Vanilla), each baseline (``baselines``:
    method -> (kind, its verdict table); kind ``prompt`` or ``fine_tuned``) and the evaluator with
    the detector (Ours), on the loop items, each with ``ours_minus`` = Ours minus that method on
    the items both have.  ``left_out`` (method -> config key): fine-tuned judges the run left out
    (a simulated stand-in in a real run), each a row without values saying so."""
    rows = []
    f = final[(final["judge"] == evaluator) & (final["detector"] == detector)]
    for bias in BIAS_TYPES:
        set_name = bias_sets.get(bias, bias)
        g = f[f["set"] == set_name]
        if g.empty:
            continue
        metric = metric_of(bias)
        ids = list(g["item_id"])
        ours = pd.Series(_outcomes(g, "final", metric), index=ids)
        arms: list[tuple[str, str, str, pd.Series, bool]] = [
            ("Vanilla", "vanilla", evaluator, pd.Series(_outcomes(g, "initial", metric), index=ids),
             bool(verdict_flags.get(evaluator, False)))]
        for method, (kind, v) in baselines.items():
            judge = str(v["judge"].iloc[0]) if len(v) else method
            arms.append((method, kind, judge, _baseline_outcomes(v, set_name, ids, bias, metric),
                         bool(v["simulated"].astype(bool).any()) if len(v) else False))
        arms.append(("Ours", "rbd", f"{evaluator} + {detector}", ours,
                     _sim(sim_flags, verdict_flags, evaluator, detector)))
        for method, kind, judge, x, sim in arms:
            s = share(x.to_numpy())
            common = x.index.intersection(ours.index)
            if method == "Ours":
                diff, lo, hi, why = np.nan, np.nan, np.nan, ""
            else:
                diff, lo, hi, why = mean_difference((ours[common] - x[common]).to_numpy())
            rows.append({"bias_type": bias, "set": set_name, "metric": metric, "method": method, "kind": kind,
                         "judge": judge, "n": len(x), "value": s[0], "ci_low": s[1], "ci_high": s[2],
                         "ours_minus": diff, "ours_minus_ci_low": lo, "ours_minus_ci_high": hi, "simulated": sim,
                         "reason": _join("no verdicts on these items" if not len(x) else "", why)})
        for method, key in (left_out or {}).items():
            rows.append({"bias_type": bias, "set": set_name, "metric": metric, "method": method,
                         "kind": "fine_tuned", "judge": method, "n": 0, "simulated": True,
                         "reason": f"left out: a simulated stand-in in a real run ({key}; allow_simulated_roles "
                                   "admits it)"})
    return pd.DataFrame(rows, columns=TABLE4_COLUMNS)


def wide(table: pd.DataFrame, index: Sequence[str], column: str, value: str) -> pd.DataFrame:
    """A long table as the paper prints it: one row per ``index`` and one column per ``column``
    value (both in first-seen order, the paper's), cells ``value`` to 3 places (a repeated cell keeps
    its first value)."""
    if table.empty:
        return pd.DataFrame(columns=list(index))
    order = list(dict.fromkeys(table[column]))
    w = table.pivot_table(index=list(index), columns=column, values=value, aggfunc="first", sort=False)
    w = w.reindex(columns=order).map(lambda x: f"{x:.3f}" if pd.notna(x) else "")
    return w.reset_index().rename_axis(columns=None)


# ---------------------------------------------------------------------------------
# Table 5


TABLE5_COLUMNS = ["judge", "detector", "bias_type", "set", "metric", "n", "original", "original_ci_low",
                  "original_ci_high", "label_only", "label_only_ci_low", "label_only_ci_high", "reasoning",
                  "reasoning_ci_low", "reasoning_ci_high", "label_gain", "label_gain_ci_low", "label_gain_ci_high",
                  "reasoning_minus_label", "reasoning_minus_label_ci_low", "reasoning_minus_label_ci_high",
                  "simulated", "reason"]


def table5(reasoning: pd.DataFrame, label_only: pd.DataFrame, *, detector: str, bias_sets: Mapping[str, str],
           sim_flags: Mapping[tuple[str, str], bool], verdict_flags: Mapping[str, bool]) -> pd.DataFrame:
    """Table 5: per evaluator of the label-only loop and bias set, the verdicts as they are
    (Original), after the loop with the detector's label only and with its reasoning, on the same
    items; ``label_gain`` = label-only minus original, ``reasoning_minus_label`` the headline."""
    rows = []
    r_all = reasoning[reasoning["detector"] == detector]
    for judge, lj in label_only[label_only["detector"] == detector].groupby("judge", sort=True):
        for bias in BIAS_TYPES:
            set_name = bias_sets.get(bias, bias)
            lab = lj[lj["set"] == set_name].set_index("item_id")
            rea = r_all[(r_all["judge"] == judge) & (r_all["set"] == set_name)].set_index("item_id")
            ids = [i for i in lab.index if i in rea.index]
            if not ids:
                continue
            metric = metric_of(bias)
            lab, rea = lab.loc[ids].reset_index(), rea.loc[ids].reset_index()
            o, lo_, re_ = (_outcomes(rea, "initial", metric), _outcomes(lab, "final", metric),
                           _outcomes(rea, "final", metric))
            so, sl, sr = share(o), share(lo_), share(re_)
            lg = mean_difference(lo_ - o)
            rl = mean_difference(re_ - lo_)
            rows.append({"judge": judge, "detector": detector, "bias_type": bias, "set": set_name, "metric": metric,
                         "n": len(ids), "original": so[0], "original_ci_low": so[1], "original_ci_high": so[2],
                         "label_only": sl[0], "label_only_ci_low": sl[1], "label_only_ci_high": sl[2],
                         "reasoning": sr[0], "reasoning_ci_low": sr[1], "reasoning_ci_high": sr[2],
                         "label_gain": lg[0], "label_gain_ci_low": lg[1], "label_gain_ci_high": lg[2],
                         "reasoning_minus_label": rl[0], "reasoning_minus_label_ci_low": rl[1],
                         "reasoning_minus_label_ci_high": rl[2],
                         "simulated": _sim(sim_flags, verdict_flags, str(judge), detector),
                         "reason": _join(*(f"{what}: {r[3]}" for what, r in (("label gain", lg),
                                                                              ("reasoning - label", rl)) if r[3]))})
    return pd.DataFrame(rows, columns=TABLE5_COLUMNS)


# ---------------------------------------------------------------------------------
# Fig. 6


FIG6_COLUMNS = ["size", "detector", "iterations", "n_cells", "acc_gain", "acc_gain_ci_low", "acc_gain_ci_high",
                "consistency_gain", "consistency_gain_ci_low", "consistency_gain_ci_high", "simulated", "reason"]


def size_gains(t2: pd.DataFrame, sizes: Mapping[str, str], *, max_iterations: int, bias_sets: Mapping[str, str],
               simulated: Iterable[str] = (), panel_simulated: bool = False) -> pd.DataFrame:
    """Fig. 6: per detector size, the mean gain over the (evaluator, bias set) cells of Table 2
    at T: accuracy over the bias sets whose headline is accuracy (not position, footnote 4),
    consistency over all four; t intervals over cells.  ``simulated``: detector names that are;
    ``panel_simulated``: any evaluator is (every gain then is).  Without any sized detector the
    table has one row saying so."""
    sim = set(simulated)
    if not sizes:
        return pd.DataFrame([{"size": "", "detector": "", "iterations": max_iterations, "n_cells": 0,
                              "simulated": panel_simulated,
                              "reason": "no loop detector has a size (rbd.detectors[i].size)"}], columns=FIG6_COLUMNS)
    sets = [bias_sets.get(b, b) for b in BIAS_TYPES]
    position_set = bias_sets.get("position", "position")
    t = t2[(t2["iterations"] == max_iterations) & t2["set"].isin(sets)]
    rows = []
    for size, det in sizes.items():
        g = t[t["detector"] == det]
        acc = (g[g["set"] != position_set]["acc_with"] - g[g["set"] != position_set]["acc_without"]).dropna()
        con = (g["consistency_with"] - g["consistency_without"]).dropna()
        a, c = mean_difference(acc.to_numpy()), mean_difference(con.to_numpy())
        rows.append({"size": size, "detector": det, "iterations": max_iterations, "n_cells": len(g),
                     "acc_gain": a[0], "acc_gain_ci_low": a[1], "acc_gain_ci_high": a[2], "consistency_gain": c[0],
                     "consistency_gain_ci_low": c[1], "consistency_gain_ci_high": c[2],
                     "simulated": det in sim or panel_simulated,
                     "reason": _join("detector not in the loop's Table 2" if g.empty else "",
                                     *(f"{w}: {r[3]}" for w, r in (("accuracy", a), ("consistency", c))
                                       if r[3] and not g.empty))})
    return pd.DataFrame(rows, columns=FIG6_COLUMNS)
