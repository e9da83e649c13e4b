"""The tournament of study ``uda``: N answer models x P prompts, judged by every judge on every ordered pair.

Paper 000's data pipeline: each candidate model answers each prompt; each judge answers the
prompts itself with the paper's answer prompt (its own answer, e_k in Algorithm 1) and then
judges every ordered pair of answers (both presentation orders, P N(N-1) judgments per
judge) with the paper's A/B/C prompt.

**Tournament table** (``results/uda/<dataset>/tournament.parquet``), one row per prompt x model:

================ =================================================================
dataset          tournament name (config key)
prompt_id        prompt id (MT-Bench question_id, Arena-Hard question_id, sim-NNNN)
prompt           the user prompt (MT-Bench: turn 1)
category         MT-Bench category / Arena-Hard cluster / "simulated"
model, family    answering model and its family (own-model and self-preference analyses)
answer           the model's answer text
model_quality    latent strength of the model the simulated panel reads (logit scale;
                 NaN when the dataset has none); for the simulated tournament it is
                 the planted true quality the results are compared with
quality          per-answer latent quality = model_quality + answer noise (NaN if none)
================ =================================================================

Where the latent quality comes from is a registry (:data:`QUALITY_SOURCES`): ``planted``
(the simulated tournament's configured strengths), ``human_bt`` (MT-Bench: the human
Bradley-Terry strengths -- the simulated judges then *know* the human ranking and only
their planted biases pull them off it, which is what UDA should undo), ``prior`` (fixed
per-model values from the config, e.g. Arena-Hard-Auto's published scores) or ``none``.
Real judges never see it.

**Generated tournaments** (loader ``generated``, a user's own data): in the paper the judges
are the answer models.  Rule ``uda_answers`` has every answerer -- a configured judge named
in ``models`` -- answer every prompt of the ``prompts`` file with the paper's answer prompt,
through the call cache (:func:`generate_answers`), into ``model_answer/<answerer>.jsonl``
(MT-Bench's layout plus each call's status) and a parquet with the call columns; rule
``uda_generation`` counts the calls by status and the prompts left out of the tournament
because some answerer has no usable answer to them (empty, refusal, error).

**Own model of a judge** (:func:`own_model_of`): ``judge_models`` (judge -> model, per
judge), then in a generated tournament the judge itself if it answered, then the family map
``own_models`` where configured; else none.

**Own answers** (``answers/<judge>.parquet``): one row per prompt with the judge's answer
(``answer``) and the usual call columns (status, tokens, cost, key...).  A judge that
answered a generated tournament sends the very generation request (a cache hit: its own
answer is its tournament answer).  Otherwise a simulated judge whose own model is in the
tournament answers with a near copy of that model's answer; the others write a
family-signed answer.

**Verdicts** (``verdicts/<judge>.parquet``): the verdict-table columns of
:mod:`judgelab.judges.pairwise` (``pair_id`` = prompt_id|model_a|model_b, ``order`` = AB: each
presentation is its own row) plus dataset, prompt_id, model_a (shown as A), model_b,
score_a (1 / 0.5 / 0 for A / tie / B, empty without a verdict).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgelab.cache import CallStore
from judgelab.config import ConfigError
from judgelab.datasets.sources import SOURCES, resolve_data_path, source_path
from judgelab.io import InputError, any_true, iter_jsonl, table_tuples
from judgelab.judges.base import Judge
from judgelab.judges.pairwise import VERDICT_COLUMNS
from judgelab.judges.runner import run_requests
from judgelab.prompts import pairwise_request
from judgelab.records import CallStatus, JudgeRequest, JudgeResponse
from judgelab.registry import Registry
from judgelab.simworld.uda import synthetic_prompts, write_answer
from judgelab.uda import prompts as uda_prompts
from judgelab.uda.data import SCORE_OF_VERDICT

log = logging.getLogger(__name__)

TOURNAMENT_COLUMNS = ["dataset", "prompt_id", "prompt", "category", "model", "family", "answer",
                      "model_quality", "quality"]
ANSWER_COLUMNS = ["dataset", "prompt_id", "judge", "backend", "model", "family", "own_model", "answer", "status",
                  "parse_method", "raw_text", "tokens_in", "tokens_out", "cost_usd", "latency_s", "simulated",
                  "judge_seed", "key"]
UDA_VERDICT_COLUMNS = [*VERDICT_COLUMNS, "dataset", "prompt_id", "model_a", "model_b", "score_a"]

# ---------------------------------------------------------------------------------
# loaders: (name, spec, seed) -> rows of prompt x model (without quality columns)

TournamentLoader = Callable[[str, dict[str, Any], int], pd.DataFrame]
TOURNAMENT_LOADERS: Registry[TournamentLoader] = Registry("UDA tournament loader")


def _answer_file(prefix: str, model: str) -> Any:
    key = f"{prefix}/model_answer/{model}"
    return source_path(key) if key in SOURCES else resolve_data_path(f"{prefix}/model_answer/{model}.jsonl")


def _pick_prompts(ids: list[str], n: int | None, seed: int) -> list[str]:
    if n is None or n >= len(ids):
        return ids
    chosen = set(np.random.default_rng(seed).choice(len(ids), size=int(n), replace=False).tolist())
    return [p for i, p in enumerate(ids) if i in chosen]


#: The two parts of a prompt split (``prompt_split.part``).
SPLIT_PARTS = ("train", "heldout")


def split_prompts(ids: list[str], split: dict[str, Any] | None, seed: int) -> list[str]:
    """One part of a seeded split of ``ids`` (``prompt_split: {heldout: share, part: train|heldout}``),
    in the file's order; no split: ``ids``.

    Two tournaments of one prompts file with the same ``heldout`` share and run seed get the two
    complementary parts: an adapter trained on the ``train`` part is applied zero-shot to prompts
    it never saw (paper 000's transfer protocol, on the same pipeline).  The held-out part is
    ``round(share * len(ids))`` prompts, at least one and at least one left to train on."""
    if not split:
        return ids
    share, part = float(split["heldout"]), str(split.get("part", "train"))
    if part not in SPLIT_PARTS:
        raise ConfigError(f"prompt_split.part: {part!r} is neither {' nor '.join(SPLIT_PARTS)}")
    n_held = min(max(1, round(share * len(ids))), len(ids) - 1)
    held = set(np.random.default_rng([seed, 11]).permutation(len(ids))[:n_held].tolist())
    return [p for i, p in enumerate(ids) if (i in held) == (part == "heldout")]


def _families(name: str, spec: dict[str, Any], models: list[str]) -> dict[str, str]:
    fam = dict(spec.get("families") or {})
    return {m: str(fam.get(m, "unknown")) for m in models}


def _real_tournament(name: str, spec: dict[str, Any], seed: int, *, prefix: str, questions: Any,
                     prompt_of: Callable[[dict], str], answer_of: Callable[[dict], str],
                     category_of: Callable[[dict], str]) -> pd.DataFrame:
    models = [str(m) for m in spec.get("models") or []]
    if len(models) < 2:
        raise ConfigError(f"uda.datasets.{name}.models: give at least two answer models")
    qs: dict[str, dict] = {}
    for n, obj in iter_jsonl(questions):
        if "question_id" not in obj:
            raise InputError(f"{questions}:{n}: missing field 'question_id'")
        qs[str(obj["question_id"])] = {"prompt": prompt_of(obj), "category": category_of(obj)}
    ids = split_prompts(_pick_prompts(list(qs), spec.get("n_prompts"), seed), spec.get("prompt_split"), seed)
    answers: dict[str, dict[str, str]] = {}
    for m in models:
        path = _answer_file(prefix, m)
        got: dict[str, str] = {}
        for n, obj in iter_jsonl(path):
            try:
                got[str(obj["question_id"])] = answer_of(obj)
            except (KeyError, IndexError, TypeError):
                raise InputError(f"{path}:{n}: no answer text (expected choices[0].turns[0])") from None
        answers[m] = got
    fam = _families(name, spec, models)
    rows = []
    for q in ids:
        for m in models:
            if q not in answers[m]:
                raise InputError(f"{_answer_file(prefix, m)}: no answer to question {q!r}")
            text = answers[m][q]
            if not isinstance(text, str):
                raise InputError(f"{_answer_file(prefix, m)}: answer to question {q!r} is not text")
            if not text.strip():  # a real (bad) answer: judges compare it like any other
                log.warning("%s: %s gave an empty answer to question %s", name, m, q)
            rows.append({"dataset": name, "prompt_id": q, "prompt": qs[q]["prompt"], "category": qs[q]["category"],
                         "model": m, "family": fam[m], "answer": text})
    return pd.DataFrame(rows)


@TOURNAMENT_LOADERS.register("mt_bench")
def _load_mt_bench(name: str, spec: dict[str, Any], seed: int) -> pd.DataFrame:
    """MT-Bench: the 80 questions' first turns and the models' first-turn answers."""
    return _real_tournament(
        name, spec, seed, prefix="mt_bench", questions=source_path("mt_bench/question"),
        prompt_of=lambda o: str(o["turns"][0]), answer_of=lambda o: o["choices"][0]["turns"][0],
        category_of=lambda o: str(o.get("category", "")),
    )


@TOURNAMENT_LOADERS.register("arena_hard")
def _load_arena_hard(name: str, spec: dict[str, Any], seed: int) -> pd.DataFrame:
    """Arena-Hard-Auto v0.1: 500 prompts and the models' answers (``choices[0].turns[0].content``)."""
    return _real_tournament(
        name, spec, seed, prefix="arena_hard", questions=source_path("arena_hard/question"),
        prompt_of=lambda o: str(o["turns"][0]["content"]), answer_of=lambda o: o["choices"][0]["turns"][0]["content"],
        category_of=lambda o: str(o.get("cluster", "")),
    )


@TOURNAMENT_LOADERS.register("simulated")
def _load_simulated(name: str, spec: dict[str, Any], seed: int) -> pd.DataFrame:
    """A simulated tournament: synthetic prompts, family-signed answers by configured models."""
    models = list(spec.get("models") or [])
    if len(models) < 2:
        raise ConfigError(f"uda.datasets.{name}.models: give at least two answer models")
    for i, m in enumerate(models):
        if not isinstance(m, dict) or "name" not in m or "family" not in m:
            raise ConfigError(f"uda.datasets.{name}.models[{i}]: a simulated model needs name and family")
    n = int(spec.get("n_prompts") or 30)
    rows = []
    for p, text in enumerate(synthetic_prompts(n, seed)):
        for m in models:
            ans = write_answer(text, m["family"], sentences=int(m.get("sentences", 5)),
                               markdown=bool(m.get("markdown", False)), seed=seed + p)
            rows.append({"dataset": name, "prompt_id": f"sim-{p:04d}", "prompt": text, "category": "simulated",
                         "model": str(m["name"]), "family": str(m["family"]), "answer": ans})
    return pd.DataFrame(rows)


def prompts_path(spec: dict[str, Any], name: str) -> Path:
    """The prompts file of a generated tournament: a path as given (repo-relative or absolute), else
    relative to the data root ($JUDGELAB_DATA)."""
    rel = spec.get("prompts")
    if not rel:
        raise ConfigError(f"uda.datasets.{name}.prompts: a generated tournament needs a prompts file")
    p = Path(str(rel))
    return p if p.exists() else resolve_data_path(str(rel), download=False)


def load_prompts(path: str | Path, n: int | None = None, seed: int = 0,
                 split: dict[str, Any] | None = None) -> pd.DataFrame:
    """Prompts of a user's tournament: JSONL with ``question_id`` (or ``id``), the prompt as ``prompt``
    or MT-Bench's ``turns[0]`` (text or {content}), optional ``category``.  Columns: prompt_id,
    prompt, category; a seeded subset of ``n`` prompts when given, then one part of a
    :func:`split_prompts` split when ``split`` is given."""
    rows, seen = [], set()
    for line, obj in iter_jsonl(path):
        pid = obj.get("question_id", obj.get("id"))
        if pid is None:
            raise InputError(f"{path}:{line}: missing field 'question_id'")
        text = obj.get("prompt")
        if text is None and obj.get("turns"):
            text = obj["turns"][0]
            text = text.get("content") if isinstance(text, dict) else text
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{path}:{line}: no prompt text (expected 'prompt' or 'turns[0]')")
        if str(pid) in seen:
            raise InputError(f"{path}:{line}: duplicate question_id {pid!r}")
        seen.add(str(pid))
        rows.append({"prompt_id": str(pid), "prompt": text, "category": str(obj.get("category", ""))})
    if len(rows) < 2:
        raise InputError(f"{path}: a tournament needs at least two prompts, found {len(rows)}")
    keep = set(split_prompts(_pick_prompts([r["prompt_id"] for r in rows], n, seed), split, seed))
    return pd.DataFrame([r for r in rows if r["prompt_id"] in keep], columns=["prompt_id", "prompt", "category"])


def answers_dir(name: str, spec: dict[str, Any]) -> Path:
    """Where a generated tournament's model_answer files are (rule uda_answers writes them)."""
    return Path(str(spec.get("answers_dir") or f"results/uda/{name}/model_answer"))


@TOURNAMENT_LOADERS.register("generated")
def _load_generated(name: str, spec: dict[str, Any], seed: int) -> pd.DataFrame:
    """A user's tournament: the prompts file and every answerer's generated answers (model_answer JSONL,
    written by rule uda_answers).  A prompt that some answerer left without a usable answer (empty,
    refusal, error) is left out of the tournament for every model, with a warning; rule
    uda_generation counts them."""
    models = [str(m) for m in spec.get("models") or []]
    if len(models) < 2:
        raise ConfigError(f"uda.datasets.{name}.models: give at least two answerers")
    prompts = load_prompts(prompts_path(spec, name), spec.get("n_prompts"), seed, spec.get("prompt_split"))
    answers: dict[str, dict[str, str]] = {}
    for m in models:
        path = answers_dir(name, spec) / f"{m}.jsonl"
        if not path.exists():
            raise InputError(f"{path}: no answers of {m!r} (rule uda_answers generates them)")
        answers[m] = model_answers(path)
    usable = [p for p in prompts["prompt_id"] if all(p in answers[m] for m in models)]
    if len(usable) < len(prompts):
        log.warning("%s: %d of %d prompts lack a usable answer from some answerer and are left out",
                    name, len(prompts) - len(usable), len(prompts))
    if len(usable) < 2:
        raise InputError(f"uda.datasets.{name}: only {len(usable)} prompt(s) have a usable answer from every answerer")
    fam = _families(name, spec, models)
    by = prompts.set_index("prompt_id")
    rows = [{"dataset": name, "prompt_id": p, "prompt": by.loc[p, "prompt"], "category": by.loc[p, "category"],
             "model": m, "family": fam[m], "answer": answers[m][p]} for p in usable for m in models]
    return pd.DataFrame(rows)


def model_answers(path: str | Path) -> dict[str, str]:
    """question_id -> answer text of a model_answer JSONL; rows whose ``status`` has no usable answer
    (unparsed/empty, refusal, error) are not answers."""
    got: dict[str, str] = {}
    for line, obj in iter_jsonl(path):
        if str(obj.get("status", "ok")) not in (CallStatus.OK.value, CallStatus.FALLBACK.value):
            continue
        try:
            text = obj["choices"][0]["turns"][0]
        except (KeyError, IndexError, TypeError):
            raise InputError(f"{path}:{line}: no answer text (expected choices[0].turns[0])") from None
        text = text.get("content") if isinstance(text, dict) else text
        if not isinstance(text, str):
            raise InputError(f"{path}:{line}: answer is not text")
        if text.strip():
            got[str(obj["question_id"])] = text
    return got


# ---------------------------------------------------------------------------------
# latent quality the simulated panel reads

QualitySource = Callable[[str, dict[str, Any], dict[str, Any], list[str], dict[str, Any]], dict[str, float] | None]
QUALITY_SOURCES: Registry[QualitySource] = Registry("UDA quality source")


@QUALITY_SOURCES.register("none")
def _q_none(name, qspec, spec, models, context):
    return None


@QUALITY_SOURCES.register("planted")
def _q_planted(name, qspec, spec, models, context):
    by = {str(m["name"]): m for m in spec.get("models") or [] if isinstance(m, dict)}
    missing = [m for m in models if "quality" not in by.get(m, {})]
    if missing:
        raise ConfigError(f"uda.datasets.{name}.models: no planted quality for {missing}")
    return {m: float(by[m]["quality"]) for m in models}


@QUALITY_SOURCES.register("prior")
def _q_prior(name, qspec, spec, models, context):
    values = dict(qspec.get("values") or {})
    missing = [m for m in models if m not in values]
    if missing:
        raise ConfigError(f"uda.datasets.{name}.quality.values: no value for {missing}")
    transform = qspec.get("transform", "identity")
    if transform == "logit_percent":
        return {m: float(math.log(values[m] / (100.0 - values[m]))) for m in models}
    if transform == "identity":
        return {m: float(values[m]) for m in models}
    raise ConfigError(f"uda.datasets.{name}.quality.transform: unknown {transform!r} (identity, logit_percent)")


@QUALITY_SOURCES.register("human_bt")
def _q_human(name, qspec, spec, models, context):
    table = context.get("human")
    if table is None:
        raise ConfigError(f"uda.datasets.{name}.quality: source human_bt needs the human Bradley-Terry table")
    aliases = dict(spec.get("human_aliases") or {})
    by = table.set_index("model")["theta"]
    missing = [m for m in models if aliases.get(m, m) not in by.index]
    if missing:
        raise ConfigError(f"uda.datasets.{name}: no human votes for {missing} (map them with human_aliases)")
    return {m: float(by[aliases.get(m, m)]) for m in models}


def build_tournament(name: str, spec: dict[str, Any], seed: int, *, context: dict[str, Any] | None = None) -> pd.DataFrame:
    """The tournament table of one dataset (module docstring), deterministic in ``seed``."""
    loader = TOURNAMENT_LOADERS.get(str(spec.get("loader", "")), where=f"uda.datasets.{name}.loader")
    df = loader(name, spec, seed)
    models = list(dict.fromkeys(df["model"]))
    qspec = dict(spec.get("quality") or {"source": "none"})
    src = QUALITY_SOURCES.get(str(qspec.get("source", "none")), where=f"uda.datasets.{name}.quality.source")
    theta = src(name, qspec, spec, models, dict(context or {}))
    if theta is None:
        df["model_quality"] = np.nan
        df["quality"] = np.nan
    else:
        scale = float(qspec.get("scale", 1.0))
        noise = float(qspec.get("answer_noise", 0.0))
        rng = np.random.default_rng([seed, 7])
        df["model_quality"] = df["model"].map(theta).astype(float) * scale
        df["quality"] = df["model_quality"] + noise * rng.standard_normal(len(df))
    return df[TOURNAMENT_COLUMNS].reset_index(drop=True)


def own_model_of(judge: str, family: str, spec: dict[str, Any], table: pd.DataFrame) -> str | None:
    """The answer model that is ``judge``'s own (its answers are e_k's neighbours; self-preference).

    In order: the per-judge map ``judge_models[judge]`` (null = the judge has none here); in a
    generated tournament, the judge itself when it is one of the answerers; the family map
    ``own_models[family]``, only where configured; else none.  Two judges of one family can
    so map to different models.  Every named model must be an answer model of the tournament.
    """
    dataset = str(table["dataset"].iloc[0]) if len(table) else "?"
    models = list(dict.fromkeys(table["model"]))

    def check(m: str, key: str) -> str:
        if m not in models:
            raise ConfigError(f"uda.datasets.{dataset}.{key}: {m!r} is not an answer model of the tournament "
                              f"({', '.join(models)})")
        return str(m)

    by_judge = dict(spec.get("judge_models") or {})
    if judge in by_judge:
        m = by_judge[judge]
        return None if m is None else check(str(m), f"judge_models.{judge}")
    if spec.get("loader") == "generated" and judge in models:
        return judge
    by_family = dict(spec.get("own_models") or {})
    if family in by_family:
        return check(str(by_family[family]), f"own_models.{family}")
    return None


# ---------------------------------------------------------------------------------
# querying one judge


def own_answer_requests(table: pd.DataFrame, own_model: str | None, *, self_answer: bool = False) -> list[JudgeRequest]:
    """One answer request per prompt (paper 000's answer prompt); ``meta.prompt_id`` names the prompt.

    ``self_answer``: the judge is the answerer ``own_model`` of a generated tournament; its own answer
    is then the very request of the generation step (a cache hit: the same text, asked once).
    """
    reqs = []
    for pid, g in table.groupby("prompt_id", sort=False):
        gen: dict[str, Any] = {"task": "uda_answer"}
        if own_model is not None and not self_answer:
            gen["family_answer"] = str(g.loc[g["model"] == own_model, "answer"].iloc[0])
        reqs.append(uda_prompts.answer_request(str(g["prompt"].iloc[0]), truth={"gen": gen}, meta={"prompt_id": pid}))
    return reqs


def pair_skeletons(table: pd.DataFrame, template: str = uda_prompts.TEMPLATE_NAME) -> list[JudgeRequest]:
    """Every ordered pair of every prompt (model_a shown as A), without a judge's own answer: what
    every judge of the tournament is asked alike.  Built once per tournament and shared by its
    judges (:func:`pair_requests`): a paper-size tournament has 45,000 pairs per judge, and the
    prompt text of each is the same for all ten."""
    reqs = []
    for pid, g in table.groupby("prompt_id", sort=False):
        rows = list(table_tuples(g, index=False))
        for a in rows:
            for b in rows:
                if a.model == b.model:
                    continue
                truth: dict[str, Any] = {}
                gold = ""
                if not (pd.isna(a.quality) or pd.isna(b.quality)):
                    truth.update(quality_a=float(a.quality), quality_b=float(b.quality))
                    gold = "A" if a.quality > b.quality else ("B" if b.quality > a.quality else "tie")
                reqs.append(pairwise_request(
                    template, question=a.prompt, first=a.answer, second=b.answer, truth=truth,
                    meta={"prompt_id": pid, "model_a": a.model, "model_b": b.model, "gold": gold},
                ))
    return reqs


def pair_requests(table: pd.DataFrame, own_answers: dict[str, str], family: str,
                  template: str = uda_prompts.TEMPLATE_NAME,
                  skeletons: list[JudgeRequest] | None = None) -> list[JudgeRequest]:
    """Every ordered pair of every prompt (model_a shown as A); truth carries the latent quality and the
    judge's own answer for the simulated panel (real backends never see it).  ``skeletons``: the
    tournament's :func:`pair_skeletons` when the caller has them (built from ``table`` otherwise)."""
    base = pair_skeletons(table, template) if skeletons is None else skeletons
    # A skeleton without truth of its own (a tournament without latent quality, as the paper's,
    # which has none) gets its prompt's one truth dict, shared by the prompt's 90 pairs of a
    # ten-model tournament: equal to a dict per pair, and a plan writes a truth dict's JSON once
    # (``judgelab.judges.runner._plan_truth``).  Nothing changes a request's truth once built.
    by_prompt: dict[str, dict[str, Any]] = {}
    out = []
    for r in base:
        pid = str(r.meta["prompt_id"])
        if r.truth:
            truth = {**r.truth, "own_answers": {family: own_answers.get(pid, "")}}
        else:
            shared = by_prompt.get(pid)
            if shared is None:
                shared = by_prompt[pid] = {"own_answers": {family: own_answers.get(pid, "")}}
            truth = shared
        out.append(_judges_copy(r, truth=truth))
    return out


def _judges_copy(skeleton: JudgeRequest, truth: dict[str, Any]) -> JudgeRequest:
    """A judge's request from a tournament's skeleton: every field shared (none is changed after a
    request is built) but its own ``truth`` and a copy of ``meta``.  Copied attribute by attribute,
    without the constructor's checks, which the skeleton passed when it was built: ten judges take
    450,000 requests from the skeletons of a paper-size tournament."""
    request = object.__new__(JudgeRequest)
    request.__dict__.update(skeleton.__dict__, truth=truth, meta=dict(skeleton.meta))
    return request


def judge_tournament(judge: Judge, table: pd.DataFrame, cache: CallStore, *, own_model: str | None,
                     template: str = uda_prompts.TEMPLATE_NAME, label: str | None = None,
                     max_error_rate: float | None = 0.0,
                     skeletons: list[JudgeRequest] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The judge answers every prompt, then judges every ordered pair; returns (answers, verdicts).
    ``skeletons``: the tournament's :func:`pair_skeletons`, when several judges share them."""
    dataset = str(table["dataset"].iloc[0])
    seed = int(judge.spec.sampling.get("seed", 0))

    # 1. own answers (paper 000's answer prompt); a judge that answered a generated tournament reuses its answers
    reqs = own_answer_requests(table, own_model, self_answer=own_model is not None and own_model == judge.name)
    resp = run_requests(judge, reqs, cache, label=f"{label or dataset}:answers", max_error_rate=max_error_rate)
    ans_rows = []
    own: dict[str, str] = {}
    for req, r in zip(reqs, resp, strict=True):
        text = str(r.value) if r.status.has_value and r.value is not None else ""
        own[req.meta["prompt_id"]] = text
        ans_rows.append({
            "dataset": dataset, "prompt_id": req.meta["prompt_id"], "judge": judge.name, "backend": judge.spec.backend,
            "model": judge.spec.model, "family": judge.spec.family, "own_model": own_model or "", "answer": text,
            "status": r.status.value, "parse_method": r.parse_method, "raw_text": r.raw_text or "",
            "tokens_in": r.tokens_in, "tokens_out": r.tokens_out, "cost_usd": r.cost_usd, "latency_s": r.latency_s,
            "simulated": judge.simulated, "judge_seed": seed, "key": r.key,
        })
    answers = pd.DataFrame(ans_rows, columns=ANSWER_COLUMNS)

    # 2. every ordered pair, paper 000's judging prompt
    vreqs = pair_requests(table, own, judge.spec.family, template, skeletons)
    vresp = run_requests(judge, vreqs, cache, label=f"{label or dataset}:pairs", max_error_rate=max_error_rate)
    verdicts = _verdict_table(judge, vreqs, vresp, template=template, seed=seed, dataset=dataset)
    cat = table.drop_duplicates("prompt_id").set_index("prompt_id")["category"]
    verdicts["category"] = verdicts["prompt_id"].map(cat).fillna("")
    return answers, verdicts


def _verdict_table(judge: Judge, reqs: list[JudgeRequest], resps: list[JudgeResponse], *, template: str, seed: int,
                   dataset: str) -> pd.DataFrame:
    """One judge's verdicts on every ordered pair (:data:`UDA_VERDICT_COLUMNS`, ``category`` left
    empty), built column by column: a paper-size tournament has 45,000 rows per judge, and a
    table from one dict per row costs more than the judge's plan itself."""
    n = len(reqs)
    if n == 0:  # (columns of no values would read as floats)
        return pd.DataFrame([], columns=UDA_VERDICT_COLUMNS)
    metas = [r.meta for r in reqs]
    values = [r.value if r.status.has_value else None for r in resps]
    gold = [m["gold"] for m in metas]
    prompt_id, model_a, model_b = [m["prompt_id"] for m in metas], [m["model_a"] for m in metas], \
        [m["model_b"] for m in metas]
    shown = [v or "" for v in values]
    cols: dict[str, Any] = {
        "pair_id": [f"{p}|{a}|{b}" for p, a, b in zip(prompt_id, model_a, model_b, strict=True)],
        "order": ["AB"] * n, "judge": [judge.name] * n, "backend": [judge.spec.backend] * n,
        "model": [judge.spec.model] * n, "family": [judge.spec.family] * n, "template": [template] * n,
        "verdict_shown": shown, "verdict": list(shown), "expected_verdict": gold,
        "correct": [bool(v is not None and v == g) for v, g in zip(values, gold, strict=True)],
        "status": [r.status.value for r in resps], "parse_method": [r.parse_method for r in resps],
        "raw_text": [r.raw_text or "" for r in resps], "tokens_in": [r.tokens_in for r in resps],
        "tokens_out": [r.tokens_out for r in resps], "cost_usd": [r.cost_usd for r in resps],
        "latency_s": [r.latency_s for r in resps], "simulated": [judge.simulated] * n, "judge_seed": [seed] * n,
        "key": [r.key for r in resps], "bias_type": ["none"] * n, "category": [""] * n, "dataset": [dataset] * n,
        "prompt_id": prompt_id, "model_a": model_a, "model_b": model_b,
        "score_a": [SCORE_OF_VERDICT.get(v, np.nan) if v else np.nan for v in values],
    }
    return pd.DataFrame(cols, columns=UDA_VERDICT_COLUMNS)


# ---------------------------------------------------------------------------------
# generating a user's tournament: every answerer answers every prompt

GENERATION_COLUMNS = ["dataset", "prompt_id", "answerer", "judge", "backend", "model", "family", "answer", "status",
                      "parse_method", "raw_text", "tokens_in", "tokens_out", "cost_usd", "latency_s", "simulated",
                      "key"]


def generate_answers(answerer: Judge, prompts: pd.DataFrame, cache: CallStore, *, dataset: str,
                     label: str | None = None, max_error_rate: float | None = 0.0) -> pd.DataFrame:
    """``answerer`` answers every prompt with paper 000's answer prompt, through the cache.

    Rows carry ``judge`` (= ``answerer``) so the call summary counts them with the judge's other calls.
    The requests are those of a judge's own answers (:func:`own_answer_requests`), so a judge that
    is also an answerer gets its own answer from the cache.  Every call is a row with its status:
    an empty answer is ``unparsed``, a refusal or an API error (with ``max_error_rate`` > 0) keeps
    its status and has no answer.
    """
    table = prompts.assign(dataset=dataset, model="")
    reqs = own_answer_requests(table, None)
    resp = run_requests(answerer, reqs, cache, label=label or f"uda:{dataset}:generate", max_error_rate=max_error_rate)
    rows = []
    for req, r in zip(reqs, resp, strict=True):
        rows.append({
            "dataset": dataset, "prompt_id": req.meta["prompt_id"], "answerer": answerer.name, "judge": answerer.name,
            "backend": answerer.spec.backend, "model": answerer.spec.model, "family": answerer.spec.family,
            "answer": str(r.value) if r.status.has_value and r.value is not None else "", "status": r.status.value,
            "parse_method": r.parse_method, "raw_text": r.raw_text or "", "tokens_in": r.tokens_in,
            "tokens_out": r.tokens_out, "cost_usd": r.cost_usd, "latency_s": r.latency_s,
            "simulated": answerer.simulated, "key": r.key,
        })
    return pd.DataFrame(rows, columns=GENERATION_COLUMNS)


def model_answer_rows(generated: pd.DataFrame) -> list[dict[str, Any]]:
    """The generation table as model_answer JSONL rows (MT-Bench's layout, plus the call's status)."""
    return [{"question_id": r.prompt_id, "model_id": r.answerer, "choices": [{"index": 0, "turns": [r.answer]}],
             "status": r.status, "key": r.key} for r in table_tuples(generated, index=False)]


def generation_summary(generated: pd.DataFrame, tournament: pd.DataFrame) -> pd.DataFrame:
    """Per answerer: prompts asked, calls by status, tokens, cost, and the prompts the tournament left
    out because some answerer has no usable answer to them."""
    kept = set(tournament["prompt_id"].astype(str))
    rows = []
    for a, g in generated.groupby("answerer", sort=False):
        counts = g["status"].value_counts()
        rows.append({
            "answerer": a, "backend": g["backend"].iloc[0], "model": g["model"].iloc[0],
            "family": g["family"].iloc[0], "simulated": any_true(g), "prompts": len(g),
            **{f"n_{s.value}": int(counts.get(s.value, 0)) for s in CallStatus},
            "prompts_in_tournament": int(g["prompt_id"].astype(str).isin(kept).sum()),
            "prompts_left_out": int((~g["prompt_id"].astype(str).isin(kept)).sum()),
            "tokens_in": int(g["tokens_in"].sum()), "tokens_out": int(g["tokens_out"].sum()),
            "cost_usd": float(g["cost_usd"].sum()),
        })
    return pd.DataFrame(rows)
