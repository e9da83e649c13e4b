# Study `rbd`: configuration checks, path lists and helpers of rules/rbd.smk (no rules here).

from judgelab.rbd.plan import is_label_only
from judgelab.rbd.sets import SET_BUILDERS as _RBD_SET_BUILDERS

# the study's plan (judgelab/rbd/plan.py), made in rules/plans.smk before this file is included
RBD_PLAN = PLANS["rbd"].plan
RBD = RBD_PLAN.cfg
RBD_SETS = RBD_PLAN.sets
RBD_BIAS_SETS = RBD_PLAN.bias_sets
RBD_GENERATED_SETS = RBD_PLAN.generated_sets
RBD_PLAIN_SETS = RBD_PLAN.plain_sets
RBD_EVALUATORS = RBD_PLAN.evaluators
RBD_SUP_EVALUATORS = RBD_PLAN.sup_evaluators
RBD_RUNS = RBD_PLAN.runs
RBD_DETECTORS = RBD_PLAN.detectors
RBD_LOOP_DETECTORS = RBD_PLAN.loop_detectors
RBD_LOOP_RUNS = RBD_PLAN.loop_runs
RBD_MAIN_DETECTOR = RBD_PLAN.main_detector
rbd_detector_entry = RBD_PLAN.detector_entry
rbd_run_gpus = RBD_PLAN.run_gpus
_rbd_detector_keys = RBD_PLAN.detector_keys
_rbd_detect_input = RBD_PLAN.detect_input
_rbd_log_audit_input = RBD_PLAN.log_audit_input


# provenance params; simulated writer / teacher / detector roles are named as inputs
rbd_prov = _partial(SHARED.provenance, study="rbd", panel=RBD_EVALUATORS)
_rbd_loop_entries = _partial(RBD_PLAN.loop_entries, judge_entry)
_rbd_feedback_entries = _partial(RBD_PLAN.feedback_entries, judge_entry)
_rbd_baseline_judge = _partial(RBD_PLAN.baseline_judge, judge_entry)
RBD_SET_FILES = [f"results/rbd/sets/{s}.parquet" for s in RBD_SETS]
RBD_VERDICTS = [f"results/rbd/verdicts/{j}.parquet" for j in RBD_EVALUATORS]
RBD_PREDICTIONS = [f"results/rbd/detectors/predictions/{d}.parquet" for d in RBD_DETECTORS]
RBD_LOOP_FILES = {k: [f"results/rbd/loop/{j}/{k}.parquet" for j in RBD_EVALUATORS]
                  for k in ("trajectory", "items", "calls")}
RBD_LOSSES = [f"results/rbd/train/{r}/loss.csv" for r in RBD_RUNS]

VERDICT_TABLES.extend(
    [f"results/rbd/generation/{s}.parquet" for s in RBD_GENERATED_SETS]
    + RBD_VERDICTS
    + ["results/rbd/supervision/traces.parquet"]
    + [f"results/rbd/detectors/predictions/{d}.parquet" for d, e in RBD_DETECTORS.items()
       if not is_label_only(e)]
    + RBD_LOOP_FILES["calls"]
)
STUDY_OUTPUTS["rbd"] = [
    "results/rbd/sets/comparison.csv",
    "results/rbd/evaluation.csv",
    "results/rbd/figures/bias_existence.png",
    "results/rbd/detectors/metrics.csv",
    "results/rbd/figures/detectors.png",
    *RBD_LOSSES,
    "results/rbd/loop/table2.csv",
    "results/rbd/loop/table2_wide.csv",
    "results/rbd/loop/behaviour.csv",
    "results/rbd/loop/efficiency.csv",
    "results/rbd/figures/loop.png",
    "results/rbd/figures/behaviour.png",
]

# a detector over the user's recorded verdict logs (rbd.log_audit; off while files is empty)
import os as _rbd_os

RBD_LOG_AUDIT = RBD_PLAN.log_audit
RBD_LOG_AUDIT_FILES = RBD_PLAN.log_audit_files
RBD_LOG_AUDIT_DETECTOR = RBD_PLAN.log_audit_detector
if RBD_LOG_AUDIT_FILES:
    STUDY_OUTPUTS["rbd"] += [f"results/rbd/log_audit/{f}" for f in ("calls.parquet", "summary.csv", "skipped.csv")]
    VERDICT_TABLES.append("results/rbd/log_audit/calls.parquet")


_RBD_EVALUATE = dict(
    input=RBD_SET_FILES,
    output="results/rbd/verdicts/{judge}.parquet",
    log="results/logs/rbd_evaluate/{judge}.log",
)


_RBD_LOOP = dict(
    input=dict(
        sets=[f"results/rbd/sets/{s}.parquet" for s in RBD["loop_sets"]],
        verdicts="results/rbd/verdicts/{judge}.parquet",
        traces="results/rbd/supervision/traces.parquet",
        models=[f"results/rbd/train/{r}/model" for r in RBD_LOOP_RUNS],
    ),
    output=dict(
        trajectory="results/rbd/loop/{judge}/trajectory.parquet",
        loop_items="results/rbd/loop/{judge}/items.parquet",
        calls="results/rbd/loop/{judge}/calls.parquet",
    ),
    log="results/logs/rbd_loop/{judge}.log",
)
