"""The scoring study's step functions: one per rule of ``rules/scoring.smk`` that ``judgelab plan``
runs (:mod:`judgelab.workflow.calls`), each run as the rule's job by ``workflow_scripts/scoring_*.py``
(:func:`judgelab.workflow.run_step`), with the study's own builders
(:func:`~judgelab.scoring.generation.run_generation_review`,
:func:`~judgelab.scoring.query.judge_scores`).  Metrics, tables and figures are later rules.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from judgelab.scoring.generation import generation_levels, run_generation_review, tasks_for
from judgelab.scoring.items import items_frame, load_items, mark_sample, stable_seed, study_items
from judgelab.scoring.prompt import get_variant
from judgelab.scoring.query import judge_scores
from judgelab.workflow.calls import RuleCalls, StepContext


def items(job: Any, ctx: StepContext) -> None:
    """scoring_items: a data set's items, with the seeded sample the judges score."""
    spec, name = job.params.spec, job.wildcards.dataset
    its = mark_sample(load_items(name, spec), spec.get("n_items"), stable_seed(job.params.seed, "sample", name))
    ctx.write_table(items_frame(its), job.output[0], names_judges=False)


def generate(job: Any, ctx: StepContext) -> None:
    """scoring_responses / scoring_references: the generation-review pipeline (paper 004, Fig. 4:
    generator and reviewer alternating), whose accepted texts the scoring prompts then carry."""
    g, purpose = job.params.generation, job.params.purpose
    its = study_items(job.input.item_tables, job.input.get("responses"))
    groups = sorted({(it.dataset, it.group_id) for it in its})
    levels = generation_levels(groups, purpose, seed=job.params.seed, generation=g,
                               perturbations=job.params.perturbations,
                               dataset_perturbations=job.params.get("dataset_perturbations"))
    results, calls = run_generation_review(
        tasks_for(its, purpose, levels), [ctx.judge(e) for e in job.params.models], ctx.cache,
        max_attempts=g["max_attempts"], temperature=g["temperature"], sim_hit_rate=g["sim_hit_rate"],
        on_reject=g["on_reject"], label=purpose, max_error_rate=job.params.max_error_rate)
    ctx.write_table(results, job.output.results)
    ctx.write_table(calls, job.output.calls)


def query(job: Any, ctx: StepContext) -> None:
    """scoring_gold / scoring_gold_candidate / scoring_query: one judge scores every sampled
    item under each prompt variant (the gold protocol: three scorings with the reference)."""
    p = job.params
    its = study_items(job.input.item_tables, job.input.get("responses"))
    refs = pd.read_parquet(job.input.references) if job.input.get("references") else None
    table = judge_scores(ctx.judge(p.judge), its, [get_variant(v) for v in p.variants], ctx.cache, references=refs,
                         seed=p.seed, temperature=p.temperature, repeats=p.repeats, label=job.rule,
                         max_error_rate=p.max_error_rate,
                         missing_reference="drop" if p.on_reject == "drop" else "error",
                         variants_of=p.get("dataset_perturbations"))
    ctx.write_table(table, job.output[0])


RULES: dict[str, RuleCalls] = {
    "scoring_items": items, "scoring_responses": generate, "scoring_references": generate,
    "scoring_gold": query, "scoring_gold_candidate": query, "scoring_query": query,
}
