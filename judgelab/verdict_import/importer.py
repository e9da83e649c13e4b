"""Recorded verdicts (any file + mapping) into judgelab's recorded verdict table.

The recorded verdict table has one row per judge x pair x presentation order.  It
extends the verdict table of :mod:`judgelab.judges.pairwise` with the texts and the models
behind the responses, so the bias card needs nothing else:

================== ===============================================================
judge, family,     who judged; ``family`` is the judge's model family (mapped or
model, backend     inferred from its name, see :func:`model_family`); backend ``recorded``
pair_id            the pair; both orders of one pair share it
item_id            the question the pair belongs to (the cluster of every CI)
order              ``AB`` shown as stored, ``BA`` swapped
instruction        the user question (turns joined by blank lines)
response_a/_b      the two responses in the stored order (multi-turn: turns joined)
model_a/_b,        the models behind them, and their families
family_a/_b
verdict_shown      verdict on the slots as shown (A/B/tie, empty when none)
verdict            the same in the stored order
preference         P(stored B preferred) in [0, 1]: 0/0.5/1 for A/tie/B, the scaled
                   weight for continuous annotators (AlpacaEval), empty when none
label              the recorded label as written in the file (empty if the mapping has none)
expected_verdict   gold in the stored order (empty when the file has none)
correct            verdict == expected_verdict; empty (NA) without gold
status, parse_method  ok / fallback / unparsed / refusal / error, and the rule used
raw_text           the judge's raw answer when the file has it
simulated          True when the log came from the simulated panel
category           optional grouping copied from the file
source_file, source_row  where the row came from
human              a human label of the pair in the stored order (A/B/tie, empty when none)
repeat             repetition index of the same call (0 unless the mapping maps ``repeat``)
================== ===============================================================

Empty or whitespace-only responses keep their pair (a warning counts them); two
identical responses in one pair are kept apart by ``pair_id`` and ``order``.

Storage (a million pairs = two million rows within a few hundred MB): rows gather in Python
lists for :data:`CHUNK_ROWS` rows at a time and then move to Arrow arrays.  The columns of
:data:`CATEGORY_COLUMNS` (names with few distinct values, and the texts, which both rows of a
pair share) are pandas ``category`` columns with sorted Arrow-string categories, so each
distinct text is stored once and sorting sorts the strings; the other text columns are
pandas' Arrow-backed ``str``.  Records stream in (:func:`~.readers.iter_records`).
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import logging
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from judgelab.datasets.features import text_feature_arrays
from judgelab.io import InputError, table_tuples
from judgelab.parsing import normalize_verdict, parse_pairwise, strict_verdict
from judgelab.prompts import to_original_frame
from judgelab.records import CallStatus
from judgelab.verdict_import import columnar as columnar_mod
from judgelab.verdict_import.mapping import FieldSpec, GameSpec, VerdictMapping, VerdictSpec, value_key
from judgelab.verdict_import.presets import NON_LOG_FILES
from judgelab.verdict_import.readers import SUFFIX_FORMATS, _is_gzip, data_suffix, iter_records

log = logging.getLogger(__name__)

RECORDED_COLUMNS = [
    "judge", "backend", "model", "family", "pair_id", "item_id", "order", "instruction", "response_a",
    "response_b", "model_a", "model_b", "family_a", "family_b", "verdict_shown", "verdict", "preference",
    "label", "expected_verdict", "correct", "status", "parse_method", "raw_text", "simulated", "category",
    "source_file", "source_row", "human", "repeat",
]

#: model-name patterns -> family, for self-preference (first match wins; checked on the lower-cased name)
FAMILY_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"gpt|chatgpt|openai|\bo[134]\b|o[134]-|davinci|text-bison-openai", "openai"),
    (r"claude|anthropic", "anthropic"),
    (r"gemini|palm|bison|gemma|google", "google"),
    (r"llama|vicuna|meta|alpaca", "meta"),
    (r"qwen", "qwen"),
    (r"mistral|mixtral", "mistral"),
    (r"phi-|microsoft|wizardlm", "microsoft"),
    (r"deepseek", "deepseek"),
    (r"glm|zhipu", "zhipu"),
    (r"falcon", "tii"),
    (r"internlm", "shanghai-ai-lab"),
    (r"command|cohere", "cohere"),
)


def model_family(name: str | None) -> str:
    """Family of a model name (``unknown`` if no pattern matches)."""
    low = (name or "").lower()
    for pat, fam in FAMILY_PATTERNS:
        if re.search(pat, low):
            return fam
    return "unknown"


def text_of(v: Any) -> str | None:
    """A text from a recorded value: strings as is, turn lists joined by blank lines,
    chat turns by their ``content``."""
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        parts = [t for t in (text_of(x) for x in v) if t is not None]
        return "\n\n".join(parts)
    if isinstance(v, dict):
        for k in ("content", "text", "judgment", "completion", "output"):
            if k in v:
                return text_of(v[k])
        return json.dumps(v, ensure_ascii=False, sort_keys=True)
    if isinstance(v, float) and v != v:
        return None
    return str(v)


def file_name_keys(path: Path) -> dict[str, str]:
    """``key=value`` parts of a file name (parts split by ``,``), e.g. JudgeBench's
    ``dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=arena_hard,judge_model=o1-mini.jsonl``."""
    out: dict[str, str] = {}
    for part in path.stem.split(","):
        k, sep, v = part.partition("=")
        if sep and k.strip():
            out[k.strip()] = v.strip()
    return out


@dataclass
class _Ctx:
    """Where a record comes from: one per file, ``row`` moves along (field specs read it)."""

    path: Path
    row: int
    tables: Mapping[str, dict[tuple[str | None, ...], dict[str, Any]]]
    file_keys: dict[str, str] = field(default_factory=dict)


_MISSING = object()


def _walk(obj: Any, path: Sequence[Any], missing: Any = None) -> Any:
    for k in path:
        if obj is None:
            return missing
        if isinstance(obj, list):
            try:
                obj = obj[int(k)]
            except (ValueError, IndexError):
                return missing
        elif isinstance(obj, dict):
            if k in obj:
                obj = obj[k]
            elif not isinstance(k, str) and str(k) in obj:
                obj = obj[str(k)]
            else:
                return missing
        else:
            return missing
    return obj


def _empty(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v == "") or (isinstance(v, float) and v != v)


def get_field(spec: FieldSpec | None, rec: dict[str, Any], ctx: _Ctx) -> Any:
    if spec is None:
        return None
    if spec.kind == "path":
        v = rec[spec.literal] if spec.literal is not None and spec.literal in rec else _walk(rec, spec.path)
    elif spec.kind == "const":
        return spec.const
    elif spec.kind == "file_key":
        return ctx.file_keys.get(spec.file_key)
    elif spec.kind == "path_part":
        try:
            return ctx.path.parts[spec.part]
        except IndexError:
            raise InputError(f"{ctx.path}: has no path component {spec.part}") from None
    elif spec.kind == "row":
        return f"{ctx.row:0{spec.width}d}" if spec.width else ctx.row
    elif spec.kind == "concat":
        vals = [get_field(p, rec, ctx) for p in spec.parts]
        if any(_empty(v) for v in vals):
            return None  # a compound name with a missing part is missing
        return spec.sep.join(str(v) for v in vals)
    elif spec.kind == "first_of":
        for p in spec.parts:
            v = get_field(p, rec, ctx)
            if not _empty(v):
                return v
        return None
    elif spec.kind == "table":
        table = ctx.tables.get(spec.table)
        if table is None:
            return None  # side table not given: the field stays empty
        key = tuple(value_key(get_field(k, rec, ctx)) for k in spec.key)
        hit = table.get(key)
        v = None if hit is None else _walk(hit, spec.path)
    else:  # pragma: no cover - build_mapping rejects other kinds
        raise ValueError(spec.kind)
    if spec.upto is not None and isinstance(v, list):
        n = get_field(spec.upto, rec, ctx)
        if not _empty(n):
            v = v[: int(n)]
    return v


def _needs_absent_table(spec: FieldSpec | None, tables: Mapping[str, Any]) -> bool:
    """Whether a field can only be filled from a side table that was not given."""
    if spec is None:
        return False
    if spec.kind == "table":
        return spec.table not in tables
    if spec.kind == "first_of":
        return all(_needs_absent_table(p, tables) for p in spec.parts)
    if spec.kind == "concat":
        return any(_needs_absent_table(p, tables) for p in spec.parts)
    return False


def _describe(spec: FieldSpec) -> str:
    if spec.kind == "path":
        return repr(spec.literal if spec.literal is not None else ".".join(map(str, spec.path)))
    return spec.kind


def _resolve(path: str | Path) -> Path:
    """A path as given: relative paths are read from the working folder, never silently from
    the data root (a same-named file there is another file).  The one exception is a known
    public file (:data:`judgelab.datasets.sources.SOURCES`, named by its path under the data
    root), which is what its name means everywhere in judgelab.  A missing path is an
    :class:`InputError` saying where it was looked for."""
    p = Path(path)
    if p.exists():
        return p
    from judgelab.datasets.sources import SOURCES, data_root, resolve_data_path

    if p.is_absolute():
        raise InputError(f"{p}: no such file or folder")
    if any(s.rel == str(p) for s in SOURCES.values()):
        return resolve_data_path(str(p), download=False)
    root = data_root()
    hint = ""
    if root is not None and (root / p).exists():
        hint = f"; the data root has {root / p}: give that path to read it"
    raise InputError(f"{p}: no such file or folder in the working folder {Path.cwd()} (relative paths are "
                     f"read from there){hint}")


def _files_under(root: Path, loops: list[Path]) -> list[Path]:
    """Every file under a folder, recursively, symlinked folders followed (a model's outputs linked in
    from elsewhere are files of the folder like any other), hidden files and folders skipped.

    A folder whose real identity (device, inode) is already on the way down from ``root`` is a link
    cycle (``a/loop -> ..``): it is not entered again but added to ``loops``, so the walk ends and
    each file is read once.  Hand-written because ``Path.rglob`` follows no symlinked folder before
    Python 3.13 and ``os.walk(followlinks=True)`` has no cycle guard."""
    out: list[Path] = []
    stack: list[tuple[Path, frozenset[tuple[int, int]]]] = [(root, frozenset())]
    while stack:
        folder, above = stack.pop()
        try:
            st = folder.stat()
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:  # unreadable, or a link that leads nowhere: no files
            continue
        here = above | {(st.st_dev, st.st_ino)}
        for e in entries:
            if e.name.startswith("."):
                continue
            path = folder / e.name
            try:
                if e.is_dir():  # (follows links)
                    t = path.stat()
                    if (t.st_dev, t.st_ino) in here:
                        loops.append(path)
                    else:
                        stack.append((path, here))
                elif e.is_file():
                    out.append(path)
            except OSError:
                continue
    return out


def _expand(paths: Iterable[str | Path], not_logs: Mapping[str, str] | None = None,
            skipped: list[str] | None = None) -> list[Path]:
    """Files and folders to files: a folder gives every data file under it, recursively
    (Arena-Hard keeps ``model_judgment/<judge>/<model>.jsonl``; symlinked folders followed, a link
    cycle entered once), skipping hidden files and files whose suffix is no known format (a README
    next to the outputs).  Files of a folder named in ``not_logs`` (a format's known non-log files,
    :data:`~.presets.NON_LOG_FILES`: LLMBar keeps ``dataset.json`` beside its ``evaluators/``) are
    skipped too, each added to ``skipped`` with the reason; a file given by name is always read."""
    from judgelab.verdict_import.readers import SUFFIX_FORMATS, data_suffix

    not_logs = not_logs or {}
    out: list[Path] = []
    for p in paths:
        rp = _resolve(p)
        if rp.is_dir():
            loops: list[Path] = []
            for f in sorted(f for f in _files_under(rp, loops) if data_suffix(f) in SUFFIX_FORMATS):
                if f.name in not_logs:
                    if skipped is not None:
                        skipped.append(f"{f}: {not_logs[f.name]}")
                else:
                    out.append(f)
            if skipped is not None:
                skipped.extend(f"{lp}: a link back to a folder above it (its files are read once)"
                               for lp in sorted(loops))
        else:
            out.append(rp)
    return out


def expand_patterns(patterns: Iterable[str], *, where: str) -> list[str]:
    """Files matched by glob patterns (absolute, relative to the working directory, or to the
    data root); a pattern that matches nothing is an error naming ``where``.

    A plain path (no glob characters) of a known public file
    (:data:`judgelab.datasets.sources.SOURCES`) that is not on disk yet is kept as given:
    the job that reads it resolves (and downloads) it, not the DAG construction.
    """
    import glob

    from judgelab.datasets.sources import SOURCES, data_root

    out: list[str] = []
    for pat in patterns:
        if not glob.has_magic(pat) and not Path(pat).exists() and any(s.rel == pat for s in SOURCES.values()):
            root = data_root()
            out.append(str((root / pat).resolve()) if root is not None and (root / pat).exists() else pat)
            continue
        root = data_root()
        bases = [Path(".")] if Path(pat).is_absolute() else [Path("."), *([root] if root else [])]
        hits: list[str] = []
        for base in bases:
            hits = sorted(glob.glob(str(base / pat) if not Path(pat).is_absolute() else pat, recursive=True))
            if hits:
                break
        if not hits:
            raise InputError(f"{where}: no file matches {pat!r} (relative paths are tried in the working "
                             f"directory and the data root {data_root()})")
        out.extend(str(Path(h).resolve()) for h in hits if Path(h).is_file())
    return out


def load_tables(mapping: VerdictMapping, files: Mapping[str, Sequence[str | Path]] | None = None
                ) -> dict[str, dict[tuple[str | None, ...], dict[str, Any]]]:
    """Side tables of a mapping, keyed by their key fields; ``files`` overrides the mapping's."""
    files = dict(files or {})
    unknown = sorted(set(files) - set(mapping.tables))
    if unknown:
        raise InputError(f"mapping {mapping.name!r} has no side table(s) {unknown}; "
                         f"known: {sorted(mapping.tables) or '(none)'}")
    out = {}
    for name, t in mapping.tables.items():
        paths = files.get(name) or t.files
        if not paths:
            continue
        idx: dict[tuple[str | None, ...], dict[str, Any]] = {}
        for p in _expand(paths):
            ctx = _Ctx(p, 0, {}, file_name_keys(p))
            for row, rec in iter_records(p, t.file_type, t.records):
                ctx.row = row
                idx[tuple(value_key(get_field(k, rec, ctx)) for k in t.key)] = rec
        out[name] = idx
    return out


def _blank(v: Any) -> bool:
    """No value at all: missing, or an empty cell.  (Unlike :func:`_empty`, a NaN is a value here: a
    preference written as NaN is a broken number, not an absent one.)"""
    return v is None or (isinstance(v, str) and v.strip() == "")


def _number(v: Any) -> float | None:
    """``v`` as a float when it is a number or the text of one, else None.  A boolean is no number
    (Python counts ``True`` as 1: a JSON ``true`` would read as a preference of 1)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _two_scores(v: Any, ctx: _Ctx, spec: FieldSpec) -> tuple[float, float] | None:
    """Two finite scores (A, B) from a recorded value; None when the record has none (the label then
    decides).  A value that is there but is no pair of finite numbers (NaN, infinity, a boolean, a
    text, three numbers) is an :class:`InputError` naming the file and row: a reward model's score
    is a number, and a broken one must not turn into a preference."""
    if _blank(v):
        return None
    a, b = (_number(v[0]), _number(v[1])) if isinstance(v, list | tuple) and len(v) == 2 else (None, None)
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        raise InputError(f"{ctx.path} row {ctx.row}: the scores at {_describe(spec)} are {v!r}, not two finite numbers "
                         f"(score A, score B); fix the value or leave it empty so the label decides")
    return a, b


def _weight_preference(v: Any, spec: VerdictSpec, ctx: _Ctx) -> float:
    """A continuous preference (``weight``) scaled to P(second response preferred) by the mapping's
    ``weight_range``; a value that is no number or lies outside the range (NaN and infinity
    included) is an :class:`InputError` naming the file, the row and the key, never a verdict
    (AlpacaEval writes 1 to 2, 0 for identical outputs, nothing for a failed call: 7 or -1 is a
    damaged file, and ``true`` would otherwise read as 1, a win for the first output)."""
    assert spec.weight is not None, "called for a mapping that reads a weight"
    lo, hi = spec.weight_range
    w = _number(v)
    if w is not None and lo <= w <= hi:  # (NaN and infinity fail the comparison)
        return (w - lo) / (hi - lo)
    mapped = f" or one of the mapped values {sorted(spec.values)}" if spec.values else ""
    what = "not a number on" if w is None else "outside"
    raise InputError(f"{ctx.path} row {ctx.row}: the preference at {_describe(spec.weight)} is {v!r}, {what} "
                     f"the scale [{lo:g}, {hi:g}]{mapped}; fix the value or leave it empty (no verdict)")


def _preference_field(v: Any, ctx: _Ctx) -> float | None:
    """A recorded table's own ``preference`` column: P(stored B preferred), a number in [0, 1] or
    empty; anything else (NaN, infinity, -1, 7, ``true``, a word) is an :class:`InputError` naming
    the file and row (the ranking models reject it later with a traceback)."""
    if _blank(v):
        return None
    p = _number(v)
    if p is None or not 0.0 <= p <= 1.0:  # (NaN fails both comparisons)
        raise InputError(f"{ctx.path} row {ctx.row}: preference is {v!r}, not a number in [0, 1] (the probability "
                         f"that the stored second response is preferred); fix the value or leave it empty")
    return p


def _target(spec: VerdictSpec, rec: dict[str, Any], ctx: _Ctx) -> tuple[str, float | None, str, str, bool]:
    """(verdict or non-value status, preference in the spec's frame, method, label as written,
    whether the verdict's source was non-empty)."""
    if spec.scores is not None:
        sc = _two_scores(get_field(spec.scores, rec, ctx), ctx, spec.scores)
        if sc is not None:
            d = sc[1] - sc[0]
            label = "" if spec.label is None else _label_text(get_field(spec.label, rec, ctx))
            # P(B preferred) under Bradley-Terry, the model reward models are trained on
            # (scipy's logistic: no overflow for score gaps of any size; imported here, where a
            # scored log needs it: parsing the Snakefile imports this module, tests/workflow/test_parse_imports.py)
            from scipy.special import expit

            pref = float(expit(d))
            return ("B" if d > 0 else "A" if d < 0 else "tie"), pref, "scores", label, True
    if spec.label is not None:
        v = get_field(spec.label, rec, ctx)
        k = value_key(v)
        label = "" if k is None else str(v)
        if k is None:  # no label: the source counts as present when the judge's answer is there
            found = spec.text is not None and not _empty(text_of(get_field(spec.text, rec, ctx)))
            return spec.values.get("null", "unparsed"), None, "label-missing", label, found
        t = spec.values.get(k) if spec.values else normalize_verdict(v)
        if t is None:
            return "unparsed", None, "label-unknown", label, True
        return t, None, "label", label, True
    if spec.weight is not None:
        v = get_field(spec.weight, rec, ctx)
        k = value_key(v)
        label = "" if k is None else str(v)
        if k in spec.values or (k is None and "null" in spec.values):
            return spec.values[k if k is not None else "null"], None, "weight-value", label, k is not None
        if _blank(v):
            return "unparsed", None, "weight-missing", label, False
        p = _weight_preference(v, spec, ctx)
        return ("A" if p < 0.5 else "B" if p > 0.5 else "tie"), p, "weight", label, True
    if spec.text is None or spec.parse is None:
        return "unparsed", None, "scores-missing", "", False
    text = text_of(get_field(spec.text, rec, ctx))
    parsed = parse_pairwise(text, fmt=spec.parse)
    if parsed.status.has_value:
        return parsed.value, None, parsed.method, "", True
    return parsed.status.value, None, parsed.method, "", not _empty(text)


def _label_text(v: Any) -> str:
    return "" if value_key(v) is None else str(v)


_PREF = {"A": 0.0, "B": 1.0, "tie": 0.5}
_STATUSES = {s.value for s in CallStatus}


def _verdict_row(spec: VerdictSpec, order: str, rec: dict[str, Any], ctx: _Ctx
                 ) -> tuple[str, str, float | None, str, str, str, str, bool]:
    """(verdict_shown, verdict, preference, status, parse_method, label, raw_text, source found)."""
    target, pref, method, label, found = _target(spec, rec, ctx)
    has = target in ("A", "B", "tie")
    status = CallStatus.OK if has else CallStatus(target)
    if has and method.startswith("fallback"):
        status = CallStatus.FALLBACK
    if spec.status is not None:
        rs = value_key(get_field(spec.status, rec, ctx))
        if rs in _STATUSES and CallStatus(rs).has_value == has:
            status = CallStatus(rs)
    if spec.parse_method is not None:
        pm = get_field(spec.parse_method, rec, ctx)
        method = method if _empty(pm) else str(pm)
    if has and pref is None:
        pref = _PREF[target]
    if spec.frame == "stored":
        stored = target if has else None
        stored_pref = pref
        shown = to_original_frame(stored, order)  # the swap is its own inverse
    else:
        shown = target if has else None
        stored = to_original_frame(shown, order)
        stored_pref = None if pref is None else (pref if order == "AB" else 1.0 - pref)
    return (shown or "", stored or "", stored_pref, status.value, method, label,
            text_of(get_field(spec.text, rec, ctx)) or "", found)


def _short_id(*parts: Any) -> str:
    return "p" + hashlib.sha256("\x1f".join("" if p is None else str(p) for p in parts).encode()).hexdigest()[:12]


def _missing_key(rec: dict[str, Any], require: Sequence[tuple[Any, ...]]) -> str | None:
    for key in require:
        if _walk(rec, key, _MISSING) is _MISSING:
            return ".".join(map(str, key))
    return None


# ---------------------------------------------------------------------------------------------
# import: record fields -> rows -> columns


def _fast_getter(spec: FieldSpec | None) -> Callable[[dict[str, Any], _Ctx], Any]:
    """:func:`get_field` of one spec as a closure (a million records read a dozen fields each): a
    plain key is one dict look-up, constants, file keys and the parts of ``first_of`` / ``concat``
    are resolved once; every other form goes through :func:`get_field`."""
    if spec is None:
        return lambda rec, ctx: None
    if spec.kind == "path" and spec.upto is None and spec.literal is not None and spec.path == (spec.literal,):
        key = spec.literal
        return lambda rec, ctx: rec.get(key)
    if spec.kind == "const":
        const = spec.const
        return lambda rec, ctx: const
    if spec.kind == "file_key":
        fk = spec.file_key
        return lambda rec, ctx: ctx.file_keys.get(fk)
    if spec.kind == "first_of":
        firsts = [_fast_getter(p) for p in spec.parts]

        def first_of(rec: dict[str, Any], ctx: _Ctx) -> Any:
            for g in firsts:
                v = g(rec, ctx)
                if not _empty(v):
                    return v
            return None
        return first_of
    if spec.kind == "concat":
        parts, sep = [_fast_getter(p) for p in spec.parts], spec.sep

        def concat(rec: dict[str, Any], ctx: _Ctx) -> Any:
            vals = [g(rec, ctx) for g in parts]
            return None if any(_empty(v) for v in vals) else sep.join(str(v) for v in vals)
        return concat
    return lambda rec, ctx: get_field(spec, rec, ctx)


@dataclass
class _RecordFields:
    """The record-level values of one record (shared by its games)."""

    judge: str
    model: str
    family: str
    instruction: str | None
    response_a: str | None
    response_b: str | None
    model_a: str | None
    model_b: str | None
    raw_pair: Any
    raw_item: Any
    label: str | None
    preference: float | None
    simulated: bool
    category: str
    source_file: str
    source_row: int
    repeat: int = 0  # which repetition of the same call (Position-Bias-Analyzer's repeated judgments)


class _Reader:
    """The record-level fields of a mapping, compiled once: names, texts, models and families."""

    def __init__(self, mapping: VerdictMapping, checked: Mapping[str, FieldSpec], judge: str | None,
                 family: str | None) -> None:
        self.get = {k: _fast_getter(spec) for k, spec in mapping.fields.items()}
        self.checked = checked
        self.judge, self.family = judge, family
        self.pool: dict[Any, Any] = {}
        self.families: dict[str | None, str] = {}

    def share(self, v: Any) -> str:
        """One string object per distinct name (a million rows hold pointers, not copies)."""
        s = str(v)
        return self.pool.setdefault(s, s)

    def fam_of(self, name: Any) -> str:
        if name not in self.families:
            self.families[name] = model_family(name)
        return self.families[name]

    def fields(self, rec: dict[str, Any], ctx: _Ctx, path_str: str, seen: set[str]) -> _RecordFields:
        f = {k: g(rec, ctx) for k, g in self.get.items()}
        if len(seen) < len(self.checked):
            seen.update(k for k in self.checked if not _empty(f[k]))
        share = self.share
        ma, mb = f.get("model_a"), f.get("model_b")
        jname = f.get("judge")
        jname = share(jname) if not _empty(jname) else (self.judge or ctx.path.stem)
        jmodel = f.get("model")
        jmodel = share(jmodel) if not _empty(jmodel) else jname
        jfam = f.get("family")
        if _empty(jfam):
            jfam = self.family
        if _empty(jfam):
            jfam = self.fam_of(jmodel)
            jfam = self.fam_of(jname) if jfam == "unknown" else jfam
        sim, cat, src = f.get("simulated"), f.get("category"), f.get("source_file")
        return _RecordFields(
            judge=jname, model=jmodel, family=share(jfam), instruction=text_of(f.get("instruction")),
            response_a=text_of(f.get("response_a")), response_b=text_of(f.get("response_b")),
            model_a=None if _empty(ma) else share(ma), model_b=None if _empty(mb) else share(mb),
            raw_pair=f.get("pair_id"), raw_item=f.get("item_id"),
            label=None if _empty(f.get("label")) else str(f["label"]),
            preference=_preference_field(f.get("preference"), ctx),
            simulated=str(sim).lower() in ("true", "1") if not _empty(sim) else False,
            category="" if _empty(cat) else share(cat), source_file=share(src) if src else path_str,
            source_row=int(f["source_row"]) if not _empty(f.get("source_row")) else ctx.row,
            repeat=0 if _empty(f.get("repeat")) else int(float(f["repeat"])))


def _game_order(game: GameSpec, a: str | None, b: str | None, rec: dict[str, Any], ctx: _Ctx) -> str:
    """The presentation order of one game: literal, ``auto`` (by the texts), or read from the record."""
    if game.order is not None and game.order != "auto":
        return game.order
    if game.order == "auto":
        return "AB" if (a or "") <= (b or "") else "BA"
    raw_order = value_key(get_field(game.order_field, rec, ctx))
    order = game.order_values.get(raw_order or "null") if game.order_values else raw_order
    if order not in ("AB", "BA"):
        raise InputError(f"{ctx.path} row {ctx.row}: presentation order {raw_order!r} is not mapped to AB or BA")
    return order


def _ids(r: _RecordFields, path: Path, a: str | None, b: str | None) -> tuple[str, str]:
    """(pair_id, item_id): mapped, else hashed from the texts; ids over 96 characters hashed."""
    pid = _short_id(path.name, r.instruction, a, b) if _empty(r.raw_pair) else str(r.raw_pair)
    if len(pid) > 96:
        pid = _short_id(pid)
    item = (_short_id(r.instruction) if r.instruction else pid) if _empty(r.raw_item) else str(r.raw_item)
    if len(item) > 96:
        item = _short_id(item)
    return pid, item


class _Rows:
    """Rows of the recorded verdict table gathered as tuples, moved to Arrow arrays by the chunk.

    A chunk closes at :data:`CHUNK_ROWS` rows or :data:`CHUNK_TEXT_BYTES` characters of text,
    whichever comes first, so the Python objects in flight are bounded by both.  Without
    ``texts`` each closed chunk keeps the responses' features (:data:`FEATURE_COLUMNS`, measured
    once per distinct text of the chunk) and drops the texts, so the table grows with the
    verdicts, not with the length of what was judged.
    """

    def __init__(self, texts: bool) -> None:
        self.texts = texts
        self.columns = RECORDED_COLUMNS if texts else FEATURE_TABLE_COLUMNS
        self.rows: list[tuple[Any, ...]] = []
        self.text_chars = 0
        self.chunks: dict[str, list[pa.Array]] = {c: [] for c in self.columns}
        self.category = CATEGORY_COLUMNS if texts else FEATURE_CATEGORY_COLUMNS
        self.n = 0

    def add(self, row: tuple[Any, ...], text_chars: int) -> None:
        self.rows.append(row)
        self.text_chars += text_chars
        if len(self.rows) >= CHUNK_ROWS or self.text_chars >= CHUNK_TEXT_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        values = dict(zip(RECORDED_COLUMNS, zip(*self.rows, strict=True), strict=True))
        self.rows, self.text_chars = [], 0
        arrays = {c: pa.array(values.pop(c), type=_ARROW_TYPES[c]) for c in RECORDED_COLUMNS}
        if not self.texts:
            for side in ("a", "b"):
                resp = arrays[f"response_{side}"]
                arrays[f"words_{side}"], arrays[f"markdown_{side}"] = map(pa.array, text_feature_arrays(resp))
                arrays[f"has_text_{side}"] = pc.fill_null(pc.greater(pc.utf8_length(resp), 0), False)
            arrays["strict_shown"] = _strict_readings(arrays["parse_method"].to_pylist(), arrays["raw_text"].to_pylist())
        self.append([self.encode(arrays)])

    def encode(self, arrays: dict[str, pa.Array]) -> dict[str, pa.Array]:
        """One chunk's columns as stored: the category columns dictionary-encoded with the narrowest
        index type their chunk allows, the feature table's numbers in :data:`FEATURE_TYPES`
        (a kept chunk costs a few bytes a row: ten million pairs' chunks fit beside their table)."""
        out = {}
        for c in self.columns:
            a = arrays[c]
            if c in self.category:
                out[c] = _narrow(a.dictionary_encode())
            elif not self.texts and c in FEATURE_TYPES:
                out[c] = a.cast(FEATURE_TYPES[c])
            else:
                out[c] = a
        return out

    def append(self, chunks: list[dict[str, pa.Array]]) -> None:
        """Keep encoded chunks (:meth:`encode`) after the rows gathered so far; ``chunks`` is emptied,
        so that :meth:`frame` holds the only reference and frees each column's chunks as it converts."""
        if self.rows:
            self.flush()
        for chunk in chunks:
            for c in self.columns:
                self.chunks[c].append(chunk[c])
            self.n += len(chunk[self.columns[0]])
        chunks.clear()

    def frame(self) -> pd.DataFrame:
        self.flush()
        data = {}
        pool = pa.default_memory_pool()
        for c in self.columns:  # one column at a time: its Arrow chunks are freed as it converts
            data[c] = _column(self.chunks.pop(c), c, c in self.category)
            # the freed chunks back to the OS now: Arrow's allocator (mimalloc) keeps freed pages a
            # while, and the columns still to convert would otherwise sit on top of them
            pool.release_unused()
        return pd.DataFrame(data, columns=list(self.columns), copy=False)


def _strict_readings(methods: Sequence[str], raw_texts: Sequence[str]) -> pa.Array:
    """What each source's published rule (:func:`judgelab.parsing.strict_verdict`) reads in each raw
    answer (slots as shown; '' where the rule reads none or the verdict was not read from text): the
    strict view's input once the raw texts are dropped, each distinct (rule, text) read once."""
    seen: dict[tuple[str, str], str] = {}
    out = []
    for m, text in zip(methods, raw_texts, strict=True):
        key = (m or "", text or "")
        if key not in seen:
            seen[key] = strict_verdict(text, m or "") or ""
        out.append(seen[key])
    return pa.array(out, type=pa.large_string())


def _game_rows(mapping: VerdictMapping, r: _RecordFields, rec: dict[str, Any], ctx: _Ctx, rows: _Rows,
               found_games: list[bool], fam_of: Callable[[Any], str]) -> None:
    """The rows of one record: one per game, in the stored frame."""
    gold_target = None
    if mapping.gold is not None:
        g = _target(mapping.gold, rec, ctx)[0]
        gold_target = g if g in ("A", "B", "tie") else None
    fam_a = fam_of(r.model_a) if r.model_a is not None else ""
    fam_b = fam_of(r.model_b) if r.model_b is not None else ""
    chars = len(r.instruction or "") + len(r.response_a or "") + len(r.response_b or "")
    swap_shown = mapping.responses_frame == "shown"
    for gi, game in enumerate(mapping.games):
        a, b, m_a, m_b, f_a, f_b = r.response_a, r.response_b, r.model_a, r.model_b, fam_a, fam_b
        order = _game_order(game, a, b, rec, ctx)
        if (swap_shown or game.order == "auto") and order == "BA":
            a, b, m_a, m_b, f_a, f_b = b, a, m_b, m_a, f_b, f_a
        pid, item = _ids(r, ctx.path, a, b)
        shown, stored, pref, status, method, label, raw_text, found = _verdict_row(game.verdict, order, rec, ctx)
        found_games[gi] = found_games[gi] or found
        # a recorded table's own label / continuous preference survive a round trip
        if r.label is not None:
            label = r.label
        if r.preference is not None and stored:
            pref = r.preference
        gold = ""
        if gold_target is not None and mapping.gold is not None:
            gold = gold_target if mapping.gold.frame == "stored" else (to_original_frame(gold_target, order) or "")
        rows.add((r.judge, "recorded", r.model, r.family, pid, item, order, r.instruction, a, b, m_a, m_b, f_a, f_b,
                  shown, stored, pref, label, gold, (stored == gold) if gold else None, status, method, raw_text,
                  r.simulated, r.category, r.source_file, r.source_row, _human_label(mapping, order, rec, ctx),
                  r.repeat), chars + len(raw_text))


def _columnar_file(path: Path, mapping: VerdictMapping) -> bool:
    """A plain JSONL file: the columnar reader may try it (it checks the rest itself)."""
    fmt = mapping.file_type if mapping.file_type != "auto" else SUFFIX_FORMATS.get(data_suffix(path))
    return fmt == "jsonl" and path.is_file() and path.stat().st_size > 0 and not _is_gzip(path)


def _checked_fields(mapping: VerdictMapping, side: Mapping[str, Any], judge: str | None,
                    family: str | None) -> dict[str, FieldSpec]:
    """Fields that must be non-empty somewhere in each file (a misspelt column is an error); the
    judge's name and family may be empty when --judge / --family stand in."""
    given = {"judge", "model"} if judge else set()
    given |= {"family"} if family else set()
    return {k: spec for k, spec in mapping.fields.items()
            if k not in mapping.optional and k not in given and spec.kind not in ("const", "row", "path_part")
            and not _needs_absent_table(spec, side)}


def import_verdicts(files: Sequence[str | Path], mapping: VerdictMapping, *,
                    tables: Mapping[str, Sequence[str | Path]] | None = None,
                    judge: str | None = None, family: str | None = None, texts: bool = True,
                    columnar: bool = True) -> pd.DataFrame:
    """Read recorded-verdict files with ``mapping`` into the recorded verdict table.

    ``judge``/``family`` name the judge when the file does not (default: the file stem
    and the family inferred from the judge's model name).

    ``texts=False`` reads the table the bias card needs and no more: the instruction, the
    responses and the raw answers are dropped as they are read, the responses kept as their
    features (:data:`FEATURE_COLUMNS`), so memory grows with the number of verdicts, not with
    the volume of text (a million pairs of long answers fit where their texts would not).

    Records stream in (JSONL line by line, JSON arrays element by element, parquet/CSV in
    batches) and leave as Arrow chunks (:class:`_Rows`).  With ``texts=False`` a JSONL file
    whose mapping and values allow it is read by columns instead
    (:mod:`judgelab.verdict_import.columnar`: the same table, several times faster);
    ``columnar=False`` reads every file record by record.
    """
    if not files:
        raise InputError("no recorded-verdict files given")
    side = load_tables(mapping, tables)
    checked = _checked_fields(mapping, side, judge, family)
    reader = _Reader(mapping, checked, judge, family)
    rows = _Rows(texts)
    fast = columnar and columnar_mod.mapping_supported(mapping, side, texts)
    where_file: list[str] = []
    file_starts: list[int] = []
    empty_responses = 0
    skipped: list[str] = []
    paths = _expand(files, NON_LOG_FILES.get(mapping.name), skipped)
    if skipped:  # one line, every file named
        log.warning("skipped %d file(s) that hold no verdicts of format %r: %s", len(skipped), mapping.name,
                    "; ".join(skipped))
    for path in paths:
        ctx = _Ctx(path, 0, side, file_name_keys(path))
        where_file.append(str(path))
        file_starts.append(rows.n + len(rows.rows))
        path_str = reader.share(str(path))
        seen_fields: set[str] = set()
        found_games = [False] * len(mapping.games)
        if fast and _columnar_file(path, mapping):
            try:
                chunks, n_records, seen_fields, found_games, empty = columnar_mod.read_file(
                    path, mapping, ctx, reader, path_str, rows.encode, _RECORD_RULES)
            except (columnar_mod.Unsupported, pa.ArrowException) as exc:
                log.debug("%s: read record by record (%s)", path, exc)
            else:
                rows.append(chunks)
                empty_responses += empty
                if n_records:
                    _check_filled(path, mapping, checked, seen_fields, found_games)
                continue
        n_records = 0
        for row, rec in iter_records(path, mapping.file_type, mapping.records):
            n_records += 1
            ctx.row = row
            if mapping.require:
                miss = _missing_key(rec, mapping.require)
                if miss is not None:
                    raise InputError(f"{path} row {row}: format {mapping.name!r} expects key {miss!r}, missing "
                                     f"(this record has keys {sorted(rec)[:15]}); is this file of that format?")
            try:
                r = reader.fields(rec, ctx, path_str, seen_fields)
                _game_rows(mapping, r, rec, ctx, rows, found_games, reader.fam_of)
            except InputError:
                raise
            except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as exc:
                # a value of the wrong kind (a preference that is no number, a turn count that is a
                # list): one line naming the record, never a traceback
                raise InputError(f"{path} row {row}: cannot read this record as format {mapping.name!r} "
                                 f"({type(exc).__name__}: {exc}); check its fields against the format") from None
            empty_responses += sum(1 for resp in (r.response_a, r.response_b) if resp is not None and not resp.strip())
        if n_records:
            _check_filled(path, mapping, checked, seen_fields, found_games)
    if empty_responses:
        log.warning("%d empty or whitespace-only responses kept (their pairs stay in the table)", empty_responses)
    df = rows.frame()
    _check_unique(df, _locator(mapping, where_file, file_starts))
    df.attrs["empty_responses"] = empty_responses
    df.attrs["skipped_files"] = skipped
    # what the reading freed, back to the OS: Arrow's allocator (mimalloc) would keep it for Arrow's
    # next allocations (0.7 GB at ten million pairs) while NumPy, which the card uses, asks for more
    pa.default_memory_pool().release_unused()
    return df


#: rows converted from Python tuples to Arrow arrays at a time: bounds the Python objects in flight
CHUNK_ROWS = 65_536
#: characters of text (instruction, responses, raw answer) gathered before a chunk closes: bounds
#: the texts in flight whatever their length
CHUNK_TEXT_BYTES = 8_000_000
_ARROW_TYPES: dict[str, pa.DataType] = {
    **{c: pa.large_string() for c in RECORDED_COLUMNS},
    "preference": pa.float64(), "correct": pa.bool_(), "simulated": pa.bool_(), "source_row": pa.int64(),
    "repeat": pa.int64(),
}

#: what a table read with ``texts=False`` holds in place of the texts: the responses' word counts,
#: markdown scores (:func:`judgelab.datasets.features.text_feature_arrays`) and whether each is non-empty, and
#: the strict view's reading of the raw answer (:func:`_strict_readings`)
FEATURE_COLUMNS = ("words_a", "words_b", "markdown_a", "markdown_b", "has_text_a", "has_text_b", "strict_shown")
TEXT_COLUMNS = ("instruction", "response_a", "response_b", "raw_text")
FEATURE_TABLE_COLUMNS = (*(c for c in RECORDED_COLUMNS if c not in TEXT_COLUMNS), *FEATURE_COLUMNS)


def _human_label(mapping: VerdictMapping, order: str, rec: dict[str, Any], ctx: _Ctx) -> str:
    """The mapping's human label of the pair in the stored order (A/B/tie), "" when none."""
    if mapping.human is None:
        return ""
    h = _target(mapping.human, rec, ctx)[0]
    if h not in ("A", "B", "tie"):
        return ""
    return h if mapping.human.frame == "stored" else (to_original_frame(h, order) or "")


#: columns stored as pandas ``category`` (codes + distinct values): few distinct values (the judge,
#: the file), or texts each written once per pair but held by both of its rows (a million pairs
#: of JudgeBench-size texts would otherwise hold every text twice)
CATEGORY_COLUMNS = ("judge", "backend", "model", "family", "model_a", "model_b", "family_a", "family_b", "label",
                    "parse_method", "category", "source_file", "instruction", "response_a", "response_b")
#: without texts, every string column is a category: the ids (two rows per pair) and the verdict
#: columns too, so a row costs a few bytes of codes
FEATURE_CATEGORY_COLUMNS = (*(c for c in CATEGORY_COLUMNS if c not in TEXT_COLUMNS),
                            "pair_id", "item_id", "order", "verdict_shown", "verdict", "expected_verdict", "status",
                            "strict_shown", "human")
#: the feature table's numbers in the narrowest type that holds them exactly: word counts and
#: markdown scores (multiples of 1/4 in [0, 1]) in float32, the row of the record and the repeat
#: in int32 (two billion rows of one file, repeats); 30 bytes a row less at ten million pairs
FEATURE_TYPES: dict[str, pa.DataType] = {"words_a": pa.float32(), "words_b": pa.float32(),
                                         "markdown_a": pa.float32(), "markdown_b": pa.float32(),
                                         "source_row": pa.int32(), "repeat": pa.int32()}


def _narrow(d: pa.DictionaryArray) -> pa.DictionaryArray:
    """``d`` with the narrowest signed index type its dictionary fits (int8 for a handful of values)."""
    n = len(d.dictionary)
    it = pa.int8() if n < 1 << 7 else pa.int16() if n < 1 << 15 else pa.int32()
    return d if d.indices.type == it else pa.DictionaryArray.from_arrays(d.indices.cast(it), d.dictionary)


def _column(chunks: list[pa.Array], name: str, category: bool) -> pd.Series:
    if category:
        return _categorical(chunks, name)
    col = pa.chunked_array(chunks, type=chunks[0].type if chunks else _ARROW_TYPES.get(name, pa.float64()))
    chunks.clear()
    if name == "correct":
        return col.to_pandas(types_mapper={pa.bool_(): pd.BooleanDtype()}.get)
    return col.to_pandas()


def _categorical(chunks: list[pa.DictionaryArray], name: str) -> pd.Series:
    """Dictionary-encoded chunks (each with its own dictionary and index type) as one pandas
    Categorical whose categories stay Arrow strings.

    The chunks' dictionaries are unified here rather than by ``ChunkedArray.unify_dictionaries``,
    which needs one index type across the chunks (a chunk keeps the narrowest its own dictionary
    allows); the chunks are freed as their codes are read.  (``ChunkedArray.to_pandas`` would go
    through one Python string per distinct value: for a million distinct ids that transient alone
    is ~0.5 GB.)"""
    if not chunks:
        return pd.Series([], dtype="category", name=name)
    dicts = [c.dictionary.cast(pa.large_string()) for c in chunks]
    starts = np.cumsum([0, *(len(d) for d in dicts)])
    enc = pc.dictionary_encode(pa.concat_arrays(dicts))  # each chunk's values -> one code per distinct value
    del dicts
    glob = np.append(enc.indices.to_numpy(zero_copy_only=False), -1)  # local -1 (null) -> -1
    dictionary = enc.dictionary
    del enc
    sizes = [len(c) for c in chunks]
    codes: np.ndarray = np.empty(sum(sizes), np.int32 if len(dictionary) >= 1 << 15 else np.int16)
    pos = 0
    for i in range(len(chunks)):
        c = chunks[i]
        local = pc.fill_null(c.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        codes[pos:pos + sizes[i]] = glob[np.where(local >= 0, local + starts[i], len(glob) - 1)]
        pos += sizes[i]
        chunks[i] = None  # freed as read
    chunks.clear()
    # categories in sorted order, so sorting by the column sorts as the strings do
    order = pc.array_sort_indices(dictionary).to_numpy()
    rank = np.empty(len(order), dtype=codes.dtype)
    rank[order] = np.arange(len(order), dtype=codes.dtype)
    codes = np.where(codes >= 0, rank[np.maximum(codes, 0)], -1) if len(order) else codes
    categories = pd.Index(dictionary.take(order).to_pandas())
    try:  # an Arrow dictionary is unique: skip pandas' check (it hashes Python copies of every text)
        dtype = pd.CategoricalDtype._from_fastpath(categories, ordered=False)  # type: ignore[attr-defined]
    except AttributeError:  # pragma: no cover - a pandas without the fast path
        dtype = pd.CategoricalDtype(categories)
    cat = pd.Categorical.from_codes(codes, dtype=dtype)
    return pd.Series(cat, name=name, copy=False)


def _check_filled(path: Path, mapping: VerdictMapping, checked: Mapping[str, FieldSpec], seen: set[str],
                  found_games: Sequence[bool]) -> None:
    """A mapped field, or a game's verdict source, empty in every row of a file is an error."""
    missing = [k for k in checked if k not in seen]
    if missing:
        k = missing[0]
        hint = " or name the judge with --judge" if k in ("judge", "model") else \
            " or give --family" if k == "family" else ""
        raise InputError(f"{path}: mapping field {k!r} ({_describe(checked[k])}) is empty in every row of this "
                         f"file; check the key (format {mapping.name!r}), list the field under 'optional',{hint}")
    for gi, found in enumerate(found_games):
        if not found:
            vs = mapping.games[gi].verdict
            src = next(s for s in (vs.label, vs.weight, vs.text, vs.scores) if s is not None)
            raise InputError(f"{path}: the verdict of game {gi} ({_describe(src)}) is empty in every row of this "
                             f"file; check the key (format {mapping.name!r})")


def _key_codes(col: pd.Series) -> np.ndarray:
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy().astype(np.int64)
    return pd.factorize(col, use_na_sentinel=True)[0].astype(np.int64)


def _check_unique(df: pd.DataFrame, locate: Callable[[int, bool], str]) -> None:
    """One verdict per judge x pair x order x repeat (on integer codes: a dict of 2M string keys would cost
    ~0.5 GB); ``locate`` names the file and row of a table row."""
    key = np.zeros(len(df), dtype=np.int64)
    for c in ("judge", "pair_id", "order", "repeat"):
        codes = _key_codes(df[c])
        key = key * (int(codes.max(initial=0)) + 2) + codes + 1
    dup = pd.Series(key).duplicated(keep="first").to_numpy()
    if not dup.any():
        return
    i = int(dup.argmax())
    j = int(np.flatnonzero(key == key[i])[0])
    raise InputError(f"{locate(i, False)}: judge {df.at[i, 'judge']!r} has two verdicts for pair "
                     f"{df.at[i, 'pair_id']!r} in order {df.at[i, 'order']!s} (first at {locate(j, True)}); map "
                     f"pair_id to fields that tell the pairs apart")


def _locator(mapping: VerdictMapping, where_file: Sequence[str], file_starts: Sequence[int]
             ) -> Callable[[int, bool], str]:
    """``locate(table row, with game)``: the file and record row a table row came from.  Each record
    gives one row per game, so the record is found by counting; its row number is read again from
    the file (only an error message needs it, so no per-row array is kept)."""
    n_games = len(mapping.games)

    def locate(i: int, with_game: bool) -> str:
        fi = bisect.bisect_right(file_starts, i) - 1
        k, gi = divmod(i - file_starts[fi], n_games)
        path = Path(where_file[fi])
        row = next(itertools.islice(iter_records(path, mapping.file_type, mapping.records), k, None))[0]
        return f"{path} row {row}" + (f" game {gi}" if with_game and n_games > 1 else "")

    return locate


@dataclass(frozen=True)
class ReplayEntry:
    instruction: str
    order: str
    raw_text: str
    verdict_shown: str


Recording = dict[tuple[str, str], list[ReplayEntry]]


def _text_or_empty(v: Any) -> str:
    """A table cell as text, a missing one (None, or the NaN a category column yields) as ``""``."""
    return "" if _empty(v) or v is pd.NA else str(v)


def replay_recording(table: pd.DataFrame) -> Recording:
    """``{(text shown first, text shown second): [entries]}`` from a recorded verdict table.

    Missing texts are empty strings, never NaN: the replay judge matches requests against them
    (``instruction in prompt``), and a missing response must match the empty slot it was shown as."""
    rec: Recording = {}
    for r in table_tuples(table, index=False):
        a, b = _text_or_empty(r.response_a), _text_or_empty(r.response_b)
        first, second = (a, b) if r.order == "AB" else (b, a)
        rec.setdefault((first, second), []).append(
            ReplayEntry(_text_or_empty(r.instruction), r.order, _text_or_empty(r.raw_text),
                        _text_or_empty(r.verdict_shown)))
    return rec


#: the record path's per-record readers, which the columnar reader applies to each distinct value
_RECORD_RULES = columnar_mod.RecordRules(verdict_row=_verdict_row, target=_target, human_label=_human_label,
                                         short_id=_short_id)
