"""The strategies study's calls, for ``judgelab plan`` (:mod:`judgelab.workflow.calls`).

One function per rule of ``rules/strategies.smk`` that makes calls or writes a table calls are
built from; each does what its ``workflow_scripts/strategies_*.py`` does (the same builders:
:func:`~judgelab.strategies.build.generate_texts`, :func:`~judgelab.strategies.run.query_strategies`),
without provenance, statistics or figures.
"""

from __future__ import annotations

from typing import Any

from judgelab.datasets.controlled import load_bank
from judgelab.io import read_table, read_verdicts, write_table
from judgelab.strategies import StrategySettings
from judgelab.strategies.build import assemble_controlled, controlled_spec, generate_texts
from judgelab.strategies.datasets import load_study_pairs
from judgelab.strategies.run import query_strategies
from judgelab.workflow.calls import PlanContext, RuleCalls


def generate(job: Any, ctx: PlanContext) -> None:
    """strategies_generate: the generator's expansions and MODEL_ORIGIN answers."""
    p, g = job.params, job.params.g
    table = generate_texts(ctx.judge(p.judge), load_bank(job.input.bank), controlled_spec(g["controlled"], g["seed"]),
                           ctx.cache, expansion=p.tasks["expansion"], families=p.tasks["families"],
                           max_error_rate=g["max_error_rate"])
    write_table(table, job.output[0])


def controlled(job: Any, ctx: PlanContext) -> None:
    """strategies_controlled: the controlled bias set from the bank and the generations."""
    p = job.params
    gens = read_verdicts(list(job.input.generations)) if len(job.input.generations) else None
    write_table(assemble_controlled(load_bank(job.input.bank), gens, controlled_spec(p.controlled, p.seed),
                                    p.origin_generators), job.output.pairs)


def pairs(job: Any, ctx: PlanContext) -> None:
    """strategies_pairs: a gold-labelled pair set with its seeded sample."""
    write_table(load_study_pairs(job.params.name, dict(job.params.spec)), job.output[0])


def query(job: Any, ctx: PlanContext) -> None:
    """strategies_query: every call of every strategy of one judge on one pair set."""
    p, q = job.params, job.params.q
    settings = StrategySettings(temperatures=tuple(q["settings"]["temperatures"]),
                                cross_family_size=q["settings"]["cross_family_size"])
    query_strategies(ctx.judge(p.judge), read_table(job.input[0]), ctx.cache, dataset=job.wildcards.dataset,
                     strategies=p.strategies, settings=settings, role_templates=q["templates"],
                     label=f"strategies/{job.wildcards.dataset}", max_error_rate=q["max_error_rate"])


RULES: dict[str, RuleCalls] = {
    "strategies_generate": generate, "strategies_controlled": controlled,
    "strategies_pairs": pairs, "strategies_query": query,
}
