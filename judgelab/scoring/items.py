"""Scoring items: a response to grade on a 1-5 rubric, with every gold score known for it.

Loaders (a registry, :data:`ITEM_LOADERS`; config ``scoring.datasets.<name>.loader``):

* ``prometheus`` -- the Prometheus evaluation sets as published in
  ``prometheus-eval/prometheus-eval`` ``eval/benchmark/data/*_eval.json``: one row per
  (question, response) with ``idx``, ``response_source``, the full absolute-grading
  prompt in ``instruction`` (instance rubric, score-5 reference; the parts are read back
  out of it) and ``gpt4_score`` (GPT-4's scorings).  MT-Bench and Vicuna-Bench
  (``{mt_bench,vicuna}_eval.json``, 80 x 4 rows, three GPT-4 scores) are in the public
  data here.  ``flask_eval.json`` -- the full FLASK set with human scores that paper 004
  uses -- has the same layout plus ``criteria`` (the FLASK skill the row is graded on)
  and ``human_score`` (the list of human annotators' scores; the human gold is their
  mean, as in Prometheus' own evaluation code); it is not in the public data here, so it
  is read from a path and tested on a fixture in that layout.
* ``flask`` -- the FLASK hard subset of ``kaistAI/FLASK`` (``flask/flask_hard_evaluation.jsonl``):
  instructions with a reference answer and 3 annotated skills, each scored on the
  skill's 1-5 rubric (``flask/skillset_description.json``).  It has no responses and no
  scores: responses are synthesised to seeded target levels by the generation-review
  pipeline (:mod:`judgelab.scoring.generation`).  (Full FLASK with human scores: the
  ``prometheus`` loader on ``flask_eval.json``.)
* ``biggen`` -- the ``human_eval`` split of the Hugging Face dataset
  ``prometheus-eval/BiGGen-Bench-Results`` (``data/human_eval-00000-of-00001.parquet``;
  the 2,780 non-multilingual responses paper 004 uses, 695 instances x 4 models): ``id``,
  ``capability``, ``task``, ``instance_idx``, ``system_prompt``, ``input``,
  ``reference_answer``, ``score_rubric`` (``criteria``, ``score1_description`` ..
  ``score5_description``), ``response``, ``model_name``, ``human_score`` (one 1-5 score)
  and the recorded judges' scores, of which ``gpt4_score`` (one score) is kept as the
  GPT-4 gold ("GPT-4 scores are sourced from the original benchmark", paper 004 Table 2).
  Parquet as published, or the same rows as JSON / JSONL.  Rows of the
  ``multilingual`` capability (a separate split) are skipped unless ``multilingual``.
* ``rubric_set`` -- the project's own small rubric set (``data/scoring/rubric_set.jsonl``):
  instructions with a rubric, a score-5 reference and responses written to a
  designed rubric level each.

Items table (one row per item; parquet):

==================== ==========================================================
dataset, item_id     the set and a stable id unique within it
group_id             the (instruction, rubric) the item belongs to; references at
                     scores 1-4 are generated once per group
instruction          the instruction shown to the judge (multi-turn context included)
response             the response to grade (empty for groups still to be synthesised)
criterion            the rubric's criterion
rubric_1..rubric_5   the descriptions of scores 1..5
reference_5          the full-mark reference answer
response_source      which model wrote the response
category             subset / task / skill
gpt4_1..gpt4_3       the three recorded GPT-4 scores (Prometheus files; else missing)
gold_gpt4            their majority (:func:`majority_score`)
human_score          human score where the data set has one
design_score         the rubric level a response was written for (project rubric set)
target_score         the level a synthesised response was asked to reach
truth_score          the latent true score handed to simulated judges, first of:
                     human, design, synthesised level, GPT-4 majority
truth_source         which one it is
in_sample            the item is in the seeded sample the judges score
==================== ==========================================================
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgelab.io import InputError, iter_jsonl, table_rows
from judgelab.registry import Registry
from judgelab.scoring.prompt import Rubric, parse_prometheus_prompt


def stable_seed(*parts: object) -> int:
    """A seed from the pipeline seed and names (Python's hash() is salted per process).

    Here, beside the items, rather than in :mod:`judgelab.scoring.metrics`: the query and
    generation jobs seed their samples with it, and metrics loads ``scipy.stats``, which those
    jobs do not need."""
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "little")


@dataclass
class ScoringItem:
    dataset: str
    item_id: str
    group_id: str
    instruction: str
    response: str
    criterion: str
    rubric_1: str
    rubric_2: str
    rubric_3: str
    rubric_4: str
    rubric_5: str
    reference_5: str
    response_source: str = ""
    category: str = ""
    gpt4_1: float | None = None
    gpt4_2: float | None = None
    gpt4_3: float | None = None
    gold_gpt4: float | None = None
    human_score: float | None = None
    design_score: float | None = None
    target_score: float | None = None
    truth_score: float | None = None
    truth_source: str = ""
    in_sample: bool = True

    @property
    def rubric(self) -> Rubric:
        return Rubric(self.criterion, (self.rubric_1, self.rubric_2, self.rubric_3, self.rubric_4, self.rubric_5))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


ITEM_COLUMNS = [f.name for f in fields(ScoringItem)]


def majority_score(scores: Sequence[float | int | None]) -> float | None:
    """Majority of repeated 1-5 scorings (paper 004's gold protocol).

    The most frequent valid score; when no score is more frequent than another
    (three different scores) the median, the ordinal choice that keeps the middle
    judgment.  Unparsed scorings (None, -1) do not vote; with no valid scoring the
    result is None.
    """
    vals = [int(s) for s in scores if s is not None and not (isinstance(s, float) and np.isnan(s)) and 1 <= int(s) <= 5]
    if not vals:
        return None
    counts = Counter(vals).most_common()
    if len(counts) == 1 or counts[0][1] > counts[1][1]:
        return float(counts[0][0])
    return float(np.median(vals))


def _numbered(prefix: str, values: Sequence[Any]) -> dict[str, Any]:
    """``{prefix1: values[0], prefix2: values[1], ...}``: the numbered fields of :class:`ScoringItem`
    (``rubric_1`` .. ``rubric_5``, ``gpt4_1`` .. ``gpt4_3``) as keyword arguments."""
    return {f"{prefix}{k}": v for k, v in enumerate(values, start=1)}


def _truth(item: ScoringItem) -> ScoringItem:
    for src, val in (("human", item.human_score), ("design", item.design_score),
                     ("synthesised", item.target_score), ("gpt4", item.gold_gpt4)):
        if val is not None and not (isinstance(val, float) and np.isnan(val)):
            item.truth_score, item.truth_source = float(val), src
            return item
    item.truth_score, item.truth_source = None, ""
    return item


def _text(row: dict[str, Any], key: str, where: str, *, allow_empty: bool = False) -> str:
    v = row.get(key)
    if not isinstance(v, str) or (not allow_empty and not v.strip()):
        raise InputError(f"{where}: field {key!r} is missing, empty or not text")
    return v


def _score(v: Any, where: str, key: str) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InputError(f"{where}: {key} {v!r} is not a number") from None
    if not 1.0 <= f <= 5.0:
        raise InputError(f"{where}: {key} {v!r} is outside 1-5")
    return f


def _read_records(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Rows of a JSON array, JSONL or parquet file, each with a location for errors."""
    if path.suffix == ".parquet":
        return [(f"{path} row {i}", r) for i, r in enumerate(table_rows(pd.read_parquet(path)))]
    if path.suffix == ".jsonl":
        return [(f"{path}:{n}", r) for n, r in iter_jsonl(path)]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON array of rows")
    out = []
    for i, r in enumerate(data):
        if not isinstance(r, dict):
            raise InputError(f"{path} element {i}: expected an object")
        out.append((f"{path} element {i}", r))
    return out


# -- loaders ---------------------------------------------------------------------------

LoaderFn = Callable[[str, dict[str, Any]], list[ScoringItem]]
ITEM_LOADERS: Registry[LoaderFn] = Registry("scoring item loader")


def _resolve(source: str) -> Path:
    from judgelab.datasets.sources import SOURCES, resolve_data_path, source_path

    p = Path(source)
    if p.exists():
        return p
    return source_path(source) if source in SOURCES else resolve_data_path(source)


def _score_list(v: Any, where: str, key: str, *, required: bool) -> list[float]:
    """A list of 1-5 scorings (a bare number counts as one); unparsed entries (None, -1) are left out."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        if required:
            raise InputError(f"{where}: missing field {key!r}")
        return []
    vals = list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v]
    unparsed = [x is None or (isinstance(x, (int, float, np.number)) and (np.isnan(x) or x == -1)) for x in vals]
    out = [_score(x, where, key) for x, skip in zip(vals, unparsed, strict=True) if not skip]
    if required and not out:
        raise InputError(f"{where}: {key} has no score, got {v!r}")
    return out


@ITEM_LOADERS.register("prometheus")
def load_prometheus(name: str, spec: dict[str, Any]) -> list[ScoringItem]:
    """Prometheus ``*_eval.json``: parts from the stored prompt, GPT-4's scorings, human scores where present."""
    path = _resolve(spec["source"])
    items = []
    for where, row in _read_records(path):
        prompt = _text(row, "instruction", where)
        parts = parse_prometheus_prompt(prompt, where=where)
        g = _score_list(row.get("gpt4_score"), where, "gpt4_score", required=True)
        if len(g) > 3:
            raise InputError(f"{where}: gpt4_score has {len(g)} scorings; at most three are kept, got {g!r}")
        human = _score_list(row.get("human_score"), where, "human_score", required=False)
        idx, src = row.get("idx"), row.get("response_source")
        if idx is None or not src:
            raise InputError(f"{where}: missing field 'idx' or 'response_source'")
        crit = row.get("criteria")
        group = f"{idx}-{str(crit).replace(' ', '_')}" if crit else str(idx)
        items.append(_truth(ScoringItem(
            dataset=name, item_id=f"{group}-{src}", group_id=group, instruction=parts.instruction,
            response=parts.response, criterion=parts.rubric.criterion,
            **_numbered("rubric_", [parts.rubric.description(k) for k in range(1, 6)]),
            reference_5=parts.reference, response_source=str(src),
            category=str(crit or row.get("category", "")),
            **_numbered("gpt4_", [g[k] if k < len(g) else None for k in range(3)]), gold_gpt4=majority_score(g),
            human_score=float(np.mean(human)) if human else None,
        )))
    return items


def _flask_rubrics(path: Path) -> dict[str, Rubric]:
    out = {}
    for where, row in _read_records(path):
        skill, crit, scoring = row.get("Skill"), row.get("Criteria"), row.get("Scoring")
        if not isinstance(skill, str) or not isinstance(crit, str) or not isinstance(scoring, dict):
            raise InputError(f"{where}: a FLASK skill needs 'Skill', 'Criteria' and 'Scoring'")
        missing = [k for k in "12345" if not isinstance(scoring.get(k), str)]
        if missing:
            raise InputError(f"{where}: skill {skill!r} lacks score description(s) {missing}")
        out[skill] = Rubric(crit, tuple(scoring[k] for k in "12345"))
    return out


@ITEM_LOADERS.register("flask")
def load_flask(name: str, spec: dict[str, Any]) -> list[ScoringItem]:
    """FLASK instructions x annotated skills, responses to be synthesised.

    ``skills_per_item`` (default 1) takes that many of each instruction's annotated
    skills, in the annotated order.  FLASK's model responses with human scores are
    published in Prometheus' ``flask_eval.json``: load that with the ``prometheus`` loader.
    """
    if spec.get("responses"):
        raise InputError(f"scoring dataset {name!r}: 'responses' is not a FLASK field; full FLASK with human "
                         "scores is Prometheus' flask_eval.json -- use loader: prometheus with it as source")
    path = _resolve(spec["source"])
    rubrics = _flask_rubrics(_resolve(spec.get("rubrics", "flask/skillset")))
    k_skills = int(spec.get("skills_per_item", 1))
    items = []
    for where, row in _read_records(path):
        idx = row.get("idx")
        skills = row.get("skill")
        if idx is None or not isinstance(skills, list) or not skills:
            raise InputError(f"{where}: a FLASK row needs 'idx' and a non-empty 'skill' list")
        instruction, reference = _text(row, "instruction", where), _text(row, "answer", where)
        for skill in skills[:k_skills]:
            if skill not in rubrics:
                raise InputError(f"{where}: skill {skill!r} has no rubric; known: {sorted(rubrics)}")
            rub = rubrics[skill]
            group = f"{idx}-{skill.replace(' ', '_')}"
            items.append(ScoringItem(
                dataset=name, item_id=f"{group}-synth", group_id=group, instruction=instruction, response="",
                criterion=rub.criterion, **_numbered("rubric_", [rub.description(k) for k in range(1, 6)]),
                reference_5=reference, response_source="", category=skill))
    return items


@ITEM_LOADERS.register("biggen")
def load_biggen(name: str, spec: dict[str, Any]) -> list[ScoringItem]:
    """BiGGen-Bench-Results ``human_eval`` rows (non-multilingual, as in paper 004)."""
    path = _resolve(spec["source"])
    items = []
    for where, row in _read_records(path):
        if str(row.get("capability", "")).lower() == "multilingual" and not spec.get("multilingual", False):
            continue
        rub = row.get("score_rubric")
        if isinstance(rub, str):
            try:
                rub = json.loads(rub)
            except json.JSONDecodeError:
                raise InputError(f"{where}: score_rubric is not a JSON object") from None
        if not isinstance(rub, dict) or not isinstance(rub.get("criteria"), str):
            raise InputError(f"{where}: score_rubric needs 'criteria' and score1..5_description")
        descs = [rub.get(f"score{k}_description") for k in range(1, 6)]
        if not all(isinstance(d, str) for d in descs):
            raise InputError(f"{where}: score_rubric lacks a score<k>_description")
        gid, model = row.get("id"), row.get("model_name")
        if not gid or not model:
            raise InputError(f"{where}: missing field 'id' or 'model_name'")
        human = _score_list(row.get("human_score"), where, "human_score", required=False)
        gpt4 = _score_list(row.get("gpt4_score"), where, "gpt4_score", required=False)
        items.append(_truth(ScoringItem(
            dataset=name, item_id=f"{gid}-{model}", group_id=str(gid),
            instruction=_text(row, "input", where), response=_text(row, "response", where),
            criterion=rub["criteria"], **_numbered("rubric_", descs),
            reference_5=_text(row, "reference_answer", where), response_source=str(model),
            category=str(row.get("capability", "")),
            human_score=float(np.mean(human)) if human else None,
            gpt4_1=gpt4[0] if gpt4 else None, gold_gpt4=majority_score(gpt4),
        )))
    return items


@ITEM_LOADERS.register("rubric_set")
def load_rubric_set(name: str, spec: dict[str, Any]) -> list[ScoringItem]:
    """The project's rubric set: one JSONL row per instruction, responses at designed levels."""
    from judgelab.config import REPO_ROOT

    p = Path(spec["source"])
    path = p if p.is_absolute() else REPO_ROOT / p
    if not path.exists():
        raise InputError(f"rubric set not found: {path}")
    items = []
    for where, row in _read_records(path):
        gid = str(row.get("group_id") or "")
        if not gid:
            raise InputError(f"{where}: missing field 'group_id'")
        descs = row.get("rubric")
        if not isinstance(descs, dict) or any(not isinstance(descs.get(str(k)), str) for k in range(1, 6)):
            raise InputError(f"{where}: 'rubric' must map '1'..'5' to descriptions")
        resps = row.get("responses")
        if not isinstance(resps, list) or not resps:
            raise InputError(f"{where}: 'responses' must be a non-empty list")
        for j, r in enumerate(resps):
            rwhere = f"{where} responses[{j}]"
            items.append(_truth(ScoringItem(
                dataset=name, item_id=f"{gid}-{r.get('response_id', j)}", group_id=gid,
                instruction=_text(row, "instruction", where), response=_text(r, "text", rwhere),
                criterion=_text(row, "criterion", where), **{f"rubric_{k}": descs[str(k)] for k in range(1, 6)},
                reference_5=_text(row, "reference_answer", where), response_source="judgelab rubric set",
                category=str(row.get("category", "")),
                design_score=_score(r.get("design_score"), rwhere, "design_score"),
            )))
    return items


def load_items(name: str, spec: dict[str, Any]) -> list[ScoringItem]:
    items = ITEM_LOADERS.get(spec["loader"], where=f"scoring dataset {name!r}")(name, spec)
    seen: set[str] = set()
    for it in items:
        if it.item_id in seen:
            raise InputError(f"scoring dataset {name!r}: duplicate item id {it.item_id!r}")
        seen.add(it.item_id)
    if not items:
        raise InputError(f"scoring dataset {name!r}: no items loaded from {spec.get('source')!r}")
    return items


def mark_sample(items: list[ScoringItem], n: int | None, seed: int) -> list[ScoringItem]:
    """Flag a seeded sample of ``n`` items (all when ``n`` is None or >= the set)."""
    if n is None or n >= len(items):
        for it in items:
            it.in_sample = True
        return items
    rng = np.random.default_rng(seed)
    chosen = set(rng.choice(len(items), size=n, replace=False).tolist())
    for i, it in enumerate(items):
        it.in_sample = i in chosen
    return items


def items_frame(items: list[ScoringItem]) -> pd.DataFrame:
    return pd.DataFrame([it.to_dict() for it in items], columns=ITEM_COLUMNS)


def items_from_frame(df: pd.DataFrame, *, where: str = "items table") -> list[ScoringItem]:
    missing = [c for c in ITEM_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"{where}: missing column(s) {missing}")
    out = []
    for rec in table_rows(df[ITEM_COLUMNS]):
        for k, v in rec.items():
            if isinstance(v, float) and np.isnan(v):
                rec[k] = None
        out.append(ScoringItem(**rec))
    return out


def apply_synthesised(items: list[ScoringItem], responses: pd.DataFrame) -> list[ScoringItem]:
    """Fill synthesised responses (generation results with purpose ``response``) into items.

    A response the review never accepted under ``generation.on_reject: drop`` has no text:
    its item leaves the study (nothing to grade), with a warning giving the count; the
    rejections are counted per level in ``generation_summary.csv``.
    """
    by_group = {(r["dataset"], r["group_id"]): r for r in table_rows(responses)}
    kept, dropped = [], []
    for it in items:
        if it.response:
            kept.append(it)
            continue
        r = by_group.get((it.dataset, it.group_id))
        if r is None:
            raise InputError(f"item {it.dataset}/{it.item_id}: no synthesised response for group {it.group_id!r}")
        if r["text"] is None or (isinstance(r["text"], float) and np.isnan(r["text"])):
            dropped.append(f"{it.dataset}/{it.item_id}")
            continue
        kept.append(it)
        it.response = str(r["text"])
        it.target_score = float(r["level"])
        it.response_source = f"synthesised:{r['generator']}"
        _truth(it)
        level = r.get("simulated_level")
        if level is not None and np.isfinite(level):
            # a simulated writer says which level it really wrote: that is the true score
            it.truth_score, it.truth_source = float(level), "synthesised (simulated writer's level)"
    if dropped:
        warnings.warn(f"{len(dropped)} item(s) left out: their synthesised response was never accepted "
                      f"(generation.on_reject: drop): {', '.join(dropped[:5])}{' ...' if len(dropped) > 5 else ''}",
                      stacklevel=2)
    return kept


def study_items(item_tables: Sequence[str | Path], responses_path: str | Path | None = None, *,
                in_sample_only: bool = True) -> list[ScoringItem]:
    """The items a rule works on (all data sets): the items tables, synthesised responses filled in."""
    items: list[ScoringItem] = []
    for path in item_tables:
        df = pd.read_parquet(path)
        if in_sample_only:
            df = df[df["in_sample"].astype(bool)]
        items.extend(items_from_frame(df, where=str(path)))
    if responses_path is not None:
        items = apply_synthesised(items, pd.read_parquet(responses_path))
    return items
