"""The generation-review pipeline of paper 004 (Figure 4) for texts written to a rubric level.

Paper 004 needs reference answers at scores 1-4 (the data sets ship only the score-5
one): "Given an instruction and score rubrics, the response model generates the
response according to the description from score 1 to 4.  Then a review model checks
whether the response matches the corresponding score description.  If they match,
we accept the generated responses; otherwise, we rerun the pipeline until a match is
achieved.  ... we use GPT-4.1 and GPT-4o, alternating their roles as the response
and review models."

Here, for every task (group x level):

1. attempt ``a`` = 0, 1, ...: the generator is ``models[(i + a) % 2]`` for the i-th
   task and the reviewer the other model, so the two models alternate roles between
   attempts and each writes for half of the tasks first;
2. the generator answers :func:`generation_prompt` (instruction, rubric, target score
   and its description, and the full-mark reference as an anchor) at the configured
   temperature with seed ``a`` -- a retry is a new sample, not the cached old one;
3. the reviewer answers :func:`review_prompt` with a reasoning block and Yes/No;
4. Yes accepts the text; No, an empty text or an unparsable review is another round,
   up to ``max_attempts``.  A task never accepted keeps its last text, flagged
   ``accepted = False`` (``on_reject: last``), or is left without text (``drop``).

Every call goes through :func:`judgelab.judges.runner.run_requests` (cached: a rerun asks
nothing, a killed run resumes).  The same pipeline synthesises the *responses* to be
graded where a data set has none (the FLASK hard subset), at seeded target levels.

Tables.  ``calls`` (one row per call; verdict-table columns plus ``dataset``,
``group_id``, ``purpose``, ``level``, ``attempt``, ``role``, ``value``) and
``results`` (:data:`RESULT_COLUMNS`, one row per task).  With simulated writers the
level a text was really written at is known (:func:`simulated_level`), and the
reviewer's gold label is whether it equals the target; with real models it is not,
and ``simulated_level`` is empty.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from judgelab.cache import CallStore
from judgelab.judges.base import Judge
from judgelab.judges.runner import run_requests
from judgelab.records import JudgeRequest, Message, OutputKind
from judgelab.scoring.items import ScoringItem, stable_seed
from judgelab.scoring.prompt import Rubric
from judgelab.simworld.scoring import SIM_LEVEL_TASK, simulated_level

log = logging.getLogger(__name__)

PURPOSES = ("reference", "response")

RESULT_COLUMNS = [
    "dataset", "group_id", "purpose", "level", "text", "accepted", "attempts", "generator", "reviewer",
    "simulated_level",
]
CALL_COLUMNS = [
    "dataset", "group_id", "purpose", "level", "attempt", "role", "judge", "backend", "model", "family",
    "value", "status", "parse_method", "raw_text", "tokens_in", "tokens_out", "cost_usd", "latency_s",
    "simulated", "judge_seed", "key",
]


@dataclass(frozen=True)
class GenerationTask:
    dataset: str
    group_id: str
    purpose: str  # "reference": a reference answer at this score; "response": a response to grade
    level: int
    instruction: str
    rubric: Rubric
    reference_5: str


def _rubric_block(rubric: Rubric) -> str:
    return "[" + rubric.criterion + "]\n" + "\n".join(f"Score {k}: {rubric.description(k)}" for k in range(1, 6))


def generation_prompt(task: GenerationTask) -> str:
    what = "a reference answer" if task.purpose == "reference" else "a response"
    k = task.level
    return (
        f"You write {what} to the instruction below that an expert grader would give a score of exactly {k} "
        f"on the score rubric: it must fit the description of score {k}, and neither a higher nor a lower score. "
        f"A response that gets a score of 5 is shown for comparison.\n\n"
        f"###Instruction:\n{task.instruction}\n\n"
        f"###Score Rubric:\n{_rubric_block(task.rubric)}\n\n"
        f"###A response that gets a score of 5:\n{task.reference_5}\n\n"
        f"###Target: score {k}\n{task.rubric.description(k)}\n\n"
        f"Write only the response, with no comment on its score."
    )


def review_prompt(task: GenerationTask, text: str) -> str:
    k = task.level
    return (
        "You check texts written for a grading rubric. Read the instruction, the rubric and the response, and decide "
        f"whether the response matches the description of score {k} -- not a higher or a lower score.\n\n"
        f"###Instruction:\n{task.instruction}\n\n"
        f"###Score Rubric:\n{_rubric_block(task.rubric)}\n\n"
        f"###Response:\n{text}\n\n"
        f"Does this response deserve exactly score {k}? Think inside <think></think>, then answer Yes or No."
    )


def tasks_for(items: Sequence[ScoringItem], purpose: str,
              levels_of: dict[tuple[str, str], list[int]]) -> list[GenerationTask]:
    """One task per (data set, group, level) for the groups of ``items`` (first item of a group wins)."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown generation purpose {purpose!r}; known: {PURPOSES}")
    groups: dict[tuple[str, str], ScoringItem] = {}
    for it in items:
        groups.setdefault((it.dataset, it.group_id), it)
    out = []
    for key in sorted(groups):
        it = groups[key]
        for lv in levels_of.get(key, []):
            out.append(GenerationTask(it.dataset, it.group_id, purpose, int(lv), it.instruction, it.rubric,
                                      it.reference_5))
    return out


def reference_levels_needed(perturbations: Sequence[str], levels: Sequence[int]) -> list[int]:
    """Reference scores below 5 that the configured perturbations need (5 comes with the data)."""
    from judgelab.config import ConfigError
    from judgelab.scoring.prompt import get_variant

    need = sorted({v.reference_score for v in map(get_variant, perturbations)
                   if v.reference_score is not None and v.reference_score < 5})
    missing = [k for k in need if k not in levels]
    if missing:
        raise ConfigError(f"scoring.perturbations need reference answers at score(s) {missing}, "
                          f"which scoring.generation.reference_levels {list(levels)} does not generate")
    return need


def generation_levels(groups: Sequence[tuple[str, str]], purpose: str, *, seed: int, generation: dict[str, Any],
                      perturbations: Sequence[str],
                      dataset_perturbations: Mapping[str, Sequence[str]] | None = None) -> dict[tuple[str, str], Any]:
    """Rules ``scoring_responses`` / ``scoring_references``: the quality levels each (dataset,
    group) asks for -- the responses' levels drawn per group (:func:`response_levels`, seeded), the
    references' the levels the reference-score perturbations need (:func:`reference_levels_needed`),
    of the set's own perturbations where ``dataset_perturbations`` names them (a set scored without
    reference-score perturbations needs no references written)."""
    if purpose == "response":
        return response_levels(groups, stable_seed(seed, "response_levels"), generation["response_levels"])
    own = dataset_perturbations or {}
    need = {ds: reference_levels_needed(own.get(ds, perturbations), generation["reference_levels"])
            for ds in {d for d, _ in groups}}
    return {key: need[key[0]] for key in groups}


def response_levels(groups: Sequence[tuple[str, str]], seed: int, levels: Sequence[int] = (1, 2, 3, 4, 5),
                    weights: Sequence[float] | None = None) -> dict[tuple[str, str], list[int]]:
    """Seeded target level for each (data set, group)'s synthesised response."""
    rng = np.random.default_rng(seed)
    p = None if weights is None else np.asarray(weights, float) / np.sum(weights)
    keys = sorted(groups)
    draws = rng.choice(np.asarray(levels), size=len(keys), p=p)
    return {k: [int(lv)] for k, lv in zip(keys, draws, strict=True)}


def _row(task: GenerationTask, attempt: int, role: str, judge: Judge, resp) -> dict:
    return {
        "dataset": task.dataset, "group_id": task.group_id, "purpose": task.purpose, "level": task.level,
        "attempt": attempt, "role": role, "judge": judge.name, "backend": judge.spec.backend,
        "model": judge.spec.model, "family": judge.spec.family,
        "value": None if resp.value is None else str(resp.value), "status": resp.status.value,
        "parse_method": resp.parse_method, "raw_text": resp.raw_text or "", "tokens_in": resp.tokens_in,
        "tokens_out": resp.tokens_out, "cost_usd": resp.cost_usd, "latency_s": resp.latency_s,
        "simulated": judge.simulated, "judge_seed": int(judge.spec.sampling.get("seed", 0)), "key": resp.key,
    }


def run_generation_review(
    tasks: Sequence[GenerationTask],
    models: Sequence[Judge],
    cache: CallStore,
    *,
    max_attempts: int = 3,
    temperature: float = 0.7,
    sim_hit_rate: float = 0.75,
    on_reject: str = "last",
    label: str | None = None,
    max_error_rate: float | None = 0.0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run the pipeline; return (results table, calls table)."""
    if len(models) != 2:
        raise ValueError(f"the generation-review pipeline alternates two models, got {len(models)}")
    if on_reject not in ("last", "drop"):
        raise ValueError(f"on_reject must be 'last' or 'drop', got {on_reject!r}")
    state: dict[int, dict[str, Any]] = {i: {"text": None, "accepted": False, "attempts": 0, "generator": "", "reviewer": "",
                 "simulated_level": None} for i in range(len(tasks))}
    pending = list(range(len(tasks)))
    calls: list[dict] = []
    for attempt in range(max_attempts):
        if not pending:
            break
        # -- generation: each model writes for the tasks it generates this round
        texts: dict[int, str | None] = {}
        for m, gen in enumerate(models):
            idx = [i for i in pending if (i + attempt) % 2 == m]
            if not idx:
                continue
            reqs = [JudgeRequest(
                messages=[Message("user", generation_prompt(tasks[i]))], kind=OutputKind.TEXT, fmt="text",
                params={"temperature": temperature, "seed": attempt},
                truth={"gen": {"task": SIM_LEVEL_TASK, "target": tasks[i].level, "hit_rate": sim_hit_rate,
                               "description": tasks[i].rubric.description(tasks[i].level)}},
                meta={"group_id": tasks[i].group_id, "level": tasks[i].level},
            ) for i in idx]
            for i, resp in zip(idx, run_requests(gen, reqs, cache, label=f"{label}:generate" if label else None,
                                                 max_error_rate=max_error_rate), strict=True):
                calls.append(_row(tasks[i], attempt, "generator", gen, resp))
                written = texts[i] = resp.value if resp.status.has_value else None
                st = state[i]
                st["attempts"] = attempt + 1
                st["generator"], st["reviewer"] = gen.name, models[1 - m].name
                if written:
                    st["text"] = written
                    st["simulated_level"] = simulated_level(written)
        # -- review by the other model
        still: list[int] = []
        for m, rev in enumerate(models):
            idx = [i for i in pending if (i + attempt) % 2 != m and texts.get(i)]
            if not idx:
                continue
            reqs = []
            for i in idx:
                lvl = simulated_level(texts[i] or "")
                truth = {} if lvl is None else {"label": "yes" if lvl == tasks[i].level else "no"}
                reqs.append(JudgeRequest(
                    messages=[Message("user", review_prompt(tasks[i], texts[i] or ""))], kind=OutputKind.LABEL,
                    fmt="think", params={"temperature": 0.0}, truth=truth,
                    meta={"group_id": tasks[i].group_id, "level": tasks[i].level},
                ))
            for i, resp in zip(idx, run_requests(rev, reqs, cache, label=f"{label}:review" if label else None,
                                                 max_error_rate=max_error_rate), strict=True):
                calls.append(_row(tasks[i], attempt, "reviewer", rev, resp))
                if resp.status.has_value and resp.value == "yes":
                    state[i]["accepted"] = True
        for i in pending:
            if not state[i]["accepted"]:
                still.append(i)
        pending = still
    rows = []
    for i, t in enumerate(tasks):
        st = state[i]
        text = st["text"] if (st["accepted"] or on_reject == "last") else None
        rows.append({
            "dataset": t.dataset, "group_id": t.group_id, "purpose": t.purpose, "level": t.level, "text": text,
            "accepted": bool(st["accepted"]), "attempts": int(st["attempts"]), "generator": st["generator"],
            "reviewer": st["reviewer"],
            "simulated_level": np.nan if st["simulated_level"] is None else float(st["simulated_level"]),
        })
    n_acc = sum(r["accepted"] for r in rows)
    log.info("generation-review (%s): %d of %d tasks accepted within %d attempts", label, n_acc, len(rows), max_attempts)
    results = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    return results, pd.DataFrame(calls, columns=CALL_COLUMNS)


def acceptance_summary(results: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """Acceptance rates per data set, purpose, level (0 = all) and generator (``all`` = both).

    ``accept_rate_final``: share of tasks accepted within the attempt limit (by the
    generator of the final attempt, in the per-generator rows);
    ``accept_rate_per_review``: share of reviews of that generator's texts answered Yes;
    ``mean_attempts``; ``n_unparsed_reviews`` (reviews with no Yes/No);
    ``sim_match_rate``: for simulated writers, the share of *final* texts really written
    at the target level, and ``sim_accepted_match_rate`` the same among accepted texts
    (the pipeline's precision, which the review step is there to raise).
    """
    rows = []
    rev = calls[calls["role"] == "reviewer"]
    gen = calls[calls["role"] == "generator"][["dataset", "group_id", "purpose", "level", "attempt", "judge"]]
    # who wrote the text each review is about
    rev = rev.merge(gen.rename(columns={"judge": "writer"}), on=["dataset", "group_id", "purpose", "level", "attempt"],
                    how="left")
    for key, g in results.groupby(["dataset", "purpose"], sort=True):
        r_all = rev[(rev["dataset"] == key[0]) & (rev["purpose"] == key[1])]
        groups = [("all", 0, g, r_all)]
        groups += [("all", int(cast("int", lv)), gg, r_all[r_all["level"] == lv])
                   for lv, gg in g.groupby("level", sort=True)]
        groups += [(str(w), 0, g[g["generator"] == w], r_all[r_all["writer"] == w])
                   for w in sorted(set(g["generator"]) | set(r_all["writer"].dropna()))]
        for writer, level, gg, r in groups:
            sim = gg.dropna(subset=["simulated_level"])
            acc = sim[sim["accepted"]]
            rows.append({
                "dataset": key[0], "purpose": key[1], "level": level, "generator": writer, "n_tasks": len(gg),
                "n_accepted": int(gg["accepted"].sum()),
                "accept_rate_final": float(gg["accepted"].mean()) if len(gg) else np.nan,
                "n_reviews": len(r), "accept_rate_per_review": float((r["value"] == "yes").mean()) if len(r) else np.nan,
                "n_unparsed_reviews": int((~r["status"].isin(["ok", "fallback"])).sum()),
                "mean_attempts": float(gg["attempts"].mean()) if len(gg) else np.nan,
                "sim_match_rate": float((sim["simulated_level"] == sim["level"]).mean()) if len(sim) else np.nan,
                "sim_accepted_match_rate": float((acc["simulated_level"] == acc["level"]).mean()) if len(acc) else np.nan,
            })
    return pd.DataFrame(rows)
