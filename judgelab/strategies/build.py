"""Building the controlled set in the DAG: generation through the cache, then assembly.

Generations table (one row per generation call; the verdict-table accounting columns, so the
call summary counts these calls too): ``judge, backend, model, family, simulated,
judge_seed, task`` (expansion / origin_answer), ``question_id, gen_family`` (the family the
answer is written for), ``status, parse_method, raw_text, text`` (the parsed text, empty when
the call produced none), ``tokens_in, tokens_out, cost_usd, latency_s, key``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from judgelab.cache import CallStore
from judgelab.datasets.controlled import (
    BankQuestion,
    ControlledSpec,
    build_controlled_set,
    generation_requests,
)
from judgelab.io import table_tuples
from judgelab.judges.base import Judge
from judgelab.judges.runner import run_requests

GENERATION_COLUMNS = ["judge", "backend", "model", "family", "simulated", "judge_seed", "task", "question_id",
                      "gen_family", "status", "parse_method", "raw_text", "text", "tokens_in", "tokens_out",
                      "cost_usd", "latency_s", "key"]


def controlled_spec(cfg: Mapping[str, Any], seed: int) -> ControlledSpec:
    """The construction settings from the config section strategies/controlled."""
    return ControlledSpec(
        seed=int(seed),
        truncation_ratio=float(cfg["truncation_ratio"]),
        n_truncation_per_domain=int(cfg["n_truncation_per_domain"]),
        original_pairing=tuple(cfg["original_pairing"]),
        round_robin=tuple(tuple(p) for p in cfg["round_robin"]),
        n_round_robin_per_domain=int(cfg["n_round_robin_per_domain"]),
    )


def generate_texts(judge: Judge, bank: Sequence[BankQuestion], spec: ControlledSpec, cache: CallStore, *,
                   expansion: bool, families: Sequence[str], max_error_rate: float | None = 0.0) -> pd.DataFrame:
    reqs = generation_requests(bank, spec, expansion=expansion, families=families)
    resps = run_requests(judge, reqs, cache, label="strategies/generation", max_error_rate=max_error_rate)
    rows = []
    for req, r in zip(reqs, resps, strict=True):
        rows.append({
            "judge": judge.name, "backend": judge.spec.backend, "model": judge.spec.model, "family": judge.spec.family,
            "simulated": judge.simulated, "judge_seed": int(judge.spec.sampling.get("seed", 0)),
            "task": req.meta["task"], "question_id": req.meta["question_id"], "gen_family": req.meta["family"],
            "status": r.status.value, "parse_method": r.parse_method, "raw_text": r.raw_text or "",
            "text": str(r.value) if r.status.has_value else "", "tokens_in": r.tokens_in, "tokens_out": r.tokens_out,
            "cost_usd": r.cost_usd, "latency_s": r.latency_s, "key": r.key,
        })
    return pd.DataFrame(rows, columns=GENERATION_COLUMNS)


def assemble_controlled(bank: Sequence[BankQuestion], generations: pd.DataFrame | None, spec: ControlledSpec,
                        origin_generators: Mapping[str, str | None]) -> pd.DataFrame:
    """The controlled pairs from the bank and the generation tables (texts of failed calls are absent)."""
    g = generations if generations is not None else pd.DataFrame(columns=GENERATION_COLUMNS)
    g = g[g["text"].astype(str).str.strip() != ""]
    exp = g[g["task"] == "expansion"]
    expansions = dict(zip(exp["question_id"], exp["text"], strict=True))
    orig = g[g["task"] == "origin_answer"]
    answers = {}
    for r in table_tuples(orig):
        if origin_generators.get(r.gen_family) in (None, r.judge):
            answers[(r.question_id, r.gen_family)] = r.text
    return build_controlled_set(bank, expansions, answers, spec)
