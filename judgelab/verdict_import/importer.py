"""Recorded verdicts (any file + mapping) into judgelab's recorded verdict table.

The recorded verdict table has one row per judge x pair x presentation order.  It
extends the verdict table of :mod:`judgelab.pairwise` with the texts and the models
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
================== ===============================================================

Empty or whitespace-only responses keep their pair (a warning counts them); two
identical responses in one pair are kept apart by ``pair_id`` and ``order``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from judgelab.io import InputError
from judgelab.parsing import normalize_verdict, parse_pairwise
from judgelab.prompts import to_original_frame
from judgelab.records import CallStatus
from judgelab.verdict_import.mapping import FieldSpec, VerdictMapping, VerdictSpec, value_key
from judgelab.verdict_import.readers import read_records

log = logging.getLogger(__name__)

RECORDED_COLUMNS = [
    "judge", "backend", "model", "family", "pair_id", "item_id", "order", "instruction", "response_a",
    "response_b", "model_a", "model_b", "family_a", "family_b", "verdict_shown", "verdict", "preference",
    "label", "expected_verdict", "correct", "status", "parse_method", "raw_text", "simulated", "category",
    "source_file", "source_row",
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


@dataclass
class _Ctx:
    path: Path
    row: int
    tables: Mapping[str, dict[tuple[str | None, ...], dict[str, Any]]]


def _walk(obj: Any, path: Sequence[Any]) -> Any:
    for k in path:
        if obj is None:
            return None
        if isinstance(obj, list):
            try:
                obj = obj[int(k)]
            except (ValueError, IndexError):
                return None
        elif isinstance(obj, dict):
            obj = obj.get(k, obj.get(str(k)) if not isinstance(k, str) else None)
        else:
            return None
    return obj


def _empty(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v == "") or (isinstance(v, float) and v != v)


def get_field(spec: FieldSpec | None, rec: dict[str, Any], ctx: _Ctx) -> Any:
    if spec is None:
        return None
    if spec.kind == "path":
        v = _walk(rec, spec.path)
    elif spec.kind == "const":
        return spec.const
    elif spec.kind == "path_part":
        try:
            return ctx.path.parts[spec.part]
        except IndexError:
            raise InputError(f"{ctx.path}: has no path component {spec.part}") from None
    elif spec.kind == "row":
        return f"{ctx.row:0{spec.width}d}" if spec.width else ctx.row
    elif spec.kind == "concat":
        vals = [get_field(p, rec, ctx) for p in spec.parts]
        return spec.sep.join("" if _empty(v) else str(v) for v in vals)
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


def _resolve(path: str | Path) -> Path:
    p = Path(path)
    if p.exists() or p.is_absolute():
        return p
    from judgelab.datasets.sources import resolve_data_path

    return resolve_data_path(str(p), download=False)


def _expand(paths: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        rp = _resolve(p)
        if rp.is_dir():
            out.extend(sorted(f for f in rp.iterdir() if f.is_file() and not f.name.startswith(".")))
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
        bases = [Path(".")] if Path(pat).is_absolute() else [Path("."), *([data_root()] if data_root() else [])]
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
            for row, rec in read_records(p, t.format, t.records):
                ctx = _Ctx(p, row, {})
                idx[tuple(value_key(get_field(k, rec, ctx)) for k in t.key)] = rec
        out[name] = idx
    return out


def _target(spec: VerdictSpec, rec: dict[str, Any], ctx: _Ctx) -> tuple[str | None, float | None, str, str]:
    """(verdict or non-value status, preference in the spec's frame, method, label as written)."""
    if spec.label is not None:
        v = get_field(spec.label, rec, ctx)
        k = value_key(v)
        label = "" if k is None else str(v)
        if k is None:
            return spec.values.get("null", "unparsed"), None, "label-missing", label
        t = spec.values.get(k) if spec.values else normalize_verdict(v)
        if t is None:
            return "unparsed", None, "label-unknown", label
        return t, None, "label", label
    if spec.weight is not None:
        v = get_field(spec.weight, rec, ctx)
        k = value_key(v)
        label = "" if k is None else str(v)
        if k in spec.values or (k is None and "null" in spec.values):
            return spec.values[k if k is not None else "null"], None, "weight-value", label
        if k is None:
            return "unparsed", None, "weight-missing", label
        try:
            w = float(v)
        except (TypeError, ValueError):
            return "unparsed", None, "weight-unknown", label
        lo, hi = spec.weight_range
        p = (w - lo) / (hi - lo)
        if not 0.0 <= p <= 1.0:
            return "unparsed", None, "weight-out-of-range", label
        return ("A" if p < 0.5 else "B" if p > 0.5 else "tie"), p, "weight", label
    parsed = parse_pairwise(text_of(get_field(spec.text, rec, ctx)), fmt=spec.parse or "json")
    if parsed.status.has_value:
        return parsed.value, None, parsed.method, ""
    return parsed.status.value, None, parsed.method, ""


_PREF = {"A": 0.0, "B": 1.0, "tie": 0.5}


def _verdict_row(spec: VerdictSpec, order: str, rec: dict[str, Any], ctx: _Ctx) -> dict[str, Any]:
    target, pref, method, label = _target(spec, rec, ctx)
    has = target in ("A", "B", "tie")
    status = CallStatus.OK if has else CallStatus(target)
    if has and method.startswith("fallback"):
        status = CallStatus.FALLBACK
    if spec.status is not None:
        rs = value_key(get_field(spec.status, rec, ctx))
        if rs in {s.value for s in CallStatus} and CallStatus(rs).has_value == has:
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
    return {"verdict_shown": shown or "", "verdict": stored or "", "preference": stored_pref,
            "status": status.value, "parse_method": method, "label": label,
            "raw_text": text_of(get_field(spec.text, rec, ctx)) or ""}


def _short_id(*parts: Any) -> str:
    return "p" + hashlib.sha256("\x1f".join("" if p is None else str(p) for p in parts).encode()).hexdigest()[:12]


def import_verdicts(files: Sequence[str | Path], mapping: VerdictMapping, *,
                    tables: Mapping[str, Sequence[str | Path]] | None = None,
                    judge: str | None = None, family: str | None = None) -> pd.DataFrame:
    """Read recorded-verdict files with ``mapping`` into the recorded verdict table.

    ``judge``/``family`` name the judge when the file does not (default: the file stem
    and the family inferred from the judge's model name).
    """
    if not files:
        raise InputError("no recorded-verdict files given")
    side = load_tables(mapping, tables)
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, str], str] = {}
    empty_responses = 0
    for path in _expand(files):
        for row, rec in read_records(path, mapping.format, mapping.records):
            ctx = _Ctx(path, row, side)
            where = f"{path} row {row}"
            f = {k: get_field(spec, rec, ctx) for k, spec in mapping.fields.items()}
            instr = text_of(f.get("instruction"))
            ra, rb = text_of(f.get("response_a")), text_of(f.get("response_b"))
            ma, mb = f.get("model_a"), f.get("model_b")
            jname = str(f.get("judge") or judge or path.stem)
            jmodel = str(f.get("model") or jname)
            jfam = f.get("family") or family
            if _empty(jfam):
                jfam = model_family(jmodel)
                jfam = model_family(jname) if jfam == "unknown" else jfam
            jfam = str(jfam)
            for resp in (ra, rb):
                if resp is not None and not resp.strip():
                    empty_responses += 1
            for gi, game in enumerate(mapping.games):
                a, b, m_a, m_b = ra, rb, ma, mb
                if game.order is not None and game.order != "auto":
                    order = game.order
                elif game.order == "auto":
                    order = "AB" if (a or "") <= (b or "") else "BA"
                else:
                    raw_order = value_key(get_field(game.order_field, rec, ctx))
                    order = game.order_values.get(raw_order or "null") if game.order_values else raw_order
                    if order not in ("AB", "BA"):
                        raise InputError(f"{where}: presentation order {raw_order!r} is not mapped to AB or BA")
                if (mapping.responses_frame == "shown" or game.order == "auto") and order == "BA":
                    a, b, m_a, m_b = b, a, mb, ma
                pid = f.get("pair_id")
                pid = _short_id(path.name, instr, a, b) if _empty(pid) else str(pid)
                if len(pid) > 96:
                    pid = _short_id(pid)
                item = f.get("item_id")
                item = (_short_id(instr) if instr else pid) if _empty(item) else str(item)
                if len(item) > 96:
                    item = _short_id(item)
                v = _verdict_row(game.verdict, order, rec, ctx)
                # a recorded table's own label / continuous preference survive a round trip
                if not _empty(f.get("label")):
                    v["label"] = str(f["label"])
                if not _empty(f.get("preference")) and v["verdict"]:
                    v["preference"] = float(f["preference"])
                gold = ""
                if mapping.gold is not None:
                    g, _, _, _ = _target(mapping.gold, rec, ctx)
                    if g in ("A", "B", "tie"):
                        gold = g if mapping.gold.frame == "stored" else (to_original_frame(g, order) or "")
                k = (jname, pid, order)
                if k in seen:
                    raise InputError(f"{where}: judge {jname!r} has two verdicts for pair {pid!r} in order {order} "
                                     f"(first at {seen[k]}); map pair_id to fields that tell the pairs apart")
                seen[k] = where if len(mapping.games) == 1 else f"{where} game {gi}"
                sim = f.get("simulated")
                rows.append({
                    "judge": jname, "backend": "recorded", "model": jmodel, "family": jfam, "pair_id": pid,
                    "item_id": item, "order": order, "instruction": instr, "response_a": a, "response_b": b,
                    "model_a": None if _empty(m_a) else str(m_a), "model_b": None if _empty(m_b) else str(m_b),
                    "family_a": model_family(str(m_a)) if not _empty(m_a) else "",
                    "family_b": model_family(str(m_b)) if not _empty(m_b) else "",
                    **v, "expected_verdict": gold,
                    "correct": (v["verdict"] == gold) if gold else pd.NA,
                    "simulated": str(sim).lower() in ("true", "1") if not _empty(sim) else False,
                    "category": "" if _empty(f.get("category")) else str(f.get("category")),
                    "source_file": str(f.get("source_file") or path),
                    "source_row": int(f["source_row"]) if not _empty(f.get("source_row")) else row,
                })
    if empty_responses:
        log.warning("%d empty or whitespace-only responses kept (their pairs stay in the table)", empty_responses)
    df = pd.DataFrame(rows, columns=RECORDED_COLUMNS)
    df["correct"] = df["correct"].astype("boolean")
    df["preference"] = pd.to_numeric(df["preference"], errors="coerce").astype(float)
    df.attrs["empty_responses"] = empty_responses
    return df


@dataclass(frozen=True)
class ReplayEntry:
    instruction: str
    order: str
    raw_text: str
    verdict_shown: str


Recording = dict[tuple[str, str], list[ReplayEntry]]


def replay_recording(table: pd.DataFrame) -> Recording:
    """``{(text shown first, text shown second): [entries]}`` from a recorded verdict table."""
    rec: Recording = {}
    for r in table.itertuples(index=False):
        a, b = r.response_a or "", r.response_b or ""
        first, second = (a, b) if r.order == "AB" else (b, a)
        rec.setdefault((first, second), []).append(
            ReplayEntry(r.instruction or "", r.order, r.raw_text or "", r.verdict_shown or ""))
    return rec
