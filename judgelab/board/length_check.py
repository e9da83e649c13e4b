"""Leaderboard length check: does a judge-based leaderboard's score track answer length?

Given one row per model (model, score, mean answer length), the table has one row per
correlation method:

============== ===============================================================
method         ``pearson`` or ``spearman``
estimate       the correlation of score with length
ci_low/high    95% CI by Fisher's z: Pearson's from scipy (``pearsonr(...).confidence_interval``),
               Spearman's with the Fieller-Hartley-Pearson variance 1.06 / (n - 3)
boot_low/high  95% percentile bootstrap CI over models (resamples without a defined correlation dropped)
p_value        two-sided test of zero correlation (scipy)
n              models
length_scale   ``raw`` or ``log`` (``--log-length``)
============== ===============================================================

A correlation near 1 says the leaderboard could be re-ranking by verbosity; with few
models the CI is wide, and the table says so rather than the point estimate.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from judgelab.io import InputError
from judgelab.stats.intervals import DEFAULT_ALPHA

LEADERBOARD_COLUMNS = ["method", "estimate", "ci_low", "ci_high", "boot_low", "boot_high", "p_value", "n",
                       "length_scale"]
#: column names tried, in order, for each role when the user names none
MODEL_NAMES = ("model", "name", "model_name", "Model", "_key")
SCORE_NAMES = ("score", "win_rate", "winrate", "elo", "rating", "Score", "length_controlled_winrate",
               "discrete_win_rate")
LENGTH_NAMES = ("length", "avg_length", "avg_tokens", "mean_length", "token_len", "Length")


@dataclass(frozen=True)
class LeaderboardColumns:
    """Which source column gave each role, and the other score-like columns left unused.

    ``model`` is ``""`` when the names are the unnamed first column (the row index that
    ``DataFrame.to_csv`` writes: both AlpacaEval leaderboards).  The command prints
    :meth:`describe` so a reader knows which score was correlated."""

    model: str
    score: str
    length: str
    other_scores: tuple[str, ...] = ()

    def describe(self) -> str:
        model = "the unnamed first column (row names)" if self.model == "" else repr(self.model)
        text = f"model column {model}, score column {self.score!r}, length column {self.length!r}"
        if self.other_scores:
            text += f" (other score columns: {', '.join(map(repr, self.other_scores))}; choose with --score-col)"
        return text


@dataclass(frozen=True)
class Leaderboard:
    """A leaderboard reduced to ``model, score, length`` (one row per model) and its source columns."""

    path: Path
    table: pd.DataFrame
    columns: LeaderboardColumns


def _is_unnamed(col: object) -> bool:
    """An empty header cell: pandas names it ``Unnamed: 0``; other readers keep ``""``."""
    return str(col).strip() == "" or re.fullmatch(r"Unnamed: \d+", str(col)) is not None


def _pick(df: pd.DataFrame, given: str | None, names: tuple[str, ...], what: str, path: Path) -> str:
    if given is not None:
        if given not in df.columns:
            raise InputError(f"{path}: no column {given!r} for the {what}; columns found: {list(df.columns)}")
        return given
    for n in names:
        if n in df.columns:
            return n
    if what == "model" and len(df.columns) and _is_unnamed(df.columns[0]):
        return str(df.columns[0])
    raise InputError(f"{path}: cannot tell which column is the {what}: none of {list(names)}"
                     f"{' (nor an unnamed first column)' if what == 'model' else ''}; columns found: "
                     f"{list(df.columns)}; name it with --{what}-col")


#: what ``--on-duplicate`` may say about a model name on several rows
ON_DUPLICATE = ("error", "first", "mean")


def read_leaderboard(path: str | Path, *, model_col: str | None = None, score_col: str | None = None,
                     length_col: str | None = None, on_duplicate: str = "error") -> Leaderboard:
    """``model, score, length`` from a CSV/TSV/JSON/JSONL/parquet leaderboard (rows with gaps are errors).

    Without ``*_col`` the first name of :data:`MODEL_NAMES` / :data:`SCORE_NAMES` /
    :data:`LENGTH_NAMES` present is used, and for the model an unnamed first column (the
    AlpacaEval layout ``,win_rate,...,avg_length``).  Row numbers in errors are 0-based data
    rows (CSV line = row + 2).

    A model name on several rows (the published AlpacaEval 2 leaderboard lists two runs as
    ``GPT 3.5 Turbo (06/13)``) is an error by default, since a correlation over models counts
    it twice; ``on_duplicate="first"`` keeps its first row, ``"mean"`` averages its score and
    length over its rows (one point per name either way)."""
    if on_duplicate not in ON_DUPLICATE:
        raise InputError(f"--on-duplicate must be one of {', '.join(ON_DUPLICATE)}, got {on_duplicate!r}")
    from judgelab.verdict_import.readers import read_records

    p = Path(path)
    recs = read_records(p)
    df = pd.DataFrame([r for _, r in recs])
    if df.empty:
        raise InputError(f"{p}: no rows")
    cols = {k: _pick(df, g, names, k, p) for k, g, names in (
        ("model", model_col, MODEL_NAMES), ("score", score_col, SCORE_NAMES), ("length", length_col, LENGTH_NAMES))}
    out = pd.DataFrame({k: df[c] for k, c in cols.items()})
    for k in ("score", "length"):
        num = pd.to_numeric(out[k], errors="coerce")  # "" and "n/a" become NaN: reported below
        bad = num.isna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(f"{p} row {recs[i][0]}: {cols[k]} is not a number ({out[k].iloc[i]!r})")
        out[k] = num.astype(float)
    blank = out["model"].isna() | (out["model"].astype(str).str.strip() == "")
    if blank.any():
        i = int(np.flatnonzero(blank.to_numpy())[0])
        raise InputError(f"{p} row {recs[i][0]}: no model name in column {cols['model']!r}")
    dup = out["model"].duplicated()
    if dup.any():
        if on_duplicate == "error":
            i = int(np.flatnonzero(dup.to_numpy())[0])
            raise InputError(f"{p}: model {out['model'].iloc[i]!r} appears twice (again at row {recs[i][0]}); "
                             "choose with --on-duplicate first|mean")
        if on_duplicate == "first":
            out = out[~dup]
        else:
            out = out.groupby("model", sort=False, as_index=False)[["score", "length"]].mean()
        out = out.reset_index(drop=True)
    others = tuple(n for n in SCORE_NAMES if n in df.columns and n != cols["score"])
    model = "" if _is_unnamed(cols["model"]) else cols["model"]
    return Leaderboard(p, out, LeaderboardColumns(model, cols["score"], cols["length"], others))


def _corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise Pearson correlation of 2-D arrays (nan for a constant row)."""
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):  # 0/0 for a constant row (the numerator is 0 whenever the denominator is)
        return (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))


def _bootstrap_ci(x: np.ndarray, y: np.ndarray, method: str, n_resamples: int, seed: int,
                  alpha: float) -> tuple[float, float]:
    """Percentile bootstrap over models.

    Hand-written because with a handful of models many resamples repeat one model and
    have no defined correlation; scipy.stats.bootstrap turns the whole interval into
    nan then, here those resamples are dropped.
    """
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n_resamples, len(x)))
    xs, ys = x[idx], y[idx]
    if method == "spearman":
        xs, ys = stats.rankdata(xs, axis=1), stats.rankdata(ys, axis=1)
    r = _corr(xs, ys)
    a = alpha / 2
    lo, hi = np.nanquantile(r, [a, 1 - a])
    return float(lo), float(hi)


def length_correlation(board: pd.DataFrame, *, log_length: bool = False, n_resamples: int = 5000,
                       seed: int = 0, alpha: float = DEFAULT_ALPHA) -> pd.DataFrame:
    """Pearson and Spearman correlation of score with length, Fisher-z and bootstrap CIs."""
    x = board["length"].to_numpy(float)
    y = board["score"].to_numpy(float)
    if log_length:
        if np.any(x <= 0):
            raise InputError("--log-length needs positive lengths")
        x = np.log(x)
    n = len(x)
    if n < 4:
        raise InputError(f"need at least 4 models for a correlation with a CI, got {n}")
    z = stats.norm.ppf(1 - alpha / 2)
    rows = []
    for method in ("pearson", "spearman"):
        if method == "pearson":
            res = stats.pearsonr(x, y)
            r, p = float(res.statistic), float(res.pvalue)
            ci = res.confidence_interval(confidence_level=1 - alpha)
            lo, hi = float(ci.low), float(ci.high)
        else:
            rho = stats.spearmanr(x, y)
            r, p = float(rho.statistic), float(rho.pvalue)
            se = math.sqrt(1.06 / (n - 3))
            zr = math.atanh(max(-0.999999, min(0.999999, r)))
            lo, hi = math.tanh(zr - z * se), math.tanh(zr + z * se)

        blo, bhi = _bootstrap_ci(x, y, method, n_resamples, seed, alpha)
        rows.append({"method": method, "estimate": r, "ci_low": lo, "ci_high": hi,
                     "boot_low": blo, "boot_high": bhi,
                     "p_value": p, "n": n, "length_scale": "log" if log_length else "raw"})
    return pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)
