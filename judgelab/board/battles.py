"""The recorded verdict table reduced to what a leaderboard needs: one row per usable verdict.

Each row is one judged game between the two models of a pair (stored order ``a``, ``b`` as
the log gives them), with ``pref_b`` = P(stored B preferred) in [0, 1] (the importer's
``preference``: AlpacaEval's ``preference - 1`` with 0 read as the tie, 1.5; 0/0.5/1 for
discrete verdicts), the presentation order, the item (cluster of every CI), the judge and the
style of both answers:

* ``len_*`` characters (AlpacaEval's ``str.len()`` in ``glm_winrate._get_featurized_data``);
* ``tok_*`` tokens and ``hdr_*``/``lst_*``/``bold_*`` markdown counts.  Arena-Hard reads these
  from the ``metadata`` its answer files carry (``token_len``, ``header_count``, ``list_count``,
  ``bold_count``; written by ``utils/add_markdown_info.py``); when the ``--table answers=``
  records hold that metadata it is used as is (``style_source`` ``answer metadata``).  Otherwise
  the counts come from the texts with Arena-Hard's ``count_markdown_elements`` regular
  expressions and tokens are whitespace words (``style_source`` ``texts``): Arena-Hard's own
  token count needs tiktoken, which judgelab does not ship.

Rows whose verdict carries no preference (parse failures, refusals, errors: AlpacaEval drops
``null`` preferences) leave and are counted per model (``n_failed``).  A pair with two games of
which one failed leaves whole, as Arena-Hard's ``show_result.load_judgments`` drops the record.
A model compared with itself (AlpacaEval's baseline run) is not a game.

Design.  When one model takes part in every game it is the *baseline* (AlpacaEval, Arena-Hard,
two-game logs against one reference), and each other model is scored against it.  Otherwise the
log is *free battles*; scores are then against ``reference`` (``--baseline`` or the model in the
most games).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from judgelab.io import InputError, iter_jsonl

#: Arena-Hard's ``count_markdown_elements`` (utils/add_markdown_info.py), summed per kind as
#: ``show_result.py`` sums each metadata dict
_HEADER = re.compile(r"^#{1,6}\s", re.MULTILINE)
_LIST = re.compile(r"^\s*\d+\.\s|^\s*[-*+]\s", re.MULTILINE)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")
_WORD = re.compile(r"\S+")
#: Arena-Hard's strong verdicts, which ``show_result.load_judgments`` counts three times
_STRONG = re.compile(r">>|<<")

_NEEDED = ("judge", "pair_id", "item_id", "order", "response_a", "response_b", "model_a", "model_b", "preference",
           "label", "simulated", "source_file", "source_row")


def style_of_text(text: str) -> tuple[int, int, int, int]:
    """(tokens, headers, list items, bold spans) of one answer, from its text."""
    return (len(_WORD.findall(text)), len(_HEADER.findall(text)), len(_LIST.findall(text)),
            len(_BOLD.findall(text)))


def _count(v: object) -> int:
    """A metadata value as show_result.py reads it: an int, or the sum of a dict's values."""
    if isinstance(v, dict):
        return int(sum(v.values()))
    return int(v)  # type: ignore[call-overload]


def read_answer_metadata(paths: list[str]) -> dict[tuple[str, str], tuple[int, int, int, int]]:
    """``(uid or question_id, model) -> (token_len, headers, lists, bold)`` from Arena-Hard answer
    files that carry ``metadata``; records without it are skipped (their style comes from the text)."""
    out: dict[tuple[str, str], tuple[int, int, int, int]] = {}
    files: list[Path] = []
    for p in paths:
        path = Path(p)
        files.extend(sorted(path.rglob("*.jsonl")) if path.is_dir() else [path])
    for f in files:
        if f.suffix != ".jsonl":
            continue
        for line, rec in iter_jsonl(f):
            meta = rec.get("metadata")
            if not isinstance(meta, dict):
                continue
            key = rec.get("uid", rec.get("question_id"))
            try:
                out[(str(key), str(rec["model"]))] = (
                    _count(meta["token_len"]), _count(meta["header_count"]), _count(meta["list_count"]),
                    _count(meta["bold_count"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise InputError(f"{f}: line {line}: answer metadata lacks or garbles key {exc}") from None
    return out


@dataclass
class Battles:
    """Usable games as arrays (one entry per game); ``models`` names the integer codes."""

    models: list[str]
    a: np.ndarray
    b: np.ndarray
    pref_b: np.ndarray
    b_first: np.ndarray
    weight: np.ndarray
    item: np.ndarray
    items: list[str]
    row: np.ndarray  # the row of the game in its source file (AlpacaEval's instruction index)
    judge: np.ndarray
    judges: list[str]
    len_a: np.ndarray
    len_b: np.ndarray
    style_a: np.ndarray  # (n, 4): tokens, headers, lists, bold
    style_b: np.ndarray
    style_source: str
    failed: dict[str, int]
    baseline: str | None
    reference: str
    simulated: bool
    sources: dict[str, str]

    def __len__(self) -> int:
        return len(self.a)

    @property
    def n_models(self) -> int:
        return len(self.models)

    def subset(self, keep: np.ndarray) -> Battles:
        """The same battles restricted to the games where ``keep`` is true (codes unchanged)."""
        arrays = {k: getattr(self, k)[keep] for k in ("a", "b", "pref_b", "b_first", "weight", "item", "row",
                                                       "judge", "len_a", "len_b", "style_a", "style_b")}
        return Battles(models=self.models, items=self.items, judges=self.judges, style_source=self.style_source,
                       failed=self.failed, baseline=self.baseline, reference=self.reference,
                       simulated=self.simulated, sources=self.sources, **arrays)

    def evaluated(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Baseline design: (model code, P(model wins), model is stored B) of each game."""
        assert self.baseline is not None
        base = self.models.index(self.baseline)
        is_b = self.a == base
        model = np.where(is_b, self.b, self.a)
        y = np.where(is_b, self.pref_b, 1.0 - self.pref_b)
        return model, y, is_b


def _codes(values: pd.Series) -> tuple[np.ndarray, list[str]]:
    cat = pd.Categorical(values.astype(str))
    return np.asarray(cat.codes, dtype=np.int64), [str(c) for c in cat.categories]


def battles_from_table(table: pd.DataFrame, *, metadata: Mapping[tuple[str, str], tuple[int, int, int, int]]
                       | None = None, baseline: str | None = None) -> Battles:
    """Usable games of a recorded verdict table (:data:`judgelab.verdict_import.importer.RECORDED_COLUMNS`).

    ``baseline`` forces the reference model of free battles (it must be in the log)."""
    t = table
    for col in ("model_a", "model_b"):
        if t[col].isna().any():
            row = t[t[col].isna()].iloc[0]
            raise InputError(f"{row['source_file']}: row {row['source_row']}: no {col} (the leaderboard needs "
                             "the models behind both answers; map model_a/model_b)")
    model_a = t["model_a"].astype(str)
    model_b = t["model_b"].astype(str)
    usable = t["preference"].notna().to_numpy() & t["status"].isin(["ok", "fallback"]).to_numpy()
    # a pair with a failed game leaves whole (show_result.load_judgments drops the record)
    pair_ok = pd.Series(usable).groupby(t["pair_id"].astype(str).to_numpy()).transform("all").to_numpy()
    self_game = (model_a == model_b).to_numpy()
    keep = usable & pair_ok & ~self_game
    failed_rows = ~keep & ~self_game
    evaluated_name = np.where(model_a.to_numpy() == model_a.mode().iloc[0], model_b.to_numpy(), model_a.to_numpy())
    failed = pd.Series(evaluated_name[failed_rows]).value_counts().to_dict()
    # only the columns a leaderboard reads: masking the whole table would copy every text column
    k = t.loc[keep, [c for c in _NEEDED if c in t.columns]]
    if k.empty:
        raise InputError(f"{t['source_file'].iloc[0]}: no usable verdict (every row is a failure, a refusal or a "
                         "model judged against itself)")
    pref = pd.to_numeric(k["preference"], errors="coerce").to_numpy(float)
    bad = ~(np.isfinite(pref) & (pref >= 0.0) & (pref <= 1.0))
    if bad.any():  # every fit below reads it as P(B preferred); the importer refuses these too
        row = k.iloc[int(np.flatnonzero(bad)[0])]
        raise InputError(f"{row['source_file']}: row {row['source_row']}: preference {row['preference']!r} is not "
                         "a number in [0, 1] (P(answer B preferred))")
    names = sorted(set(k["model_a"].astype(str)) | set(k["model_b"].astype(str)))
    index = {m: i for i, m in enumerate(names)}
    a = k["model_a"].astype(str).map(index).to_numpy(np.int64)
    b = k["model_b"].astype(str).map(index).to_numpy(np.int64)
    item, items = _codes(k["item_id"])
    judge, judges = _codes(k["judge"])
    resp_a = k["response_a"].astype(str).fillna("")
    resp_b = k["response_b"].astype(str).fillna("")
    len_a = resp_a.str.len().to_numpy(float)
    len_b = resp_b.str.len().to_numpy(float)
    style_a, style_b, source = _styles(k, resp_a, resp_b, metadata or {})
    label = k["label"].astype(str).fillna("") if "label" in k else pd.Series("", index=k.index)
    weight = np.where(label.str.contains(_STRONG).to_numpy(), 3, 1)
    counts = np.bincount(np.concatenate([a, b]), minlength=len(names))
    common = [names[i] for i in range(len(names)) if counts[i] == len(k)]
    # two models both take part in every game: the baseline is the one the log stores as A
    base = common[0] if len(common) == 1 else k["model_a"].astype(str).mode().iloc[0] if common else None
    if baseline is not None and baseline not in index:
        raise InputError(f"--baseline {baseline!r} is not a model of the log (models: {', '.join(names)})")
    reference = baseline or base or names[int(np.argmax(counts))]
    if base is not None and baseline is not None and baseline != base:
        base = None  # scored against another model than the one in every game: free battles
    src = k.groupby(k["model_b"].astype(str).to_numpy(), observed=True)["source_file"].first()
    sources = {str(m): str(v) for m, v in src.items()}
    return Battles(models=names, a=a, b=b, pref_b=pref,
                   b_first=(k["order"].astype(str) == "BA").to_numpy(), weight=weight, item=item, items=items,
                   row=k["source_row"].to_numpy(np.int64), judge=judge, judges=judges, len_a=len_a, len_b=len_b,
                   style_a=style_a, style_b=style_b, style_source=source, failed={str(m): int(n) for m, n in
                                                                                  failed.items()},
                   baseline=base, reference=reference, simulated=bool(k["simulated"].any()), sources=sources)


def _styles(k: pd.DataFrame, resp_a: pd.Series, resp_b: pd.Series,
            metadata: Mapping[tuple[str, str], tuple[int, int, int, int]]) -> tuple[np.ndarray, np.ndarray, str]:
    item = k["item_id"].astype(str).to_numpy()
    out = []
    hits = 0
    for side, resp in (("model_a", resp_a), ("model_b", resp_b)):
        models = k[side].astype(str).to_numpy()
        cache: dict[str, tuple[int, int, int, int]] = {}
        rows = []
        for it, m, text in zip(item, models, resp.to_numpy(), strict=False):
            meta = metadata.get((it, m))
            if meta is not None:
                hits += 1
                rows.append(meta)
                continue
            s = cache.get(text)
            if s is None:
                s = cache[text] = style_of_text(text)
            rows.append(s)
        out.append(np.asarray(rows, dtype=float).reshape(-1, 4))
    total = 2 * len(k)
    source = "answer metadata" if hits == total else "texts" if hits == 0 else "answer metadata and texts"
    return out[0], out[1], source
