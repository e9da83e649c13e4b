"""The topk study's step functions: one per rule of ``rules/topk.smk`` that ``judgelab plan`` runs
(:mod:`judgelab.workflow.calls`), each run as the rule's job by ``workflow_scripts/topk_*.py``
(:func:`judgelab.workflow.run_step`), through the functions of :mod:`judgelab.topk.oracle` (oracle
collection, probes, LLMBar) and :mod:`judgelab.topk.pipeline` (items, the live ranking, whose next
queries follow the answers so far, flip rates).  Evaluation, tables and figures are later rules.
"""

from __future__ import annotations

from typing import Any

from judgelab.datasets.pairs import load_pairs
from judgelab.io import read_table
from judgelab.topk.oracle import llmbar_query, query_judge
from judgelab.workflow.calls import RuleCalls, StepContext

# The query steps come from judgelab.topk.oracle; the other steps import judgelab.topk.pipeline
# (the fits, scipy.stats) when they run, so a query job does not load it.


def items(job: Any, ctx: StepContext) -> None:
    """topk_items: item pools of known quality and the bias-probe pairs."""
    from judgelab.topk.pipeline import make_items

    pools, probes = make_items(job.params.cfg, job.params.provenance["seed"])
    ctx.write_table(pools, job.output.pools, names_judges=False)
    ctx.write_table(probes, job.output.probes, names_judges=False)


def llmbar(job: Any, ctx: StepContext) -> None:
    """topk_llmbar_pairs: the configured LLMBar subsets as one pairs table."""
    from judgelab.topk.pipeline import llmbar_pairs

    ctx.write_table(llmbar_pairs(job.params.cfg), job.output[0], names_judges=False)


def query(job: Any, ctx: StepContext) -> None:
    """topk_query: one judge's oracle (every ordered pair of each pool), the bias probes and LLMBar."""
    q = job.params.q
    oracle, probes = query_judge(q["judge"], q["cfg"], read_table(job.input.pools), load_pairs(job.input.probes),
                                 ctx.cache, q["max_error_rate"])
    llmbar = llmbar_query(q["judge"], q["cfg"], read_table(job.input.llmbar), ctx.cache, q["max_error_rate"])
    ctx.write_table(oracle, job.output.oracle)
    ctx.write_table(probes, job.output.probes)
    ctx.write_table(llmbar, job.output.llmbar)


def llmbar_replay(job: Any, ctx: StepContext) -> None:
    """topk_llmbar_replay: a replayed judge on the LLMBar subset it was recorded on, both orders."""
    q = job.params.q
    ctx.write_table(llmbar_query(q["judge"], q["cfg"], read_table(job.input[0]), ctx.cache, q["max_error_rate"]),
                    job.output[0])


def rank(job: Any, ctx: StepContext) -> None:
    """topk_rank: rank one of the user's items files live with one judge, until the posterior
    stopping rule or the budget (:mod:`judgelab.topk.live`; its queries follow the answers)."""
    from judgelab.topk.pipeline import rank_pool

    q = job.params.q
    tables = rank_pool(q["judge"], q["cfg"], job.input.pool_file, job.wildcards.pool, ctx.cache, q["max_error_rate"])
    for name in ("ranking", "queries", "trace", "summary"):
        ctx.write_table(tables[name], job.output[name])


def flip_rate(job: Any, ctx: StepContext) -> None:
    """topk_flip_rate: one judge asked the sampled pairs again and again at temperature 1; its
    repeated verdicts and its flip rate with an interval (:mod:`judgelab.topk.flips`)."""
    from judgelab.topk.pipeline import flip_rate_tables

    q = job.params.q
    verdicts, summary = flip_rate_tables(q["judge"], q["cfg"], read_table(job.input.pools), ctx.cache,
                                         q["max_error_rate"], int(job.params.seed))
    ctx.write_table(verdicts, job.output.verdicts)
    ctx.write_table(summary, job.output.summary)


RULES: dict[str, RuleCalls] = {
    "topk_items": items, "topk_llmbar_pairs": llmbar, "topk_query": query,
    "topk_llmbar_replay": llmbar_replay, "topk_rank": rank, "topk_flip_rate": flip_rate,
}
