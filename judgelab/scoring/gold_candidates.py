"""Paper 004's Table 2: candidate gold scorers against human scores.

Before choosing GPT-4.1 as the gold scorer, paper 004 compares each candidate's gold
protocol (three scorings with the score-5 reference, majority vote) with the human
scores of BiGGen-Bench and FLASK, by Spearman's rho and Pearson's r; GPT-4's scores are
"sourced from the original benchmark" (the recorded ``gpt4_score`` of the data files).

Table 2 (long form, CSV; one row per data set x reference source x candidate):

================== ===========================================================
dataset            the data set
reference_source   what the candidate is compared with: ``human`` (the
                   paper's) or another gold a set has (``design`` for the
                   project's rubric set), per ``scoring.gold.table2_against``
candidate          a judge name (its gold protocol) or ``gpt-4 (recorded)``
source             ``gold_protocol`` (scored here) or ``recorded`` (from the file)
n                  items with both a reference score and a candidate majority
n_unparsed         candidate scorings with no score (never in a correlation)
rho, rho_ci_low,   Spearman's rho and its percentile bootstrap CI over items
rho_ci_high
r, r_ci_low,       Pearson's r and its CI (the same resamples)
r_ci_high
simulated          the candidate's scorings came from a simulated judge
reason             empty when the row is scored; otherwise why it has no
                   correlation (every scoring unparsed, in
                   :mod:`judgelab.stats.unscored`'s wording; fewer than 3 items
                   with both scores, no scorings at all): a candidate the
                   table cannot score keeps its row, with NaN statistics
================== ===========================================================

The correlations and the bootstrap are :mod:`judgelab.scoring.metrics`'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from judgelab.io import any_true
from judgelab.scoring.items import majority_score, stable_seed
from judgelab.scoring.metrics import CORRELATIONS, bootstrap_indices
from judgelab.stats.intervals import DEFAULT_ALPHA
from judgelab.stats.unscored import no_value_reason

TABLE2_COLUMNS = [
    "dataset", "reference_source", "candidate", "source", "n", "n_unparsed", "rho", "rho_ci_low", "rho_ci_high", "r",
    "r_ci_low", "r_ci_high", "simulated", "reason",
]
#: fewest items a correlation is computed on
MIN_ITEMS = 3
RECORDED_GPT4 = "gpt-4 (recorded)"
_REFERENCE_COLUMNS = {"human": "human_score", "design": "design_score", "gpt4": "gold_gpt4"}


def candidate_majorities(gold_scores: pd.DataFrame) -> pd.DataFrame:
    """One row per (data set, judge, item): the majority of its repeated scorings (unparsed ones do not vote)."""
    g = gold_scores.copy()
    g["valid"] = g["score"].where(g["score"] >= 1)
    out = g.groupby(["dataset", "judge", "item_id"], sort=True).agg(
        majority=("valid", lambda s: majority_score(list(s))), n_unparsed=("score", lambda s: int((s < 1).sum())),
        simulated=("simulated", lambda s: any_true(s.to_frame("simulated"))))
    return out.reset_index()


def _correlate(x: np.ndarray, y: np.ndarray, *, n_boot: int, alpha: float, seed: int) -> dict[str, float]:
    row: dict[str, float] = {}
    idx = bootstrap_indices(len(x), n_boot, seed)
    for kind, fn in CORRELATIONS.items():
        row[kind] = float(fn(x[None, :], y[None, :])[0])
        boot = fn(x[idx], y[idx])
        boot = boot[np.isfinite(boot)]
        lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2]) if len(boot) else (np.nan, np.nan)
        row[f"{kind}_ci_low"], row[f"{kind}_ci_high"] = float(lo), float(hi)
    return row


def table2(
    items: pd.DataFrame,
    candidates: Mapping[str, pd.DataFrame],
    *,
    against: Sequence[str] = ("human",),
    n_boot: int = 1000,
    alpha: float = DEFAULT_ALPHA,
    seed: int = 0,
) -> pd.DataFrame:
    """Each candidate's gold (``candidates``: judge name -> its gold-protocol score table) and
    the recorded GPT-4 scores against each reference gold in ``against`` a set has."""
    unknown = set(against) - set(_REFERENCE_COLUMNS)
    if unknown:
        raise ValueError(f"table2: unknown reference source(s) {sorted(unknown)}; known: {sorted(_REFERENCE_COLUMNS)}")
    majorities = {name: candidate_majorities(g) for name, g in candidates.items() if len(g)}
    empty = [name for name, g in candidates.items() if not len(g)]
    rows = []
    for key, its in items.groupby("dataset", sort=True):
        ds = str(key)
        for src in against:
            ref = its.set_index("item_id")[_REFERENCE_COLUMNS[src]].astype(float).dropna()
            if len(ref) < 3:
                continue
            entries = []
            for name, m in majorities.items():
                mm = m[m["dataset"] == ds].set_index("item_id")
                entries.append((name, "gold_protocol", mm["majority"].astype(float), int(mm["n_unparsed"].sum()),
                                any_true(mm)))
            for name in empty:
                rows.append(_unscored(ds, src, name, "gold_protocol", 0, 0, False, "no gold-protocol scorings"))
            if src != "gpt4":
                rec = its.set_index("item_id")["gold_gpt4"].astype(float).dropna()
                if len(rec):
                    entries.append((RECORDED_GPT4, "recorded", rec, 0, False))
            for name, source, cand, n_unparsed, simulated in entries:
                common = sorted(set(ref.index) & set(cand.dropna().index))
                if len(common) < MIN_ITEMS:
                    scored = int(cand.notna().sum())
                    why = (no_value_reason(["unparsed"] * n_unparsed, what="score") if scored == 0 and n_unparsed
                           else f"{len(common)} item(s) with both a {src} score and a candidate score "
                                f"({MIN_ITEMS} needed)")
                    rows.append(_unscored(ds, src, name, source, len(common), n_unparsed, simulated, why))
                    continue
                x, y = ref.loc[common].to_numpy(float), cand.loc[common].to_numpy(float)
                rows.append({"dataset": ds, "reference_source": src, "candidate": name, "source": source,
                             "n": len(common), "n_unparsed": n_unparsed,
                             **_correlate(x, y, n_boot=n_boot, alpha=alpha, seed=stable_seed(seed, "table2", ds, src)),
                             "simulated": simulated, "reason": ""})
    return pd.DataFrame(rows, columns=TABLE2_COLUMNS)


def _unscored(ds: str, src: str, name: str, source: str, n: int, n_unparsed: int, simulated: bool,
              reason: str) -> dict:
    """The row of a candidate the table cannot score: counts kept, statistics NaN, the reason."""
    nan = float("nan")
    return {"dataset": ds, "reference_source": src, "candidate": name, "source": source, "n": n,
            "n_unparsed": n_unparsed, **{c: nan for c in TABLE2_COLUMNS[6:12]}, "simulated": simulated,
            "reason": reason}
