"""The strategies study's step functions: one per rule of ``rules/strategies.smk`` that
``judgelab plan`` runs (:mod:`judgelab.workflow.calls`), each run as the rule's job by
``workflow_scripts/strategies_*.py`` (:func:`judgelab.workflow.run_step`), with the study's own
builders (:func:`~judgelab.strategies.build.generate_texts`,
:func:`~judgelab.strategies.run.query_strategies`).  Statistics and figures are later rules.
"""

from __future__ import annotations

from typing import Any

from judgelab.datasets.controlled import controlled_summary, load_bank
from judgelab.io import read_table, read_verdicts
from judgelab.strategies import StrategySettings
from judgelab.strategies.build import assemble_controlled, controlled_spec, generate_texts
from judgelab.strategies.datasets import load_study_pairs
from judgelab.strategies.run import query_strategies
from judgelab.workflow.calls import RuleCalls, StepContext


def generate(job: Any, ctx: StepContext) -> None:
    """strategies_generate: a generator judge writes the controlled set's texts (expansions,
    MODEL_ORIGIN answers)."""
    p, g = job.params, job.params.g
    table = generate_texts(ctx.judge(p.judge, where=f"judge {job.wildcards.judge}"), load_bank(job.input.bank),
                           controlled_spec(g["controlled"], g["seed"]), ctx.cache, expansion=p.tasks["expansion"],
                           families=p.tasks["families"], max_error_rate=g["max_error_rate"])
    ctx.write_table(table, job.output[0])


def controlled(job: Any, ctx: StepContext) -> None:
    """strategies_controlled: the controlled bias set from the bank and the generations, and its summary."""
    p = job.params
    gens = read_verdicts(list(job.input.generations)) if len(job.input.generations) else None
    pairs = assemble_controlled(load_bank(job.input.bank), gens, controlled_spec(p.controlled, p.seed),
                                p.origin_generators)
    ctx.write_table(pairs, job.output.pairs)
    ctx.write_table(controlled_summary(pairs), job.output.summary)


def pairs(job: Any, ctx: StepContext) -> None:
    """strategies_pairs: a gold-labelled pair set (MT-Bench human votes, LLMBar) with its seeded sample."""
    ctx.write_table(load_study_pairs(job.params.name, dict(job.params.spec)), job.output[0], names_judges=False)


def query(job: Any, ctx: StepContext) -> None:
    """strategies_query: every call of every strategy of one judge on one pair set."""
    p, q = job.params, job.params.q
    settings = StrategySettings(temperatures=tuple(q["settings"]["temperatures"]),
                                cross_family_size=q["settings"]["cross_family_size"])
    table = query_strategies(ctx.judge(p.judge, where=f"judge {job.wildcards.judge}"), read_table(job.input[0]),
                             ctx.cache, dataset=job.wildcards.dataset, strategies=p.strategies, settings=settings,
                             role_templates=q["templates"], label=f"strategies/{job.wildcards.dataset}",
                             max_error_rate=q["max_error_rate"])
    ctx.write_table(table, job.output[0])


RULES: dict[str, RuleCalls] = {
    "strategies_generate": generate, "strategies_controlled": controlled,
    "strategies_pairs": pairs, "strategies_query": query,
}
