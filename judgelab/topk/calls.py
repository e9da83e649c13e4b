"""The topk study's calls, for ``judgelab plan`` (:mod:`judgelab.workflow.calls`).

One function per rule of ``rules/topk.smk`` that makes calls or writes a table calls are built
from; each does what its ``workflow_scripts/topk_*.py`` does, through the same functions of
:mod:`judgelab.topk.pipeline` (oracle collection, probes, LLMBar, the live ranking, whose
next queries follow the answers so far), with the plan's cache instead of the cache file.
"""

from __future__ import annotations

from typing import Any

from judgelab.datasets.pairs import load_pairs
from judgelab.io import read_table, write_table
from judgelab.topk.pipeline import llmbar_pairs, llmbar_query, make_items, query_judge, rank_pool
from judgelab.workflow.calls import PlanContext, RuleCalls


def items(job: Any, ctx: PlanContext) -> None:
    """topk_items: the item pools and the bias-probe pairs."""
    pools, probes = make_items(job.params.cfg, job.params.provenance["seed"])
    write_table(pools, job.output.pools)
    write_table(probes, job.output.probes)


def llmbar(job: Any, ctx: PlanContext) -> None:
    """topk_llmbar_pairs: the configured LLMBar subsets as one pairs table."""
    write_table(llmbar_pairs(job.params.cfg), job.output[0])


def query(job: Any, ctx: PlanContext) -> None:
    """topk_query: the oracle over every ordered pair of each pool, the probes, and LLMBar."""
    q = job.params.q
    query_judge(q["judge"], q["cfg"], read_table(job.input.pools), load_pairs(job.input.probes), ctx.cache,
                q["max_error_rate"])
    llmbar_query(q["judge"], q["cfg"], read_table(job.input.llmbar), ctx.cache, q["max_error_rate"])


def llmbar_replay(job: Any, ctx: PlanContext) -> None:
    """topk_llmbar_replay: a replayed judge on the LLMBar subset it was recorded on."""
    q = job.params.q
    llmbar_query(q["judge"], q["cfg"], read_table(job.input[0]), ctx.cache, q["max_error_rate"])


def rank(job: Any, ctx: PlanContext) -> None:
    """topk_rank: the live ranking of a user's pool (its queries follow the stand-in's answers)."""
    q = job.params.q
    rank_pool(q["judge"], q["cfg"], job.input.pool_file, job.wildcards.pool, ctx.cache, q["max_error_rate"])


RULES: dict[str, RuleCalls] = {
    "topk_items": items, "topk_llmbar_pairs": llmbar, "topk_query": query,
    "topk_llmbar_replay": llmbar_replay, "topk_rank": rank,
}
