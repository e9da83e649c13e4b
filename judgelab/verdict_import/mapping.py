"""The column mapping from a recorded-verdict file to judgelab's recorded verdict table.

A mapping (a dict from config or a preset, validated against
``config/schema.yaml#/$defs/verdict_mapping``) says where each field lives in one
record of the file:

* **field specs** (:class:`FieldSpec`) locate a value: a dotted path
  (``"games.0.score"``) or a list of keys (``["results", 0, "swap = False", "winner"]``),
  ``{const: v}``, ``{path_part: -3}`` (a component of the file's path),
  ``{row: true, width: 4}`` (the record's index), ``{concat: [...], sep: "|"}``,
  ``{first_of: [...]}`` (first non-empty) or ``{table: name, key: [...], value: path}``
  (a look-up in a side table, e.g. FastChat model answers by question and model), or
  ``{file_key: judge_model}`` (the value of a ``key=value`` part of the file name, parts split
  by ``,``: JudgeBench names its output files ``...,judge_name=arena_hard,judge_model=o1-mini.jsonl``).
  A string is first looked up as one literal key, then as a path: a column named
  ``gpt-3.5-turbo-0125`` is that column, not the path ``gpt-3``/``5-turbo-0125``, and a
  column named ``01`` is that column, not the key ``1``.
  ``concat`` is empty when any of its parts is empty (a compound name with a missing part
  is missing, so ``first_of``, ``--judge`` or the file stem can stand in).
  ``upto: <spec>`` keeps the first N items of a list value (multi-turn: turn 2 shows
  both turns).
* **games**: the presentation orders recorded in one record.  A record holding both
  orders (FastChat ``g1``/``g2``, Arena-Hard ``games``) lists two games with literal
  orders ``AB``/``BA``; a log with one row per call gives one game whose ``order`` is a
  field spec with a ``values`` map, and rows of the same pair share ``pair_id``.
* **verdict** of each game: ``text`` (raw answer) plus ``parse`` (a parser format of
  :mod:`judgelab.parsing`), or ``label`` with a ``values`` map, or a continuous
  ``weight`` scaled by ``weight_range`` to P(second response preferred); ``frame`` says
  whether A/B name the slots as shown in that game (``shown``) or the pair's stored
  order (``stored``).  ``scores`` (two numbers, A then B as shown: a reward model's
  scores) give the verdict by the higher score (equal = tie) and ``preference`` =
  sigmoid(score B - score A), the Bradley-Terry probability a reward model is trained on;
  a label is then only the fallback for games without two finite scores.
* **file_type** (optional): how the files are stored: ``json``, ``jsonl``, ``csv``, ``tsv``,
  ``parquet`` or a tool's own log (``inspect_ai``, ``rewardbench2``, ``promptfoo``); ``auto`` (the
  default) tells by the suffix.  Side tables take their own ``file_type``.  (A preset, chosen by
  ``--format`` or a config's ``format``, is a whole mapping; a verdict's ``parse`` names the layout
  of a judge's answer.)
* **require** (optional): keys every record must have (the value may be null); a
  missing one is an error naming the file, the row and the key, so a file of another
  format stops instead of importing as empty rows.
* **optional** (optional): mapped fields allowed to be empty in every row of a file.
  Any other mapped field (or a game's verdict source) that is empty in every row of a
  file is an error naming the field and the file: a misspelt column is never read as
  "no value" silently.
* **gold** (optional): ``label`` + ``values`` in the stored order.
* **human** (optional): a human label of the pair (an expert vote), ``label`` + ``values`` in the
  stored order like gold; kept apart from gold in the ``human`` column, the bias card's human
  anchor (agreement rows, and PPI where only some pairs carry one).
* **repeat** (optional field): the repetition index when the same call (pair and order) was
  asked more than once; repetitions are kept apart by it, and the card reads their consistency.

Why hand-written: the published judge logs nest both orders inside one record in
four different ways; no library maps nested JSON to one row per presentation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from judgelab.config import SCHEMA_PATH, ConfigError, load_yaml, refuse_renamed_keys

ORDERS = ("AB", "BA")
VERDICT_TARGETS = ("A", "B", "tie", "unparsed", "refusal", "error")


def value_key(v: Any) -> str | None:
    """Canonical string of a recorded value for ``values`` maps (``2``, ``2.0`` and ``"2"`` agree)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        if v != v:  # NaN: a missing cell
            return None
        if v.is_integer():
            return str(int(v))
    s = str(v).strip()
    if s == "":
        return None
    try:
        f = float(s)
    except ValueError:
        return s
    if f != f:
        return None
    return str(int(f)) if f.is_integer() else repr(f)


@dataclass(frozen=True)
class FieldSpec:
    """Where one value lives in a record (see the module docstring for the forms)."""

    kind: str  # path | const | path_part | row | concat | first_of | table
    path: tuple[Any, ...] = ()
    const: Any = None
    part: int = 0
    width: int = 0
    parts: tuple[FieldSpec, ...] = ()
    sep: str = "|"
    table: str = ""
    key: tuple[FieldSpec, ...] = ()
    upto: FieldSpec | None = None
    literal: str | None = None  # a string as written: tried as one key before the path
    file_key: str = ""

    @staticmethod
    def parse(raw: Any, *, where: str) -> FieldSpec:
        if isinstance(raw, FieldSpec):
            return raw
        if isinstance(raw, str):
            return FieldSpec("path", path=_split_path(raw), literal=raw)
        if isinstance(raw, list):
            return FieldSpec("path", path=tuple(raw))
        if not isinstance(raw, dict):
            raise ConfigError(f"{where}: a field spec is a path, a list of keys or a mapping, got {raw!r}")
        upto = FieldSpec.parse(raw["upto"], where=f"{where}/upto") if "upto" in raw else None
        if "const" in raw:
            return FieldSpec("const", const=raw["const"])
        if "file_key" in raw:
            return FieldSpec("file_key", file_key=str(raw["file_key"]))
        if "path_part" in raw:
            return FieldSpec("path_part", part=int(raw["path_part"]))
        if raw.get("row"):
            return FieldSpec("row", width=int(raw.get("width", 0)))
        if "concat" in raw:
            parts = tuple(FieldSpec.parse(p, where=f"{where}/concat/{i}") for i, p in enumerate(raw["concat"]))
            return FieldSpec("concat", parts=parts, sep=str(raw.get("sep", "|")))
        if "first_of" in raw:
            parts = tuple(FieldSpec.parse(p, where=f"{where}/first_of/{i}") for i, p in enumerate(raw["first_of"]))
            return FieldSpec("first_of", parts=parts)
        if "table" in raw:
            key = tuple(FieldSpec.parse(p, where=f"{where}/key/{i}") for i, p in enumerate(raw.get("key", [])))
            value = raw.get("value")
            path = _split_path(value) if isinstance(value, str) else tuple(value or ())
            return FieldSpec("table", table=str(raw["table"]), key=key, path=path, upto=upto)
        if "path" in raw:
            p = raw["path"]
            return FieldSpec("path", path=_split_path(p) if isinstance(p, str) else tuple(p), upto=upto,
                             literal=p if isinstance(p, str) else None)
        raise ConfigError(f"{where}: unknown field spec {raw!r}")


def _split_path(s: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.lstrip("-").isdigit() else p for p in s.split("."))


@dataclass(frozen=True)
class VerdictSpec:
    text: FieldSpec | None = None
    parse: str | None = None
    label: FieldSpec | None = None
    weight: FieldSpec | None = None
    scores: FieldSpec | None = None
    weight_range: tuple[float, float] = (0.0, 1.0)
    values: dict[str, str] = field(default_factory=dict)
    frame: str = "shown"
    status: FieldSpec | None = None
    parse_method: FieldSpec | None = None


@dataclass(frozen=True)
class GameSpec:
    order: str | None  # literal AB/BA, or None when order_field decides
    order_field: FieldSpec | None
    order_values: dict[str, str]
    verdict: VerdictSpec


@dataclass(frozen=True)
class TableSpec:
    """A side table (answers, questions, pairs) looked up by key."""

    key: tuple[FieldSpec, ...]
    file_type: str = "auto"
    records: tuple[Any, ...] = ()
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class VerdictMapping:
    name: str
    file_type: str  # json, jsonl, csv, ... or auto (by suffix): how the files are stored
    records: tuple[Any, ...]
    games: tuple[GameSpec, ...]
    fields: dict[str, FieldSpec]
    gold: VerdictSpec | None
    responses_frame: str
    tables: dict[str, TableSpec]
    raw: dict[str, Any]
    require: tuple[tuple[Any, ...], ...] = ()
    optional: frozenset[str] = frozenset()
    human: VerdictSpec | None = None  # a human label in the stored order, read like gold

    def field(self, name: str) -> FieldSpec | None:
        return self.fields.get(name)


#: record-level fields a mapping may set (all optional; ``response_a/b`` may be lists = turns)
FIELD_NAMES = ("judge", "family", "model", "pair_id", "item_id", "instruction", "response_a", "response_b",
               "model_a", "model_b", "category", "simulated", "source_file", "source_row",
               "label", "preference", "repeat")


@lru_cache(maxsize=1)
def mapping_schema() -> dict[str, Any]:
    schema = load_yaml(SCHEMA_PATH)
    return {"$ref": "#/$defs/verdict_mapping", "$defs": schema["$defs"]}


def validate_mapping(raw: dict[str, Any], *, where: str) -> None:
    import jsonschema

    validator_cls = jsonschema.validators.validator_for(mapping_schema())
    errors = sorted(validator_cls(mapping_schema()).iter_errors(raw), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        path = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        raise ConfigError(f"{where}: invalid verdict mapping at key '{path}': {e.message}")


def _values(raw: dict[str, Any] | None) -> dict[str, str]:
    """A ``values`` map keyed by :func:`value_key` (a null or blank key is ``"null"``); the
    schema has checked that every target is one of :data:`VERDICT_TARGETS`."""
    return {value_key(k) or "null": v for k, v in (raw or {}).items()}


def _verdict(raw: dict[str, Any], *, where: str) -> VerdictSpec:
    def fs(k: str) -> FieldSpec | None:
        return FieldSpec.parse(raw[k], where=f"{where}/{k}") if raw.get(k) is not None else None

    vs = VerdictSpec(
        text=fs("text"), parse=raw.get("parse"), label=fs("label"), weight=fs("weight"), scores=fs("scores"),
        weight_range=tuple(float(x) for x in raw.get("weight_range", (0.0, 1.0))),  # type: ignore[arg-type]
        values=_values(raw.get("values")), frame=raw.get("frame", "shown"),
        status=fs("status"), parse_method=fs("parse_method"),
    )
    if vs.label is None and vs.weight is None and vs.scores is None and (vs.text is None or vs.parse is None):
        raise ConfigError(f"{where}: a verdict needs a label, a weight, scores, or text with a parse format")
    lo, hi = vs.weight_range
    if not hi > lo:
        raise ConfigError(f"{where}/weight_range: need low < high, got {list(vs.weight_range)}")
    return vs


def build_mapping(raw: dict[str, Any], *, name: str = "custom", where: str = "verdict mapping") -> VerdictMapping:
    """Validate a mapping dict and compile it (a renamed key is refused with its new name)."""
    refuse_renamed_keys(raw, scope="verdict_mapping", source=where)
    validate_mapping(raw, where=where)
    if raw.get("verdict") is not None and raw.get("games"):
        raise ConfigError(f"{where}: give either 'verdict' (one game per record) or 'games', not both")
    if raw.get("verdict") is None and not raw.get("games"):
        raise ConfigError(f"{where}: no 'verdict' (one game per record) or 'games': a mapping says where each "
                          f"record's verdict is")
    games_raw = raw.get("games") or [{"order": raw.get("order", "AB"), "verdict": raw.get("verdict")}]
    games = []
    for i, g in enumerate(games_raw):
        w = f"{where}/games/{i}"  # (the schema requires each game's verdict)
        order = g.get("order", "AB")
        if isinstance(order, str) and order in (*ORDERS, "auto"):
            games.append(GameSpec(order, None, {}, _verdict(g["verdict"], where=f"{w}/verdict")))
        else:
            spec = order if isinstance(order, dict) else {"path": order}
            values = {value_key(k) or "null": v for k, v in (spec.get("values") or {}).items()}
            bad = [v for v in values.values() if v not in ORDERS]
            if bad:
                raise ConfigError(f"{w}/order/values: orders must be AB or BA, got {bad}")
            fspec = FieldSpec.parse(spec, where=f"{w}/order")  # (a field spec ignores the "values" key)
            games.append(GameSpec(None, fspec, values, _verdict(g["verdict"], where=f"{w}/verdict")))
    fields_ = {k: FieldSpec.parse(raw[k], where=f"{where}/{k}") for k in FIELD_NAMES if raw.get(k) is not None}
    gold = _verdict({**raw["gold"], "frame": raw["gold"].get("frame", "stored")}, where=f"{where}/gold") \
        if raw.get("gold") else None
    human = _verdict({**raw["human"], "frame": raw["human"].get("frame", "stored")}, where=f"{where}/human") \
        if raw.get("human") else None
    tables = {}
    for tname, t in (raw.get("tables") or {}).items():
        key = tuple(FieldSpec.parse(k, where=f"{where}/tables/{tname}/key") for k in t["key"])
        recs = t.get("records")
        tables[tname] = TableSpec(key=key, file_type=t.get("file_type", "auto"),
                                  records=_split_path(recs) if isinstance(recs, str) else tuple(recs or ()),
                                  files=tuple(str(f) for f in (t.get("files") or [])))
    recs = raw.get("records")
    unknown = sorted(set(raw.get("optional") or ()) - set(FIELD_NAMES))
    if unknown:
        raise ConfigError(f"{where}/optional: {unknown} are not mapping fields; known: {list(FIELD_NAMES)}")
    return VerdictMapping(
        name=name, file_type=raw.get("file_type", "auto"),
        records=_split_path(recs) if isinstance(recs, str) else tuple(recs or ()),
        games=tuple(games), fields=fields_, gold=gold, responses_frame=raw.get("responses", "stored"),
        tables=tables, raw=raw,
        require=tuple(_split_path(r) if isinstance(r, str) else tuple(r) for r in raw.get("require") or ()),
        optional=frozenset(raw.get("optional") or ()), human=human,
    )
