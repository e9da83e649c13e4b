"""A user's own pool to rank (paper 002 applied to one's own items or models).

An *items file* lists the candidates to rank, one per line (JSONL) or row (CSV).  Two shapes:

* **texts** -- each item is one response to one question (``text``; the question is the
  item's ``question`` or the config's ``topk.rank.question``);
* **models across prompts** -- each item (e.g. a model) has ``responses``, a list of
  ``{"prompt": ..., "text": ...}``; two items are compared on a prompt both answered, so one
  pair can be asked again on another prompt.  JSONL only.

Keys of one JSONL object (CSV: the same names as columns, user covariates as ``cov_<name>``):

================ ============================================================================
``id``           unique item name (required)
``text``         the response (texts shape)
``question``     the question this text answers (texts shape; optional)
``responses``    ``[{"prompt": str, "text": str, "covariates": {name: number}}]`` (models shape)
``covariates``   ``{name: number}`` -- user covariates of the item (any numbers)
``anchor``       optional trusted quality score (a human rating, a strong judge's score):
                 items with anchors give the trusted-anchor gate its labelled pairs
``true_quality`` optional *planted* truth (a simulated experiment): the simulated panel reads
                 it as its quality signal and recall of the true top-k is reported.  Nothing
                 else reads it; real backends never see it
================ ============================================================================

Covariates.  A covariate named in the config is either one computed from the text
(:data:`TEXT_COVARIATES`: ``length_std``, ``log2_length``, ``markdown``) or a user covariate
present in the file.  Per-response values are aggregated over an item's prompts by their
mean (the model of Eq. 1 has one value per item), then ``length_std`` is standardised over
items.  Every error names the file and the line (or CSV row) and key.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgelab.datasets.features import markdown_score, word_count
from judgelab.io import InputError, iter_jsonl, table_rows

ITEM_KEYS = {"id", "text", "question", "responses", "covariates", "anchor", "true_quality"}
RESPONSE_KEYS = {"prompt", "text", "covariates"}


def _log2_length(text: str) -> float:
    return math.log2(word_count(text) + 1.0)


#: covariates computed per response from its text (then averaged over an item's prompts);
#: ``length_std`` is the mean word count, standardised over items afterwards
TEXT_COVARIATES: dict[str, Callable[[str], float]] = {
    "length_std": lambda t: float(word_count(t)),
    "log2_length": _log2_length,
    "markdown": markdown_score,
}


@dataclass
class UserItem:
    id: str
    responses: dict[str, str]  # prompt (question) -> text
    covariates: dict[str, float] = field(default_factory=dict)  # item-level user covariates
    response_covariates: dict[str, dict[str, float]] = field(default_factory=dict)  # prompt -> {name: value}
    anchor: float | None = None
    true_quality: float | None = None
    shape: str = "texts"  # "texts" (one text) or "models" (responses per prompt)


@dataclass
class UserPool:
    """A validated pool: items, their shared prompts and the covariate matrix."""

    path: str
    items: list[UserItem]
    shape: str  # "texts" or "models"
    covariate_names: list[str]
    X: np.ndarray

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def ids(self) -> list[str]:
        return [it.id for it in self.items]

    @property
    def prompts(self) -> list[str]:
        return sorted({p for it in self.items for p in it.responses})

    def shared_prompts(self, i: int, j: int) -> list[str]:
        a, b = self.items[i].responses, self.items[j].responses
        return sorted(set(a) & set(b))

    @property
    def anchors(self) -> np.ndarray | None:
        v = [it.anchor for it in self.items]
        return None if all(x is None for x in v) else np.array([np.nan if x is None else x for x in v])

    @property
    def truth(self) -> np.ndarray | None:
        v = [it.true_quality for it in self.items]
        if all(x is None for x in v):
            return None
        return np.array([np.nan if x is None else x for x in v])


def _number(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise InputError(f"{where}: must be a finite number, got {v!r}")
    return float(v)


def _text(v: Any, where: str) -> str:
    if not isinstance(v, str) or not v.strip():
        raise InputError(f"{where}: must be a non-empty text")
    return v


def _covs(v: Any, where: str) -> dict[str, float]:
    if not isinstance(v, dict):
        raise InputError(f"{where}: must be an object {{name: number}}, got {type(v).__name__}")
    return {str(k): _number(x, f"{where}.{k}") for k, x in v.items()}


def _item_from_obj(obj: dict[str, Any], where: str, default_question: str | None) -> UserItem:
    unknown = set(obj) - ITEM_KEYS
    if unknown:
        raise InputError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(ITEM_KEYS)}")
    if "id" not in obj or obj["id"] is None or str(obj["id"]).strip() == "":
        raise InputError(f"{where}: missing 'id'")
    iid = str(obj["id"])
    where = f"{where} (id {iid!r})"
    has_text, has_resp = obj.get("text") is not None, obj.get("responses") is not None
    if has_text == has_resp:
        raise InputError(f"{where}: give exactly one of 'text' (one response) or 'responses' (per prompt)")
    item = UserItem(id=iid, responses={})
    if has_text:
        q = obj.get("question") or default_question
        if not q:
            raise InputError(f"{where}: no 'question' for this text and no topk.rank question in the config")
        item.responses[_text(q, f"{where} question")] = _text(obj["text"], f"{where} text")
    else:
        item.shape = "models"
        if obj.get("question") is not None:
            raise InputError(f"{where}: 'question' goes inside each response as 'prompt'")
        resp = obj["responses"]
        if not isinstance(resp, list) or not resp:
            raise InputError(f"{where}: 'responses' must be a non-empty list of {{prompt, text}} objects")
        for r, entry in enumerate(resp):
            w = f"{where} responses[{r}]"
            if not isinstance(entry, dict):
                raise InputError(f"{w}: must be an object with 'prompt' and 'text'")
            bad = set(entry) - RESPONSE_KEYS
            if bad:
                raise InputError(f"{w}: unknown key(s) {sorted(bad)}; allowed: {sorted(RESPONSE_KEYS)}")
            prompt = _text(entry.get("prompt"), f"{w} prompt")
            if prompt in item.responses:
                raise InputError(f"{w}: prompt {prompt[:60]!r} answered twice by this item")
            item.responses[prompt] = _text(entry.get("text"), f"{w} text")
            if entry.get("covariates") is not None:
                item.response_covariates[prompt] = _covs(entry["covariates"], f"{w} covariates")
    if obj.get("covariates") is not None:
        item.covariates = _covs(obj["covariates"], f"{where} covariates")
    if obj.get("anchor") is not None:
        item.anchor = _number(obj["anchor"], f"{where} anchor")
    if obj.get("true_quality") is not None:
        item.true_quality = _number(obj["true_quality"], f"{where} true_quality")
    return item


def _csv_number(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v
    return v


def _csv_objects(p: Path) -> list[tuple[str, dict[str, Any]]]:
    try:
        df = pd.read_csv(p, dtype={"id": str})
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: not a readable CSV ({exc})") from None
    out = []
    for n, rec in enumerate(table_rows(df), start=2):  # row 1 is the header
        obj: dict[str, Any] = {}
        covs: dict[str, Any] = {}
        for k, v in rec.items():
            if isinstance(v, float) and math.isnan(v):
                continue
            if str(k).startswith("cov_") or k in ("anchor", "true_quality"):
                v = _csv_number(v)  # a column with one bad cell is read as text
            if str(k).startswith("cov_"):
                covs[str(k)[4:]] = v
            else:
                obj[str(k)] = v
        if covs:
            obj["covariates"] = covs
        out.append((f"{p} row {n}", obj))
    return out


def load_user_pool(path: str | Path, covariates: Sequence[str] = ("length_std",), *,
                   question: str | None = None) -> UserPool:
    """Read and validate an items file (module docstring); compute the covariate matrix."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: items file not found")
    if p.suffix == ".csv":
        objs = _csv_objects(p)
    elif p.suffix in (".jsonl", ".ndjson"):
        objs = [(f"{p}:{n}", obj) for n, obj in iter_jsonl(p)]
    else:
        raise InputError(f"{p}: items file must be .jsonl or .csv")
    items: list[UserItem] = []
    seen: dict[str, str] = {}
    for where, obj in objs:
        it = _item_from_obj(obj, where, question)
        if it.id in seen:
            raise InputError(f"{where}: duplicate id {it.id!r} (first at {seen[it.id]})")
        seen[it.id] = where
        items.append(it)
    if len(items) < 3:
        raise InputError(f"{p}: {len(items)} item(s); ranking needs at least 3")
    shapes = {it.shape for it in items}
    if len(shapes) > 1:
        raise InputError(f"{p}: mixes items with 'text' and items with 'responses'; use one shape per file")
    planted = [it.true_quality is not None for it in items]
    if any(planted) and not all(planted):
        missing = next(it.id for it in items if it.true_quality is None)
        raise InputError(f"{p}: 'true_quality' is given for some items but not for {missing!r}; "
                         "a planted truth must cover the whole pool")
    pool = UserPool(str(p), items, shapes.pop(), list(covariates), np.zeros((len(items), 0)))
    _check_comparable(pool)
    pool.X = _covariate_matrix(pool, covariates)
    return pool


def _check_comparable(pool: UserPool) -> None:
    """Every item must be linked to every other through pairs that share a prompt."""
    n = pool.n_items
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    by_prompt: dict[str, list[int]] = {}
    for i, it in enumerate(pool.items):
        for q in it.responses:
            by_prompt.setdefault(q, []).append(i)
    for members in by_prompt.values():
        for m in members[1:]:
            parent[find(m)] = find(members[0])
    roots = {find(i) for i in range(n)}
    if len(roots) > 1:
        lonely = [pool.items[i].id for i in range(n) if find(i) != find(0)][:5]
        raise InputError(f"{pool.path}: the items do not all share prompts: {lonely} can never be compared with "
                         f"{pool.items[0].id!r} (directly or through other items)")


def _covariate_matrix(pool: UserPool, names: Sequence[str]) -> np.ndarray:
    cols = []
    for name in names:
        if name in TEXT_COVARIATES:
            fn = TEXT_COVARIATES[name]
            col = np.array([np.mean([fn(t) for t in it.responses.values()]) for it in pool.items])
            if name == "length_std":
                sd = col.std()
                col = (col - col.mean()) / sd if sd > 0 else np.zeros_like(col)
        else:
            col = np.empty(pool.n_items)
            for i, it in enumerate(pool.items):
                per_resp = [c[name] for c in it.response_covariates.values() if name in c]
                if per_resp and name in it.covariates:
                    raise InputError(f"{pool.path}: item {it.id!r} gives covariate {name!r} both per item and "
                                     "per response")
                if per_resp:
                    if len(per_resp) != len(it.responses):
                        raise InputError(f"{pool.path}: item {it.id!r}: covariate {name!r} is missing on "
                                         f"{len(it.responses) - len(per_resp)} of its responses")
                    col[i] = float(np.mean(per_resp))  # aggregated over the item's prompts
                elif name in it.covariates:
                    col[i] = it.covariates[name]
                else:
                    raise InputError(f"{pool.path}: item {it.id!r} has no covariate {name!r} (configured in "
                                     f"topk.rank.covariates; computed ones: {sorted(TEXT_COVARIATES)})")
        cols.append(col)
    return np.column_stack(cols) if cols else np.zeros((pool.n_items, 0))
