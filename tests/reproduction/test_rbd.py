"""Paper 001's Tables 3-5 and Fig. 6 rows (``judgelab/reproduction/rbd.py``), from a small result
folder in the study's layout: Table 3's LLMBar bandwagon average with RBD-14B, Table 4's prompt
baseline and Prometheus2 (planted where its simulated stand-in acts, no value with the table's
reason where a real run left it out), Table 5's label-only and reasoning accuracies of GPT-4o and
Fig. 6's gains (:func:`judgelab.rbd.tables.size_gains` on a planted Table 2, in points).  Without
the tables, each row says why it has no value."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.io import write_table
from judgelab.rbd.evaluate import SUMMARY_COLUMNS
from judgelab.rbd.loop import TABLE2_COLUMNS
from judgelab.rbd.prompts import BIAS_TYPES
from judgelab.rbd.tables import TABLE3_COLUMNS, TABLE4_COLUMNS, TABLE5_COLUMNS, size_gains
from judgelab.reproduction import reproduce
from judgelab.workflow import provenance

GPT4O = {"name": "gpt-4o", "backend": "openai", "model": "gpt-4o", "options": {"api_key_env": None}}
LLAMA = {"name": "llama-3.1-70b", "backend": "openai", "model": "llama", "options": {"api_key_env": None}}
DET14 = {"name": "rbd-14b", "backend": "openai", "model": "rbd", "options": {"api_key_env": None}}
ENTRIES = {e["name"]: e for e in (GPT4O, LLAMA, DET14)}

T3_BAND = "LLMBar, bandwagon, average over evaluators: accuracy with RBD-14B"
T4_PROMPT = "LLaMA-3.1-70B, verbosity: accuracy under the in-context debiasing prompt (Prompt)"
T4_PROM = "Prometheus2-8x7B, bandwagon: accuracy"
T5_LABEL = "GPT-4o, verbosity: accuracy with RBD-8B's bias label only"
T5_REASON = "GPT-4o, verbosity: accuracy with RBD-8B's full reasoning"
F6_ACC15 = "RBD-1.5B: average accuracy gain over evaluators and bias types (pp)"
F6_ACC14 = "RBD-14B: average accuracy gain over evaluators and bias types (pp)"
F6_CON14 = "RBD-14B: average consistency gain over evaluators and bias types (pp)"
NEW = (T3_BAND, T4_PROMPT, T4_PROM, T5_LABEL, T5_REASON, F6_ACC15, F6_ACC14, F6_CON14)


def _rows(columns, records):
    return pd.DataFrame([{**dict.fromkeys(columns, np.nan), **r} for r in records], columns=columns)


def _write(path, df, judges=(GPT4O,)):
    path.parent.mkdir(parents=True, exist_ok=True)
    write_table(df, path, provenance=provenance("h", 0, list(judges)))
    return str(path)


def _table2(rng):
    """Table 2 at T = 3 for two evaluators x four bias sets x two sized detectors (random planted shares)."""
    recs = []
    for det in ("rbd-1.5b", "rbd-14b"):
        for judge in ("gpt-4o", "llama-3.1-70b"):
            for b in BIAS_TYPES:
                a0, c0 = rng.uniform(0.4, 0.7, 2)
                recs.append({"judge": judge, "detector": det, "prompting": "rbd", "set": b, "bias_type": b,
                             "iterations": 3, "n": 100, "acc_without": a0, "acc_with": a0 + rng.uniform(0, 0.3),
                             "consistency_without": c0, "consistency_with": c0 + rng.uniform(0, 0.3), "reason": ""})
    return _rows(TABLE2_COLUMNS, recs)


def _folder(root, *, prometheus: dict, simulated: bool = False, n_items: int = 500):
    rng = np.random.default_rng(7)
    t2 = _table2(rng)
    sizes = size_gains(t2, {"1.5B": "rbd-1.5b", "14B": "rbd-14b"}, max_iterations=3,
                       bias_sets={b: b for b in BIAS_TYPES})
    ev = _rows(SUMMARY_COLUMNS, [{"set": b, "bias_type": b, "judge": j, "n_items": n_items, "simulated": simulated,
                                  "reason": ""} for b in BIAS_TYPES for j in ("gpt-4o", "llama-3.1-70b")])
    t3 = _rows(TABLE3_COLUMNS, [
        {"benchmark": "LLMBar", "bias_type": "bandwagon", "set": "llmbar_bandwagon", "judge": j, "detector": det,
         "n": 100, "acc_with": w, "acc_with_ci_low": w - 0.05, "acc_with_ci_high": w + 0.05, "simulated": simulated,
         "reason": ""}
        for det, w in (("rbd-1.5b", 0.70), ("rbd-14b", 0.765)) for j in ("gpt-4o", "AVERAGE")])
    arms = [("Vanilla", "vanilla", "llama-3.1-70b", 0.562), ("icl-prompt", "prompt", "llama-3.1-70b", 0.576),
            ("Ours", "rbd", "llama-3.1-70b + rbd-8b", 0.94)]
    t4 = _rows(TABLE4_COLUMNS, [
        {"bias_type": b, "set": b, "metric": "accuracy", "method": m, "kind": k, "judge": j, "n": 100,
         "value": v + (0.1 if b != "verbosity" else 0.0), "ci_low": v - 0.05, "ci_high": v + 0.05,
         "simulated": simulated, "reason": ""}
        for b in ("verbosity", "bandwagon") for m, k, j, v in arms]
        + [{"bias_type": b, "set": b, "metric": "accuracy", "method": "skywork-critic-70b", "kind": "fine_tuned",
            "judge": "skywork-critic-70b", "n": 100, "value": 0.664, "ci_low": 0.6, "ci_high": 0.7,
            "simulated": simulated, "reason": ""} for b in ("verbosity", "bandwagon")]
        + [{"bias_type": b, "set": b, "metric": "accuracy", "kind": "fine_tuned", "n": 100, "reason": "",
            "simulated": simulated, **prometheus, "value": prometheus["value"] + (0.3 if b != "bandwagon" else 0.0)}
           for b in ("verbosity", "bandwagon")])
    t5 = _rows(TABLE5_COLUMNS, [
        {"judge": j, "detector": "rbd-8b", "bias_type": b, "set": b, "metric": "accuracy", "n": 100,
         "label_only": lab, "label_only_ci_low": lab - 0.04, "label_only_ci_high": lab + 0.04,
         "reasoning": rea, "reasoning_ci_low": rea - 0.03, "reasoning_ci_high": rea + 0.03,
         "simulated": simulated, "reason": ""}
        for j, b, lab, rea in (("llama-3.1-70b", "verbosity", 0.5, 0.6), ("gpt-4o", "position", 0.566, 0.61),
                               ("gpt-4o", "verbosity", 0.764, 0.912))])
    files = [_write(root / "evaluation.csv", ev), _write(root / "loop/table2.csv", t2),
             _write(root / "tables/table3.csv", t3), _write(root / "tables/table4.csv", t4),
             _write(root / "tables/table5.csv", t5), _write(root / "tables/fig6_sizes.csv", sizes)]
    return files, t2


PROMETHEUS = {"method": "prometheus-2-8x7b", "judge": "prometheus-2-8x7b", "value": 0.014, "ci_low": 0.0,
              "ci_high": 0.05}


def test_the_new_rbd_rows_read_tables_3_to_5_and_fig_6(tmp_path):
    root = tmp_path / "rbd"
    files, t2 = _folder(root, prometheus=PROMETHEUS)
    prom = {"name": "prometheus-2-8x7b", "backend": "openai", "model": "p", "options": {"api_key_env": None}}
    t = reproduce("rbd", root, files, {**ENTRIES, "prometheus-2-8x7b": prom}).set_index("cell")
    band = t.loc[T3_BAND]
    assert (band["run_value"], band["run_ci_low"], band["run_ci_high"]) == pytest.approx((0.765, 0.715, 0.815))
    prompt = t.loc[T4_PROMPT]
    assert (prompt["run_value"], prompt["run_ci_low"], prompt["run_ci_high"]) == pytest.approx((0.576, 0.526, 0.626))
    assert prompt["provenance"] == "real" and prompt["verdict"] == "reproduced", prompt["reason"]
    pm = t.loc[T4_PROM]
    assert pm["run_value"] == pytest.approx(0.014) and pm["verdict"] == "reproduced", pm["reason"]
    for cell, value, half in ((T5_LABEL, 0.764, 0.04), (T5_REASON, 0.912, 0.03)):
        row = t.loc[cell]
        assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx((value, value - half, value + half))
        assert row["provenance"] == "real" and row["verdict"] == "reproduced", row["reason"]
    # Fig. 6 by hand: the accuracy gain over the non-position cells, the consistency gain over all, in points
    for cell, det, col, sets in ((F6_ACC15, "rbd-1.5b", "acc", [b for b in BIAS_TYPES if b != "position"]),
                                 (F6_ACC14, "rbd-14b", "acc", [b for b in BIAS_TYPES if b != "position"]),
                                 (F6_CON14, "rbd-14b", "consistency", list(BIAS_TYPES))):
        g = t2[(t2["detector"] == det) & t2["set"].isin(sets)]
        d = (g[f"{col}_with"] - g[f"{col}_without"]).to_numpy()
        half = 1.959964 * d.std(ddof=1) / np.sqrt(len(d))  # t quantile > z: the table's interval is wider
        row = t.loc[cell]
        assert row["run_value"] == pytest.approx(100 * d.mean())
        assert row["run_ci_low"] < 100 * (d.mean() - half) and row["run_ci_high"] > 100 * (d.mean() + half)
        # the paper's two evaluators are not all eight: not comparable, named
        assert row["provenance"] == "real" and row["reason"].startswith("other judges than the paper's"), row["reason"]


def test_simulated_stand_ins_make_the_planted_rows_planted(tmp_path):
    root = tmp_path / "rbd"
    sim_prom = {**PROMETHEUS, "method": "sim-prometheus2-8x7b", "judge": "sim-prometheus2-8x7b"}
    files, _ = _folder(root, prometheus=sim_prom, simulated=True)
    sim = {"name": "sim-gpt-4o", "backend": "simulated", "model": "s",
           "options": {"profile": {"competence": 2.0, "reasoning_use": 0.75}}}
    det = {"name": "rbd-14b", "backend": "simulated", "model": "s",
           "options": {"profile": {"label_recall": 0.84, "label_specificity": 0.88}}}
    t = reproduce("rbd", root, files, {"sim-gpt-4o": sim, "rbd-14b": det}).set_index("cell")
    # the table's simulated flag: Prometheus' stand-in (not a configured judge) was set after Table 4
    assert t.loc[T4_PROM, "provenance"] == "planted" and t.loc[T4_PROM, "verdict"] == "not comparable"
    assert t.loc[T4_PROM, "reason"].startswith("planted from the paper (biases.bandwagon)")
    assert t.loc[T5_LABEL, "provenance"] == "planted"  # gpt-4o in table5 is not sim-gpt-4o: the table's flag
    assert t.loc[F6_ACC14, "provenance"] == "planted"  # the 14B detector's profile holds label_recall
    assert t.loc[T5_REASON, "provenance"] == "simulated" and t.loc[T4_PROMPT, "provenance"] == "simulated"
    assert (t.loc[list(NEW), "verdict"] == "not comparable").all()


def test_a_left_out_baseline_and_missing_tables_say_why(tmp_path):
    root = tmp_path / "rbd"
    # as judgelab.rbd.tables.table4 writes a left-out fine-tuned judge: flagged simulated, no value
    left = {"method": "prometheus-2-8x7b", "judge": "prometheus-2-8x7b", "value": np.nan, "simulated": True,
            "reason": "left out: a simulated stand-in in a real run (rbd.tables.baselines.judges[0]; "
                      "allow_simulated_roles admits it)"}
    files, _ = _folder(root, prometheus=left, n_items=100)
    t = reproduce("rbd", root, files, ENTRIES).set_index("cell")
    pm = t.loc[T4_PROM]
    assert pd.isna(pm["run_value"]) and pm["provenance"] == "real" and pm["verdict"] == "not comparable"
    assert pm["reason"] == f"this run has no value: {left['reason']}"
    # fewer items than the paper's 500: said
    assert "100 evaluated items per set, the paper's 500" in t.loc[T5_LABEL, "reason"]
    # no Table 4, 5 or Fig. 6 among this run's outputs: no value, the file named
    t = reproduce("rbd", root, files[:3], ENTRIES).set_index("cell")
    for cell, table in ((T4_PROMPT, "table4.csv"), (T4_PROM, "table4.csv"), (T5_LABEL, "table5.csv"),
                        (T5_REASON, "table5.csv"), (F6_ACC15, "fig6_sizes.csv"), (T3_BAND, "fig6_sizes.csv")):
        assert pd.isna(t.loc[cell, "run_value"]) and t.loc[cell, "verdict"] == "not comparable"
        assert f"{table} is not among this run's outputs" in t.loc[cell, "reason"], (cell, t.loc[cell, "reason"])
    # a sized detector missing from the loop's Table 2: Fig. 6's empty cell and its reason
    t2 = pd.read_csv(files[1])
    files[5] = _write(root / "tables/fig6_sizes.csv", size_gains(t2, {"1.5B": "rbd-absent"}, max_iterations=3,
                                                                  bias_sets={b: b for b in BIAS_TYPES}))
    t = reproduce("rbd", root, files, ENTRIES).set_index("cell")
    assert pd.isna(t.loc[F6_ACC15, "run_value"])
    assert t.loc[F6_ACC15, "reason"] == "this run has no value: detector not in the loop's Table 2"
    # a run without the label-only loop writes an empty Table 5
    files[4] = _write(root / "tables/table5.csv", pd.DataFrame(columns=TABLE5_COLUMNS))
    t = reproduce("rbd", root, files, ENTRIES).set_index("cell")
    assert "no verbosity row in tables/table5.csv" in t.loc[T5_LABEL, "reason"]
