"""The bias detector: its inputs (cases), prompts, test set and evaluation (Sec. 5.1-5.2).

A *case* is one tuple (x_bias, y_bias, evaluator, bias type) of the paper with its truth
b_i: the item as the evaluator saw it (for position both presentation orders), the
evaluator's verdict and the evaluator's model name (the detector is told who judged,
I_MJ).  Cases come from the labels table (Eq. 1); the diagnostic sets give cases whose
truth is always No.

Detectors are configured as entries ``{prompting, judge}`` (any backend: a simulated
detector with planted skill, an API model, a local checkpoint) or ``{prompting, trained}``
(a checkpoint this study fine-tuned, see :mod:`judgelab.rbd.train`).  ``prompting`` names a
:data:`~judgelab.rbd.prompts.DETECTOR_PROMPTS` entry: ``rbd`` (the fine-tuning template),
``zero_shot``, ``few_shot_labels``, ``few_shot_reasoning`` (Fig. 5 baselines; the shots are
two Yes and two No kept teacher traces of different bias types, as the authors pick them).

The detector test set (Sec. 5.1) is balanced 50:50 Yes/No with about equal numbers per
bias type, drawn from the test split by a seeded hash (the authors' ``balance_testset``:
equal shares per label and bias type, topped up from the other types when one runs short).

Columns of a detector prediction table: ``detector``, ``prompting``, ``case_id``,
``subset`` (``test`` or a diagnostic set), ``set``, ``item_id``, ``evaluator``,
``bias_type``, ``truth``, ``pred`` (yes / no / "" when unparsed), ``reasoning`` and the
call columns of :data:`judgelab.rbd.evaluate.CALL_COLUMNS` except ``latency_s`` (wall-clock
time of a local model; latency is reported from the loop, Table 6).  The metrics table has one
row per detector and subset (and per bias type of the test set): ``n``, ``n_missing``,
``tp``/``fp``/``tn``/``fn``, ``accuracy``, ``precision``, ``recall``, ``f1``, ``reason``: a
detector with no yes/no label in a group keeps its row, the four scores NaN (an unparsed
answer counts as wrong: 0), ``reason`` saying why (:mod:`judgelab.stats.unscored`; empty when scored);
``parse_rate`` (share of answers with a yes/no label) and ``accuracy_low``/``accuracy_high``, the
Wilson 95% interval of the accuracy over all ``n`` cases (NaN where the accuracy is).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import pandas as pd

from judgelab.cache import CallStore
from judgelab.config import ConfigError
from judgelab.io import any_true, table_rows
from judgelab.judges.base import Judge
from judgelab.judges.runner import run_requests
from judgelab.parsing import split_think
from judgelab.rbd import metrics as M
from judgelab.rbd.evaluate import CALL_COLUMNS, call_fields
from judgelab.rbd.prompts import (
    BIAS_TYPES,
    DETECTOR_PROMPTS,
    FewShotExample,
    classifier_input,
    detector_choices,
    judgement_text,
    truncate_words,
)
from judgelab.rbd.sets import RbdItem, unit_hash
from judgelab.records import JudgeRequest, Message, OutputKind
from judgelab.stats.intervals import wilson_interval
from judgelab.stats.unscored import blank, no_value_reason


@dataclass
class DetectorCase:
    """One detector input and its truth (see the module docstring)."""

    case_id: str
    subset: str
    set: str
    item_id: str
    evaluator: str
    evaluator_model: str
    bias_type: str
    answer_format: str  # output_ab / number / two_rounds
    question: str
    options: list[str]
    swapped_options: list[str]
    statement: str
    verdict: list[int]
    truth: str

    def choices(self, max_words: int | None = None) -> str:
        return detector_choices(self.bias_type, self.options, statement=self.statement,
                                swapped=self.swapped_options or None, max_words=max_words)

    def judgement(self) -> str:
        return judgement_text(self.answer_format, self.verdict)

    def instruction(self, max_words: int | None = None) -> str:
        return truncate_words(self.question, 2 * max_words if max_words else None)

    def with_verdict(self, verdict: Sequence[int], truth: str) -> DetectorCase:
        # the fields copied as asdict copies them (lists anew), without its recursive walk
        return replace(self, options=list(self.options), swapped_options=list(self.swapped_options),
                       verdict=[int(v) for v in verdict], truth=truth)


CASE_COLUMNS = [f.name for f in fields(DetectorCase)]


def case_record(case: DetectorCase) -> dict[str, Any]:
    """``asdict(case)``: each field, its lists copied, without ``asdict``'s recursive deep copy of
    every string (a case's fields are strings and lists of strings or ints; a plan writes tens of
    thousands of cases and traces)."""
    return {k: list(v) if isinstance(v := getattr(case, k), list) else v for k in CASE_COLUMNS}


def cases_frame(cases: Sequence[DetectorCase]) -> pd.DataFrame:
    return pd.DataFrame([case_record(c) for c in cases], columns=CASE_COLUMNS)


def cases_from_frame(df: pd.DataFrame) -> list[DetectorCase]:
    out = []
    for r in table_rows(df[CASE_COLUMNS]):
        for k in ("options", "swapped_options"):
            r[k] = [str(x) for x in r[k]]
        r["verdict"] = [int(x) for x in r["verdict"]]
        out.append(DetectorCase(**r))
    return out


def case_for(d_item: RbdItem | None, b_item: RbdItem, *, evaluator: str, evaluator_model: str,
             verdict_d: int, verdict_bias: int, truth: str, subset: str = "") -> DetectorCase:
    """The detector's view of one labelled item (position: both orders and both verdicts)."""
    position = b_item.bias_type == "position"
    if position and d_item is None:
        raise ValueError(f"{b_item.item_id}: a position case needs both orders")
    return DetectorCase(
        case_id=f"{evaluator}|{b_item.item_id}", subset=subset, set=b_item.set, item_id=b_item.item_id,
        evaluator=evaluator, evaluator_model=evaluator_model, bias_type=b_item.bias_type,
        answer_format="two_rounds" if position else b_item.answer_format, question=b_item.question,
        options=list(d_item.options) if position and d_item is not None else list(b_item.options),
        swapped_options=list(b_item.options) if position else [], statement=b_item.statement,
        verdict=[int(verdict_d), int(verdict_bias)] if position else [int(verdict_bias)], truth=truth,
    )


def build_cases(items: Sequence[RbdItem], labels: pd.DataFrame, evaluator_models: dict[str, str]) -> list[DetectorCase]:
    """Every labelled (item, evaluator) pair as a detector case (b_i known)."""
    by = {(i.item_id, i.variant): i for i in items}
    out = []
    for r in table_rows(labels[labels["b"] != ""]):
        b_item = by.get((r["item_id"], "D_bias"))
        if b_item is None:
            continue
        out.append(case_for(by.get((r["item_id"], "D")), b_item, evaluator=r["judge"],
                            evaluator_model=evaluator_models.get(r["judge"], r["judge"]),
                            verdict_d=r["verdict_D"], verdict_bias=r["verdict_bias"], truth=r["b"],
                            subset=r["split"]))
    return out


def balanced_test_set(cases: Sequence[DetectorCase], size: int, seed: int,
                      bias_types: Sequence[str] = BIAS_TYPES) -> list[DetectorCase]:
    """Half Yes, half No; within each label about equal numbers per bias type (seeded)."""
    ranked = sorted(cases, key=lambda c: unit_hash(seed, "detector_test", c.case_id))
    out: list[DetectorCase] = []
    for label in ("yes", "no"):
        pool = [c for c in ranked if c.truth == label and c.bias_type in bias_types]
        want = size // 2
        per = want // max(1, len(bias_types))
        chosen = []
        for bt in bias_types:
            chosen += [c for c in pool if c.bias_type == bt][:per]
        ids = {c.case_id for c in chosen}
        chosen += [c for c in pool if c.case_id not in ids][: max(0, want - len(chosen))]
        out += chosen
    return [DetectorCase(**{**case_record(c), "subset": "test"}) for c in out]


def split_cases(cases: Sequence[DetectorCase], *, bias_sets: dict[str, str], supervision_evaluators: Sequence[str],
                test_size: int, diag_size: int | None, seed: int) -> tuple[list[DetectorCase], list[DetectorCase]]:
    """Rule ``rbd_cases``: (training tuples, test + diagnostic cases).  Training: the train-subset
    cases of each bias type's set (``bias_sets``: constructed or the authors' sets) judged by a
    supervision evaluator; test: :func:`balanced_test_set` of the test subset; diagnostic: every
    ``diag_*`` set, ranked by a seeded hash and cut at ``diag_size``, its cases marked with their set."""
    sets = {bias_sets.get(b, b) for b in BIAS_TYPES}
    train = [c for c in cases if c.subset == "train" and c.set in sets and c.evaluator in supervision_evaluators]
    test = balanced_test_set([c for c in cases if c.subset == "test" and c.set in sets], test_size, int(seed))
    diag = []
    for name in sorted({c.set for c in cases if c.set.startswith("diag_")}):
        chosen = sorted((c for c in cases if c.set == name), key=lambda c: unit_hash(seed, "diag", c.case_id))
        diag += chosen if diag_size is None else chosen[:diag_size]
    for c in diag:
        c.subset = c.set
    return train, test + diag


# ---------------------------------------------------------------------------------
# detector configuration


@dataclass(frozen=True)
class DetectorSpec:
    """A configured detector: a judge entry (any backend) or a trained run, and its prompting."""

    name: str
    prompting: str = "rbd"
    judge: dict[str, Any] | None = None
    trained: str | None = None
    max_words: int | None = None  # truncate each option (and the instruction, x2) in the prompt
    example_max_words: int | None = 80  # the few-shot examples' options
    options: dict[str, Any] = field(default_factory=dict)  # for trained runs: backend options
    max_tokens: int | None = None  # for trained runs: generation budget

    @classmethod
    def from_entry(cls, entry: dict[str, Any], *, where: str) -> DetectorSpec:
        entry = dict(entry)
        judge, trained = entry.get("judge"), entry.get("trained")
        if (judge is None) == (trained is None):
            raise ConfigError(f"{where}: give exactly one of 'judge' (a judge entry) or 'trained' (a train run)")
        prompting = str(entry.get("prompting", "rbd"))
        if prompting not in DETECTOR_PROMPTS and prompting != "classifier":
            raise ConfigError(f"{where}: unknown prompting {prompting!r}; known: "
                              f"{', '.join(DETECTOR_PROMPTS.names())}, classifier")
        name = str(judge["name"] if judge is not None else trained)
        return cls(name=name, prompting=prompting, judge=judge, trained=trained,
                   max_words=entry.get("max_words"), example_max_words=entry.get("example_max_words", 80),
                   options=dict(entry.get("options") or {}), max_tokens=entry.get("max_tokens"))


def few_shot_examples(traces: pd.DataFrame, seed: int, n: int = 4, max_words: int | None = 80) -> list[FewShotExample]:
    """Two kept Yes and two kept No traces of different bias types (seeded choice)."""
    kept = traces[traces["kept"]].copy()
    kept["_r"] = [unit_hash(seed, "few_shot", c) for c in kept["case_id"]]
    kept = kept.sort_values("_r")
    picked = []
    for label in ("yes", "no"):
        seen: set[str] = set()
        for r in kept[kept["truth"] == label].to_dict("records"):
            if r["bias_type"] in seen:
                continue
            seen.add(r["bias_type"])
            picked.append(r)
            if len(seen) == n // 2:
                break
    if len(picked) < n:
        raise ConfigError(f"few-shot detector prompts need {n} kept teacher traces (2 Yes, 2 No of different bias "
                          f"types); only {len(picked)} are available -- enlarge rbd.max_eval_items")
    out = []
    for r in picked:
        c = cases_from_frame(pd.DataFrame([r]))[0]
        out.append(FewShotExample(bias_type=c.bias_type, instruction=c.instruction(max_words),
                                  choices=c.choices(max_words), judgement=c.judgement(),
                                  label=str(r["truth"]).capitalize(), reasoning=str(r["reasoning"])))
    return out


def detector_prompt(case: DetectorCase, prompting: str, *, examples: Sequence[FewShotExample] = (),
                    max_words: int | None = None) -> str:
    return DETECTOR_PROMPTS.get(prompting).render(
        evaluator=case.evaluator_model, instruction=case.instruction(max_words), choices=case.choices(max_words),
        judgement=case.judgement(), examples=examples)


def statement_option(case: DetectorCase) -> int:
    """The option a bandwagon statement names (0 / 1), or -1."""
    if "Output (a)" in case.statement:
        return 0
    if "Output (b)" in case.statement:
        return 1
    return -1


def case_info(case: DetectorCase) -> dict[str, Any]:
    """What a simulated teacher or detector is told about a case beyond the prompt text (its
    analysis of the shown verdict; real models read the prompt only)."""
    return {"bias_type": case.bias_type, "evaluator": case.evaluator_model, "chosen": list(case.verdict),
            "statement_option": statement_option(case)}


def detector_request(case: DetectorCase, spec: DetectorSpec, examples: Sequence[FewShotExample] = ()) -> JudgeRequest:
    """A yes/no request ``<think>...</think> Yes``; ``truth`` (b_i and the case's cues) is read only by
    simulated detectors, whose analysis (simworld/rbd.py, task ``rbd_detect``) then
    reasons about the options as the teacher's does."""
    prompt = detector_prompt(case, spec.prompting, examples=examples, max_words=spec.max_words)
    return JudgeRequest(messages=[Message("user", prompt)], kind=OutputKind.LABEL, fmt="think",
                        task="reasoning",  # a detector thinks before its label: the reasoning limit
                        slots={str(k): o for k, o in enumerate(case.options)},
                        truth={"label": case.truth, "gen": {"task": "rbd_detect"}, "rbd": case_info(case)},
                        meta={"case_id": case.case_id})


#: the call columns without ``latency_s``: a local model's latency is wall-clock time, which would make two
#: runs of the DAG differ; latency belongs to Table 6 (the loop's calls table)
PREDICTION_COLUMNS = ["detector", "prompting", "case_id", "subset", "set", "item_id", "evaluator", "bias_type",
                      "truth", "pred", "reasoning", *(c for c in CALL_COLUMNS if c != "latency_s")]


def run_detector(judge: Judge, spec: DetectorSpec, cases: Sequence[DetectorCase], cache: CallStore, *,
                 examples: Sequence[FewShotExample] = (), label: str | None = None,
                 max_error_rate: float | None = 0.0) -> pd.DataFrame:
    """Ask a judge-backed detector about every case; the prediction table."""
    reqs = [detector_request(c, spec, examples) for c in cases]
    responses = run_requests(judge, reqs, cache, label=label, max_error_rate=max_error_rate)
    rows = []
    for c, resp in zip(cases, responses, strict=True):
        pred = str(resp.value) if resp.status.has_value else ""
        rows.append({
            "detector": spec.name, "prompting": spec.prompting, "case_id": c.case_id, "subset": c.subset,
            "set": c.set, "item_id": c.item_id, "evaluator": c.evaluator, "bias_type": c.bias_type,
            "truth": c.truth, "pred": pred, "reasoning": split_think(resp.raw_text or "")[0],
            **call_fields(judge, resp, resp.status.value, resp.parse_method),
        })
    return pd.DataFrame(rows, columns=PREDICTION_COLUMNS)


def classifier_texts(cases: Sequence[DetectorCase], max_words: int | None = None) -> list[str]:
    return [classifier_input(c.instruction(max_words), c.choices(max_words), c.judgement()) for c in cases]


METRIC_COLUMNS = ["detector", "prompting", "simulated", "subset", "bias_type", "n", "n_missing", "tp", "fp", "tn",
                  "fn", "accuracy", "precision", "recall", "f1", "reason",
                  "parse_rate", "accuracy_low", "accuracy_high"]


def detector_metrics(predictions: pd.DataFrame) -> pd.DataFrame:
    """Accuracy / precision / recall / F1 per detector and subset, and per bias type on the test set."""
    rows = []
    for (det, subset), g in predictions.groupby(["detector", "subset"], sort=True):
        groups = [("all", g)]
        if subset == "test":
            groups += [(str(bt), gb) for bt, gb in g.groupby("bias_type", sort=True)]
        for bt, gb in groups:
            s = M.detector_scores(list(gb["truth"]), list(gb["pred"]))
            usable = gb["pred"].fillna("").astype(str).str.lower().isin(["yes", "no"]).to_numpy()
            row = blank({"detector": det, "prompting": gb["prompting"].iloc[0],
                         "simulated": any_true(gb), "subset": subset, "bias_type": bt, **s.row()},
                        ("accuracy", "precision", "recall", "f1"),
                        no_value_reason(gb["status"] if "status" in gb else [""] * len(gb), what="label",
                                        usable=usable))
            # accuracy counts an unparsed answer as wrong, so its interval is over all n cases
            low, high = wilson_interval(s.tp + s.tn, s.n) if pd.notna(row["accuracy"]) else (math.nan, math.nan)
            rows.append({**row, "parse_rate": (s.n - s.n_missing) / s.n if s.n else math.nan,
                         "accuracy_low": low, "accuracy_high": high})
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)
