"""Reliability rows of the bias card: one judge asked the same call again, several judges on one item.

``repetition_consistency`` (per judge)
    Position-Bias-Analyzer's repetitional consistency (Shi et al. 2024, "Judging the Judges";
    Slimshilin/Position-Bias-Analyzer ``judging_the_judges/repetitional_consistency/
    calculate_repetitional_consistency.py``, commit 0eb0ce93): for each evaluation instance (a pair
    in one presentation order: "the swapped order of response is regarded as a different
    evaluation instance") asked two or more times, the count of its most frequent verdict over
    the number of repetitions (a repetition without a verdict is in the denominator and never the
    majority: pandas' ``value_counts`` drops it there, ``len`` keeps it); the judge's figure is
    the mean over instances.  Here with an item-clustered Wilson interval on the instances.
``judges_kappa`` (one row for the table, judge ``all judges``)
    agreement between judges on the presentations every one of them judged with a verdict
    (same pair, order and first repetition): Cohen's kappa for two judges (statsmodels
    ``cohens_kappa``, its asymptotic CI), Fleiss' kappa for three or more (statsmodels
    ``fleiss_kappa``, with an item-cluster percentile bootstrap CI, which statsmodels does not
    give; hand-written for that reason).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgelab.bias_card.codes import is_any
from judgelab.bias_card.humans import LABELS, cohen_kappa
from judgelab.stats.intervals import DEFAULT_ALPHA

NAN = float("nan")
PANEL_JUDGE = "all judges"


def instance_codes(pairs: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, int]:
    """(code per row, instances) of the (pair, order) instances, coded in order of first appearance
    (as the joined ``pair + "\\x1f" + order`` strings would be, without building a string per row)."""
    pc = pd.factorize(np.asarray(pairs))[0]
    oc, ou = pd.factorize(np.asarray(order))
    key, uniq = pd.factorize(pc.astype(np.int64) * max(len(ou), 1) + oc)
    return key, len(uniq)


def repetition_instances(pairs: np.ndarray, order: np.ndarray, verdict: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, int]:
    """(first row of each repeated instance, its consistency, instances asked more than once).

    An instance is one pair in one order; its rows are its repetitions."""
    key, n_inst = instance_codes(pairs, order)
    reps = np.bincount(key, minlength=n_inst)
    has = is_any(np.asarray(verdict), LABELS)
    top = np.zeros(n_inst)
    for lab in LABELS:
        top = np.maximum(top, np.bincount(key, weights=has & (verdict == lab), minlength=n_inst))
    first = np.full(n_inst, -1)
    first[key[::-1]] = np.arange(len(key))[::-1]
    rep = reps >= 2
    return first[rep], top[rep] / reps[rep], int(rep.sum())


def _str_codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(code per row, distinct strings) of ``col.astype(str)``, equal strings equal codes, without
    converting every row to a Python string (a category column: its categories only)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy().astype(np.int64)
        uniq = np.asarray(col.cat.categories.astype(str), dtype=object)
    else:
        codes, u = pd.factorize(col, use_na_sentinel=True)
        codes, uniq = codes.astype(np.int64), np.asarray(pd.Index(u).astype(str), dtype=object)
    missing = codes < 0
    if missing.any():  # missing values read as astype(str) reads them ("nan", "None", "<NA>")
        mc, mu = pd.factorize(col[missing].astype(str).to_numpy(object))
        codes[missing] = mc + len(uniq)
        uniq = np.concatenate([uniq, np.asarray(mu, dtype=object)])
    merged, distinct = pd.factorize(uniq)  # distinct values with one string (1 and "1") are one value
    return merged[codes] if len(codes) else codes, np.asarray(distinct, dtype=object)


def _string_ranks(strings: np.ndarray) -> np.ndarray:
    """Rank of each string in code-point order (Arrow's sort of the UTF-8 bytes: the same order)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ranks = np.empty(len(strings), np.int64)
    try:
        order = np.asarray(pc.sort_indices(pa.array(strings, type=pa.large_string())))
    except (pa.ArrowException, UnicodeEncodeError):  # not encodable as UTF-8 (a lone surrogate): Python's sort
        order = np.argsort(np.asarray(strings, dtype=object), kind="stable")
    ranks[order] = np.arange(len(strings))
    return ranks


def _has_control(strings: np.ndarray) -> bool:
    """Whether a string holds a character at or below the unit separator (it would sort a joined id
    string differently from its parts)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        arr = pa.array(strings, type=pa.large_string())
    except (pa.ArrowException, UnicodeEncodeError):
        return bool(pd.Series(strings, dtype=object).str.contains("[\x00-\x1f]", regex=True).any())
    return bool(pc.any(pc.match_substring_regex(arr, "[\x00-\x1f]")).as_py())


def judge_matrix(table: pd.DataFrame, blank: np.ndarray | None = None) -> tuple[pd.DataFrame, np.ndarray, int]:
    """(units x judges verdicts, item code per unit, judges) over the presentations (pair, order, first
    repetition) that every judge judged with a verdict; a row without an item id is its pair's own item.

    Units are listed in the order of their ``pair_id + "\\x1f" + order`` strings and judges sorted
    by name (as a pivot on those strings lists them), items coded in order of first appearance
    down the units: the bootstrap of :func:`fleiss_ci` draws the same items whatever the table's
    storage.  Computed on integer codes (one string per distinct id, not per row), of the kept rows
    only.  ``blank`` marks rows whose verdict counts as none (the strict view's fallback verdicts)."""
    verdict_code, verdict_str = _str_codes(table["verdict"])
    label = np.array([LABELS.index(v) if v in LABELS else -1 for v in verdict_str], dtype=np.int8)
    lab = label[verdict_code] if len(table) else np.zeros(0, np.int8)
    del verdict_code
    keep = lab >= 0
    if blank is not None:
        keep &= ~blank
    if "repeat" in table.columns:
        keep &= pd.to_numeric(table["repeat"], errors="coerce").fillna(0).to_numpy() == 0
    rows = np.flatnonzero(keep)
    lab = lab[rows]
    del keep
    judge_code, judge_str = _str_codes(table["judge"])
    judge_code = judge_code[rows]
    n_judges = len(judge_str)
    judge_rank = _string_ranks(judge_str)  # column of each judge: sorted names
    judge_names = pd.Index(judge_str[np.argsort(judge_rank)], dtype=object)
    pair_code, pair_str = _str_codes(table["pair_id"])
    pair_code = pair_code[rows]
    order_code, order_str = _str_codes(table["order"])
    n_o = max(len(order_str), 1)
    unit = pair_code * n_o + order_code[rows]
    del pair_code, order_code
    if n_judges >= 2 and (not len(unit) or np.bincount(unit).max() < n_judges):
        # no presentation has a row of every judge (the judges judged different pairs): nothing to match
        return pd.DataFrame(np.empty((0, n_judges), dtype=object), columns=judge_names), np.zeros(0, np.int64), \
            n_judges
    # the first row of each (unit, judge), and of each unit (table order)
    uj, first_uj = np.unique(unit * max(n_judges, 1) + judge_code, return_index=True)
    units, judges_per_unit = np.unique(uj // max(n_judges, 1), return_counts=True)
    full = judges_per_unit == n_judges
    u_first_row = np.unique(unit, return_index=True)[1]  # units' first rows, in units' (sorted) order
    if _has_control(pair_str):
        # a control character in a pair id: order by the joined strings themselves
        joined = np.asarray(pd.Series(pair_str[units // n_o]).astype(str) + "\x1f"
                            + pd.Series(order_str[units % n_o]).astype(str), dtype=object)
        # ids joined to one string are one unit, as in a pivot on the joined strings
        if len(set(joined)) != len(joined):
            return _judge_matrix_by_strings(table, blank)
        sort_key = _string_ranks(joined)
    else:
        sort_key = _string_ranks(pair_str)[units // n_o] * n_o + _string_ranks(order_str)[units % n_o]
    sel = np.flatnonzero(full)
    sel = sel[np.argsort(sort_key[sel], kind="stable")]
    # verdict of each kept unit x judge column
    values = np.empty((len(sel), n_judges), dtype=object)
    pos = np.full(len(units), -1)
    pos[sel] = np.arange(len(sel))
    uj_unit = np.searchsorted(units, uj // max(n_judges, 1))
    ok = pos[uj_unit] >= 0
    values[pos[uj_unit[ok]], judge_rank[judge_code[first_uj[ok]]]] = np.asarray(LABELS, dtype=object)[
        lab[first_uj[ok]]]
    wide = pd.DataFrame(values, columns=judge_names)
    unit_rows = rows[u_first_row[sel]]
    item_code = _str_codes(_items(table))[0][unit_rows]
    return wide, pd.factorize(item_code)[0], n_judges


def _items(table: pd.DataFrame) -> pd.Series:
    """The item id of each row: ``item_id``, its pair where missing (the pair is its own item, as in the card)."""
    if "item_id" not in table.columns:
        return table["pair_id"]
    col = table["item_id"]
    if not col.isna().any():
        return col
    return col.astype(object).where(col.notna(), table["pair_id"].astype(object))


def _judge_matrix_by_strings(table: pd.DataFrame, blank: np.ndarray | None = None
                             ) -> tuple[pd.DataFrame, np.ndarray, int]:
    """:func:`judge_matrix` on joined id strings and a pivot: for ids whose joined strings collide."""
    has = table["verdict"].astype(str).isin(LABELS)
    t = table[has if blank is None else has & ~np.asarray(blank)]
    if "repeat" in t.columns:
        t = t[pd.to_numeric(t["repeat"], errors="coerce").fillna(0) == 0]
    n_judges = table["judge"].astype(str).nunique()
    t = t.assign(_u=t["pair_id"].astype(str) + "\x1f" + t["order"].astype(str), _j=t["judge"].astype(str),
                 _v=t["verdict"].astype(str))
    wide = t.drop_duplicates(["_u", "_j"]).pivot(index="_u", columns="_j", values="_v")
    wide = wide.reindex(columns=sorted(table["judge"].astype(str).unique())).dropna()
    first = t.assign(item_id=_items(t)).drop_duplicates("_u").set_index("_u")
    item_col = first["item_id"]
    items = pd.factorize(item_col.reindex(wide.index).astype(str))[0]
    return wide.reset_index(drop=True).rename_axis(columns=None), items, n_judges


def category_counts(wide: pd.DataFrame) -> np.ndarray:
    """units x categories (A, B, tie) counts of a units x judges verdict matrix."""
    if wide.empty:
        return np.zeros((0, len(LABELS)))
    return np.stack([(wide == lab).sum(axis=1).to_numpy() for lab in LABELS], axis=1).astype(float)


def fleiss(counts: np.ndarray) -> float:
    """Fleiss' kappa (statsmodels) of a units x categories count table; NaN when undefined
    (no unit, or every rating in one category: the expected agreement is 1)."""
    from statsmodels.stats.inter_rater import fleiss_kappa

    if len(counts) == 0:
        return NAN
    p = counts.sum(0) / counts.sum()
    if (p ** 2).sum() >= 1 - 1e-12:
        return NAN
    with np.errstate(invalid="ignore", divide="ignore"):  # a unit with a single rating: NaN, not a warning line
        return float(fleiss_kappa(counts, method="fleiss"))


def fleiss_ci(counts: np.ndarray, items: np.ndarray, *, n_resamples: int, alpha: float, seed: int
              ) -> tuple[float, float]:
    """Percentile bootstrap CI of Fleiss' kappa, resampling whole items (vectorised over resamples)."""
    k = int(items.max()) + 1 if len(items) else 0
    if k < 2:
        return NAN, NAN
    m = counts.sum(1)[0]
    p_i = ((counts ** 2).sum(1) - m) / (m * (m - 1))
    per_item = np.column_stack([np.bincount(items, weights=p_i, minlength=k),
                                np.bincount(items, minlength=k)]
                               + [np.bincount(items, weights=counts[:, j], minlength=k) for j in range(counts.shape[1])])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, k, size=(n_resamples, k))
    tot = per_item[idx].sum(axis=1)  # (resamples, 2 + categories)
    pbar = tot[:, 0] / tot[:, 1]
    pj = tot[:, 2:] / (tot[:, 1:2] * m)
    pe = (pj ** 2).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        kap = np.where(pe < 1, (pbar - pe) / (1 - pe), NAN)
    a = alpha / 2
    if np.isnan(kap).all():
        return NAN, NAN
    lo, hi = np.nanquantile(kap, [a, 1 - a])
    return float(lo), float(hi)


def judges_kappa(table: pd.DataFrame, *, n_resamples: int = 1000, alpha: float = DEFAULT_ALPHA, seed: int = 0,
                 blank: np.ndarray | None = None) -> dict:
    """The between-judge agreement row's fields (estimate, ci_low, ci_high, se, n, n_items, reason, note),
    the interval at level ``1 - alpha``;
    ``blank`` marks verdicts that count as none (:func:`judge_matrix`)."""
    wide, items, n_judges = judge_matrix(table, blank)
    counts = category_counts(wide)
    out = {"estimate": NAN, "ci_low": NAN, "ci_high": NAN, "se": NAN, "n": len(wide),
           "n_items": int(np.count_nonzero(np.bincount(items))) if len(items) else 0, "reason": "", "note": ""}
    if n_judges < 2:
        out["reason"] = "one judge: no agreement between judges"
        return out
    if len(wide) == 0:
        out["reason"] = f"no presentation judged with a verdict by all {n_judges} judges"
        return out
    if n_judges == 2:
        kap, se, lo, hi, reason = cohen_kappa(wide.iloc[:, 0].to_numpy(), wide.iloc[:, 1].to_numpy(),
                                              alpha=alpha)
        out.update(estimate=kap, se=se, ci_low=lo, ci_high=hi, reason=reason,
                   note=f"Cohen's kappa, {wide.columns[0]} vs {wide.columns[1]} (statsmodels, asymptotic CI)")
        return out
    kap = fleiss(counts)
    if not np.isfinite(kap):
        out["reason"] = "kappa undefined: every verdict in one category (expected agreement 1)"
        return out
    lo, hi = fleiss_ci(counts, items, n_resamples=n_resamples, alpha=alpha, seed=seed)
    out.update(estimate=kap, ci_low=lo, ci_high=hi, note=f"Fleiss' kappa, {n_judges} judges (statsmodels; "
                                                          "item-cluster bootstrap CI)")
    return out
