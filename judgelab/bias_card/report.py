"""Outputs of ``judgelab audit``: the card table, a short markdown card, a figure.

:func:`write_audit` writes, into one folder per judge set:

* ``bias_card.csv``     one row per judge x metric (columns: :data:`judgelab.bias_card.CARD_COLUMNS`);
* ``bias_card.md``      a short card per judge: the metrics that differ from their null,
                        the underpowered ones, and the full table;
* ``bias_card.png``     one panel per metric, every judge's estimate with its CI and the
                        null line (stamped when the verdicts are simulated);
* ``verdicts.parquet``  the recorded verdict table the card was computed from.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgelab.bias_card.card import METRICS, CardSettings, bias_card
from judgelab.io import write_table, write_text


def _fmt(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def card_markdown(card: pd.DataFrame, *, title: str, settings: CardSettings, n_verdicts: dict[str, int],
                  simulated: bool) -> str:
    lines = [f"# Bias card: {title}", ""]
    if simulated:
        lines += ["**SIMULATED JUDGES** - these verdicts come from the simulated panel, not a real model.", ""]
    lines += [f"Item-clustered {settings.confidence:.0%} CIs (clusters = items/questions); tests at "
              f"alpha {settings.alpha}, MDE at power {settings.power}. Length preference counts pairs whose "
              f"word counts differ by a factor >= {1 + settings.length_margin:g}; markdown preference pairs whose "
              f"markdown scores differ by >= {settings.markdown_margin:g}.", ""]
    for judge, g in card.groupby("judge", sort=True):
        g = g.set_index("metric")
        lines += [f"## {judge} (family {g['family'].iloc[0]}, {n_verdicts.get(judge, 0)} verdicts)", ""]
        sig = [m for m in g.index if g.loc[m, "test"] != "none" and not pd.isna(g.loc[m, "p_value"])
               and g.loc[m, "p_value"] < settings.alpha and not m.startswith("accuracy")]
        under = [m for m in g.index if bool(g.loc[m, "underpowered"])]
        if sig:
            lines.append("Biases detected: " + "; ".join(
                f"{m} {_fmt(g.loc[m, 'estimate'])} [{_fmt(g.loc[m, 'ci_low'])}, {_fmt(g.loc[m, 'ci_high'])}] "
                f"(null {_fmt(g.loc[m, 'null_value'], 2)}, p={g.loc[m, 'p_value']:.2g})" for m in sig) + ".")
        else:
            lines.append("No bias detected at this sample size.")
        if under:
            lines.append("Underpowered (not significant, and an effect of the threshold size could have been missed): "
                         + ", ".join(under) + ".")
        lines += ["", "| metric | estimate | 95% CI | null | n (items) | test | p | MDE | note |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for m, r in g.iterrows():
            flag = " (underpowered)" if r["underpowered"] else ""
            lines.append(f"| {m} | {_fmt(r['estimate'])} | [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}] | "
                         f"{_fmt(r['null_value'], 2)} | {r['n']} ({r['n_items']}) | {r['test']} | "
                         f"{_fmt(r['p_value'], 3)} | {_fmt(r['mde'])}{flag} | {r['note']} |")
        lines.append("")
    return "\n".join(lines)


def card_figure(card: pd.DataFrame, path: str | Path, *, title: str, config_hash: str | None = None) -> None:
    """One panel per metric: estimate and CI per judge, null as a dotted line."""
    from judgelab.plots.stamp import plt, save_figure, stamp

    metrics = [m for m in METRICS if m in set(card["metric"])]
    judges = sorted(card["judge"].unique())
    ncol = 4
    nrow = math.ceil(len(metrics) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.4 * ncol, 0.6 + (0.28 * len(judges) + 1.1) * nrow),
                             squeeze=False)
    y = np.arange(len(judges))
    for ax, m in zip(axes.flat, metrics, strict=False):
        g = card[card["metric"] == m].set_index("judge").reindex(judges)
        est, lo, hi = g["estimate"].to_numpy(float), g["ci_low"].to_numpy(float), g["ci_high"].to_numpy(float)
        under = g["underpowered"].fillna(True).astype(bool).to_numpy()
        for i in range(len(judges)):
            if np.isnan(est[i]):
                continue
            c = "#999999" if under[i] else "#4C72B0"
            ax.plot([lo[i], hi[i]], [y[i], y[i]], color=c, lw=1.5)
            ax.plot(est[i], y[i], "o", color=c, ms=4)
        null = g["null_value"].dropna()
        if len(null):
            ax.axvline(float(null.iloc[0]), color="black", lw=0.8, ls=":")
        ax.set_yticks(y, judges if ax in axes[:, 0] else [], fontsize=7)
        ax.set_ylim(-0.7, len(judges) - 0.3)
        ax.set_title(m, fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
    for ax in list(axes.flat)[len(metrics):]:
        ax.axis("off")
    fig.suptitle(f"{title}: estimate and item-clustered 95% CI (grey: underpowered)", fontsize=9)
    simulated = bool(card["simulated"].astype(bool).any()) if len(card) else False
    stamp(fig, simulated=simulated, config_hash=config_hash)
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    save_figure(fig, str(path))


def write_audit(table: pd.DataFrame, out_dir: str | Path, *, title: str, settings: CardSettings | None = None,
                provenance: dict[str, Any] | None = None) -> pd.DataFrame:
    """Compute the card of every judge in ``table`` and write the four outputs into ``out_dir``."""
    settings = settings or CardSettings()
    out = Path(out_dir)
    card = bias_card(table, settings)
    write_table(table, out / "verdicts.parquet", provenance=provenance)
    write_table(card, out / "bias_card.csv", provenance=provenance)
    n = table.groupby("judge").size().to_dict()
    write_text(out / "bias_card.md", card_markdown(card, title=title, settings=settings, n_verdicts=n,
                                                   simulated=bool(card["simulated"].any())))
    card_figure(card, out / "bias_card.png", title=title,
                config_hash=(provenance or {}).get("config_hash"))
    return card
