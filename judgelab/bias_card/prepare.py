"""Log preparation: one judge's verdict table read into the card's working arrays.

The card (:mod:`judgelab.bias_card.card`) computes on NumPy arrays, not on the table: this module
reads the id columns into integer codes, the response texts into length and markdown features,
the model names into indices and, for the strict view, the verdicts again with the source's
published rule.  Kept apart from the statistics so that the card reads as its rows."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from judgelab.bias_card.codes import category_codes, column_strings, per_unique
from judgelab.datasets.features import text_feature_arrays
from judgelab.parsing import strict_rule_for
from judgelab.prompts import to_original_frame

#: the card's two views of a log: every verdict judgelab read, or only the source's published extraction
VIEWS = ("lenient", "strict")

@dataclass
class _Log:
    """One judge's verdicts in one view, as NumPy arrays (the card's working form)."""

    items: np.ndarray  # item codes: the clusters
    pairs: np.ndarray  # pair codes
    order: np.ndarray
    verdict: np.ndarray  # stored frame; "" when none (strict view: fallback too)
    shown: np.ndarray
    gold: np.ndarray
    has_text: np.ndarray
    wa: np.ndarray
    wb: np.ndarray
    ma: np.ndarray
    mb: np.ndarray
    own: np.ndarray  # "A"/"B": the only response of the judge's family, "" otherwise
    family: str
    strong: np.ndarray  # Arena-Hard strong label (>> or <<)
    model_b: np.ndarray  # the model behind stored response B: its index in ``models``
    model_a: np.ndarray | None = None  # the model behind stored A (the model term of the cue regressions)
    #: the model names ``model_a``/``model_b`` index ("" where the log names none): integer codes, not
    #: strings per row (a model name as a NumPy string costs ~70 bytes a row, 1.4 GB at ten million)
    models: np.ndarray = field(default_factory=lambda: np.array([""]))

    def model_names(self, codes: np.ndarray) -> np.ndarray:
        """The model names of ``codes`` (an index into :attr:`models`)."""
        return self.models[codes]

    def shown_cues(self, rows: np.ndarray | slice = slice(None)) -> dict[str, np.ndarray]:
        """The cue regressors of ``rows``, in the frame of the slot shown first: ``len`` (log2 word-count
        ratio, clipped at +-3: :func:`judgelab.datasets.features.length_log_ratio`, vectorised), ``md``
        (markdown-score difference) and ``gold`` (+1 when gold is the slot shown first, -1 the other,
        0 none).  Computed when asked, for the rows asked: three float columns per row held for
        the whole card would cost 240 MB at ten million verdicts."""
        ba = self.order[rows] != "AB"
        # in place, one column at a time: the same IEEE operations as the expressions in the
        # comments, with a row's sign flipped where stored B is shown first (b - a == -(a - b))
        lenlr = np.asarray(self.wa[rows], dtype=float)  # clip(log2((wa + 1) / (wb + 1)), -3, 3)
        lenlr += 1.0
        lenlr /= np.asarray(self.wb[rows], dtype=float) + 1.0
        np.clip(np.log2(lenlr, out=lenlr), -3.0, 3.0, out=lenlr)
        md = np.asarray(self.ma[rows], dtype=float)  # ma - mb
        md -= self.mb[rows]
        gold = self.gold[rows]
        gold_a = (gold == "A").astype(float)  # +1 gold A, -1 gold B, 0 none
        gold_a[gold == "B"] = -1.0
        for x in (lenlr, md, gold_a):
            np.negative(x, out=x, where=ba)
        return {"len": lenlr, "md": md, "gold": gold_a}

    @property
    def lenlr_shown(self) -> np.ndarray:
        return self.shown_cues()["len"]

    @property
    def md_shown(self) -> np.ndarray:
        return self.shown_cues()["md"]

    @property
    def gold_shown(self) -> np.ndarray:
        return self.shown_cues()["gold"]


#: columns a recorded verdict table read without its texts carries in their place
#: (:func:`judgelab.verdict_import.importer.import_verdicts` with ``texts=False``)
FEATURE_COLUMNS = ("words_a", "words_b", "markdown_a", "markdown_b", "has_text_a", "has_text_b")


def _response_features(t: pd.DataFrame, side: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(word count, markdown score, non-empty) of response ``side`` per row: the feature columns a
    table read without texts carries, else measured from the texts (once per distinct text)."""
    if f"words_{side}" in t.columns:
        return (t[f"words_{side}"].to_numpy(float), t[f"markdown_{side}"].to_numpy(float),
                t[f"has_text_{side}"].to_numpy(bool))
    col = t.get(f"response_{side}")
    if col is None:
        zero = np.zeros(len(t))
        return zero, zero, np.zeros(len(t), bool)
    words, md = text_feature_arrays(_arrow_strings(col))
    return words, md, per_unique(col, bool, bool)


def _arrow_strings(col: pd.Series) -> object:
    """A text column as Arrow strings (a category column as its dictionary: no per-row copy)."""
    import pyarrow as pa

    if isinstance(col.dtype, pd.CategoricalDtype):
        dictionary = pa.array(col.cat.categories.astype(str), type=pa.large_string())
        return pa.DictionaryArray.from_arrays(pa.array(col.cat.codes.to_numpy(), mask=col.isna().to_numpy()),
                                              dictionary)
    return pa.array(col.astype("string[pyarrow]"))


def _codes(col: pd.Series, fill: pd.Series | None = None) -> np.ndarray:
    """Integer codes of an id column in order of first appearance (equal ids, equal codes: pairs are
    listed in table order whatever the column's storage); missing ids take ``fill``'s value."""
    if fill is not None and col.isna().any():
        col = col.astype(object).fillna(fill.astype(object))
    if isinstance(col.dtype, pd.CategoricalDtype):  # a category column: its integer codes, not its strings
        codes = pd.factorize(col.cat.codes.to_numpy())[0]
    else:
        codes = pd.factorize(col.astype(str))[0]
    return codes.astype(np.int32) if len(codes) < 1 << 31 else codes  # half the memory of a million-row log


def _prepare(t: pd.DataFrame, view: str) -> _Log:
    """The arrays the card needs from one judge's table; the strict view blanks ``fallback`` verdicts."""
    if view not in VIEWS:
        raise ValueError(f"unknown card view {view!r}; expected one of {VIEWS}")
    verdict, shown = column_strings(t, "verdict"), column_strings(t, "verdict_shown")
    if view == "strict":
        verdict, shown = _strict_verdicts(t, verdict, shown)
    pairs = _codes(t["pair_id"])
    items = _codes(t["item_id"], fill=t["pair_id"]) if "item_id" in t.columns else pairs
    wa, ma, has_a = _response_features(t, "a")
    wb, mb, has_b = _response_features(t, "b")
    wa, ma, wb, mb = (_exact_float32(x) for x in (wa, ma, wb, mb))
    has_text = has_a | has_b
    order = column_strings(t, "order")
    gold = column_strings(t, "expected_verdict")
    fam = str(t["family"].iloc[0]) if "family" in t.columns and len(t) else "unknown"
    fa = per_unique(t["family_a"], lambda x: x == fam, bool) if "family_a" in t.columns else np.zeros(len(t), bool)
    fb_ = per_unique(t["family_b"], lambda x: x == fam, bool) if "family_b" in t.columns else np.zeros(len(t), bool)
    own = np.where(fa & ~fb_, "A", np.where(fb_ & ~fa, "B", ""))
    strong = (per_unique(t["label"], lambda x: ">>" in x or "<<" in x, bool) if "label" in t.columns
              else np.zeros(len(t), bool))
    return _Log(items=items, pairs=pairs, order=order, verdict=verdict, shown=shown, gold=gold, has_text=has_text,
                wa=wa, wb=wb, ma=ma, mb=mb, own=own,
                family=fam, strong=strong, **_model_codes(t))


def _exact_float32(x: np.ndarray) -> np.ndarray:
    """``x`` as float32 where that holds every value exactly (word counts, markdown scores in quarters),
    else as it is: half the memory of the card's four feature columns; every use reads them as float64."""
    f = x.astype(np.float32)
    return f if np.array_equal(f, x) else x


def _model_codes(t: pd.DataFrame) -> dict[str, np.ndarray]:
    """``model_a``/``model_b`` of each row as indices into one sorted array of names ("" where the
    column is missing or empty), each column's distinct values read once."""
    present = [c for c in ("model_a", "model_b") if c in t.columns]
    names = sorted({"", *(str(x) for c in present for x in category_codes(t[c])[1])})
    at = {n: i for i, n in enumerate(names)}
    dtype = np.int16 if len(names) < 1 << 15 else np.int32
    out = {c: per_unique(t[c], at.__getitem__, dtype) if c in present else np.full(len(t), at[""], dtype)
           for c in ("model_a", "model_b")}
    return {**out, "models": np.array(names)}


def _strict_verdicts(t: pd.DataFrame, verdict: np.ndarray, shown: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The strict view's verdicts: the source's published extraction.

    Recorded labels (FastChat ``g1_winner``, JudgeBench ``decision``, AlpacaEval ``preference``,
    LLMBar ``winner``) are the authors' own extraction and stay as recorded; a verdict judgelab
    read from text in a format with a published rule (:data:`judgelab.parsing.STRICT_RULES`:
    ``brackets`` = FastChat's priority rule, ``position_bias_analyzer`` = first match) is read
    again from ``raw_text`` with that rule, whatever judgelab's lenient parser made of it; a
    ``fallback`` verdict (read by a rule the prompt did not ask for) is unparsed."""
    fb = column_strings(t, "status") == "fallback"
    verdict, shown = np.where(fb, "", verdict), np.where(fb, "", shown)
    read = "strict_shown" in t.columns  # a table imported without texts carries the rule's reading
    if "parse_method" not in t.columns or not (read or "raw_text" in t.columns) or not len(t):
        return verdict, shown
    ruled = ~fb & per_unique(t["parse_method"], lambda m: strict_rule_for(m) is not None, bool)
    if not ruled.any():
        return verdict, shown
    rows = np.flatnonzero(ruled)
    methods = column_strings(t, "parse_method")[rows]
    texts = column_strings(t, "strict_shown" if read else "raw_text")[rows]
    order = column_strings(t, "order")[rows]
    # each distinct (rule, text, order) read once: a judge writes few distinct answers per rule
    key = np.zeros(len(rows), np.int64)
    for col in (methods, texts, order):
        codes, uniq = pd.factorize(col)
        key = pd.factorize(key * (len(uniq) + 1) + codes)[0]
    first = np.full(int(key.max()) + 1, -1)
    first[key[::-1]] = np.arange(len(key))[::-1]

    def read_one(i: int) -> tuple[str, str]:
        rule = strict_rule_for(methods[i])
        s_shown = texts[i] if read else ((rule.read(texts[i]) if rule is not None and texts[i] else None) or "")
        return s_shown, ((to_original_frame(s_shown, order[i]) or "") if s_shown else "")

    got = [read_one(int(i)) for i in first]
    out = []
    for arr, j in ((verdict, 1), (shown, 0)):  # fixed-width strings, widened if a reading needs it
        vals = np.array([g[j] for g in got], dtype=str)
        arr = arr.astype(np.result_type(arr.dtype, vals.dtype))
        arr[rows] = vals[key]
        out.append(arr)
    return out[0], out[1]


def _first_row_per_pair(pairs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Row index of each pair's first row within ``mask`` (-1 where none), indexed by pair code."""
    out = np.full(int(pairs.max()) + 1 if len(pairs) else 0, -1)
    rows = np.flatnonzero(mask)[::-1]
    out[pairs[rows]] = rows  # assigned last = first in table order
    return out
