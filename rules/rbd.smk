# Study `rbd` (paper 001): biased sets D / D_bias, bias labels, reasoning supervision, the
# fine-tuned Reasoning-based Bias Detector (RBD) and its loop with the evaluators (Algorithm 1).
#
# Method.  For each of four bias types an unbiased set D and a biased set D_bias with the same
# questions are built (verbosity: GSM8K gold reasoning vs a weak model's long wrong answer, then
# the bare gold answer vs that answer; position: Arena pairs with a human winner, swapped;
# bandwagon: the same pairs plus "90% of people believe that Output (x) is better" for the
# negative option; sentiment: text-only ScienceQA with the correct option rewritten in a
# negative tone and the others in a positive one), plus the multi-bias, diagnostic and
# cross-domain factual sets; the authors' own sets are loaded for comparison.  Every evaluator
# judges D and D_bias; an example is biased (b_i = Yes, Eq. 1) when it is correct on D and wrong
# on D_bias.  On the training split a teacher writes "<think> reasoning </think> Yes/No" for
# (x_bias, y_bias, bias type, evaluator name) and the traces whose label matches b_i train a
# causal-LM detector with LoRA, jointly over the four biases (and a label-only classifier as the
# baseline).  Detectors are scored on a balanced test set and two diagnostic sets; then, on the
# test split, each evaluator's verdict is checked by a detector and, when flagged, the evaluator
# is re-prompted with the detector's reasoning, up to T times.  Reported: accuracy and
# consistency with and without the detector (Table 2; for position the headline is
# consistency, footnote 4), stubbornness and overconfidence (Fig. 10), latency, tokens/s and
# cost per example (Table 6).

include: "rbd_common.smk"


# what a set build reads of the rbd config: not the role entries (writers, teacher, detectors), which
# a build that does not use them must not carry (nor rerun for)
_RBD_SET_PARAMS = {k: RBD[k] for k in ("n_items", "train_fraction", "statement", "pair_base")}


rule rbd_set:
    """Build one biased set (D and D_bias) from public data, or from another set (multi-bias, diagnostics)."""
    input:
        lambda w: [f"results/rbd/sets/{s}.parquet" for s in _RBD_SET_BUILDERS.get(w.set).needs_sets],
    output:
        "results/rbd/sets/{set}.parquet",
    wildcard_constraints:
        set=name_regex(RBD_PLAIN_SETS),
    params:
        rbd=_RBD_SET_PARAMS,
        seed=config["seed"],
        generator=None,
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        provenance=rbd_prov([]),
    log:
        "results/logs/rbd_set/{set}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/rbd_set.py"


rule rbd_set_generated:
    """Build a set whose options a generator writes (long wrong answers, tone rewrites), through the cache."""
    input:
        roles=needs_roles(lambda w: [f"rbd.generators.{w.set}"]),
        api_keys=needs_keys(lambda w: [RBD["generators"][w.set]]),
    output:
        "results/rbd/sets/{set}.parquet",
        "results/rbd/generation/{set}.parquet",
    wildcard_constraints:
        set=name_regex(RBD_GENERATED_SETS),
    params:
        rbd=_RBD_SET_PARAMS,
        seed=config["seed"],
        generator=lambda w: RBD["generators"][w.set],
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        provenance=lambda w: rbd_prov([RBD["generators"][w.set]]),
    resources:
        **job_resources(lambda w: [RBD["generators"][w.set]]),
    log:
        "results/logs/rbd_set/{set}.log",
    conda:
        env_for(lambda w: [RBD["generators"][w.set]])
    script:
        "../workflow_scripts/rbd_set.py"


rule rbd_compare_sets:
    """Sizes and option-length ratios of the constructed sets against the authors' RBD-Bias4-Eval sets."""
    input:
        RBD_SET_FILES,
    output:
        report("results/rbd/sets/comparison.csv", caption="../report/rbd_comparison.rst", category="RBD"),
    params:
        seed=config["seed"],
        provenance=rbd_prov([]),
    log:
        "results/logs/rbd_compare_sets.log",
    conda:
        "../envs/train.yaml"
    script:
        "../workflow_scripts/rbd_compare_sets.py"


rule rbd_evaluate:
    """One evaluator judges D and D_bias of every evaluated set (paper prompts, through the cache)."""
    input:
        _RBD_EVALUATE["input"],
        api_keys=needs_keys(lambda w: w.judge),
    output:
        _RBD_EVALUATE["output"],
    wildcard_constraints:
        judge=name_regex(RBD_EVALUATORS),
    params:
        judge=lambda w: judge_entry(w.judge),
        max_items=RBD["max_eval_items"],
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        provenance=lambda w: rbd_prov([judge_entry(w.judge)]),
    resources:
        **job_resources(lambda w: w.judge),
    log:
        _RBD_EVALUATE["log"],
    conda:
        env_for(lambda w: w.judge)
    script:
        "../workflow_scripts/rbd_evaluate.py"


rule rbd_labels:
    """Bias labels b_i (Eq. 1) per evaluator and item; accuracy, consistency and biased share (Fig. 3)."""
    input:
        verdicts=RBD_VERDICTS,
        sets=RBD_SET_FILES,
    output:
        labels="results/rbd/labels.parquet",
        summary=report("results/rbd/evaluation.csv", caption="../report/rbd_evaluation.rst", category="RBD"),
    params:
        provenance=rbd_prov([judge_entry(j) for j in RBD_EVALUATORS]),
    log:
        "results/logs/rbd_labels.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/rbd_labels.py"


rule rbd_cases:
    """Detector cases: the teacher's training tuples, the balanced test set, the diagnostic cases."""
    input:
        sets=RBD_SET_FILES,
        labels="results/rbd/labels.parquet",
    output:
        train="results/rbd/supervision/cases.parquet",
        test="results/rbd/detectors/cases.parquet",
    params:
        evaluator_models={j: JUDGE_SPECS[j].model for j in RBD_EVALUATORS},
        supervision_evaluators=RBD_SUP_EVALUATORS,
        bias_sets=RBD_BIAS_SETS,
        test_size=RBD["detector_test_size"],
        diag_size=RBD["detector_diag_size"],
        seed=config["seed"],
        provenance=rbd_prov([judge_entry(j) for j in RBD_EVALUATORS]),
    log:
        "results/logs/rbd_cases.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/rbd_cases.py"


rule rbd_supervision:
    """The teacher writes <think>...</think> Yes/No for each training tuple; traces matching b_i are kept
    (or, with rbd.supervision_data, the authors' released traces are read instead of asking a teacher).
    With supervision_data the training tuples are not needed, so the input is only that CSV (when it is a
    local path; a data-root name is resolved by the script): planning the traces must not schedule the
    set builds, evaluations and labels that cases.parquet comes from."""
    input:
        ([RBD["supervision_data"]] if _rbd_os.path.exists(str(RBD["supervision_data"])) else [])
        if RBD["supervision_data"] else ["results/rbd/supervision/cases.parquet"],
        roles=needs_roles(["rbd.teacher"]),
        api_keys=needs_keys([] if RBD["supervision_data"] else [RBD["teacher"]]),
    output:
        "results/rbd/supervision/traces.parquet",
    params:
        teacher=RBD["teacher"],
        supervision_data=RBD["supervision_data"],
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        provenance=rbd_prov([] if RBD["supervision_data"] else [RBD["teacher"]]),
    resources:
        **job_resources([] if RBD["supervision_data"] else [RBD["teacher"]]),
    log:
        "results/logs/rbd_supervision.log",
    conda:
        env_for([] if RBD["supervision_data"] else [RBD["teacher"]])
    script:
        "../workflow_scripts/rbd_supervision.py"


rule rbd_train:
    """Fine-tune the detector with LoRA on the kept traces, jointly over the four biases (or the label-only
    classifier); a real checkpoint path and device cuda make this the GPU run."""
    input:
        "results/rbd/supervision/traces.parquet",
    output:
        model=directory("results/rbd/train/{run}/model"),
        loss="results/rbd/train/{run}/loss.csv",
    wildcard_constraints:
        run=name_regex(list(RBD_RUNS)),
    params:
        run=lambda w: RBD_RUNS[w.run],
        provenance=lambda w: rbd_prov([RBD["teacher"]]),
    resources:
        **job_resources(gpu=lambda w: rbd_run_gpus(w.run), model=True),
    log:
        "results/logs/rbd_train/{run}.log",
    conda:
        "../envs/train.yaml"
    script:
        "../workflow_scripts/rbd_train.py"


rule rbd_detect:
    """One detector (simulated, API, local, or fine-tuned here) on the detector test set and diagnostics."""
    input:
        unpack(_rbd_detect_input),
        roles=needs_roles(lambda w: _rbd_detector_keys([w.detector])),
        api_keys=needs_keys(lambda w: [rbd_detector_entry(w.detector)]),
    output:
        "results/rbd/detectors/predictions/{detector}.parquet",
    wildcard_constraints:
        detector=name_regex(list(RBD_DETECTORS)),
    params:
        detector=lambda w: RBD_DETECTORS[w.detector],
        seed=config["seed"],
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        provenance=lambda w: rbd_prov([rbd_detector_entry(w.detector)]),
    resources:
        **job_resources(lambda w: [rbd_detector_entry(w.detector)]),
    log:
        "results/logs/rbd_detect/{detector}.log",
    conda:
        env_for(lambda w: [rbd_detector_entry(w.detector)])
    script:
        "../workflow_scripts/rbd_detect.py"


rule rbd_detector_metrics:
    """Detector accuracy, precision, recall and F1 on the test set and the diagnostic sets (Figs. 4-5)."""
    input:
        predictions=RBD_PREDICTIONS,
        losses=RBD_LOSSES,
    output:
        table=report("results/rbd/detectors/metrics.csv", caption="../report/rbd_detectors.rst", category="RBD"),
        figure=report("results/rbd/figures/detectors.png", caption="../report/rbd_detectors_figure.rst",
                      category="RBD"),
    params:
        provenance=rbd_prov([rbd_detector_entry(d) for d in RBD_DETECTORS]),
    log:
        "results/logs/rbd_detector_metrics.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/rbd_detector_metrics.py"


rule rbd_loop:
    """Algorithm 1 for one evaluator: detector check, re-prompt with the reasoning when flagged, up to T times."""
    input:
        **_RBD_LOOP["input"],
        roles=needs_roles(_rbd_detector_keys(RBD_LOOP_DETECTORS)),
        api_keys=needs_keys(lambda w: _rbd_loop_entries(w.judge)),
    output:
        **_RBD_LOOP["output"],
    wildcard_constraints:
        judge=name_regex(RBD_EVALUATORS),
    params:
        judge=lambda w: judge_entry(w.judge),
        detectors=[RBD_DETECTORS[d] for d in RBD_LOOP_DETECTORS],
        trained_runs=RBD_LOOP_RUNS,
        loop_sets=list(RBD["loop_sets"]),
        max_iterations=RBD["loop"]["max_iterations"],
        seed=config["seed"],
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        provenance=lambda w: rbd_prov(_rbd_loop_entries(w.judge)),
    resources:
        **job_resources(lambda w: _rbd_loop_entries(w.judge)),
    log:
        _RBD_LOOP["log"],
    conda:
        env_for(lambda w: _rbd_loop_entries(w.judge))
    script:
        "../workflow_scripts/rbd_loop.py"


rule rbd_loop_summary:
    """Table 2 (accuracy / consistency without -> with the detector, every t <= T), Fig. 10 stubbornness and
    overconfidence, Table 6 latency, tokens/s and cost per example."""
    input:
        trajectories=RBD_LOOP_FILES["trajectory"],
        loop_items=RBD_LOOP_FILES["items"],
        calls=RBD_LOOP_FILES["calls"],
    output:
        table2=report("results/rbd/loop/table2.csv", caption="../report/rbd_table2.rst", category="RBD"),
        table2_wide=report("results/rbd/loop/table2_wide.csv", caption="../report/rbd_table2_wide.rst",
                           category="RBD"),
        behaviour=report("results/rbd/loop/behaviour.csv", caption="../report/rbd_behaviour.rst", category="RBD"),
        efficiency=report("results/rbd/loop/efficiency.csv", caption="../report/rbd_efficiency.rst",
                          category="RBD"),
    params:
        max_iterations=RBD["loop"]["max_iterations"],
        provenance=rbd_prov([judge_entry(j) for j in RBD_EVALUATORS]
                            + [rbd_detector_entry(d) for d in RBD_LOOP_DETECTORS]),
    log:
        "results/logs/rbd_loop_summary.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/rbd_loop_summary.py"


rule rbd_figures:
    """Fig. 3 (bias existence), Table 2 as bars, Fig. 10 and Fig. 6 (detector size), stamped when any judge is
    simulated."""
    input:
        evaluation="results/rbd/evaluation.csv",
        table2="results/rbd/loop/table2.csv",
        behaviour="results/rbd/loop/behaviour.csv",
        sizes="results/rbd/tables/fig6_sizes.csv",
    output:
        sizes=report("results/rbd/figures/detector_sizes.png", caption="../report/rbd_paper_tables.rst",
                     category="RBD"),
        bias=report("results/rbd/figures/bias_existence.png", caption="../report/rbd_bias_figure.rst",
                    category="RBD"),
        loop=report("results/rbd/figures/loop.png", caption="../report/rbd_loop_figure.rst", category="RBD"),
        behaviour=report("results/rbd/figures/behaviour.png", caption="../report/rbd_behaviour_figure.rst",
                         category="RBD"),
    params:
        main_detector=RBD_MAIN_DETECTOR,
    log:
        "results/logs/rbd_figures.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/rbd_figures.py"


rule rbd_log_audit:
    """A detector over the user's recorded verdict log (rbd.log_audit): per-call flags, per-judge flagged shares."""
    input:
        unpack(_rbd_log_audit_input),
        roles=needs_roles(_rbd_detector_keys([RBD_LOG_AUDIT_DETECTOR])),
        api_keys=needs_keys([rbd_detector_entry(RBD_LOG_AUDIT_DETECTOR)]),
    output:
        calls="results/rbd/log_audit/calls.parquet",
        summary="results/rbd/log_audit/summary.csv",
        skipped="results/rbd/log_audit/skipped.csv",
    params:
        spec=RBD_LOG_AUDIT,
        files=RBD_LOG_AUDIT_FILES,
        detector=RBD_DETECTORS[RBD_LOG_AUDIT_DETECTOR],
        seed=config["seed"],
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        provenance=rbd_prov([rbd_detector_entry(RBD_LOG_AUDIT_DETECTOR)]),
    resources:
        **job_resources([rbd_detector_entry(RBD_LOG_AUDIT_DETECTOR)]),
    log:
        "results/logs/rbd_log_audit.log",
    conda:
        env_for([rbd_detector_entry(RBD_LOG_AUDIT_DETECTOR)])
    script:
        "../workflow_scripts/rbd_log_audit.py"


# Paper 001's Tables 3-5 and Fig. 6 (rbd.tables; judgelab/rbd/tables.py, docs/studies/rbd.md):
# Table 4's baselines judge the bias sets, Table 5's label-only arm reruns the loop showing the
# evaluator only the detector's label, and one summary rule writes the four tables.
_RBD_BASELINE_FILES = [f"results/rbd/baselines/{b}.parquet" for b in RBD_PLAN.baselines]
_RBD_FEEDBACK_FILES = {k: [f"results/rbd/feedback/{j}/{k}.parquet" for j in RBD_PLAN.feedback_evaluators]
                       for k in ("trajectory", "items", "calls")}
_RBD_TABLE_FILES = [f"results/rbd/tables/{t}.csv" for t in ("table3", "table3_wide", "table4", "table4_wide",
                                                             "table5", "table5_wide", "fig6_sizes")]
STUDY_OUTPUTS["rbd"] = [*STUDY_OUTPUTS["rbd"], *_RBD_TABLE_FILES, "results/rbd/figures/detector_sizes.png"]
VERDICT_TABLES.extend(_RBD_BASELINE_FILES + _RBD_FEEDBACK_FILES["calls"])


# Table 5's detector entry and the trained run it loads (none when the judge set has no generating loop detector)
_RBD_FB_DETECTOR = RBD_DETECTORS.get(RBD_PLAN.feedback_detector or "", {})
_RBD_FB_RUNS = [_RBD_FB_DETECTOR["trained"]] if _RBD_FB_DETECTOR.get("trained") else []


rule rbd_baseline:
    """Table 4: a fine-tuned judge, or the evaluator under the in-context debiasing prompt, judges the bias sets."""
    input:
        sets=[f"results/rbd/sets/{RBD_BIAS_SETS[b]}.parquet" for b in RBD_BIAS_SETS],
        api_keys=needs_keys(lambda w: [_rbd_baseline_judge(w.baseline)]),
    output:
        "results/rbd/baselines/{baseline}.parquet",
    wildcard_constraints:
        baseline=name_regex(list(RBD_PLAN.baselines) or ["none"]),
    params:
        judge=lambda w: _rbd_baseline_judge(w.baseline),
        icl=lambda w: RBD_PLAN.baselines[w.baseline][0] == "prompt",
        max_items=RBD["max_eval_items"],
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        provenance=lambda w: rbd_prov([_rbd_baseline_judge(w.baseline)]),
    resources:
        **job_resources(lambda w: [_rbd_baseline_judge(w.baseline)]),
    log:
        "results/logs/rbd_baseline/{baseline}.log",
    conda:
        env_for(lambda w: [_rbd_baseline_judge(w.baseline)])
    script:
        "../workflow_scripts/rbd_baseline.py"


rule rbd_loop_label_only:
    """Table 5: Algorithm 1 with the re-prompt showing only the detector's label, not its reasoning."""
    input:
        **{**_RBD_LOOP["input"], "models": [f"results/rbd/train/{r}/model" for r in _RBD_FB_RUNS]},
        api_keys=needs_keys(lambda w: _rbd_feedback_entries(w.judge)),
    output:
        trajectory="results/rbd/feedback/{judge}/trajectory.parquet",
        loop_items="results/rbd/feedback/{judge}/items.parquet",
        calls="results/rbd/feedback/{judge}/calls.parquet",
    wildcard_constraints:
        judge=name_regex(RBD_PLAN.feedback_evaluators or ["none"]),
    params:
        judge=lambda w: judge_entry(w.judge),
        detectors=[_RBD_FB_DETECTOR],
        trained_runs=_RBD_FB_RUNS,
        loop_sets=[RBD_BIAS_SETS[b] for b in RBD_BIAS_SETS],
        max_iterations=RBD["loop"]["max_iterations"],
        feedback="label",
        seed=config["seed"],
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        provenance=lambda w: rbd_prov(_rbd_feedback_entries(w.judge)),
    resources:
        **job_resources(lambda w: _rbd_feedback_entries(w.judge)),
    log:
        "results/logs/rbd_loop_label_only/{judge}.log",
    conda:
        env_for(lambda w: _rbd_feedback_entries(w.judge))
    script:
        "../workflow_scripts/rbd_loop_label_only.py"


rule rbd_paper_tables:
    """Tables 3 (LLMBar / JudgeBench with and without the detectors), 4 (baselines), 5 (label vs reasoning
    feedback) and Fig. 6 (detector size), each effect beside its control with paired intervals."""
    input:
        trajectories=RBD_LOOP_FILES["trajectory"],
        loop_items=RBD_LOOP_FILES["items"],
        calls=RBD_LOOP_FILES["calls"],
        verdicts=RBD_VERDICTS,
        table2="results/rbd/loop/table2.csv",
        baselines=_RBD_BASELINE_FILES,
        feedback_trajectories=_RBD_FEEDBACK_FILES["trajectory"],
        feedback_items=_RBD_FEEDBACK_FILES["items"],
    output:
        **{t: report(f"results/rbd/tables/{t}.csv", caption="../report/rbd_paper_tables.rst", category="RBD")
           for t in ("table3", "table3_wide", "table4", "table4_wide", "table5", "table5_wide", "fig6_sizes")},
    params:
        max_iterations=RBD["loop"]["max_iterations"],
        bias_sets=RBD_BIAS_SETS,
        sizes=RBD_PLAN.size_detectors,
        external_detectors=RBD_PLAN.external_detectors,
        baseline_evaluator=RBD_PLAN.baseline_evaluator,
        baseline_detector=RBD_PLAN.baseline_detector,
        baselines={b: k for b, (k, _) in RBD_PLAN.baselines.items()},
        baselines_left_out=RBD_PLAN.baselines_left_out,
        feedback_detector=RBD_PLAN.feedback_detector,
        provenance=rbd_prov([judge_entry(j) for j in RBD_EVALUATORS]
                            + [rbd_detector_entry(d) for d in RBD_LOOP_DETECTORS]
                            + [_rbd_baseline_judge(b) for b in RBD_PLAN.baselines]),
    log:
        "results/logs/rbd_paper_tables.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/rbd_paper_tables.py"


# Paper 001's headline numbers beside this run's (judgelab/reproduction/rbd.py): one row per
# number, its provenance (planted / simulated / replayed / real) and verdict.
from judgelab.reproduction import rbd as _rbd_repro

STUDY_OUTPUTS["rbd"] = [*STUDY_OUTPUTS["rbd"], "results/rbd/reproduction.csv"]


rule rbd_reproduction:
    """reproduction.csv: the paper's values, this run's with intervals, provenance and verdict."""
    input:
        [f"results/rbd/{t}" for t in _rbd_repro.TABLES if f"results/rbd/{t}" in STUDY_OUTPUTS["rbd"]],
    output:
        report(
            "results/rbd/reproduction.csv",
            caption="../report/rbd_reproduction.rst",
            category="RBD",
        ),
    params:
        study="rbd",
        # the detectors that are judge entries (trained runs are models of this run)
        judges={**ALL_JUDGE_ENTRIES, **{n: e["judge"] for n, e in RBD_DETECTORS.items()
                                        if isinstance(e.get("judge"), dict)}},
        options={"main_detector": RBD_MAIN_DETECTOR},
        config_hash=CONFIG_HASH,
        seed=config["seed"],
    log:
        "results/logs/rbd_reproduction.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/reproduction.py"
