"""The study's pair sets by loader name (config: strategies/datasets/<name>/loader).

========== ====================================================================
loader     what it builds
========== ====================================================================
controlled the 375-pair controlled bias set (built by its own rule from the bank
           and the generations; :mod:`judgelab.datasets.controlled`)
mtbench    MT-Bench turn-1 human votes joined to answer texts, ``n`` drawn with
           ``default_rng(seed).choice`` (:mod:`judgelab.datasets.mtbench`)
llmbar     LLMBar subsets, ``n`` drawn with ``default_rng(seed).choice``
pairs      the user's own pairs file (JSONL in the pairs-table columns of
           :mod:`judgelab.datasets.pairs`, gold in ``expected_verdict``),
           ``source`` relative to the repository or absolute; optional ``n``/``seed``
========== ====================================================================

A new source is one :data:`STUDY_LOADERS` entry returning a pairs table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from judgelab.datasets.mtbench import LLMBAR_SUBSETS, llmbar_sample, load_mtbench_human, sample_frame
from judgelab.registry import Registry

STUDY_LOADERS: Registry[Callable[[dict[str, Any]], pd.DataFrame]] = Registry("strategies pair-set loader")

#: The five human-judged MT-Bench models whose turn-1 answers are public (vicuna-13b-v1.2 is not).
MTBENCH_MODELS = ("alpaca-13b", "claude-v1", "gpt-3.5-turbo", "gpt-4", "llama-13b")


@STUDY_LOADERS.register("mtbench")
def _mtbench(spec: dict[str, Any]) -> pd.DataFrame:
    from judgelab.datasets.sources import source_path

    models = spec.get("models") or list(MTBENCH_MODELS)
    df = load_mtbench_human(
        source_path("mt_bench/human_judgments_turn1"), source_path("mt_bench/question"),
        {m: source_path(f"mt_bench/model_answer/{m}") for m in models},
        source_path("mt_bench/reference_answer/gpt-4") if spec.get("references", True) else None,
    )
    return sample_frame(df, spec.get("n"), int(spec.get("seed", 42)), what="MT-Bench human votes")


@STUDY_LOADERS.register("llmbar")
def _llmbar(spec: dict[str, Any]) -> pd.DataFrame:
    from judgelab.datasets.sources import source_path

    subsets = spec.get("subsets") or list(LLMBAR_SUBSETS)
    df = llmbar_sample({s: source_path(f"llmbar/{s}") for s in subsets}, spec.get("n"), int(spec.get("seed", 42)))
    df["reference"] = ""
    return df


@STUDY_LOADERS.register("pairs")
def _own_pairs(spec: dict[str, Any]) -> pd.DataFrame:
    """A user's pair set with gold: every strategy runs on it as on MT-Bench / LLMBar."""
    from judgelab.datasets.pairs import load_pairset, pairs_frame

    if not spec.get("source"):
        raise ValueError("config: strategies/datasets/<name>/source: a pairs file is needed for loader 'pairs'")
    df = pairs_frame(load_pairset("pairs", str(spec["source"]), name=str(spec["source"])))
    if "reference" not in df:
        df["reference"] = ""  # S6/S7 then write their own reference, as on LLMBar
    df["n_available"] = len(df)
    return sample_frame(df, spec.get("n"), int(spec.get("seed", 42)), what=str(spec["source"]))


def load_study_pairs(name: str, spec: dict[str, Any]) -> pd.DataFrame:
    loader = STUDY_LOADERS.get(spec["loader"], where=f"config: strategies/datasets/{name}/loader")
    return loader(spec)
