"""Accuracy, order consistency, position bias and call accounting over verdict tables.

Accuracy conventions follow LLMBar's evaluator statistics, so replayed real judges can
be checked against the authors' published ``statistics.json``:

* ``acc_AB`` / ``acc_BA`` -- share correct in each presentation order (a missing
  verdict counts as wrong, never dropped);
* ``acc_average`` -- their mean; ``correct_both`` -- share correct in both orders;
* ``positional_agreement_all`` -- LLMBar's "equal": share of pairs whose two verdicts,
  mapped back to the stored order, are equal, where two *missing* verdicts count as
  equal.  Kept for comparison with published figures only: a judge that parses almost
  nothing scores near 1 on it;
* ``tie_rate`` -- share of tie verdicts over all calls.

Order consistency and position bias, counted so that unparsed answers cannot pass for
consistency (a 135M model that parsed 11 of 200 answers had an "equal" of 0.93):

* ``n_pairs_both_parsed`` / ``both_parsed_share`` -- pairs (of ``n_pairs``, those asked
  in both orders) with a verdict in *both* orders, and their share;
* ``positional_agreement`` -- over those pairs only: share whose two verdicts agree once
  mapped back to the stored order (NaN when there is none);
* ``first_shown_share`` -- over decisive verdicts (A or B; ties are in ``tie_rate``, so
  a tie counts neither as first nor as second, as in the bias card's position score):
  share naming the response shown first (``verdict_shown == "A"``); 0.5 is no position
  preference, a judge answering A on 198 of 200 calls shows 0.99;
  ``first_shown_ci_low/high`` are its Wilson 95% interval;
* ``n_parsed`` -- verdicts with a value (A, B or tie);
* ``n_calls``, ``n_parsed``, ``n_errors``, ``parse_failure_rate`` -- calls, calls with a
  verdict, calls without an answer, and (unparsed + refusal) / answered calls, as in
  :func:`call_summary`.

Accuracy CIs are Wilson intervals (statsmodels).
"""

from __future__ import annotations

import pandas as pd

from judgelab.io import any_true
from judgelab.records import CallStatus
from judgelab.stats.intervals import wilson_interval

STATUSES = [s.value for s in CallStatus]
NAN = float("nan")


def order_summary(verdicts: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """One row per group: accuracy, order consistency, position bias, parse failures.

    ``verdicts`` has the columns of :data:`judgelab.judges.pairwise.VERDICT_COLUMNS` (at least
    ``pair_id``, ``order``, ``verdict``, ``correct``; ``verdict_shown`` and ``status``
    where available -- without them the position and parse columns are NaN).
    """
    rows = []
    for key, g in verdicts.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        ab = g[g["order"] == "AB"].set_index("pair_id")
        ba = g[g["order"] == "BA"].set_index("pair_id")
        both = ab.index.intersection(ba.index)
        n = len(both)
        v_ab = ab.loc[both, "verdict"].fillna("").astype(str)
        v_ba = ba.loc[both, "verdict"].fillna("").astype(str)
        parsed_both = (v_ab != "") & (v_ba != "")
        n_pb = int(parsed_both.sum())
        lo, hi = wilson_interval(int(g["correct"].sum()), len(g))
        row = dict(zip(by, key, strict=True))
        row.update({
            "n_pairs": n,
            "acc_AB": float(ab["correct"].mean()) if len(ab) else NAN,
            "acc_BA": float(ba["correct"].mean()) if len(ba) else NAN,
            "acc_average": float(g["correct"].mean()),
            "acc_ci_low": lo,
            "acc_ci_high": hi,
            "correct_both": float((ab.loc[both, "correct"] & ba.loc[both, "correct"]).mean()) if n else NAN,
            "n_pairs_both_parsed": n_pb,
            "both_parsed_share": n_pb / n if n else NAN,
            "positional_agreement": float((v_ab[parsed_both] == v_ba[parsed_both]).mean()) if n_pb else NAN,
            "positional_agreement_all": float((v_ab == v_ba).mean()) if n else NAN,
            "tie_rate": float((g["verdict"] == "tie").mean()),
        })
        row.update(_position_and_parsing(g))
        rows.append(row)
    return pd.DataFrame(rows)


def _position_and_parsing(g: pd.DataFrame) -> dict[str, float | int]:
    out: dict[str, float | int] = {"n_calls": len(g)}
    if "verdict_shown" in g:
        shown = g["verdict_shown"].fillna("").astype(str)
        n_parsed = int((shown != "").sum())
        n_dec, k_first = int(shown.isin(["A", "B"]).sum()), int((shown == "A").sum())
        lo, hi = wilson_interval(k_first, n_dec)
        out.update({"n_parsed": n_parsed, "first_shown_share": k_first / n_dec if n_dec else NAN,
                    "first_shown_ci_low": lo, "first_shown_ci_high": hi})
    else:
        out.update({"n_parsed": int((g["verdict"].fillna("") != "").sum()), "first_shown_share": NAN,
                    "first_shown_ci_low": NAN, "first_shown_ci_high": NAN})
    if "status" in g:
        counts = g["status"].value_counts()
        errors = int(counts.get("error", 0))
        failures = int(counts.get("unparsed", 0) + counts.get("refusal", 0))
        answered = len(g) - errors
        out.update({"n_errors": errors, "parse_failure_rate": failures / answered if answered else NAN})
    else:
        out.update({"n_errors": 0, "parse_failure_rate": NAN})
    return out


#: the verdict columns :func:`call_summary` reads (its rule reads no others of the wide verdict tables)
CALL_SUMMARY_COLUMNS = ("judge", "backend", "model", "simulated", "status", "tokens_in", "tokens_out", "cost_usd")


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
            "simulated": any_true(g),
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
