"""Asking judges for 1-5 scores under every prompt variant, through the call cache.

Each (item, variant, repeat) is one request: the prompt of
:func:`judgelab.scoring.prompt.build_prompt`, output kind ``score`` in the
Prometheus ``Feedback: ... [RESULT] <id>`` format and the variant's score-ID
scheme, so :func:`judgelab.parsing.parse_score` reads the answer back in the scheme
it was asked in.  The paper scores at temperature 0 ("to ensure a deterministic
scoring process"); the gold protocol repeats a scoring three times, each repeat a
request of its own (``params.seed`` = repeat) so the cache keeps all three.

Score table (one row per call; :data:`SCORE_COLUMNS`):

================== ============================================================
dataset, item_id,  the item
group_id
variant            prompt variant (``baseline``, ``descending``, ..., ``ref5``;
                   ``gold`` for the gold protocol)
perturbation       its family: baseline / rubric_order / score_ids / reference
rubric_order,      the variant's parts
score_ids,
reference_score
repeat             0.. (several only for the gold protocol)
judge, backend,    who scored (``family`` = the judge's model family)
model, family
score              the parsed score 1-5, or -1 when the answer had none in the
                   scheme (unparsed, refusal, out of range, error): never coerced
status,            outcome and parsing rule (see :mod:`judgelab.records`)
parse_method
raw_text           the judge's raw answer
tokens_in/out,     usage and cost
cost_usd, latency_s
simulated,         provenance of the call
judge_seed, key
truth_score        the latent true score a simulated judge read (empty otherwise)
================== ============================================================
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from judgelab.cache import CallStore
from judgelab.config import ConfigError
from judgelab.io import InputError
from judgelab.judges.base import Judge
from judgelab.judges.runner import run_requests
from judgelab.records import JudgeRequest, JudgeResponse, Message, OutputKind
from judgelab.registry import is_simulated
from judgelab.scoring.items import ScoringItem
from judgelab.scoring.prompt import Variant, build_prompt

SCORE_COLUMNS = [
    "dataset", "item_id", "group_id", "variant", "perturbation", "rubric_order", "score_ids", "reference_score",
    "repeat", "judge", "backend", "model", "family", "score", "status", "parse_method", "raw_text", "tokens_in",
    "tokens_out", "cost_usd", "latency_s", "simulated", "judge_seed", "key", "truth_score",
]
UNPARSED_SCORE = -1

#: Simulated-profile fields a scoring config may set per judge (``scoring.sim_profiles``).
SCORING_PROFILE_KEYS = frozenset(
    {"score_competence", "leniency", "score_noise", "reference_anchor", "reference_information", "rubric_order",
     "score_id_effects"}
)


def with_scoring_profile(entry: dict[str, Any], overlay: dict[str, Any] | None) -> dict[str, Any]:
    """A judge entry with the study's scoring behaviour planted (simulated judges only).

    The default panel's pairwise biases stay as they are; only the scoring fields
    of its profile are set, so other studies' planted effects are untouched.
    """
    if not overlay:
        return entry
    bad = set(overlay) - SCORING_PROFILE_KEYS
    if bad:
        raise ConfigError(f"scoring.sim_profiles.{entry['name']}: not scoring field(s) {sorted(bad)}; "
                          f"allowed: {sorted(SCORING_PROFILE_KEYS)}")
    if not is_simulated(entry):
        return entry
    out = copy.deepcopy(entry)
    opts = out.setdefault("options", {})
    profile = dict(opts.get("profile") or {})
    profile.update(copy.deepcopy(overlay))
    opts["profile"] = profile
    return out


def reference_index(generated: pd.DataFrame | None) -> dict[tuple[str, str], dict[int, str]]:
    """Generated reference answers by (data set, group) and score."""
    out: dict[tuple[str, str], dict[int, str]] = {}
    if generated is None or not len(generated):
        return out
    g = generated[generated["text"].notna()]
    for ds, gid, lv, text in zip(g["dataset"], g["group_id"], g["level"], g["text"], strict=True):
        out.setdefault((str(ds), str(gid)), {}).setdefault(int(lv), str(text))
    return out


def item_references(item: ScoringItem, index: dict[tuple[str, str], dict[int, str]]) -> dict[int, str]:
    """Reference answers of an item's group by score: 5 from the data, 1-4 generated."""
    return {**index.get((item.dataset, item.group_id), {}), 5: item.reference_5}


#: What to do with an (item, reference variant) whose reference answer was never written:
#: ``error`` stops the run (the ``on_reject: last`` policy always leaves a text, so a gap is a
#: defect); ``drop`` leaves the item out of that variant, counted (:func:`reference_coverage`) --
#: paper 004's "accept only matched references" (``scoring.generation.on_reject: drop``).
MISSING_REFERENCE_POLICIES = ("error", "drop")


def _has_reference(v: Variant, refs: dict[int, str]) -> bool:
    return v.reference_score is None or v.reference_score in refs


def reference_coverage(
    items: Sequence[ScoringItem], variants: Sequence[Variant], references: pd.DataFrame | None = None,
    variants_of: Mapping[str, Collection[str]] | None = None,
) -> pd.DataFrame:
    """Per data set and reference variant: items, items with a matched reference, items dropped.

    Columns: ``dataset``, ``variant``, ``reference_score``, ``n_items``, ``n_with_reference``,
    ``n_dropped`` (no accepted reference at that score: the item leaves that variant).
    """
    index = reference_index(references)
    rows = []
    for ds in sorted({it.dataset for it in items}):
        its = [it for it in items if it.dataset == ds]
        for v in variants:
            if v.reference_score is None or (variants_of is not None and ds in variants_of
                                             and v.name not in variants_of[ds]):
                continue
            have = sum(_has_reference(v, item_references(it, index)) for it in its)
            rows.append({"dataset": ds, "variant": v.name, "reference_score": v.reference_score,
                         "n_items": len(its), "n_with_reference": have, "n_dropped": len(its) - have})
    return pd.DataFrame(rows, columns=["dataset", "variant", "reference_score", "n_items", "n_with_reference",
                                       "n_dropped"])


def score_requests(
    items: Sequence[ScoringItem],
    variants: Sequence[Variant],
    *,
    references: pd.DataFrame | None = None,
    seed: int = 0,
    temperature: float = 0.0,
    repeats: int = 1,
    missing_reference: str = "error",
    variants_of: Mapping[str, Collection[str]] | None = None,
) -> list[JudgeRequest]:
    """The scoring requests: every item under every variant, or, for a data set in ``variants_of``,
    under the variants named there only (a set scored under fewer perturbations)."""
    if missing_reference not in MISSING_REFERENCE_POLICIES:
        raise ValueError(f"missing_reference must be one of {MISSING_REFERENCE_POLICIES}, got {missing_reference!r}")
    reqs = []
    index = reference_index(references)
    for it in items:
        refs = item_references(it, index)
        for v in variants:
            if variants_of is not None and it.dataset in variants_of and v.name not in variants_of[it.dataset]:
                continue
            if missing_reference == "drop" and not _has_reference(v, refs):
                continue  # no matched reference at this score: the item leaves this variant (counted)
            prompt = build_prompt(v, instruction=it.instruction, response=it.response, rubric=it.rubric,
                                  references=refs, seed=seed, item_key=f"{it.dataset}/{it.item_id}")
            truth = {} if it.truth_score is None else {"score": float(it.truth_score)}
            for r in range(repeats):
                params: dict[str, Any] = {"temperature": temperature}
                if repeats > 1:
                    params["seed"] = r
                reqs.append(JudgeRequest(
                    messages=[Message("user", prompt)], kind=OutputKind.SCORE, fmt="result",
                    score_ids=v.score_ids, params=params, truth=truth,
                    meta={"dataset": it.dataset, "item_id": it.item_id, "group_id": it.group_id, "variant": v.name,
                          "perturbation": v.family, "rubric_order": v.rubric_order, "score_ids": v.score_ids,
                          "reference_score": v.reference_score, "repeat": r, "truth_score": it.truth_score},
                ))
    return reqs


def score_value(resp: JudgeResponse) -> int:
    """The score of an answer, or -1 when it has none (never coerced)."""
    if resp.status.has_value and isinstance(resp.value, int) and 1 <= resp.value <= 5:
        return int(resp.value)
    return UNPARSED_SCORE


def scores_frame(judge: Judge, reqs: Sequence[JudgeRequest], responses: Sequence[JudgeResponse]) -> pd.DataFrame:
    rows = []
    for req, resp in zip(reqs, responses, strict=True):
        m = req.meta
        rows.append({
            "dataset": m["dataset"], "item_id": m["item_id"], "group_id": m["group_id"], "variant": m["variant"],
            "perturbation": m["perturbation"], "rubric_order": m["rubric_order"], "score_ids": m["score_ids"],
            "reference_score": np.nan if m["reference_score"] is None else float(m["reference_score"]),
            "repeat": int(m["repeat"]), "judge": judge.name, "backend": judge.spec.backend,
            "model": judge.spec.model, "family": judge.spec.family, "score": score_value(resp),
            "status": resp.status.value, "parse_method": resp.parse_method, "raw_text": resp.raw_text or "",
            "tokens_in": resp.tokens_in, "tokens_out": resp.tokens_out, "cost_usd": resp.cost_usd,
            "latency_s": resp.latency_s, "simulated": judge.simulated,
            "judge_seed": int(judge.spec.sampling.get("seed", 0)), "key": resp.key,
            "truth_score": np.nan if m["truth_score"] is None or not judge.simulated else float(m["truth_score"]),
        })
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


def judge_scores(
    judge: Judge,
    items: Sequence[ScoringItem],
    variants: Sequence[Variant],
    cache: CallStore,
    *,
    references: pd.DataFrame | None = None,
    seed: int = 0,
    temperature: float = 0.0,
    repeats: int = 1,
    label: str | None = None,
    max_error_rate: float | None = 0.0,
    missing_reference: str = "error",
    variants_of: Mapping[str, Collection[str]] | None = None,
) -> pd.DataFrame:
    """Ask ``judge`` for a score of every item under every variant; return the score table.

    ``missing_reference="drop"`` leaves an item out of a reference variant it has no
    reference answer for (see :data:`MISSING_REFERENCE_POLICIES`); ``"error"`` stops.
    """
    if not items:
        raise InputError(f"judge {judge.name!r}: no items to score ({label})")
    reqs = score_requests(items, variants, references=references, seed=seed, temperature=temperature,
                          repeats=repeats, missing_reference=missing_reference, variants_of=variants_of)
    responses = run_requests(judge, reqs, cache, label=label, max_error_rate=max_error_rate)
    return scores_frame(judge, reqs, responses)

