"""Paper 003's controlled bias set (Appendix A): 375 pairs built from a shipped question bank.

The bank (``data/strategies/question_bank.jsonl``, written for this project) holds 50
questions, 10 per domain (math, coding, creative writing, factual QA, instruction
following), each with a short plain ``base_answer`` and a markdown ``comprehensive_answer``.
From it the pipeline builds, with every random choice seeded from the config:

=============== ===== ========================================================= ========
bias_type       n     construction                                               gold
=============== ===== ========================================================= ========
LENGTH          50    subset ``expansion``: base answer vs. a generator's         tie
                      expansion of it (~2.8x longer, no new facts); slot of the
                      expansion drawn at random per pair
LENGTH          25    subset ``truncation``: the comprehensive answer (as prose)  A
                      vs. the same text cut at a sentence boundary to ~40% of
                      its words; complete answer in slot A (as in the paper);
                      5 questions per domain, drawn at random
POSITION        50    the base answer in both slots                               tie
STYLE           50    the comprehensive answer in markdown (A) vs. the same text  tie
                      turned into plain prose by :func:`md_to_prose` (B)
STYLE_BA        50    the STYLE pairs mirrored (prose in A, markdown in B)        tie
MODEL_ORIGIN    50    subset ``original``: answers written by the google-family   tie
                      generator (A) and the anthropic-family generator (B)
MODEL_ORIGIN    100   subset ``round_robin``: 25 each for (meta, google), (meta,  tie
                      anthropic), (openai, google), (openai, anthropic); 5
                      questions per domain per pairing, slots drawn at random
=============== ===== ========================================================= ========

Columns: the pairs-table columns of :mod:`judgelab.datasets.pairs` (``category`` = domain)
plus ``question_id``, ``subset``, ``target_side`` (the slot holding the bias target: the
longer response, the complete one, slot A, the markdown one; empty for MODEL_ORIGIN, whose
target depends on the judge), ``origin_a``/``origin_b`` (generator families, MODEL_ORIGIN
only), ``words_a``/``words_b`` and ``markdown_a``/``markdown_b`` (the surface cues of
:mod:`judgelab.datasets.features`).

Generated texts (expansions, MODEL_ORIGIN answers) come from judges through the call cache:
:func:`generation_requests` builds the requests, the rule runs them, and
:func:`build_controlled_set` assembles the pairs.  A generation that failed leaves its pair
out (logged, and counted in :func:`controlled_summary`), never a placeholder text.

Deviation from the paper, by necessity: our comprehensive answers average ~160 words (the
paper's 485) and base answers ~54 (paper: 64); the truncation keeps the same ~40% ratio.
"""

from __future__ import annotations

import logging
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgelab.datasets.features import markdown_score, word_count
from judgelab.datasets.pairs import Pair, pairs_frame
from judgelab.io import InputError, iter_jsonl
from judgelab.records import JudgeRequest, Message, OutputKind

log = logging.getLogger(__name__)

DOMAINS = ("math", "coding", "creative_writing", "factual_qa", "instruction_following")
BIAS_TYPES = ("LENGTH", "POSITION", "STYLE", "STYLE_BA", "MODEL_ORIGIN")
EXTRA_COLUMNS = ["question_id", "subset", "target_side", "origin_a", "origin_b", "words_a", "words_b",
                 "markdown_a", "markdown_b"]


@dataclass(frozen=True)
class BankQuestion:
    question_id: str
    domain: str
    question: str
    base_answer: str
    comprehensive_answer: str


def load_bank(path: str | Path) -> list[BankQuestion]:
    """Load and validate the question bank; errors name the file, line and key."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"question bank not found: {p}")
    out: list[BankQuestion] = []
    seen: set[str] = set()
    for n, row in iter_jsonl(p):
        where = f"{p}:{n}"
        for k in ("question_id", "domain", "question", "base_answer", "comprehensive_answer"):
            if not isinstance(row.get(k), str) or not row[k].strip():
                raise InputError(f"{where}: key {k!r} is missing or empty")
        if row["domain"] not in DOMAINS:
            raise InputError(f"{where}: key 'domain' = {row['domain']!r} is not one of {DOMAINS}")
        if row["question_id"] in seen:
            raise InputError(f"{where}: duplicate question_id {row['question_id']!r}")
        if markdown_score(row["comprehensive_answer"]) < 1.0:
            raise InputError(f"{where}: key 'comprehensive_answer' must be markdown (headers, lists, bold)")
        seen.add(row["question_id"])
        out.append(BankQuestion(**{k: row[k] for k in BankQuestion.__dataclass_fields__}))
    if not out:
        raise InputError(f"{p}: the question bank is empty")
    return out


# ---------------------------------------------------------------------------------
# markdown -> plain prose

_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_RULE = re.compile(r"^\s*([-*_])(?:\s*\1){2,}\s*$")
_QUOTE = re.compile(r"^\s*>\s?")
_INLINE = [
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # images -> alt text
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # links -> text
    (re.compile(r"\*\*(.+?)\*\*"), r"\1"),
    (re.compile(r"(?<!\w)__(.+?)__(?!\w)"), r"\1"),
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"\1"),
    (re.compile(r"(?<!\w)_(?!\s)([^_\n]+?)(?<!\s)_(?!\w)"), r"\1"),
    (re.compile(r"`([^`\n]+)`"), r"\1"),
]
_ORDINALS = ("First", "Second", "Third", "Fourth", "Fifth", "Sixth", "Seventh", "Eighth", "Ninth", "Tenth")


def strip_inline(text: str) -> str:
    """Remove inline markdown (bold, italics, code spans, links), keeping the words."""
    for pat, rep in _INLINE:
        text = pat.sub(rep, text)
    return text


def _lcfirst(s: str) -> str:
    """Lower-case a leading capitalised common word ("Subtract 7" -> "subtract 7"), not "I" or acronyms."""
    if re.match(r"A\s+[a-z]", s):  # the article, not the letter A
        return "a" + s[1:]
    m = re.match(r"([A-Z])([a-z]+)\b", s)
    if not m or m.group(0) == "I":
        return s
    return s[0].lower() + s[1:]


def _is_sentence(item: str) -> bool:
    return bool(re.search(r"[.!?][\"')\]]*$", item.strip()))


def _join_fragments(items: list[str]) -> str:
    items = [i.strip().rstrip(",;.") for i in items]
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} and {items[1]}"
    return ", ".join(items[:-1]) + ", and " + items[-1]


def _lead(lead: str, text: str) -> str:
    """Attach a header as the lead-in of the text it introduces."""
    if lead.endswith(("?", "!", ".")):
        return f"{lead} {text}"
    return f"{lead}. {text}" if ":" in lead else f"{lead}: {text}"


def _render_list(items: list[str], ordered: bool, lead: str | None) -> tuple[str, bool]:
    """A list as prose; returns (text, ends_with_sentence)."""
    items = [strip_inline(i).strip() for i in items if i.strip()]
    sentences = sum(_is_sentence(i) for i in items) * 2 >= len(items)
    if sentences:
        parts = []
        for k, it in enumerate(items):
            it = it if _is_sentence(it) else it + "."
            if ordered:
                prefix = f"{_ORDINALS[k]}, " if k < len(_ORDINALS) else f"Step {k + 1}: "
                it = prefix + (_lcfirst(it) if k < len(_ORDINALS) else it)
            parts.append(it)
        body = " ".join(parts)
        return (_lead(lead, body) if lead else body), True
    body = _join_fragments(items) + "."
    if ordered:
        body = "in order, " + body
    return (_lead(lead, body) if lead else body[0].upper() + body[1:]), True


def _render_table(rows: list[list[str]]) -> str:
    header, body = rows[0], rows[1:]
    out = []
    for r in body:
        cells = [strip_inline(c) for c in r]
        rest = [f"{h.lower()} is {c}" for h, c in zip(header[1:], cells[1:], strict=False) if c]
        out.append(f"For {cells[0]}, " + _join_fragments(rest) + "." if rest else f"{cells[0]}.")
    return " ".join(out)


def md_to_prose(md: str) -> str:
    """Turn a markdown answer into plain prose with the same words and content.

    Headers become the lead-in of the block they introduce ("Why it matters: ...") or, at the
    top, a plain title line; bullet lists become sentences (items that are sentences) or one
    sentence listing them ("a, b, and c."), joined to a paragraph that introduced them with a
    colon; numbered lists become "First, ... Second, ..."; tables become one sentence per row;
    bold, italics, code spans and links lose their markers; fenced code keeps its lines without
    the fences; quotes lose ">" and horizontal rules disappear.  Line breaks inside ordinary
    paragraphs (poems, addresses) are kept.  The output has no markdown cue
    (:func:`judgelab.datasets.features.markdown_score` is 0).
    """
    lines = md.replace("\r\n", "\n").split("\n")
    blocks: list[tuple[str, Any]] = []  # (kind, payload): text, lines, (ordered, items) or table rows
    i = 0
    para: list[str] = []

    def flush_para() -> None:
        if para:
            blocks.append(("para", list(para)))
            para.clear()

    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            flush_para()
            code = []
            i += 1
            while i < len(lines) and not _FENCE.match(lines[i]):
                code.append(lines[i])
                i += 1
            blocks.append(("code", code))
            i += 1
            continue
        if not line.strip():
            flush_para()
            i += 1
            continue
        if _RULE.match(line) and not _BULLET.match(line + " x"):
            flush_para()
            i += 1
            continue
        m = _HEADER.match(line)
        if m:
            flush_para()
            blocks.append(("header", strip_inline(m.group(1)).strip()))
            i += 1
            continue
        if _TABLE_ROW.match(line):
            flush_para()
            rows = []
            while i < len(lines) and _TABLE_ROW.match(lines[i]):
                if not _TABLE_SEP.match(lines[i]):
                    rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            blocks.append(("table", rows))
            continue
        mb, mn = _BULLET.match(line), _NUMBERED.match(line)
        if mb or mn:
            flush_para()
            ordered = mn is not None and mb is None
            items: list[str] = []
            while i < len(lines):
                cur = lines[i]
                mb2, mn2 = _BULLET.match(cur), _NUMBERED.match(cur)
                if (mb2 or mn2) and ((mn2 is not None and mb2 is None) == ordered):
                    items.append((mn2 or mb2).group(1))  # type: ignore[union-attr]
                elif cur.strip() and cur.startswith((" ", "\t")) and items and not (mb2 or mn2):
                    items[-1] += " " + cur.strip()  # continuation of the item
                else:
                    break
                i += 1
            blocks.append(("list", (ordered, items)))
            continue
        para.append(_QUOTE.sub("", line))
        i += 1
    flush_para()

    out: list[str] = []
    lead: str | None = None
    for k, (kind, payload) in enumerate(blocks):
        if kind == "header":
            text = str(payload)
            if k == 0 and (len(blocks) == 1 or blocks[1][0] != "list"):
                out.append(text)  # a title line
            elif lead is not None:
                out.append(lead + ".")
                lead = text
            else:
                lead = text
            continue
        if kind == "para":
            text = "\n".join(strip_inline(x).rstrip() for x in payload)
            if lead:
                text = _lead(lead, text)
                lead = None
            out.append(text)
        elif kind == "list":
            ordered, items = payload
            if lead is None and out and out[-1].rstrip().endswith(":") and not ordered \
                    and not sum(_is_sentence(strip_inline(x)) for x in items) * 2 >= len(items):
                out[-1] = out[-1].rstrip() + " " + _join_fragments([strip_inline(x) for x in items]) + "."
                continue
            text, _ = _render_list(list(items), bool(ordered), lead)
            lead = None
            out.append(text)
        elif kind == "table":
            text = _render_table(payload)
            out.append(_lead(lead, text) if lead else text)
            lead = None
        elif kind == "code":
            if lead:
                out.append(lead + ":")
                lead = None
            out.append("\n".join(str(x) for x in payload))
    if lead:
        out.append(lead + ".")
    return "\n\n".join(o for o in out if o.strip())


# ---------------------------------------------------------------------------------
# truncation at sentence boundaries

_SENT_END = re.compile(r"[.!?][\"')\]]*(?=\s|$)")


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (stripped, in order), cut where :func:`truncate_at_sentences` may cut:
    a probe restyling prose as a list (``judgelab.probe.build``) puts each on its own line."""
    out, start = [], 0
    for m in _SENT_END.finditer(text):
        out.append(text[start:m.end()].strip())
        start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def truncate_at_sentences(text: str, ratio: float) -> str:
    """The prefix of ``text`` ending at a sentence boundary whose word count is closest to
    ``ratio`` of the whole (at least one sentence, never the whole text)."""
    if not 0.0 < ratio < 1.0:
        raise ValueError(f"truncation ratio must lie in (0, 1), got {ratio}")
    total = word_count(text)
    target = ratio * total
    best, best_gap = None, float("inf")
    for m in _SENT_END.finditer(text):
        end = m.end()
        if end >= len(text.rstrip()):
            break
        gap = abs(word_count(text[:end]) - target)
        if gap < best_gap:
            best, best_gap = end, gap
    if best is None:
        raise ValueError("text has fewer than two sentences; cannot truncate at a sentence boundary")
    return text[:best].rstrip()


# ---------------------------------------------------------------------------------
# generation requests (answered by judges through the cache)

EXPANSION_SYSTEM = (
    "Rewrite the answer below so that it is about three times longer. Elaborate, restate and add transitions "
    "around what is already said, but add NO new facts, steps, examples or claims. Keep it in plain prose, "
    "without headings or lists. Output only the rewritten answer."
)
ORIGIN_SYSTEM = (
    "Answer the user's question in about 120 words of plain prose, without headings, lists or other "
    "formatting, at the depth a knowledgeable assistant would give. Output only the answer."
)


@dataclass(frozen=True)
class ControlledSpec:
    """Construction settings (config: strategies/controlled)."""

    seed: int
    truncation_ratio: float = 0.4
    n_truncation_per_domain: int = 5
    original_pairing: tuple[str, str] = ("google", "anthropic")
    round_robin: tuple[tuple[str, str], ...] = (
        ("meta", "google"), ("meta", "anthropic"), ("openai", "google"), ("openai", "anthropic"))
    n_round_robin_per_domain: int = 5

    def pairings(self) -> list[tuple[str, str, str]]:
        """(subset, family A, family B) of every MODEL_ORIGIN pairing."""
        return [("original", *self.original_pairing)] + [("round_robin", a, b) for a, b in self.round_robin]


def _rng(seed: int, name: str) -> np.random.Generator:
    """A generator per construction step, so adding one step never shifts another's draws."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _stratified(bank: Sequence[BankQuestion], per_domain: int, rng: np.random.Generator) -> list[BankQuestion]:
    out: list[BankQuestion] = []
    for dom in DOMAINS:
        qs = [q for q in bank if q.domain == dom]
        if per_domain > len(qs):
            raise InputError(f"question bank: domain {dom!r} has {len(qs)} questions, {per_domain} needed")
        idx = sorted(rng.choice(len(qs), size=per_domain, replace=False).tolist())
        out.extend(qs[i] for i in idx)
    return out


def origin_questions(bank: Sequence[BankQuestion], spec: ControlledSpec) -> dict[tuple[str, str, str], list[BankQuestion]]:
    """Questions of every MODEL_ORIGIN pairing: all 50 for the original, 5/domain per round-robin pairing."""
    out = {}
    for subset, fa, fb in spec.pairings():
        if subset == "original":
            out[(subset, fa, fb)] = list(bank)
        else:
            out[(subset, fa, fb)] = _stratified(bank, spec.n_round_robin_per_domain, _rng(spec.seed, f"rr:{fa}:{fb}"))
    return out


def expansion_request(q: BankQuestion) -> JudgeRequest:
    return JudgeRequest(
        messages=[Message("system", EXPANSION_SYSTEM),
                  Message("user", f"[Question]\n{q.question}\n\n[Answer]\n{q.base_answer}")],
        kind=OutputKind.TEXT, fmt="text",
        truth={"gen": {"task": "strategies_expand", "source": q.base_answer, "ratio": 2.8}},
        meta={"task": "expansion", "question_id": q.question_id, "family": ""},
    )


def origin_request(q: BankQuestion, family: str) -> JudgeRequest:
    return JudgeRequest(
        messages=[Message("system", ORIGIN_SYSTEM), Message("user", q.question)],
        kind=OutputKind.TEXT, fmt="text",
        truth={"gen": {"task": "answer", "sentences": 6}},
        meta={"task": "origin_answer", "question_id": q.question_id, "family": family},
    )


def generation_requests(bank: Sequence[BankQuestion], spec: ControlledSpec, *, expansion: bool,
                        families: Sequence[str]) -> list[JudgeRequest]:
    """The generation requests one judge answers: expansions (if it is the expansion generator)
    and MODEL_ORIGIN answers for each family it generates for (only questions some pairing uses)."""
    reqs = [expansion_request(q) for q in bank] if expansion else []
    needed: dict[str, set[str]] = {}
    for (_, fa, fb), qs in origin_questions(bank, spec).items():
        for f in (fa, fb):
            needed.setdefault(f, set()).update(q.question_id for q in qs)
    for fam in families:
        reqs.extend(origin_request(q, fam) for q in bank if q.question_id in needed.get(fam, set()))
    return reqs


# ---------------------------------------------------------------------------------
# assembling the pairs


def _row(pair: Pair, **extra) -> dict:
    d = pair.to_dict()
    d.update({k: extra.get(k, "") for k in EXTRA_COLUMNS})
    for side in ("a", "b"):
        text = d[f"response_{side}"]
        d[f"words_{side}"] = word_count(text)
        d[f"markdown_{side}"] = markdown_score(text)
    return d


def build_controlled_set(bank: Sequence[BankQuestion], expansions: Mapping[str, str | None],
                         origin_answers: Mapping[tuple[str, str], str | None], spec: ControlledSpec) -> pd.DataFrame:
    """Assemble the controlled pairs (module docstring); missing generations drop their pair."""
    rows: list[dict] = []
    src = "controlled set (paper 003, Appendix A)"
    # LENGTH (expansion)
    rng = _rng(spec.seed, "length_expansion_slot")
    for q in bank:
        flip = bool(rng.random() < 0.5)
        exp = expansions.get(q.question_id)
        if not exp:
            log.warning("no expansion for %s: LENGTH pair left out", q.question_id)
            continue
        a, b = (q.base_answer, exp) if flip else (exp, q.base_answer)
        longer = "A" if word_count(a) > word_count(b) else ("B" if word_count(b) > word_count(a) else "")
        rows.append(_row(Pair(f"LENGTH-exp-{q.question_id}", q.question, a, b, "tie", "LENGTH", q.domain, src,
                              f"expansion in slot {'B' if flip else 'A'}; generated expansion of the base answer "
                              f"({word_count(exp)} vs {word_count(q.base_answer)} words); gold tie"),
                         question_id=q.question_id, subset="expansion", target_side=longer))
    # LENGTH (truncation)
    for q in _stratified(bank, spec.n_truncation_per_domain, _rng(spec.seed, "length_truncation")):
        full = md_to_prose(q.comprehensive_answer)
        cut = truncate_at_sentences(full, spec.truncation_ratio)
        rows.append(_row(Pair(f"LENGTH-trunc-{q.question_id}", q.question, full, cut, "A", "LENGTH", q.domain, src,
                              f"complete answer (A, {word_count(full)} words) vs its truncation at a sentence "
                              f"boundary ({word_count(cut)} words, target ratio {spec.truncation_ratio}); gold A"),
                         question_id=q.question_id, subset="truncation", target_side="A"))
    # POSITION
    for q in bank:
        rows.append(_row(Pair(f"POSITION-{q.question_id}", q.question, q.base_answer, q.base_answer, "tie",
                              "POSITION", q.domain, src, "identical responses in both slots; gold tie"),
                         question_id=q.question_id, subset="identical", target_side="A"))
    # STYLE and STYLE_BA
    for q in bank:
        md, prose = q.comprehensive_answer, md_to_prose(q.comprehensive_answer)
        rows.append(_row(Pair(f"STYLE-{q.question_id}", q.question, md, prose, "tie", "STYLE", q.domain, src,
                              "same content: markdown (A) vs md_to_prose plain prose (B); gold tie"),
                         question_id=q.question_id, subset="markdown_in_A", target_side="A"))
    for q in bank:
        md, prose = q.comprehensive_answer, md_to_prose(q.comprehensive_answer)
        rows.append(_row(Pair(f"STYLE_BA-{q.question_id}", q.question, prose, md, "tie", "STYLE_BA", q.domain, src,
                              "mirror of the STYLE pair: plain prose (A) vs markdown (B); gold tie"),
                         question_id=q.question_id, subset="markdown_in_B", target_side="B"))
    # MODEL_ORIGIN
    for (subset, fa, fb), qs in origin_questions(bank, spec).items():
        rng = _rng(spec.seed, f"origin_slot:{subset}:{fa}:{fb}")
        for q in qs:
            swap = subset == "round_robin" and bool(rng.random() < 0.5)
            ta, tb = origin_answers.get((q.question_id, fa)), origin_answers.get((q.question_id, fb))
            if not ta or not tb:
                log.warning("no %s/%s answer for %s: MODEL_ORIGIN pair left out", fa, fb, q.question_id)
                continue
            (oa, a), (ob, b) = ((fb, tb), (fa, ta)) if swap else ((fa, ta), (fb, tb))
            rows.append(_row(Pair(f"MODEL_ORIGIN-{subset}-{fa}-{fb}-{q.question_id}", q.question, a, b, "tie",
                                  "MODEL_ORIGIN", q.domain, src,
                                  f"independent answers by the {oa} (A) and {ob} (B) generators with matched "
                                  f"depth/style instructions ({subset}); gold tie"),
                             question_id=q.question_id, subset=subset, origin_a=oa, origin_b=ob))
    frame = pairs_frame([])
    df = pd.DataFrame(rows, columns=list(frame.columns) + EXTRA_COLUMNS)
    return df


def controlled_summary(df: pd.DataFrame, *, expected: Mapping[tuple[str, str], int] | None = None) -> pd.DataFrame:
    """Per bias type and subset: pairs, mean words per side, length ratio, markdown cue."""
    exp = dict(expected or EXPECTED_COUNTS)
    rows = []
    for (bt, sub), g in df.groupby(["bias_type", "subset"], sort=True):
        longer = np.maximum(g["words_a"], g["words_b"])
        shorter = np.maximum(np.minimum(g["words_a"], g["words_b"]), 1)
        rows.append({
            "bias_type": bt, "subset": sub, "n_pairs": len(g), "n_expected": exp.get((str(bt), str(sub)), np.nan),
            "mean_words_a": float(g["words_a"].mean()), "mean_words_b": float(g["words_b"].mean()),
            "mean_length_ratio": float((longer / shorter).mean()),
            "mean_markdown_a": float(g["markdown_a"].mean()), "mean_markdown_b": float(g["markdown_b"].mean()),
            "gold": ",".join(sorted(g["expected_verdict"].unique())),
        })
    return pd.DataFrame(rows)


EXPECTED_COUNTS: dict[tuple[str, str], int] = {
    ("LENGTH", "expansion"): 50, ("LENGTH", "truncation"): 25, ("POSITION", "identical"): 50,
    ("STYLE", "markdown_in_A"): 50, ("STYLE_BA", "markdown_in_B"): 50,
    ("MODEL_ORIGIN", "original"): 50, ("MODEL_ORIGIN", "round_robin"): 100,
}
