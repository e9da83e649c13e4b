"""Accuracy, order consistency and call accounting over verdict tables.

Conventions follow LLMBar's evaluator statistics, so replayed real judges can be
checked against the authors' published ``statistics.json``:

* ``acc_AB`` / ``acc_BA`` -- share correct in each presentation order (a missing
  verdict counts as wrong, never dropped);
* ``acc_average`` -- their mean; ``correct_both`` -- share correct in both orders;
* ``positional_agreement`` -- share of pairs whose two verdicts, mapped back to the
  stored order, are equal (LLMBar's "equal");
* ``tie_rate`` -- share of tie verdicts over all calls.

Accuracy CIs are Wilson intervals (statsmodels).
"""

from __future__ import annotations

import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from judgelab.records import CallStatus

STATUSES = [s.value for s in CallStatus]


def order_summary(verdicts: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """One row per group with the LLMBar-style statistics (needs both orders)."""
    rows = []
    for key, g in verdicts.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        ab = g[g["order"] == "AB"].set_index("pair_id")
        ba = g[g["order"] == "BA"].set_index("pair_id")
        both = ab.index.intersection(ba.index)
        n = len(both)
        k_avg = int(g["correct"].sum())
        lo, hi = proportion_confint(k_avg, len(g), alpha=0.05, method="wilson") if len(g) else (float("nan"),) * 2
        row = dict(zip(by, key, strict=True))
        row.update({
            "n_pairs": n,
            "acc_AB": float(ab["correct"].mean()) if len(ab) else float("nan"),
            "acc_BA": float(ba["correct"].mean()) if len(ba) else float("nan"),
            "acc_average": float(g["correct"].mean()),
            "acc_ci_low": float(lo),
            "acc_ci_high": float(hi),
            "correct_both": float((ab.loc[both, "correct"] & ba.loc[both, "correct"]).mean()) if n else float("nan"),
            "positional_agreement": float((ab.loc[both, "verdict"] == ba.loc[both, "verdict"]).mean()) if n else float("nan"),
            "tie_rate": float((g["verdict"] == "tie").mean()),
        })
        rows.append(row)
    return pd.DataFrame(rows)


def call_summary(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per judge: calls, outcome counts, parse-failure rate, tokens and cost.

    ``parse_failures`` = unparsed + refusal (answers without a usable value);
    ``fallback`` answers have a value but not in the requested format.  Errors are
    calls that got no answer at all.
    """
    rows = []
    for judge, g in verdicts.groupby("judge", sort=True):
        counts = g["status"].value_counts()
        answered = int(len(g) - counts.get("error", 0))
        failures = int(counts.get("unparsed", 0) + counts.get("refusal", 0))
        row = {
            "judge": judge,
            "backend": g["backend"].iloc[0],
            "model": g["model"].iloc[0],
            "simulated": bool(g["simulated"].iloc[0]),
            "calls": len(g),
            **{f"n_{s}": int(counts.get(s, 0)) for s in STATUSES},
            "parse_failures": failures,
            "parse_failure_rate": failures / answered if answered else float("nan"),
            "tokens_in": int(g["tokens_in"].sum()),
            "tokens_out": int(g["tokens_out"].sum()),
            "cost_usd": float(g["cost_usd"].sum()),
        }
        rows.append(row)
    return pd.DataFrame(rows)
