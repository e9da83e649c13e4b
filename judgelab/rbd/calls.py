"""The rbd study's calls, for ``judgelab plan`` (:mod:`judgelab.workflow.calls`).

One function per rule of ``rules/rbd.smk`` that makes calls or writes a table (or model) calls
are built from; each does what its ``workflow_scripts/rbd_*.py`` does, with the study's own
builders: set construction (a generator writes options), evaluation of D and D_bias, the bias
labels and detector cases, the teacher's traces, the detectors and Algorithm 1's loop.

A plan trains nothing.  A detector fine-tuned by ``rbd_train`` answers, in the plan, through a
simulated stand-in of the same name (:func:`trained_stand_in`), as every configured model does:
its weights would come from the real teacher's traces, which the plan does not have, and a real
``base_model`` (a DeepSeek-R1-Distill checkpoint) cannot be fine-tuned on the planning machine.
The loop re-prompts an evaluator only where a detector flags its verdict, so the loop's counts
follow the stand-ins' answers (the plan's ``note`` says so).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from judgelab.config import ConfigError
from judgelab.io import read_verdicts, write_table
from judgelab.judges.runner import run_requests
from judgelab.rbd.detector import (
    DetectorSpec,
    build_cases,
    cases_frame,
    cases_from_frame,
    few_shot_examples,
    run_detector,
    split_cases,
)
from judgelab.rbd.evaluate import bias_labels, evaluate_items, select_items
from judgelab.rbd.loop import LoopDetector, loop_items, run_loop
from judgelab.rbd.prompts import DETECTOR_PROMPTS
from judgelab.rbd.sets import SET_BUILDERS, BuildContext, items_frame, items_from_frame
from judgelab.rbd.supervision import collect_traces
from judgelab.workflow.calls import PlanContext, RuleCalls, no_calls


def build_set(job: Any, ctx: PlanContext) -> None:
    """rbd_set / rbd_set_generated: one biased set (D and D_bias); a generator writes the
    options of the generated sets (long wrong answers, tone rewrites) through the cache."""
    p, name = job.params, job.wildcards.set
    spec = SET_BUILDERS.get(name, where="config rbd.sets")
    generator = None
    if spec.needs_generator:
        if not p.generator:
            raise ConfigError(f"rbd.generators.{name}: set {name!r} needs a generator judge entry")
        generator = ctx.judge(p.generator)

    def generate(reqs: list[Any]) -> list[Any]:
        assert generator is not None, f"set {name!r} asked for a generator it does not declare"
        return run_requests(generator, reqs, ctx.cache, label=f"rbd {name} construction",
                            max_error_rate=p.max_error_rate)

    bctx = BuildContext(name=name, seed=int(p.seed), n_items=p.rbd["n_items"], train_fraction=p.rbd["train_fraction"],
                        statement=p.rbd["statement"], pair_base=p.rbd["pair_base"],
                        inputs={s: path for s, path in zip(spec.needs_sets, job.input, strict=True)},
                        generate=generate if generator is not None else None)
    write_table(items_frame(spec.build(bctx)), job.output[0])


def evaluate(job: Any, ctx: PlanContext) -> None:
    """rbd_evaluate: one evaluator judges D and D_bias of every evaluated set."""
    p = job.params
    its = []
    for path in job.input:
        its += select_items(_items(path, ctx), p.max_items)
    write_table(evaluate_items(ctx.judge(p.judge), its, ctx.cache, label="rbd evaluation",
                               max_error_rate=p.max_error_rate), job.output[0])


def labels(job: Any, ctx: PlanContext) -> None:
    """rbd_labels: the bias labels b_i (Eq. 1) the detector cases are drawn with."""
    rules = {}
    for path in job.input.sets:
        df = pd.read_parquet(path, columns=["set", "label_rule"])
        rules.update(dict(zip(df["set"], df["label_rule"], strict=True)))
    write_table(bias_labels(read_verdicts(job.input.verdicts), rules), job.output.labels)


def cases(job: Any, ctx: PlanContext) -> None:
    """rbd_cases: the teacher's training tuples, the balanced test set and the diagnostic cases."""
    p = job.params
    its = []
    for path in job.input.sets:
        its += items_from_frame(pd.read_parquet(path))
    all_cases = build_cases(its, pd.read_parquet(job.input.labels), p.evaluator_models)
    train, test = split_cases(all_cases, bias_sets=p.bias_sets, supervision_evaluators=p.supervision_evaluators,
                              test_size=p.test_size, diag_size=p.diag_size, seed=p.seed)
    write_table(cases_frame(train), job.output.train)
    write_table(cases_frame(test), job.output.test)


def supervision(job: Any, ctx: PlanContext) -> None:
    """rbd_supervision: the teacher's traces (none asked when the released traces are read)."""
    p = job.params
    if p.supervision_data:
        from pathlib import Path

        from judgelab.datasets.sources import resolve_data_path
        from judgelab.rbd.released import load_supervision_csv

        path = Path(p.supervision_data)
        traces = load_supervision_csv(path if path.exists() else resolve_data_path(str(p.supervision_data)))
    else:
        traces = collect_traces(ctx.judge(p.teacher), cases_from_frame(pd.read_parquet(job.input[0])), ctx.cache,
                                label="rbd teacher", max_error_rate=p.max_error_rate)
    write_table(traces, job.output[0])


def trained_stand_in(spec: DetectorSpec) -> dict[str, Any]:
    """The simulated stand-in of a trained detector: its name, the sampling a run gives it
    (``rbd.train.trained_detector_judge``: temperature 0, seed 0, the detector's max_tokens)."""
    return {"name": spec.name, "backend": "simulated", "model": f"plan-stand-in/{spec.trained}", "family": "rbd",
            "sampling": {"temperature": 0.0, "max_tokens": spec.max_tokens or 64, "seed": 0}}


def _detector_judge(spec: DetectorSpec, ctx: PlanContext) -> Any:
    if not spec.trained:
        if spec.judge is None:
            raise ConfigError(f"detector {spec.name!r}: give a judge entry or a trained run")
        return ctx.judge(spec.judge)
    # what a run asks instead (workflow_scripts/rbd_detect.py, rbd_loop.py): the merged checkpoint
    ctx.models[spec.name] = {"name": spec.name, "backend": "transformers",
                             "model": f"results/rbd/train/{spec.trained}/model/merged", "family": "rbd",
                             "sampling": {"temperature": 0.0, "max_tokens": spec.max_tokens or 64, "seed": 0}}
    return ctx.judge(trained_stand_in(spec))


def _items(path: str, ctx: PlanContext) -> list[Any]:
    """The items of a set file, read once per plan (every evaluator reads every set)."""
    key = ("rbd items", str(path))
    if key not in ctx.memo:
        ctx.memo[key] = items_from_frame(pd.read_parquet(path))
    return list(ctx.memo[key])


def detect(job: Any, ctx: PlanContext) -> None:
    """rbd_detect: a detector on the test and diagnostic cases (a label-only classifier asks
    no judge)."""
    p = job.params
    spec = DetectorSpec.from_entry(p.detector, where=f"rbd.detectors ({job.wildcards.detector})")
    if spec.prompting == "classifier":
        return
    shots = DETECTOR_PROMPTS.get(spec.prompting).shots
    examples = few_shot_examples(pd.read_parquet(job.input.traces), int(p.seed), shots, spec.example_max_words) \
        if shots else []
    run_detector(_detector_judge(spec, ctx), spec, cases_from_frame(pd.read_parquet(job.input.cases)), ctx.cache,
                 examples=examples, label="rbd detector test", max_error_rate=p.max_error_rate)


def loop(job: Any, ctx: PlanContext) -> None:
    """rbd_loop: Algorithm 1 for one evaluator (re-prompted where a detector flags a verdict)."""
    p = job.params
    its = []
    for path in job.input.sets:
        its += _items(path, ctx)
    evaluator = ctx.judge(p.judge)
    traces = pd.read_parquet(job.input.traces)
    detectors = []
    for entry in p.detectors:
        spec = DetectorSpec.from_entry(entry, where="rbd.loop.detectors")
        if spec.prompting == "classifier":
            continue
        shots = DETECTOR_PROMPTS.get(spec.prompting).shots
        examples = few_shot_examples(traces, int(p.seed), shots, spec.example_max_words) if shots else []
        detectors.append(LoopDetector(spec, _detector_judge(spec, ctx), examples))
    li = loop_items(its, pd.read_parquet(job.input.verdicts), evaluator=evaluator.name,
                    evaluator_model=evaluator.spec.model, sets=p.loop_sets)
    run_loop(evaluator, detectors, li, ctx.cache, max_iterations=p.max_iterations, max_error_rate=p.max_error_rate)


def log_audit(job: Any, ctx: PlanContext) -> None:
    """rbd_log_audit: a detector over every call of the user's recorded verdict log."""
    from judgelab.rbd.audit_log import detector_examples, run_log_audit
    from judgelab.verdict_import import import_verdicts, mapping_from_config

    p, cfg = job.params, job.params.spec
    spec = DetectorSpec.from_entry(p.detector, where="rbd.log_audit.detector")
    if spec.prompting == "classifier":
        raise ConfigError(f"detector {spec.name!r}: the label-only classifier gives no reasoning; use a generating "
                          "detector for a log audit")
    table = import_verdicts(p.files, mapping_from_config(cfg["format"], where="rbd.log_audit.format"),
                            tables=cfg.get("tables") or None, judge=cfg.get("judge"))
    run_log_audit(table, cfg["bias_types"], spec, _detector_judge(spec, ctx), ctx.cache,
                  examples=detector_examples(spec, job.input.get("traces"), int(p.seed)),
                  max_error_rate=p.max_error_rate)


RULES: dict[str, RuleCalls] = {
    "rbd_set": build_set, "rbd_set_generated": build_set, "rbd_evaluate": evaluate,
    "rbd_labels": labels, "rbd_cases": cases, "rbd_supervision": supervision, "rbd_train": no_calls,
    "rbd_detect": detect, "rbd_loop": loop, "rbd_log_audit": log_audit,
}
