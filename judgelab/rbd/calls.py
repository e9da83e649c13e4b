"""The rbd study's step functions: one per rule of ``rules/rbd.smk`` that ``judgelab plan`` runs
(:mod:`judgelab.workflow.calls`), each run as the rule's job by ``workflow_scripts/rbd_*.py``
(:func:`judgelab.workflow.run_step`): set construction (a generator writes options), evaluation
of D and D_bias, the bias labels and detector cases, the teacher's traces, the detectors' training
and tests, Algorithm 1's loop and the audit of a recorded log.

A plan trains nothing (``ctx.loads_models`` is false).  A detector fine-tuned by ``rbd_train``
answers, in the plan, through a simulated stand-in of the same name (:func:`trained_stand_in`),
as every configured model does: its weights would come from the real teacher's traces, which the
plan does not have, and a real ``base_model`` (a DeepSeek-R1-Distill checkpoint) cannot be
fine-tuned on the planning machine.  The loop re-prompts an evaluator only where a detector flags
its verdict, so the loop's counts follow the stand-ins' answers (the plan's ``note`` says so).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.config import ConfigError
from judgelab.io import read_verdicts
from judgelab.judges.runner import run_requests
from judgelab.rbd.detector import (
    PREDICTION_COLUMNS,
    DetectorCase,
    DetectorSpec,
    build_cases,
    cases_frame,
    cases_from_frame,
    few_shot_examples,
    run_detector,
    split_cases,
)
from judgelab.rbd.evaluate import (
    CALL_COLUMNS,
    bias_labels,
    call_fields,
    evaluate_items,
    evaluation_summary,
    evaluator_request,
    select_items,
)
from judgelab.rbd.loop import LoopDetector, loop_items, run_loop
from judgelab.rbd.prompts import DETECTOR_PROMPTS
from judgelab.rbd.sets import SET_BUILDERS, BuildContext, RbdItem, items_frame, items_from_frame
from judgelab.rbd.supervision import collect_traces
from judgelab.records import JudgeRequest
from judgelab.workflow.calls import RuleCalls, StepContext

log = logging.getLogger("rbd_supervision")


def build_set(job: Any, ctx: StepContext) -> None:
    """rbd_set / rbd_set_generated: one biased set (D and D_bias); a generator writes the
    options of the generated sets (long wrong answers, tone rewrites) through the cache, and
    its calls are the rule's second table."""
    p, name = job.params, job.wildcards.set
    spec = SET_BUILDERS.get(name, where="config rbd.sets")
    calls: list[dict[str, Any]] = []
    generator = None
    if spec.needs_generator:
        if not p.generator:
            raise ConfigError(f"rbd.generators.{name}: set {name!r} needs a generator judge entry")
        generator = ctx.judge(p.generator, where=f"rbd.generators.{name}")

    def generate(reqs: list[Any]) -> list[Any]:
        assert generator is not None, f"set {name!r} asked for a generator it does not declare"
        resp = run_requests(generator, reqs, ctx.cache, label=f"rbd {name} construction",
                            max_error_rate=p.max_error_rate)
        for r, q in zip(resp, reqs, strict=True):
            calls.append({"set": name, "base_id": q.meta.get("base_id", ""), "purpose": q.meta.get("purpose", ""),
                          **call_fields(generator, r, r.status.value, r.parse_method)})
        return resp

    bctx = BuildContext(name=name, seed=int(p.seed), n_items=p.rbd["n_items"], train_fraction=p.rbd["train_fraction"],
                        statement=p.rbd["statement"], pair_base=p.rbd["pair_base"],
                        inputs={s: path for s, path in zip(spec.needs_sets, job.input, strict=True)},
                        generate=generate if generator is not None else None)
    df = items_frame(spec.build(bctx))
    note = "; ".join(f"dropped {n}: {why}" for why, n in sorted(bctx.notes.items()))
    if generator is not None:
        note = f"options written by {generator.name} ({'simulated' if generator.simulated else generator.spec.model})" \
               + (f"; {note}" if note else "")
    if note:
        df["construction_notes"] = df["construction_notes"] + " [" + note + "]"
    ctx.write_table(df, job.output[0])
    if len(job.output) > 1:
        ctx.write_table(pd.DataFrame(calls, columns=["set", "base_id", "purpose", *CALL_COLUMNS]), job.output[1])


def evaluate(job: Any, ctx: StepContext) -> None:
    """rbd_evaluate: one evaluator judges D and D_bias of every evaluated set."""
    p = job.params
    its = []
    for path in job.input:
        its += select_items(_items(path, ctx), p.max_items)
    table = evaluate_items(ctx.judge(p.judge, where=f"judge {job.wildcards.judge}"), its, ctx.cache,
                           label="rbd evaluation", max_error_rate=p.max_error_rate,
                           requests=_evaluator_requests(its, ctx))
    ctx.write_table(table, job.output[0])


def baseline(job: Any, ctx: StepContext) -> None:
    """rbd_baseline: one of Table 4's baselines judges D and D_bias of the bias sets' test
    items the loop runs on: a fine-tuned judge with the evaluator prompt, or the baseline
    evaluator under the in-context debiasing prompt (``icl``)."""
    p = job.params
    its = []
    for path in job.input.sets:
        its += [i for i in select_items(_items(path, ctx), p.max_items) if i.split == "test"]
    table = evaluate_items(ctx.judge(p.judge, where=f"rbd.tables.baselines ({job.wildcards.baseline})"), its,
                           ctx.cache, label="rbd baseline", max_error_rate=p.max_error_rate, icl=bool(p.icl),
                           requests=_evaluator_requests(its, ctx, icl=bool(p.icl)))
    ctx.write_table(table, job.output[0])


def labels(job: Any, ctx: StepContext) -> None:
    """rbd_labels: the bias labels b_i (Eq. 1) the detector cases are drawn with, and the
    bias-existence summary (Fig. 3)."""
    verdicts = read_verdicts(job.input.verdicts)
    rules = {}
    for path in job.input.sets:
        df = pd.read_parquet(path, columns=["set", "label_rule"])
        rules.update(dict(zip(df["set"], df["label_rule"], strict=True)))
    table = bias_labels(verdicts, rules)
    simulated = dict(zip(verdicts["judge"], verdicts["simulated"].astype(bool), strict=False))
    ctx.write_table(table, job.output.labels)
    ctx.write_table(evaluation_summary(table, simulated), job.output.summary)


def cases(job: Any, ctx: StepContext) -> None:
    """rbd_cases: the teacher's training tuples, the balanced test set and the diagnostic cases."""
    p = job.params
    its = []
    for path in job.input.sets:
        its += items_from_frame(pd.read_parquet(path))
    all_cases = build_cases(its, pd.read_parquet(job.input.labels), p.evaluator_models)
    train, test = split_cases(all_cases, bias_sets=p.bias_sets, supervision_evaluators=p.supervision_evaluators,
                              test_size=p.test_size, diag_size=p.diag_size, seed=p.seed)
    ctx.write_table(cases_frame(train), job.output.train)
    ctx.write_table(cases_frame(test), job.output.test)


def supervision(job: Any, ctx: StepContext) -> None:
    """rbd_supervision: the teacher writes <think>...</think> Yes/No traces, those matching b_i
    are kept (none asked when the authors' released traces are read)."""
    p = job.params
    if p.supervision_data:
        from judgelab.datasets.sources import resolve_data_path
        from judgelab.rbd.released import load_supervision_csv

        path = Path(p.supervision_data)
        traces = load_supervision_csv(path if path.exists() else resolve_data_path(str(p.supervision_data)))
        log.info("rbd supervision from %s: %d traces, %d kept", p.supervision_data, len(traces),
                 int(traces["kept"].sum()))
    else:
        traces = collect_traces(ctx.judge(p.teacher, where="rbd.teacher"),
                                cases_from_frame(pd.read_parquet(job.input[0])), ctx.cache,
                                label="rbd teacher", max_error_rate=p.max_error_rate)
    ctx.write_table(traces, job.output[0])


def train(job: Any, ctx: StepContext) -> None:
    """rbd_train: fine-tune a detector (LoRA or every weight) on the kept traces, or the label-only
    classifier.  A plan trains nothing: the detector answers there through :func:`trained_stand_in`."""
    if not ctx.loads_models:
        return
    from judgelab.rbd.train import TrainConfig, examples_for, train_into

    p = job.params
    where = f"rbd.train.runs.{job.wildcards.run}"
    cfg = TrainConfig.from_dict(p.run, where=where)
    res = train_into(examples_for(pd.read_parquet(job.input[0]), cfg), cfg, job.output.model, where=where)
    ctx.write_table(res.losses.assign(run=job.wildcards.run, kind=cfg.kind, n_examples=res.n_examples,
                                      merged_sha256=res.merged_sha256), job.output.loss)


def trained_stand_in(spec: DetectorSpec) -> dict[str, Any]:
    """The simulated stand-in of a trained detector: its name, the sampling a run gives it
    (``rbd.train.trained_detector_judge``: temperature 0, seed 0, the detector's max_tokens)."""
    return {"name": spec.name, "backend": "simulated", "model": f"plan-stand-in/{spec.trained}", "family": "rbd",
            "sampling": {"temperature": 0.0, "max_tokens": spec.max_tokens or 64, "seed": 0}}


def _detector_judge(spec: DetectorSpec, ctx: StepContext, model_dir: str | Path | None = None) -> Any:
    """The judge a detector asks: its judge entry, or a trained run's merged checkpoint in
    ``model_dir`` (default: the run's folder under ``results/rbd/train``); in a plan, which loads
    no model, the trained run's stand-in, and the entry of what a run asks in ``ctx.models``."""
    if not spec.trained:
        if spec.judge is None:
            raise ConfigError(f"detector {spec.name!r}: give a judge entry or a trained run")
        return ctx.judge(spec.judge, where=f"detector {spec.name}")
    run_dir = Path(model_dir or f"results/rbd/train/{spec.trained}/model")
    if not ctx.loads_models:
        ctx.models[spec.name] = {"name": spec.name, "backend": "transformers", "model": str(run_dir / "merged"),
                                 "family": "rbd",
                                 "sampling": {"temperature": 0.0, "max_tokens": spec.max_tokens or 64, "seed": 0}}
        return ctx.judge(trained_stand_in(spec))
    from judgelab.rbd.train import trained_detector_judge

    if not (run_dir / "meta.json").exists():
        raise ConfigError(f"detector {spec.name!r}: no trained run at {run_dir} (run the rbd_train rule first)")
    return ctx.own(trained_detector_judge(run_dir, spec.name, options=spec.options,
                                          sampling={"max_tokens": spec.max_tokens or 64}))


def _classifier_table(spec: DetectorSpec, cases: list[DetectorCase], model_dir: str) -> pd.DataFrame:
    """A label-only classifier's predictions, in the prediction table's columns (no call, no reasoning)."""
    from judgelab.rbd.detector import classifier_texts
    from judgelab.rbd.train import classify

    preds = classify(f"{model_dir}/merged", classifier_texts(cases, spec.max_words))
    rows = []
    for c, y in zip(cases, preds, strict=True):
        rows.append({"detector": spec.name, "prompting": spec.prompting, "case_id": c.case_id, "subset": c.subset,
                     "set": c.set, "item_id": c.item_id, "evaluator": c.evaluator, "bias_type": c.bias_type,
                     "truth": c.truth, "pred": y, "reasoning": "", "judge": spec.name, "backend": "classifier",
                     "model": f"{model_dir}/merged", "family": "rbd", "simulated": False, "judge_seed": 0,
                     "status": "ok", "parse_method": "argmax", "raw_text": y, "tokens_in": 0, "tokens_out": 0,
                     "cost_usd": 0.0, "key": ""})
    return pd.DataFrame(rows, columns=PREDICTION_COLUMNS)


def detect(job: Any, ctx: StepContext) -> None:
    """rbd_detect: one detector on the balanced test set and the diagnostic sets (a label-only
    classifier asks no judge, and a plan, which loads no model, skips it)."""
    p = job.params
    spec = DetectorSpec.from_entry(p.detector, where=f"rbd.detectors ({job.wildcards.detector})")
    if spec.prompting == "classifier":
        if not ctx.loads_models:
            return
        table = _classifier_table(spec, cases_from_frame(pd.read_parquet(job.input.cases)), job.input.model)
    else:
        shots = DETECTOR_PROMPTS.get(spec.prompting).shots
        examples = few_shot_examples(pd.read_parquet(job.input.traces), int(p.seed), shots,
                                     spec.example_max_words) if shots else []
        table = run_detector(_detector_judge(spec, ctx, job.input.get("model")), spec,
                             cases_from_frame(pd.read_parquet(job.input.cases)), ctx.cache, examples=examples,
                             label="rbd detector test", max_error_rate=p.max_error_rate)
    if spec.trained:  # weights learned from the teacher's traces: synthetic when the teacher or panel is
        traces = pd.read_parquet(job.input.traces, columns=["simulated"])
        table["simulated"] = bool(traces["simulated"].astype(bool).any()) or bool(table["simulated"].any())
    ctx.write_table(table, job.output[0])


def loop(job: Any, ctx: StepContext) -> None:
    """rbd_loop / rbd_loop_label_only: Algorithm 1 for one evaluator with every loop detector
    (re-prompted where a detector flags a verdict, with the detector's reasoning, or with its
    label alone for Table 5's label-only arm: ``params.feedback``)."""
    p = job.params
    its = []
    for path in job.input.sets:
        its += _items(path, ctx)
    evaluator = ctx.judge(p.judge, where=f"judge {job.wildcards.judge}")
    traces = pd.read_parquet(job.input.traces)
    models = dict(zip(p.trained_runs, job.input.models, strict=True))
    detectors = []
    for entry in p.detectors:
        spec = DetectorSpec.from_entry(entry, where="rbd.loop.detectors")
        if spec.prompting == "classifier":
            continue  # a label-only classifier gives no reasoning to re-prompt with
        shots = DETECTOR_PROMPTS.get(spec.prompting).shots
        examples = few_shot_examples(traces, int(p.seed), shots, spec.example_max_words) if shots else []
        detectors.append(LoopDetector(spec, _detector_judge(spec, ctx, models.get(spec.trained)), examples))
    li = loop_items(its, pd.read_parquet(job.input.verdicts), evaluator=evaluator.name,
                    evaluator_model=evaluator.spec.model, sets=p.loop_sets)
    traj, item_table, calls = run_loop(evaluator, detectors, li, ctx.cache, max_iterations=p.max_iterations,
                                       max_error_rate=p.max_error_rate, feedback=getattr(p, "feedback", "reasoning"))
    synthetic = bool(traces["simulated"].astype(bool).any())
    for d in detectors:  # a detector trained on a simulated teacher's traces says so
        if d.spec.trained and synthetic:
            calls.loc[(calls["role"] == "detector") & (calls["detector"] == d.spec.name), "simulated"] = True
    ctx.write_table(traj, job.output.trajectory)
    ctx.write_table(item_table, job.output.loop_items)
    ctx.write_table(calls, job.output.calls)


def log_audit(job: Any, ctx: StepContext) -> None:
    """rbd_log_audit: one detector over every call of the user's recorded verdict logs."""
    from judgelab.rbd.audit_log import detector_examples, run_log_audit
    from judgelab.verdict_import import import_verdicts, mapping_from_config

    p, cfg = job.params, job.params.spec
    spec = DetectorSpec.from_entry(p.detector, where="rbd.log_audit.detector")
    if spec.prompting == "classifier":
        raise ConfigError(f"detector {spec.name!r}: the label-only classifier gives no reasoning; use a generating "
                          "detector for a log audit")
    table = import_verdicts(p.files, mapping_from_config(cfg["format"], where="rbd.log_audit.format"),
                            tables=cfg.get("tables") or None, judge=cfg.get("judge"))
    examples = detector_examples(spec, job.input.get("traces"), int(p.seed))
    calls, summary, skipped = run_log_audit(table, cfg["bias_types"], spec,
                                            _detector_judge(spec, ctx, job.input.get("model")), ctx.cache,
                                            examples=examples, max_error_rate=p.max_error_rate)
    ctx.write_table(calls, job.output.calls)
    ctx.write_table(summary, job.output.summary)
    ctx.write_table(skipped, job.output.skipped)


def _evaluator_requests(items: list[RbdItem], ctx: StepContext, *, icl: bool = False) -> list[JudgeRequest]:
    """Each item's :func:`~judgelab.rbd.evaluate.evaluator_request`, built once per context: in a
    plan every evaluator judges the items :func:`_items` read once, and a request depends on its
    item alone, so the evaluators share one (and the plan its payload's JSON).  Found by the item
    object's ``id``: the memo keeps the item, so no other object has that ``id`` meanwhile."""
    built: dict[int, tuple[RbdItem, JudgeRequest]] = ctx.memo.setdefault(("rbd evaluator requests", icl), {})
    out = []
    for i in items:
        got = built.get(id(i))
        if got is None:
            got = built[id(i)] = (i, evaluator_request(i, icl=icl))
        out.append(got[1])
    return out


def _items(path: str, ctx: StepContext) -> list[Any]:
    """The items of a set file, read once per context (in a plan every evaluator reads every set)."""
    key = ("rbd items", str(path))
    if key not in ctx.memo:
        ctx.memo[key] = items_from_frame(pd.read_parquet(path))
    return list(ctx.memo[key])


RULES: dict[str, RuleCalls] = {
    "rbd_set": build_set, "rbd_set_generated": build_set, "rbd_evaluate": evaluate,
    "rbd_labels": labels, "rbd_cases": cases, "rbd_supervision": supervision, "rbd_train": train,
    "rbd_detect": detect, "rbd_loop": loop, "rbd_log_audit": log_audit,
    "rbd_baseline": baseline, "rbd_loop_label_only": loop,
}
