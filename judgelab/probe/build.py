"""A probe set from the user's own items: each item rebuilt so that a pair differs in one cue.

Every function here is pure and seeded: the same items, probes and seed give the same table.
An *item* is one of the user's pairs (prompt, response_a, response_b, gold optional).  Each probe
turns an item into one pair of the probe table, shown to the judge in both orders:

============ ==================================================================== =========== ========
probe        pair                                                                  cue_side    gold
============ ==================================================================== =========== ========
position     the item as it is (the cue is the slot shown first, which the two     ""          item's
             orders swap)
length       one response X vs X padded with content-free restatements to          padded one  none
             :data:`PAD_FACTOR` times its words (paper 003's expansion, without a
             generator: nothing is added but words)
truncation   X vs X cut at a sentence boundary to :data:`TRUNCATION_RATIO` of its  complete    complete
             words (paper 003's truncation subset; the complete answer is better)  one         one
markdown     X in markdown vs the same text as prose (:func:`md_to_prose`, or      markdown    none
             :func:`prose_to_markdown` when X is prose)                            one
bandwagon    the item with paper 001's majority statement ("90% of people believe  named one   item's
             that Output (x) is better") naming the item's worse response (a
             seeded side without gold)
sentiment    the item with paper 001's tones: a negative phrase on the better      positive    item's
             response, a positive one on the other (seeded sides without gold)     one
============ ==================================================================== =========== ========

X is the item's better response where it has gold (a seeded side otherwise); the slot a cue
goes to is a seeded coin per item, so no cue sits on one slot.  ``cue_side`` is the stored slot
(``A``/``B``) that carries the cue; ``cue`` says what was done.  The card reads the length and
markdown cues from the texts themselves (the ``words_*``/``markdown_*`` columns), and the
length and markdown probes' pairs differ in nothing else, so their cue rows are identified by
design (``CardSettings.controlled_pairs``); bandwagon and sentiment have no card row, so
:mod:`judgelab.probe.effects` reads them from ``cue_side``.

Paper 001 rewrote tones with an LLM (its E.2 prompt allows "fixed emotional phrases" for short
texts); a probe must not depend on a generator, so the tones here are fixed phrases
(:data:`TONE_PHRASES`) around the unchanged text.
"""

from __future__ import annotations

import difflib
import zlib
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgelab.config import ConfigError
from judgelab.datasets.controlled import md_to_prose, split_sentences, truncate_at_sentences
from judgelab.datasets.features import BANDWAGON_STATEMENT, markdown_score, word_count
from judgelab.datasets.pairs import Pair, pair_from_row, warn_empty_responses
from judgelab.io import InputError, iter_jsonl, table_rows

PROBES = ("position", "length", "truncation", "markdown", "bandwagon", "sentiment")
#: probes whose pairs differ only in the cue the card reads from the texts (length, markdown): the
#: card's cue rows of these probes are identified by design, with no gold
CONTROLLED_PROBES = ("length", "markdown")
#: probes the card has no row for: :mod:`judgelab.probe.effects` reads them against the position probe
INSERTION_PROBES = ("bandwagon", "sentiment")

#: the padded response has at least this many times the words (paper 003's expansions: ~2.8x)
PAD_FACTOR = 2.0
#: the truncated response keeps about this share of the words (paper 003: ~0.4)
TRUNCATION_RATIO = 0.4
#: Sentences that restate without content: no markdown, no word of the sentiment lexicon
#: (:data:`judgelab.datasets.features.POSITIVE_WORDS`/``NEGATIVE_WORDS``), no family signature phrase
#: (:data:`judgelab.datasets.features.FAMILY_SIGNATURES`), so padding moves the length cue alone.
PAD_SENTENCES = (
    "To put the same point another way, the answer above stands as given.",
    "Restating it once more, nothing needs to be added to what was said.",
    "Seen from a slightly different angle, the reasoning leads to the same place.",
    "Said again in other words, the response above covers the question as it was asked.",
    "Taking all of that together, the answer remains the one stated above.",
    "Looking back over it, each part of the answer follows from the part before it.",
)
#: (prefix, suffix) of each tone, after paper 001's E.2 examples ("Fortunately, ... a delightful
#: testament to steady progress and improvement!" / "Regrettably, ... the facts that cannot be
#: changed."), with as many words on each side so the tones do not move the length cue.
TONE_PHRASES = {
    "positive": ("Fortunately, this is a wonderful answer.",
                 "Absolutely, a delightful testament to steady progress and real improvement!"),
    "negative": ("Regrettably, this is merely an answer.",
                 "Sadly, it reveals the dull facts that cannot be changed."),
}


def bandwagon_statement(side: str) -> str:
    """Paper 001's statement naming stored response ``side`` (``A``/``B``), with the slot as a
    ``{A}``/``{B}`` placeholder that :func:`judgelab.judges.pairwise.orient_context` fills per order, so the
    statement names the same response in whatever slot it is shown."""
    return BANDWAGON_STATEMENT.format(x="{" + side + "}")


PROBE_COLUMNS = [f.name for f in fields(Pair)] + ["item_id", "probe", "cue", "cue_side", "words_a", "words_b",
                                                  "markdown_a", "markdown_b"]
_OTHER = {"A": "B", "B": "A"}


def parse_probes(text: str | None) -> tuple[str, ...]:
    """The probes a ``--probes`` value names (comma-separated, default all), in :data:`PROBES` order;
    an unknown name is one line with the closest known one."""
    if not text or text.strip() == "all":
        return PROBES
    names = [t.strip() for t in text.split(",") if t.strip()]
    for n in names:
        if n not in PROBES:
            close = difflib.get_close_matches(n, PROBES, n=1, cutoff=0.5)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(PROBES)}"
            raise ConfigError(f"--probes: unknown probe {n!r}; {hint}")
    if not names:
        raise ConfigError(f"--probes: no probe named; known: {', '.join(PROBES)}")
    return tuple(p for p in PROBES if p in names)


# ---------------------------------------------------------------------------------------------
# reading the user's items


def _rows(p: Path) -> list[tuple[str, dict[str, Any]]]:
    """(where, row) of every item in a JSONL, CSV or parquet file."""
    if p.suffix == ".parquet":
        return [(f"{p} row {i + 1}", r) for i, r in enumerate(table_rows(pd.read_parquet(p)))]
    if p.suffix in (".csv", ".tsv"):
        try:
            df = pd.read_csv(p, sep="\t" if p.suffix == ".tsv" else ",", dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
            raise InputError(f"{p}: not a readable {p.suffix[1:].upper()} file ({str(exc).splitlines()[0]})") from None
        # the header is line 1: data row i is line i + 2, the number an editor shows
        return [(f"{p} line {i + 2}", r) for i, r in enumerate(table_rows(df))]
    return [(f"{p}:{n}", r) for n, r in iter_jsonl(p)]


def _missing(value: object) -> bool:
    """An absent cell: None, blank text, or NaN (a parquet or pandas-written file's missing value)."""
    return value is None or (isinstance(value, str) and not value.strip()) or value != value


def load_items(path: str | Path) -> list[Pair]:
    """The user's items: ``prompt``, ``response_a``, ``response_b``, and optionally ``pair_id`` (the row
    number when absent) and gold (``expected_verdict`` A/B/tie; an item without one has ``""``).
    Every error names the file and row (:func:`judgelab.datasets.pairs.pair_from_row`)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such items file")
    try:
        rows = _rows(p)
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not UTF-8 text (byte {exc.start}); items are JSONL, CSV or parquet") from None
    except (OSError, ValueError) as exc:  # pyarrow's errors on a damaged parquet file are both
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{p}: cannot be read as {p.suffix[1:] or 'JSONL'} ({str(exc).splitlines()[0]})") from None
    items, seen = [], set()
    for i, (where, row) in enumerate(rows):
        row = dict(row)
        if _missing(row.get("pair_id")):
            row["pair_id"] = f"item-{i:04d}"
        no_gold = _missing(row.get("expected_verdict"))
        if no_gold:
            row["expected_verdict"] = "tie"  # passes validation; blanked below
        pair = pair_from_row(row, where=where)
        if no_gold:
            pair.expected_verdict = ""
        if pair.pair_id in seen:
            raise InputError(f"{where}: duplicate pair_id {pair.pair_id!r}")
        seen.add(pair.pair_id)
        items.append(pair)
    if not items:
        raise InputError(f"{p}: no items")
    warn_empty_responses(items, where=str(p))
    return items


def select_items(items: Sequence[Pair], n: int | None, seed: int) -> list[Pair]:
    """A seeded sample of ``n`` items (all of them when ``n`` is None or not smaller), in file order."""
    if n is None or n >= len(items):
        return list(items)
    if n < 1:
        raise ConfigError(f"--pairs must be at least 1, got {n}")
    idx = np.sort(_rng(seed, "items").choice(len(items), size=n, replace=False))
    return [items[int(i)] for i in idx]


# ---------------------------------------------------------------------------------------------
# text transforms


def pad_response(text: str, factor: float = PAD_FACTOR, *, start: int = 0) -> str:
    """``text`` followed by :data:`PAD_SENTENCES` (from the ``start``-th, cycling) until it has at least
    ``factor`` times its words: the same answer, longer, with nothing added to it."""
    if factor <= 1:
        raise ValueError(f"padding factor must exceed 1, got {factor}")
    target = factor * max(word_count(text), 1)
    out, k = text.rstrip(), start
    while word_count(out) < target:
        out += " " + PAD_SENTENCES[k % len(PAD_SENTENCES)]
        k += 1
    return out


def prose_to_markdown(text: str) -> str:
    """Prose as a markdown list, one sentence a bullet: the words of the text with the markdown cue
    added (the inverse restyling of :func:`md_to_prose`)."""
    return "\n".join(f"- {s}" for s in split_sentences(text))


def with_tone(text: str, tone: str) -> str:
    """``text`` between the fixed phrases of ``tone`` (:data:`TONE_PHRASES`)."""
    prefix, suffix = TONE_PHRASES[tone]
    return f"{prefix} {text.strip()} {suffix}"


# ---------------------------------------------------------------------------------------------
# the probe pairs


def _rng(seed: int, name: str) -> np.random.Generator:
    """A generator per step and item, so adding an item or a probe never shifts another's draws."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _coin(seed: int, *parts: str) -> str:
    return "A" if _rng(seed, ":".join(parts)).random() < 0.5 else "B"


def _source_side(item: Pair, seed: int, probe: str) -> str:
    """The response a single-response probe rebuilds: the better one by gold, else a seeded side."""
    if item.expected_verdict in ("A", "B"):
        return item.expected_verdict
    return _coin(seed, probe, "source", item.pair_id)


def _text(item: Pair, side: str) -> str:
    return item.response_a if side == "A" else item.response_b


def _place(cue_text: str, plain: str, cue_slot: str) -> tuple[str, str]:
    return (cue_text, plain) if cue_slot == "A" else (plain, cue_text)


def _row(item: Pair, probe: str, a: str, b: str, *, gold: str, cue: str, cue_side: str, notes: str,
         context: str = "") -> dict[str, Any]:
    pair = Pair(pair_id=f"{probe}-{item.pair_id}", prompt=item.prompt, response_a=a, response_b=b,
                expected_verdict=gold, bias_type=probe, category=item.category, source=item.source or "user items",
                construction_notes=notes, context=context)
    d = pair.to_dict()
    d.update(item_id=item.pair_id, probe=probe, cue=cue, cue_side=cue_side, words_a=word_count(a),
             words_b=word_count(b), markdown_a=markdown_score(a), markdown_b=markdown_score(b))
    return d


def probe_row(item: Pair, probe: str, seed: int) -> dict[str, Any] | None:
    """The probe pair of one item, or None when the item cannot carry the cue (a response with one
    sentence cannot be truncated; an empty response has nothing to pad or restyle)."""
    if probe == "position":
        return _row(item, probe, item.response_a, item.response_b, gold=item.expected_verdict,
                    cue="presentation order (both orders)", cue_side="", notes="the item as it is")
    if probe in ("length", "truncation", "markdown"):
        side = _source_side(item, seed, probe)
        x = _text(item, side).strip()
        if not x:
            return None
        slot = _coin(seed, probe, "slot", item.pair_id)
        if probe == "length":
            padded = pad_response(x, start=int(_rng(seed, f"pad:{item.pair_id}").integers(len(PAD_SENTENCES))))
            a, b = _place(padded, x, slot)
            return _row(item, probe, a, b, gold="", cue=f"padded to >= {PAD_FACTOR:g}x the words", cue_side=slot,
                        notes=f"response {side} of the item vs itself padded with content-free restatements "
                              f"(slot {slot}); no gold: the content is the same")
        if probe == "truncation":
            try:
                cut = truncate_at_sentences(x, TRUNCATION_RATIO)
            except ValueError:
                return None
            a, b = _place(x, cut, slot)
            return _row(item, probe, a, b, gold=slot, cue=f"other side cut to ~{TRUNCATION_RATIO:g} of the words",
                        cue_side=slot, notes=f"response {side} of the item (slot {slot}) vs its truncation at a "
                                             "sentence boundary; gold: the complete one")
        if markdown_score(x) > 0:
            md, prose, made = x, md_to_prose(x), "prose made by md_to_prose"
        else:
            md, prose, made = prose_to_markdown(x), x, "markdown made by prose_to_markdown"
        if markdown_score(md) == markdown_score(prose) or not prose.strip():
            return None
        a, b = _place(md, prose, slot)
        return _row(item, probe, a, b, gold="", cue="markdown formatting", cue_side=slot,
                    notes=f"response {side} of the item in markdown (slot {slot}) vs as prose ({made}); no gold: "
                          "the words are the same")
    if probe == "bandwagon":
        gold = item.expected_verdict
        named = _OTHER[gold] if gold in ("A", "B") else _coin(seed, probe, item.pair_id)
        return _row(item, probe, item.response_a, item.response_b, gold=gold, cue="majority statement",
                    cue_side=named, context=bandwagon_statement(named),
                    notes=f"the item with paper 001's majority statement naming response {named}"
                          + (" (the worse one)" if gold in ("A", "B") else ""))
    if probe == "sentiment":
        gold = item.expected_verdict
        negative = gold if gold in ("A", "B") else _coin(seed, probe, item.pair_id)
        positive = _OTHER[negative]
        texts = {negative: with_tone(_text(item, negative), "negative"),
                 positive: with_tone(_text(item, positive), "positive")}
        return _row(item, probe, texts["A"], texts["B"], gold=gold, cue="positive tone (negative on the other)",
                    cue_side=positive, notes=f"paper 001's tones: negative on response {negative}"
                                             + (" (the better one)" if gold in ("A", "B") else "")
                                             + f", positive on {positive}")
    raise ValueError(f"unknown probe {probe!r}")


def build_probe(items: Sequence[Pair], probes: Sequence[str] = PROBES, *, seed: int = 0) -> pd.DataFrame:
    """The probe table (columns :data:`PROBE_COLUMNS`): for each probe, in :data:`PROBES` order, the pair
    of every item that can carry its cue.  ``.attrs["skipped"]``: {probe: item ids left out}."""
    rows: list[dict[str, Any]] = []
    skipped: dict[str, list[str]] = {}
    for probe in probes:
        for item in items:
            r = probe_row(item, probe, seed)
            if r is None:
                skipped.setdefault(probe, []).append(item.pair_id)
            else:
                rows.append(r)
    df = pd.DataFrame(rows, columns=PROBE_COLUMNS)
    df.attrs["skipped"] = skipped
    return df


def probe_pairs(table: pd.DataFrame) -> list[Pair]:
    """The probe table's pairs as :class:`Pair` records (what :func:`judgelab.judges.pairwise.judge_pairs` asks
    about); a pair without gold is asked as a tie, which only the simulated panel reads."""
    names = [f.name for f in fields(Pair)]
    out = []
    for r in table_rows(table[names]):
        r["expected_verdict"] = r["expected_verdict"] or "tie"
        out.append(Pair(**r))
    return out
