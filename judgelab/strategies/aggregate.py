"""From calls to strategy verdicts: one row per judge x strategy x instance.

For every judge and strategy, the verdicts of the strategy's calls (mapped back to the pair's
stored order) are combined by the strategy's aggregation rule (:mod:`judgelab.strategies`).
S3 takes the B0 calls of the judge's cross-family members (:func:`cross_family_members`),
read from their own calls tables, so no call is made twice.

Nothing is dropped.  Every component call's outcome is counted on the row; a component that
was never made (a reference-guided call without a reference, a member without a table) is a
*missing call*.  Malformed answers are classified by :func:`malformed_kind`:

=============== ==============================================================
two_verdicts    two JSON verdicts that disagree (``json:conflicting``)
no_json         no JSON, but a verdict was recovered in another format (fallback)
prose_only      no JSON object and no verdict at all
broken_json     a JSON fragment without a usable verdict (e.g. cut off)
refusal         the judge declined
error           no answer (API error); the call is retried on the next run
=============== ==============================================================

Strategy verdict table columns: ``dataset, pair_id, judge, backend, model, family,
simulated, judge_seed, strategy, members, verdict, expected_verdict, correct, has_verdict,
n_calls, n_missing_calls, n_ok, n_fallback, n_unparsed, n_refusal, n_error`` and one
``n_<kind>`` per malformed kind, ``tokens_in, tokens_out, cost_usd`` (all component calls,
including other members' for S3, plus the judge's reference generation amortised over the
pairs of that question for S6/S7), ``bias_type, category``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import cast

import pandas as pd

from judgelab.io import table_tuples
from judgelab.records import CallStatus
from judgelab.strategies import STRATEGIES, StrategySettings
from judgelab.strategies.run import REFERENCE_GEN_ID, question_key

log = logging.getLogger(__name__)

MALFORMED_KINDS = ("two_verdicts", "no_json", "prose_only", "broken_json")  # + n_refusal, n_error (statuses)
STATUS_VALUES = [s.value for s in CallStatus]
STRATEGY_VERDICT_COLUMNS = [
    "dataset", "pair_id", "judge", "backend", "model", "family", "simulated", "judge_seed", "strategy", "members",
    "verdict", "expected_verdict", "correct", "has_verdict", "n_calls", "n_missing_calls",
    *[f"n_{s}" for s in STATUS_VALUES], *[f"n_{k}" for k in MALFORMED_KINDS],
    "tokens_in", "tokens_out", "cost_usd", "bias_type", "category",
]
NON_MEMBER_FAMILIES = frozenset({"", "none", "unknown"})


def malformed_kind(status: str, parse_method: str, raw_text: str) -> str:
    """The failure mode of one answer ('' for a clean answer in the asked format)."""
    if status == CallStatus.OK.value:
        return ""
    if status == CallStatus.FALLBACK.value:
        return "no_json"
    if status in (CallStatus.REFUSAL.value, CallStatus.ERROR.value):
        return status
    if parse_method == "json:conflicting":
        return "two_verdicts"
    return "broken_json" if "{" in (raw_text or "") else "prose_only"


def cross_family_members(judges: Sequence[tuple[str, str]], size: int,
                         exclude: Sequence[str] = (),
                         explicit: Mapping[str, Sequence[str]] | None = None) -> dict[str, list[str]]:
    """For each judge, itself plus the first configured judge of each other family, up to ``size``.

    Judges in ``exclude`` (controls) and judges without a family are never members of another
    judge's ensemble.  A judge for which fewer than ``size`` members exist gets no S3 entry.
    ``explicit`` (config ``strategies.ensembles``: judge -> members) names a judge's ensemble
    itself, so three judges need not share the same one; the judge is put first if missing, and
    every member must be a judge of the panel (else a ValueError naming the config key).
    """
    out: dict[str, list[str]] = {}
    known = {name for name, _ in judges}
    for name, given in (explicit or {}).items():
        if name not in known:
            continue  # the judge is not on this data set's panel
        members = [name, *[m for m in given if m != name]]
        missing = [m for m in members if m not in known]
        if missing:
            raise ValueError(f"config strategies/ensembles/{name}: {', '.join(map(repr, missing))} "
                             f"not judges of this panel ({', '.join(sorted(known))})")
        out[name] = members
    for name, fam in judges:
        if name in out:
            continue
        members, fams = [name], {fam}
        for other, ofam in judges:
            if len(members) >= size:
                break
            if other == name or other in exclude or ofam in NON_MEMBER_FAMILIES or ofam in fams:
                continue
            members.append(other)
            fams.add(ofam)
        if len(members) == size:
            out[name] = members
        else:
            log.warning("judge %s: only %d cross-family members available (%d needed); no S3", name, len(members), size)
    return out


def aggregate_strategies(
    calls: pd.DataFrame,
    pairs: pd.DataFrame,
    judge_strategies: Mapping[str, Sequence[str]],
    settings: StrategySettings,
    members: Mapping[str, Sequence[str]] | None = None,
) -> pd.DataFrame:
    """The strategy verdict table of one dataset (module docstring)."""
    members = dict(members or {})
    dataset = str(calls["dataset"].iloc[0]) if len(calls) else ""
    pw = calls[calls["kind"] == "pairwise"]
    lut: dict[tuple[str, str, str], tuple] = {}
    for r in table_tuples(pw, index=False):
        lut[(r.judge, r.call_id, r.pair_id)] = (
            r.verdict or None, r.status, malformed_kind(r.status, r.parse_method, r.raw_text),
            int(r.tokens_in), int(r.tokens_out), float(r.cost_usd),
        )
    # reference generation cost per (judge, question), shared by that question's pairs
    qkeys = pairs["prompt"].map(question_key)
    pairs_per_q = qkeys.value_counts().to_dict()
    ref_cost: dict[tuple[str, str], tuple[float, float, float]] = {}
    for r in table_tuples(calls[calls["call_id"] == REFERENCE_GEN_ID], index=False):
        k = pairs_per_q.get(r.question_key, 1)
        ref_cost[(r.judge, r.question_key)] = (r.tokens_in / k, r.tokens_out / k, r.cost_usd / k)
    info = calls.drop_duplicates("judge").set_index("judge")
    rows = []
    # the columns as lists: iterating an Arrow-backed text column boxes each cell (the same values)
    pair_rows = list(zip(pairs["pair_id"].astype(str).tolist(), pairs["expected_verdict"].tolist(),
                         pairs["bias_type"].tolist(), pairs["category"].tolist(), qkeys.tolist(), strict=True))
    for judge, names in judge_strategies.items():
        if judge not in info.index:
            raise KeyError(f"no calls table rows for judge {judge!r} in dataset {dataset!r}")
        ji = cast("pd.Series", info.loc[judge])  # one row: judges are unique in info's index
        # the judge's columns of every row, read once per judge rather than once per row
        judge_cells = {"backend": ji["backend"], "model": ji["model"], "family": ji["family"],
                       "simulated": bool(ji["simulated"]), "judge_seed": int(ji["judge_seed"])}
        for sname in names:
            s = STRATEGIES.get(sname)
            specs = s.calls(settings)
            who = list(members.get(judge, [])) if s.cross_family else [judge]
            if s.cross_family and not who:
                continue  # no cross-family ensemble for this judge (logged by cross_family_members)
            comps = [(m, c.call_id) for m in who for c in specs]
            uses_ref = s.needs_reference(settings)
            for pid, gold, btype, cat, qk in pair_rows:
                verdicts: list[str | None] = []
                counts = dict.fromkeys(STATUS_VALUES, 0)
                kinds = dict.fromkeys(MALFORMED_KINDS, 0)
                tin = tout = cost = 0.0
                missing = 0
                for m, cid in comps:
                    hit = lut.get((m, cid, pid))
                    if hit is None:
                        missing += 1
                        verdicts.append(None)
                        continue
                    v, st, kind, ti, to, c = hit
                    verdicts.append(v)
                    counts[st] += 1
                    if kind in kinds:
                        kinds[kind] += 1
                    tin, tout, cost = tin + ti, tout + to, cost + c
                if uses_ref and (judge, qk) in ref_cost:
                    ti, to, c = ref_cost[(judge, qk)]
                    tin, tout, cost = tin + ti, tout + to, cost + c
                final = s.aggregate(verdicts)
                rows.append({
                    "dataset": dataset, "pair_id": pid, "judge": judge, **judge_cells,
                    "strategy": sname, "members": ",".join(who), "verdict": final or "", "expected_verdict": gold,
                    "correct": final == gold, "has_verdict": final is not None, "n_calls": len(comps) - missing,
                    "n_missing_calls": missing, **{f"n_{k}": v for k, v in counts.items()},
                    **{f"n_{k}": v for k, v in kinds.items()}, "tokens_in": tin, "tokens_out": tout,
                    "cost_usd": cost, "bias_type": btype, "category": cat,
                })
    return pd.DataFrame(rows, columns=STRATEGY_VERDICT_COLUMNS)
