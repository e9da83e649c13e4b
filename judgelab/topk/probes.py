"""Isolated bias probes (paper 002, Sec. 6 "Do real judges exhibit the modeled biases?").

Each probe holds quality fixed and varies one factor, built from the statement banks:

* ``verbosity`` -- the same statements terse vs elaborated (the contrasted side is the
  elaborated one);
* ``markdown`` -- the same statements as plain prose vs a markdown layout (contrasted
  side: markdown);
* ``position`` -- two different items of equal quality (same counts of true and false
  statements), both terse; the contrasted side is whichever is shown first.

Probe pairs are ordinary pairs (columns of :mod:`judgelab.datasets.pairs`; the contrasted
response is stored as ``response_a``, gold ``tie``) judged in both presentation orders with
the study's A/B prompt.  :func:`probe_summary` reports ``P(prefer the contrasted side)``
over all calls -- an unparsed answer counts in the denominator for neither side -- with a
Wilson 95% interval, and the share of pairs whose two orders prefer the same underlying
response.  For simulated judges ``planted_p`` is the exact probability implied by the
judge's own model on these texts (letter format: no tie margin, temperature 0).

Summary columns: ``judge, probe, n_calls, n_pairs, p_contrast, ci_low, ci_high,
consistency, n_unparsed, planted_p, simulated, reason``; a judge with no A/B verdict on a probe
keeps its row, the rates NaN and ``reason`` saying why (:mod:`judgelab.stats.unscored`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import expit

from judgelab.datasets.pairs import Pair
from judgelab.io import any_true
from judgelab.judges.base import Judge
from judgelab.judges.pairwise import pair_requests
from judgelab.stats.intervals import wilson_interval
from judgelab.stats.unscored import blank, no_value_reason
from judgelab.topk.items import BANK_SIZE, Banks, StatementBank, elaborate, render


def _draw(bank: StatementBank, n_true: int, n_statements: int, rng: np.random.Generator) -> list[str]:
    s = [bank.true[i] for i in rng.choice(BANK_SIZE, n_true, replace=False)]
    s += [bank.false[i] for i in rng.choice(BANK_SIZE, n_statements - n_true, replace=False)]
    return [s[i] for i in rng.permutation(n_statements)]


def probe_pairs(banks: Banks, n_per_topic: int, n_statements: int, seed: int) -> list[Pair]:
    """``n_per_topic`` pairs of every probe for every topic (see module docstring)."""
    out = []
    for ti, bank in enumerate(banks.topics):
        rng = np.random.default_rng([int(seed), 3, ti])
        for r in range(n_per_topic):
            t = int(rng.integers(n_statements // 2, n_statements + 1))
            sents = _draw(bank, t, n_statements, rng)
            clauses = [banks.clauses[int(j)] for j in rng.choice(len(banks.clauses), n_statements)]
            terse = render(sents, topic=bank.topic, markdown=False)
            verbose = render([elaborate(s, c) for s, c in zip(sents, clauses, strict=True)], topic=bank.topic,
                             markdown=False)
            md = render(sents, topic=bank.topic, markdown=True)
            other = terse
            while other == terse:
                other = render(_draw(bank, t, n_statements, rng), topic=bank.topic, markdown=False)
            base = f"{ti}-{r}"
            note = f"statement bank topic {bank.topic!r}; {t} true of {n_statements}"
            out += [
                Pair(f"verbosity-{base}", bank.question, verbose, terse, "tie", "verbosity", bank.topic,
                     "topk probes", f"elaborated vs terse, same statements; {note}"),
                Pair(f"markdown-{base}", bank.question, md, terse, "tie", "markdown", bank.topic,
                     "topk probes", f"markdown vs plain, same statements; {note}"),
                Pair(f"position-{base}", bank.question, terse, other, "tie", "position", bank.topic,
                     "topk probes", f"two terse items of equal quality; {note}"),
            ]
    return out


def planted_probabilities(judge: Judge, pairs: Sequence[Pair], template: str) -> dict[str, float]:
    """Exact P(prefer contrasted side) per probe for a simulated judge (letter format)."""
    if not judge.simulated or not hasattr(judge, "preference_logit"):
        return {}
    vals: dict[str, list[float]] = {}
    by_id = {p.pair_id: p for p in pairs}
    for req in pair_requests(list(pairs), template):
        p = by_id[req.meta["pair_id"]]
        z, _ = judge.preference_logit(req, req.prompt_text())
        pa = float(expit(z))  # letter format: no tie margin
        contrast_shown_first = req.meta["order"] == "AB" or p.bias_type == "position"
        vals.setdefault(p.bias_type, []).append(pa if contrast_shown_first else 1.0 - pa)
    return {k: float(np.mean(v)) for k, v in vals.items()}


def probe_summary(verdicts: pd.DataFrame, planted: dict[str, dict[str, float]] | None = None) -> pd.DataFrame:
    """Per judge and probe: P(prefer contrasted side) with Wilson 95% CI (module docstring)."""
    rows = []
    for (judge, probe), g in verdicts.groupby(["judge", "bias_type"], sort=True):
        if probe == "position":
            hit = g["verdict_shown"] == "A"  # the first-shown slot
        else:
            hit = g["verdict"] == "A"  # the contrasted response, in the stored frame
        n, k = len(g), int(hit.sum())
        lo, hi = wilson_interval(k, n)
        ab = g[g["order"] == "AB"].set_index("pair_id")["verdict"]
        ba = g[g["order"] == "BA"].set_index("pair_id")["verdict"]
        both = ab.index.intersection(ba.index)
        consistent = (ab.loc[both] == ba.loc[both]) & ab.loc[both].isin(["A", "B"])
        usable = g["verdict_shown"].isin(["A", "B"])
        rows.append(blank({
            "judge": judge, "probe": probe, "n_calls": n, "n_pairs": len(both), "p_contrast": k / n if n else np.nan,
            "ci_low": float(lo), "ci_high": float(hi),
            "consistency": float(consistent.mean()) if len(both) else np.nan,
            "n_unparsed": int((~usable).sum()),
            "planted_p": (planted or {}).get(str(judge), {}).get(str(probe), np.nan),
            "simulated": any_true(g),
        }, ("p_contrast", "ci_low", "ci_high", "consistency"),
            no_value_reason(g["status"] if "status" in g else [""] * n, usable=usable.to_numpy())))
    return pd.DataFrame(rows, columns=PROBE_COLUMNS)


PROBE_COLUMNS = ["judge", "probe", "n_calls", "n_pairs", "p_contrast", "ci_low", "ci_high", "consistency", "n_unparsed",
                 "planted_p", "simulated", "reason"]
