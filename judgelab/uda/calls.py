"""The uda study's step functions: one per rule of ``rules/uda.smk`` that ``judgelab plan`` runs
(:mod:`judgelab.workflow.calls`), each run as the rule's job by ``workflow_scripts/uda_*.py``
(:func:`judgelab.workflow.run_step`), with the study's own builders
(:func:`~judgelab.uda.tournament.generate_answers`, :func:`~judgelab.uda.tournament.judge_tournament`:
every judge answers each prompt, then judges every ordered pair of answers).  The embeddings and
the adapters are models: a plan, which loads none (``ctx.loads_models``), skips those two steps.
Elo, tables and figures are later rules.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from judgelab.datasets.sources import SOURCES, resolve_data_path, source_path
from judgelab.io import read_table, read_verdicts
from judgelab.uda.elo import EloConfig
from judgelab.uda.tournament import (
    build_tournament,
    generate_answers,
    judge_tournament,
    load_prompts,
    model_answer_rows,
    own_model_of,
    pair_skeletons,
)
from judgelab.workflow.calls import RuleCalls, StepContext


def human(job: Any, ctx: StepContext) -> None:
    """uda_human: Bradley-Terry scores of the MT-Bench models from the human votes, with
    bootstrap CIs (a tournament's quality may be read from their strengths).

    A plan (``ctx.loads_models`` false, it fits nothing it does not need) takes the strengths
    without the bootstrap: the stand-ins read only the strengths, and refitting the model
    ``n_boot`` times for intervals no call depends on would be most of a small plan's time."""
    from judgelab.uda.human import bradley_terry_scores, load_votes  # scipy.stats: only this step needs it

    p = job.params
    path = source_path(p.votes) if p.votes in SOURCES else resolve_data_path(p.votes)
    table = bradley_terry_scores(load_votes(path), EloConfig.from_dict(p.elo),
                                 n_boot=int(p.n_boot) if ctx.loads_models else 0, seed=int(p.provenance["seed"]))
    ctx.write_table(table, job.output[0], names_judges=False)


def answers(job: Any, ctx: StepContext) -> None:
    """uda_answers: one answerer of a generated tournament answers every prompt (paper 000's answer prompt)."""
    q, ds = job.params.q, job.wildcards.dataset
    prompts = load_prompts(job.input[0], q["spec"].get("n_prompts"), int(q["provenance"]["seed"]),
                           q["spec"].get("prompt_split"))
    generated = generate_answers(ctx.judge(q["answerer"], where=f"judge {job.wildcards.answerer}"), prompts,
                                 ctx.cache, dataset=ds, label=f"uda:{ds}:generate", max_error_rate=q["max_error_rate"])
    ctx.write_jsonl(job.output.jsonl, model_answer_rows(generated))
    ctx.write_table(generated, job.output.calls)


def tournament(job: Any, ctx: StepContext) -> None:
    """uda_tournament: the prompts x answer-models table of one tournament, every judge's calls come from."""
    p = job.params
    context = {"human": read_table(job.input.human[0])} if len(job.input.human) else {}
    spec = dict(p.spec)
    if p.families:  # a generated tournament: answerers' families from their judge entries
        spec["families"] = {**p.families, **dict(spec.get("families") or {})}
    ctx.write_table(build_tournament(p.name, spec, int(p.provenance["seed"]), context=context), job.output[0],
                    names_judges=False)


def query(job: Any, ctx: StepContext) -> None:
    """uda_query: one judge answers every prompt, then judges every ordered pair of answers."""
    q = job.params.q
    shared = ("uda_query", str(job.input[0]))  # the tournament and its pairs, alike for every judge of it
    if shared not in ctx.memo:
        table = read_table(job.input[0])
        ctx.memo[shared] = (table, pair_skeletons(table))
    table, skeletons = ctx.memo[shared]
    judge = ctx.judge(q["judge"], where=f"judge {job.wildcards.judge}")
    answers, verdicts = judge_tournament(judge, table, ctx.cache,
                                         own_model=own_model_of(judge.name, judge.spec.family, q["spec"], table),
                                         label=f"uda:{job.wildcards.dataset}", max_error_rate=q["max_error_rate"],
                                         skeletons=skeletons)
    ctx.write_table(answers, job.output.answers)
    ctx.write_table(verdicts, job.output.verdicts)


def embed(job: Any, ctx: StepContext) -> None:
    """uda_embed: one sentence embedding per answer and per judge's own answer (a model: a plan skips it)."""
    if not ctx.loads_models:
        return
    import torch

    from judgelab.uda.embeddings import EmbeddingConfig
    from judgelab.uda.study import embed_tournament

    torch.set_num_threads(max(1, int(job.threads)))
    answers = pd.concat([read_table(p) for p in job.input.answers], ignore_index=True)
    table = embed_tournament(read_table(job.input.tournament), answers, EmbeddingConfig.from_dict(job.params.embedding))
    ctx.write_table(table, job.output[0])


def train(job: Any, ctx: StepContext) -> None:
    """uda_train: train the full and the ablated UDA adapter on one tournament (a plan trains nothing)."""
    if not ctx.loads_models:
        return
    import torch

    from judgelab.uda.study import load_data, train_variants
    from judgelab.uda.training import TrainConfig, save_adapter

    torch.set_num_threads(max(1, int(job.threads)))
    p = job.params
    data = load_data(job.wildcards.dataset, read_table(job.input.tournament), read_verdicts(job.input.verdicts),
                     read_table(job.input.embeddings), p.judges)
    results = train_variants(data, p.variants, TrainConfig.from_dict(p.training), EloConfig.from_dict(p.elo),
                             order_seed=int(p.provenance["seed"]) + 1)
    histories = []
    for variant, path in zip(p.variants, job.output.adapters, strict=True):
        save_adapter(path, results[variant])
        histories.append(results[variant].history.assign(dataset=job.wildcards.dataset, variant=variant))
    ctx.write_table(pd.concat(histories, ignore_index=True), job.output.history)


RULES: dict[str, RuleCalls] = {
    "uda_human": human, "uda_answers": answers, "uda_tournament": tournament,
    "uda_query": query, "uda_embed": embed, "uda_train": train,
}
