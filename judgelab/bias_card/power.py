"""Probe sizes from power: how many items, pairs and games a card row needs to detect an effect δ.

For every tested row of a pilot card (a log the user already has, or a planted pilot built from
stated assumptions), the card's own minimum detectable effect is the distance from the null the
row detects with the card's power at its level.  That distance shrinks as one over the square
root of the number of independent clusters (items): every test of the card is a z- or t-test on an
item-clustered standard error, whose variance is the per-item variance over the item count.  So
the items needed for δ are

    row items = pilot row items x (MDE_at_the_level_the_row_will_face / δ)^2

(a row's items are those with a verdict it can use), and the probe's items, pairs and games
follow from the pilot's items per row item, pairs per item and games per pair (the probe keeps
the pilot's design: both orders, the same share of eligible verdicts).

The level a row faces: the card decides each family row on Holm-adjusted p-values, and its MDE is
stated at alpha/m (m = the family's size).  Holm rejects the strongest rows first; rows the pilot
already detects (accuracy against chance, an obvious bias) will be rejected before the row asked
about, so that row faces alpha/(m - r), r = the other rows detected in the pilot.  ``multiplicity
none`` is alpha.  Why by hand: statsmodels' power classes solve one test at a time with a known
variance; the card's rows need their own clustered variance, which only the card computes.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from judgelab.bias_card.card_settings import CardSettings
from judgelab.io import table_tuples

COLUMNS = ["judge", "metric", "delta", "pilot_estimate", "null_value", "pilot_items", "pilot_mde", "level",
           "items_needed", "pairs_needed", "games_needed", "reason"]


def _family_size(text: str) -> int:
    m = re.match(r"\w+ over (\d+) tests", str(text))
    return int(m.group(1)) if m else 1


# scipy and the card load inside the functions: judgelab's parser imports this module for
# `judgelab power`'s options on every start of the command line


def bias_card(pilot: pd.DataFrame, settings: CardSettings) -> pd.DataFrame:
    """The pilot's bias card (:func:`judgelab.bias_card.card.bias_card`), loaded on first use."""
    from judgelab.bias_card.card import bias_card as card

    return card(pilot, settings)


def _z_sum(alpha: float, power: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2) + norm.ppf(power))


def _t_sum(alpha: float, power: float, df: float) -> float:
    from scipy.stats import t as student_t

    return float(student_t.ppf(1 - alpha / 2, max(df, 1.0)) + student_t.ppf(power, max(df, 1.0)))


def _smallest(ok, limit: int = 1 << 40) -> int:
    """The smallest n >= 1 with ``ok(n)``, for a predicate that stays true once true (doubling, then
    bisection: a probe of millions of items takes a few dozen evaluations)."""
    hi = 1
    while not ok(hi):
        if hi >= limit:
            return limit
        hi *= 2
    lo = hi // 2  # ok(lo) is false (or lo == 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def _row_size(mde: float, n_items: int, delta: float, i: int, effect: np.ndarray, mdes: np.ndarray,
              k_pilot: np.ndarray, m: int, s: CardSettings) -> tuple[int, float]:
    """Items (of the row's own kind) for row ``i`` to detect ``delta``, and the level it then faces.

    Holm's step-down: the other rows whose pilot effect the probe itself would detect are rejected
    first, so the level depends on the size; and the card's MDE (stated at alpha/m) is a normal
    approximation while its tests are t-tests on the items (Student's t on items - 1 df), which at a
    probe's size need a little more.  The probe is the smallest size that is enough at its own level
    and degrees of freedom (iterating the size instead can cycle between two neighbours at a few
    items)."""

    def level_at(n: int) -> float:
        scale = np.sqrt(n / np.maximum(k_pilot, 1))
        others = int(np.count_nonzero(np.delete(np.nan_to_num(effect) >= np.nan_to_num(mdes, nan=np.inf) / scale, i)))
        return s.alpha / max(1, m - others) if m > 1 else s.alpha

    def enough(n: int) -> bool:
        mde_n = mde * _t_sum(level_at(n), s.power, n - 1) / _z_sum(s.alpha / m, s.power)
        return math.ceil(n_items * (mde_n / delta) ** 2) <= n

    need = _smallest(enough)
    return need, level_at(need)


def probe_sizes(pilot: pd.DataFrame, deltas: dict[str, float] | float, settings: CardSettings | None = None,
                *, view: str = "lenient", default: float | None = None) -> pd.DataFrame:
    """Per judge and tested card row: the items, pairs and games to detect ``deltas`` (one δ for every
    row, or {metric: δ} with ``default`` for the metrics it does not name) at the card's alpha and
    power (module docstring)."""
    s = settings or CardSettings()
    card = bias_card(pilot, s)
    card = card[(card["view"] == view) & card["p_value"].notna() & card["estimable"].astype(bool)
                & card["identified"].astype(bool)]
    rows = []
    for judge, g in card.groupby("judge", sort=True):
        t = pilot[pilot["judge"].astype(str) == str(judge)]
        items = t["item_id"].astype(str).nunique()
        pairs = t["pair_id"].astype(str).nunique()
        pairs_per_item, games_per_pair = pairs / items, len(t) / pairs
        effect = (g["estimate"] - g["null_value"]).abs().to_numpy(float)
        mdes = g["mde"].to_numpy(float)
        k_pilot = g["n_items"].to_numpy(float)
        for i, r in enumerate(table_tuples(g)):
            delta = deltas.get(r.metric, default) if isinstance(deltas, dict) else float(deltas)
            if delta is None:
                continue
            m = _family_size(r.test_family) if s.multiplicity != "none" else 1
            row = {"judge": judge, "metric": r.metric, "delta": delta, "pilot_estimate": r.estimate,
                   "null_value": r.null_value, "pilot_items": int(r.n_items), "pilot_mde": r.mde, "level": np.nan,
                   "items_needed": np.nan, "pairs_needed": np.nan, "games_needed": np.nan, "reason": ""}
            if not (delta > 0 and math.isfinite(r.mde) and r.mde > 0):
                row["reason"] = "no finite MDE in the pilot" if delta > 0 else "delta must be positive"
                rows.append(row)
                continue
            need, level = _row_size(float(r.mde), int(r.n_items), float(delta), i, effect, mdes, k_pilot, m, s)
            # the row's items are those with an eligible verdict (a length row: pairs whose lengths
            # differ enough); the probe needs as many more items as the pilot had per eligible one
            log_items = math.ceil(need * items / max(int(r.n_items), 1))
            pairs = math.ceil(log_items * pairs_per_item)
            row.update(level=level, items_needed=log_items, pairs_needed=pairs,
                       games_needed=math.ceil(pairs * games_per_pair))
            rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def assumed_pilot(assume: dict[str, float], *, n_items: int = 600, seed: int = 0) -> pd.DataFrame:
    """A planted pilot from stated assumptions (:class:`~judgelab.bias_card.planted.PlantedJudge`
    fields: accuracy, tie, fail and the biases), both orders of two pairs per item; marked simulated."""
    import dataclasses

    from judgelab.bias_card.planted import PlantedJudge, planted_log
    from judgelab.config import ConfigError

    known = {f.name for f in dataclasses.fields(PlantedJudge)} - {"family"}
    bad = sorted(set(assume) - known)
    if bad:
        raise ConfigError(f"--assume: unknown {', '.join(bad)}; known: {', '.join(sorted(known))}")
    try:
        fields: dict[str, Any] = dict(assume)  # numbers only: family is not among the known names
        judge = PlantedJudge(**fields)
    except ValueError as exc:
        raise ConfigError(f"--assume: {exc}") from None
    return planted_log(judge, n_items=n_items, seed=seed, judge="assumed")


def _pairs(values: list[str] | None, what: str) -> dict[str, float]:
    from judgelab.config import ConfigError

    out: dict[str, float] = {}
    for v in values or []:
        for part in v.split(","):
            key, eq, num = part.partition("=")
            try:
                out[key.strip() if eq else "*"] = float(num if eq else key)
            except ValueError:
                raise ConfigError(f"{what}: {part!r} is not NUMBER or NAME=NUMBER") from None
    return out


def cmd_power(args) -> int:
    from judgelab.bias_card.settings import from_args
    from judgelab.config import ConfigError
    from judgelab.io import write_table

    s = from_args(CardSettings, args)
    deltas = _pairs(args.delta, "--delta")  # never empty: --delta is required and each value parses or fails
    if args.files and args.assume:
        raise ConfigError("give a pilot log (FILES with --format/--mapping) or --assume, not both")
    if args.files:
        from judgelab.verdict_import.cli import verdicts_from_args

        pilot, source = verdicts_from_args(args, texts=False), "pilot log"
    else:
        pilot = assumed_pilot(_pairs(args.assume, "--assume"), n_items=args.assume_items, seed=s.seed)
        source = f"assumed (a simulated pilot of {args.assume_items} items)"
    default = deltas.pop("*", None)
    table = probe_sizes(pilot, deltas, s, default=default)
    if table.empty:
        from judgelab.io import InputError

        raise InputError(f"the {source}'s card has no tested row for these deltas (too few verdicts, or no "
                         f"metric named): nothing to size; give a larger pilot")
    table.insert(0, "source", source)
    if args.out:
        write_table(table, args.out)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(table.drop(columns=["source"]).round(4).to_string(index=False))
    print(f"\nsource: {source}; alpha {s.alpha}, power {s.power}, multiplicity {s.multiplicity}")
    return 0


def add_command(sub) -> None:
    from judgelab.bias_card.settings import add_arguments as add_setting_arguments
    from judgelab.io import add_out_file

    p = sub.add_parser("power", help="items, pairs and games a probe needs to detect an effect, per card row")
    p.add_argument("files", nargs="*", help="a pilot log (as for audit); or use --assume")
    p.add_argument("--format", help="log format preset")
    p.add_argument("--mapping", help="YAML mapping")
    p.add_argument("--table", action="append", metavar="NAME=PATH", help="side table, as for audit")
    p.add_argument("--judge", help="judge name when the log does not name it")
    p.add_argument("--family", help="judge model family when it cannot be inferred")
    p.add_argument("--delta", action="append", required=True,
                   help="effect to detect on each row's scale: NUMBER for every row, or METRIC=NUMBER (repeatable)")
    p.add_argument("--assume", action="append", help="no pilot: a simulated one with these judge rates, e.g. "
                                                     "accuracy=0.8,tie=0.05,fail=0.02")
    p.add_argument("--assume-items", type=int, default=600, help="items of the simulated pilot (default 600)")
    add_out_file(p, "also write the table here")
    add_setting_arguments(CardSettings, p)
    p.set_defaults(fn=cmd_power)
