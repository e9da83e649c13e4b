"""Columnar import of a JSONL log: the mapping evaluated per column, the verdicts per distinct value.

The record path of :func:`~judgelab.verdict_import.importer.import_verdicts` walks every record
in Python (``json.loads``, a dozen field look-ups, the verdict rules of each game): about a
hundred microseconds a record.  Here ``pyarrow.json`` parses the file in line-aligned pieces, the
record-level fields (names, ids, texts) are Arrow expressions over the batch's columns
(``struct_field``, list elements, ``coalesce``, ``binary_join_element_wise``), and everything a
game's verdict, the gold label and the human label are read from runs the record path's own
functions (:func:`~.importer._verdict_row`, :func:`~.importer._target`) once per distinct
combination of the values they read (a judge writes a few hundred distinct verdict strings over
a million records), on one representative record each.  Equal, row for row, to the record path
(tests/verdict_import/test_columnar.py compares both on every preset's fixture).

The columnar path takes a file only when it can answer exactly as the record path would; any
doubt raises :class:`Unsupported` (or an Arrow error) before a row is kept, and the file is read
again record by record, which also gives the error message of a malformed file:

* JSONL, not gzip, with one record per physical line (blank lines shift the row numbers);
* a table read without texts (``texts=False``: the bias card's table);
* field specs of the kinds ``path`` (without ``upto``), ``const``, ``file_key``, ``concat`` and
  ``first_of``; no side tables, literal game orders, no mapped ``label`` / ``preference`` /
  ``simulated`` / ``source_file`` / ``source_row`` / ``repeat`` fields;
* names and ids that are strings or integers, texts that are strings, verdict values that are
  strings, integers or booleans (scores: lists of numbers); every ``require`` key present;
* verdict values the record path's rules accept: a value they refuse (a preference off its scale)
  sends the file to the record path, whose error names the record's row.

Hand-written because no library evaluates a JSON-path mapping over Arrow columns; the JSON
parsing, the string kernels and the hashing are pyarrow's and pandas'.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from judgelab.datasets.features import text_feature_arrays
from judgelab.io import InputError
from judgelab.parsing import strict_verdict
from judgelab.prompts import to_original_frame
from judgelab.verdict_import.mapping import FieldSpec, VerdictMapping, VerdictSpec
from judgelab.verdict_import.readers import _is_gzip


@dataclass(frozen=True)
class RecordRules:
    """The record path's own per-record readers, handed in by the importer (which imports this
    module, so this module must not import it back): each distinct combination of the values a
    game's verdict, the gold label and the human label read goes through exactly the function the
    record path uses, so both paths read a value alike."""

    verdict_row: Callable[..., tuple[Any, ...]]
    target: Callable[..., tuple[Any, ...]]
    human_label: Callable[..., Any]
    short_id: Callable[..., str]

#: bytes of the log parsed at a time (:func:`_chunks`): bounds the texts in flight
BLOCK_BYTES = 16 << 20
#: record-level fields the columnar path reads; any other mapped field sends the file to the record path
FIELDS = ("judge", "model", "family", "pair_id", "item_id", "instruction", "response_a", "response_b", "model_a",
          "model_b", "category")
#: lists longer than this in a verdict value (scores) are not hashed column by column
MAX_LIST = 8
_TEXT_FIELDS = ("instruction", "response_a", "response_b")
_STR = pa.large_string()


class Unsupported(Exception):
    """The file needs the record path (see the module docstring)."""


def _spec_ok(spec: FieldSpec | None) -> bool:
    if spec is None:
        return True
    if spec.kind == "path":
        return spec.upto is None
    if spec.kind in ("const", "file_key"):
        return True
    if spec.kind in ("concat", "first_of"):
        return all(_spec_ok(p) for p in spec.parts)
    return False


def _verdict_ok(v: VerdictSpec | None) -> bool:
    return v is None or all(_spec_ok(s) for s in (v.text, v.label, v.weight, v.scores, v.status, v.parse_method))


def mapping_supported(mapping: VerdictMapping, side: dict[str, Any], texts: bool) -> bool:
    """Whether the mapping's forms are ones the columnar path evaluates (the static half of the check)."""
    return (not texts and mapping.file_type in ("jsonl", "auto") and not mapping.tables and not side
            and set(mapping.fields) <= set(FIELDS) and all(_spec_ok(s) for s in mapping.fields.values())
            and all(g.order in ("AB", "BA") for g in mapping.games)
            and all(_verdict_ok(g.verdict) for g in mapping.games)
            and _verdict_ok(mapping.gold) and _verdict_ok(mapping.human))


# ---------------------------------------------------------------------------------------------
# paths over Arrow columns


def _nulls(n: int) -> pa.Array:
    return pa.nulls(n)


def _step(arr: pa.Array, key: Any) -> pa.Array:
    """``_walk``'s one step over a column: a struct field by name, a list element by (negative) index,
    null where the record has no such value."""
    n = len(arr)
    t = arr.type
    if pa.types.is_struct(t):
        name = key if isinstance(key, str) else str(key)
        if t.get_field_index(name) < 0:
            return _nulls(n)
        return pc.struct_field(arr, name)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        try:
            k = int(key)
        except ValueError:
            return _nulls(n)
        lengths = pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False)
        offsets = arr.offsets.to_numpy()
        valid = lengths > k if k >= 0 else lengths >= -k
        idx = (offsets[:-1] + k) if k >= 0 else (offsets[1:] + k)
        return arr.values.take(pa.array(np.where(valid, idx, 0), mask=~valid))
    return _nulls(n)


def _path(batch: pa.StructArray, spec: FieldSpec) -> pa.Array:
    if spec.literal is not None and batch.type.get_field_index(spec.literal) >= 0:
        if spec.path != (spec.literal,):  # a key with dots: some records may hold it, others the path
            raise Unsupported(f"a key {spec.literal!r} that is also a path")
        return pc.struct_field(batch, spec.literal)
    arr: pa.Array = batch
    for k in spec.path:
        arr = _step(arr, k)
        if pa.types.is_null(arr.type):
            return arr
    return arr


def _as_strings(arr: pa.Array) -> pa.Array:
    """A name/id/text column as Python's ``str(value)`` would write it (strings, integers; nulls kept)."""
    t = arr.type
    if pa.types.is_null(t):
        return pa.nulls(len(arr), _STR)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return arr.cast(_STR)
    if pa.types.is_integer(t):
        return arr.cast(_STR)
    raise Unsupported(f"a field of type {t}")


def _blank_to_null(arr: pa.Array) -> pa.Array:
    """``_empty``: missing or ``""`` -> null."""
    return pc.if_else(pc.equal(arr, ""), pa.scalar(None, _STR), arr)


def _field(batch: pa.StructArray, spec: FieldSpec | None, file_keys: dict[str, str]) -> pa.Array:
    """A record-level field as strings (null where the record path's value is None)."""
    n = len(batch)
    if spec is None:
        return pa.nulls(n, _STR)
    if spec.kind == "path":
        return _as_strings(_path(batch, spec))
    if spec.kind in ("const", "file_key"):
        v = spec.const if spec.kind == "const" else file_keys.get(spec.file_key)
        if (v is not None and not isinstance(v, str | int)) or isinstance(v, bool):
            raise Unsupported("a constant that is no string or integer")
        return pa.array([None if v is None else str(v)] * n, type=_STR)
    parts = [_blank_to_null(_field(batch, p, file_keys)) for p in spec.parts]
    if spec.kind == "first_of":
        return pc.coalesce(*parts) if parts else pa.nulls(n, _STR)
    # concat: any empty part makes the name missing
    return pc.binary_join_element_wise(*parts, pa.scalar(spec.sep, _STR), null_handling="emit_null")


def _empty_mask(arr: pa.Array) -> np.ndarray:
    return pc.fill_null(pc.equal(arr, ""), True).to_numpy(zero_copy_only=False)


# ---------------------------------------------------------------------------------------------
# per distinct value


def _leaves(spec: FieldSpec | None) -> list[FieldSpec]:
    if spec is None or spec.kind in ("const", "file_key"):
        return []
    if spec.kind == "path":
        return [spec]
    return [x for p in spec.parts for x in _leaves(p)]


def _verdict_leaves(v: VerdictSpec) -> list[tuple[FieldSpec, bool]]:
    """(leaf path, may hold numbers of any kind) of every value a verdict rule reads."""
    out = [(x, True) for x in _leaves(v.scores)]
    for s in (v.label, v.weight, v.status, v.text, v.parse_method):
        out += [(x, False) for x in _leaves(s)]
    return out


def _encode(arr: pa.Array, numbers: bool) -> list[np.ndarray]:
    """Integer codes whose tuple tells the column's values apart (nulls included)."""
    t = arr.type
    if pa.types.is_null(t):
        return [np.zeros(len(arr), np.int64)]
    if pa.types.is_floating(t) and not numbers:
        raise Unsupported("a verdict value stored as a float (1 and 1.0 read alike)")
    if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t) or pa.types.is_boolean(t)
            or pa.types.is_floating(t)):
        enc = pc.dictionary_encode(arr, null_encoding="encode")
        return [enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)]
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and numbers:
        lengths = pc.fill_null(pc.list_value_length(arr), -1).to_numpy(zero_copy_only=False).astype(np.int64)
        if lengths.max(initial=0) > MAX_LIST:
            raise Unsupported("a long list in a verdict value")
        out = [lengths]
        for k in range(int(lengths.max(initial=0))):
            out += _encode(_step(arr, k), numbers)
        return out
    raise Unsupported(f"a verdict value of type {t}")


def _combine(codes: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(code per row, first row of each code) of the tuples of ``codes``."""
    key = np.zeros(n, np.int64)
    for c in codes:
        key = key * (int(c.max(initial=0)) + 2) + c + 1
        key = pd.factorize(key)[0].astype(np.int64)
    k = int(key.max(initial=-1)) + 1
    first = np.full(k, -1, np.int64)
    first[key[::-1]] = np.arange(n - 1, -1, -1)
    return key, first


def per_distinct(batch: pa.StructArray, leaves: list[tuple[FieldSpec, bool]],
                 fn: Callable[[dict[str, Any]], Any]) -> tuple[np.ndarray, list[Any]]:
    """``fn(record)`` once per distinct combination of the ``leaves``' values: (code per row,
    result per code).  ``fn`` reads only those values, so one record stands for all that share them."""
    n = len(batch)
    codes: list[np.ndarray] = []
    for spec, numbers in leaves:
        codes += _encode(_path(batch, spec), numbers)
    key, first = _combine(codes, n)
    reps = batch.take(pa.array(first)).to_pylist() if len(first) else []
    try:
        return key, [fn(r) for r in reps]
    except InputError as exc:  # a value the record path refuses: its error names the record's row, which
        raise Unsupported(f"a refused value ({exc})") from None  # a representative record cannot


# ---------------------------------------------------------------------------------------------
# one file


def _chunks(path: Path) -> Iterator[bytes]:
    """The file in pieces of about :data:`BLOCK_BYTES` that end at a line end (the last piece at the
    end of the file), each parsed on its own.

    ``pyarrow.json.open_json`` (the streaming reader) reads ahead of the batches it has handed
    out, up to the whole file: a 5 GB log held 5 GB of Arrow memory before its first batch was
    used.  Parsing line-aligned pieces with ``pyarrow.json.read_json`` bounds what is in flight to
    one piece, whatever the file's size."""
    rest = b""
    with path.open("rb") as fh:
        while block := fh.read(BLOCK_BYTES):
            buf = rest + block if rest else block
            cut = buf.rfind(b"\n") + 1
            if cut:
                yield buf[:cut]
            rest = buf[cut:]
    if rest:
        yield rest


def _parse(piece: bytes) -> pa.StructArray:
    """One piece of a JSONL file as a struct array of its records (one parse block: single-threaded,
    CPU seconds are what the audit is measured by; the schema inferred from this piece alone)."""
    opts = pj.ReadOptions(use_threads=False, block_size=len(piece) + 1)
    t = pj.read_json(pa.BufferReader(piece), read_options=opts)
    return pa.StructArray.from_arrays([c.combine_chunks() for c in t.columns], fields=list(t.schema))


def read_file(path: Path, mapping: VerdictMapping, ctx: Any, reader: Any, path_str: str,
              keep: Callable[[dict[str, pa.Array]], Any],
              im: RecordRules) -> tuple[list[Any], int, set[str], list[bool], int]:
    """The Arrow columns (:data:`~.importer.FEATURE_TABLE_COLUMNS` before category encoding) of one
    JSONL file, piece by piece (:func:`_chunks`), with what the record path gathers per file: the
    checked fields seen non-empty, whether each game's verdict source was found, and the empty
    responses.  ``keep`` stores a piece's columns (dictionary-encodes them) as they come: returned
    are its results, the records read, the fields seen, the games found and the empty responses."""
    if _is_gzip(path):
        raise Unsupported("gzip")
    out: list[Any] = []
    seen: set[str] = set()
    found = [False] * len(mapping.games)
    empty = 0
    row0 = n_lines = 0
    pool = pa.default_memory_pool()
    for piece in _chunks(path):
        n_lines += piece.count(b"\n") + (not piece.endswith(b"\n"))
        batch = _parse(piece)
        del piece
        cols, e = _batch(batch, mapping, ctx, reader, path, path_str, row0, seen, found, im)
        empty += e
        row0 += len(batch)
        out.append(keep(cols))
        del batch, cols
        pool.release_unused()  # the piece's transients back to the OS (mimalloc would hold them a while)
    if row0 != n_lines:
        raise Unsupported("blank lines")
    return out, row0, seen, found, empty


def _batch(batch: pa.StructArray, mapping: VerdictMapping, ctx: Any, reader: Any, path: Path, path_str: str,
           row0: int, seen: set[str], found_games: list[bool], im: RecordRules) -> tuple[dict[str, pa.Array], int]:
    n = len(batch)
    fk = ctx.file_keys
    for required in mapping.require:
        if _path(batch, FieldSpec("path", path=tuple(required))).null_count:
            raise Unsupported("a required key missing or null")
    f = {k: _field(batch, mapping.fields.get(k), fk) for k in FIELDS}
    for k in _TEXT_FIELDS:  # texts must be strings in the log (text_of joins lists, writes numbers)
        spec = mapping.fields.get(k)
        if spec is not None and spec.kind == "path":
            t = _path(batch, spec).type
            if not (pa.types.is_null(t) or pa.types.is_string(t) or pa.types.is_large_string(t)):
                raise Unsupported(f"a {k} of type {t}")
    for k in reader.checked:
        if k not in seen and not _empty_mask(f[k]).all():
            seen.add(k)
    # names: the judge (else --judge / the file stem), its model (else the judge), its family
    blank = {k: _blank_to_null(f[k]) for k in ("judge", "model", "family", "model_a", "model_b", "category")}
    jname = pc.fill_null(blank["judge"], reader.judge or ctx.path.stem)
    jmodel = pc.coalesce(blank["model"], jname)
    jfam = blank["family"]
    if reader.family:
        jfam = pc.fill_null(jfam, reader.family)
    if jfam.null_count:
        key, first = _combine(_encode(jmodel, False) + _encode(jname, False), n)
        reps = pa.array(first)
        fams = [(reader.fam_of(m) if reader.fam_of(m) != "unknown" else reader.fam_of(j))
                for m, j in zip(jmodel.take(reps).to_pylist(), jname.take(reps).to_pylist(), strict=True)]
        jfam = pc.coalesce(jfam, pa.array(fams, _STR).take(pa.array(key)))
    ma, mb = blank["model_a"], blank["model_b"]
    fam_a, fam_b = (_families(x, reader) for x in (ma, mb))
    inst, ra, rb = (f[k] for k in _TEXT_FIELDS)
    empty = sum(int(pc.sum(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(x)), 0)).as_py() or 0) for x in (ra, rb))
    # ids: mapped (over 96 characters hashed); an unmapped pair id is hashed from the texts by the record path
    raw_pair, raw_item = f["pair_id"], f["item_id"]
    if _empty_mask(raw_pair).any():
        raise Unsupported("a pair without an id")
    pid = _long_ids(raw_pair, im.short_id)
    item_missing = _empty_mask(raw_item)
    item = _long_ids(pc.if_else(pa.array(item_missing), pa.scalar(None, _STR), raw_item), im.short_id)
    if item_missing.any():
        fill = [(im.short_id(x) if x else p) for x, p in
                zip(inst.filter(pa.array(item_missing)).to_pylist(), pid.filter(pa.array(item_missing)).to_pylist(),
                    strict=True)]
        idx = np.flatnonzero(item_missing)
        item = _put(item, idx, pa.array(fill, _STR))
    category = pc.fill_null(blank["category"], "")
    feats = {s: text_feature_arrays(x) for s, x in (("a", ra), ("b", rb))}
    has = {s: pc.fill_null(pc.greater(pc.utf8_length(x), 0), False) for s, x in (("a", ra), ("b", rb))}

    G = len(mapping.games)
    swap_shown = mapping.responses_frame == "shown"
    rec_idx = np.repeat(np.arange(n), G)
    game_cols: dict[str, list[Any]] = {c: [] for c in ("verdict_shown", "verdict", "preference", "label",
                                                        "expected_verdict", "correct", "status", "parse_method",
                                                        "strict_shown", "human")}
    codes = np.empty((n, G), np.int64)
    swapped = np.zeros(G, bool)
    offset = 0
    for gi, game in enumerate(mapping.games):
        order = cast("str", game.order)  # a literal AB or BA: applies() refuses the rest
        swapped[gi] = swap_shown and order == "BA"
        leaves = _verdict_leaves(game.verdict) + _verdict_leaves(mapping.gold or VerdictSpec()) + (
            _verdict_leaves(mapping.human) if mapping.human is not None else [])

        def one(rec: dict[str, Any], order: str = order, game: Any = game) -> tuple[Any, ...]:
            shown, stored, pref, status, method, label, raw_text, fnd = im.verdict_row(game.verdict, order, rec, ctx)
            gold = ""
            if mapping.gold is not None:
                g = im.target(mapping.gold, rec, ctx)[0]
                g = g if g in ("A", "B", "tie") else None
                if g is not None:
                    gold = g if mapping.gold.frame == "stored" else (to_original_frame(g, order) or "")
            human = im.human_label(mapping, order, rec, ctx)
            return (shown, stored, pref, label, gold, (stored == gold) if gold else None, status, method,
                    strict_verdict(raw_text, method or "") or "", human, fnd)

        key, vals = per_distinct(batch, leaves, one)
        if any(v[-1] for v in vals):
            found_games[gi] = True
        codes[:, gi] = key + offset
        offset += len(vals)
        for v in vals:
            for c, x in zip(game_cols, v[:-1], strict=False):
                game_cols[c].append(x)
    take = pa.array(codes.ravel())
    types = {"preference": pa.float64(), "correct": pa.bool_()}
    out: dict[str, pa.Array] = {c: pa.array(v, type=types.get(c, _STR)).take(take) for c, v in game_cols.items()}
    sw = np.tile(swapped, n)
    ri = pa.array(rec_idx)

    def per_game(a: pa.Array, b: pa.Array) -> tuple[pa.Array, pa.Array]:
        """(slot A, slot B) of each row: the record's A/B, swapped in games that swap the responses."""
        a, b = a.take(ri), b.take(ri)
        if not sw.any():
            return a, b
        m = pa.array(sw)
        return pc.if_else(m, b, a), pc.if_else(m, a, b)

    wa, wb = per_game(pa.array(feats["a"][0]), pa.array(feats["b"][0]))
    mda, mdb = per_game(pa.array(feats["a"][1]), pa.array(feats["b"][1]))
    ha, hb = per_game(has["a"], has["b"])
    m_a, m_b = per_game(ma, mb)
    f_a, f_b = per_game(fam_a, fam_b)
    rows = n * G
    out.update(
        judge=jname.take(ri), backend=pa.repeat(pa.scalar("recorded", _STR), rows), model=jmodel.take(ri),
        family=jfam.take(ri), pair_id=pid.take(ri), item_id=item.take(ri),
        order=pa.array([g.order for g in mapping.games] * n, _STR), model_a=m_a, model_b=m_b,
        family_a=f_a, family_b=f_b, simulated=pa.array(np.zeros(rows, bool)), category=category.take(ri),
        source_file=pa.repeat(pa.scalar(path_str, _STR), rows),
        source_row=pa.array(np.repeat(np.arange(row0 + 1, row0 + n + 1, dtype=np.int64), G)),
        repeat=pa.array(np.zeros(rows, np.int64)), words_a=wa, words_b=wb, markdown_a=mda, markdown_b=mdb,
        has_text_a=ha, has_text_b=hb)
    return out, empty


def _families(models: pa.Array, reader: Any) -> pa.Array:
    """The family of each model name ("" where none), once per distinct name."""
    enc = pc.dictionary_encode(models)
    fams = pa.array([reader.fam_of(m) for m in enc.dictionary.to_pylist()], _STR)
    return pc.fill_null(fams.take(enc.indices), "")


def _long_ids(ids: pa.Array, short_id: Callable[..., str]) -> pa.Array:
    """Ids over 96 characters hashed (``short_id``, the record path's :func:`~.importer._short_id`),
    the rest as they are."""
    long = pc.fill_null(pc.greater(pc.utf8_length(ids), 96), False).to_numpy(zero_copy_only=False)
    if not long.any():
        return ids
    idx = np.flatnonzero(long)
    return _put(ids, idx, pa.array([short_id(x) for x in ids.take(pa.array(idx)).to_pylist()], _STR))


def _put(arr: pa.Array, idx: np.ndarray, values: pa.Array) -> pa.Array:
    """``arr`` with ``arr[idx] = values``."""
    pos = np.arange(len(arr))
    src = np.zeros(len(arr), np.int64)
    src[idx] = np.arange(len(idx)) + len(arr)
    mask = np.zeros(len(arr), bool)
    mask[idx] = True
    src = np.where(mask, src, pos)
    return pa.concat_arrays([arr.cast(_STR), values.cast(_STR)]).take(pa.array(src))
