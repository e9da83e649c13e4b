"""The uda study's calls, for ``judgelab plan`` (:mod:`judgelab.workflow.calls`).

One function per rule of ``rules/uda.smk`` that makes calls or writes a table calls are built
from; each does what its ``workflow_scripts/uda_*.py`` does, with the study's own builders
(:func:`~judgelab.uda.tournament.generate_answers`, :func:`~judgelab.uda.tournament.judge_tournament`:
every judge answers each prompt, then judges every ordered pair of answers), without
embeddings, adapter training, Elo or figures.
"""

from __future__ import annotations

from typing import Any

from judgelab.datasets.sources import SOURCES, resolve_data_path, source_path
from judgelab.io import read_table, write_jsonl, write_table
from judgelab.uda.elo import EloConfig
from judgelab.uda.human import bradley_terry_scores, load_votes
from judgelab.uda.tournament import (
    build_tournament,
    generate_answers,
    judge_tournament,
    load_prompts,
    model_answer_rows,
    own_model_of,
)
from judgelab.workflow.calls import PlanContext, RuleCalls, no_calls


def human(job: Any, ctx: PlanContext) -> None:
    """uda_human: the human Bradley-Terry reference (a tournament's quality may be read from it).

    Without the bootstrap CIs (``n_boot=0``): a tournament reads only the strengths ``theta``
    (``uda.tournament``'s ``human_bt`` source), and the bootstrap would be most of the plan's time."""
    p = job.params
    path = source_path(p.votes) if p.votes in SOURCES else resolve_data_path(p.votes)
    write_table(bradley_terry_scores(load_votes(path), EloConfig.from_dict(p.elo), n_boot=0,
                                     seed=int(p.provenance["seed"])), job.output[0])


def answers(job: Any, ctx: PlanContext) -> None:
    """uda_answers: an answerer answers every prompt of a generated tournament."""
    q, ds = job.params.q, job.wildcards.dataset
    prompts = load_prompts(job.input[0], q["spec"].get("n_prompts"), int(q["provenance"]["seed"]))
    generated = generate_answers(ctx.judge(q["answerer"]), prompts, ctx.cache, dataset=ds,
                                 label=f"uda:{ds}:generate", max_error_rate=q["max_error_rate"])
    write_jsonl(job.output.jsonl, model_answer_rows(generated))
    write_table(generated, job.output.calls)


def tournament(job: Any, ctx: PlanContext) -> None:
    """uda_tournament: prompts x answer models, the table every judge's calls come from."""
    p = job.params
    context = {"human": read_table(job.input.human[0])} if len(job.input.human) else {}
    spec = dict(p.spec)
    if p.families:
        spec["families"] = {**p.families, **dict(spec.get("families") or {})}
    write_table(build_tournament(p.name, spec, int(p.provenance["seed"]), context=context), job.output[0])


def query(job: Any, ctx: PlanContext) -> None:
    """uda_query: one judge answers every prompt, then judges every ordered pair of answers."""
    q = job.params.q
    table = read_table(job.input[0])
    judge = ctx.judge(q["judge"])
    judge_tournament(judge, table, ctx.cache, own_model=own_model_of(judge.name, judge.spec.family, q["spec"], table),
                     label=f"uda:{job.wildcards.dataset}", max_error_rate=q["max_error_rate"])


RULES: dict[str, RuleCalls] = {
    "uda_human": human, "uda_answers": answers, "uda_tournament": tournament,
    "uda_query": query, "uda_embed": no_calls, "uda_train": no_calls,
}
