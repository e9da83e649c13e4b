"""Paired comparisons of correctness: McNemar's test, Holm-Bonferroni, minimum detectable effect.

Paper 003, Appendix D.  On the same instances, a baseline and a strategy are each correct or
wrong (exact-label match: a tie is correct only when gold is a tie).  With ``b`` = baseline
correct & strategy wrong and ``c`` = baseline wrong & strategy correct, McNemar's statistic with
continuity correction is ``(|b - c| - 1)^2 / (b + c)`` on one degree of freedom (statsmodels'
``mcnemar(exact=False, correction=True)``); the paper's Table 4 is reproduced from its b and c
(tests).  Families of comparisons are corrected with Holm-Bonferroni (statsmodels
``multipletests(method="holm")``).

Minimum detectable effect: for paired proportions with discordance probability
``psi = P(b) + P(c)`` and effect ``delta = P(c) - P(b)``, the sample size McNemar's test needs
at two-sided level alpha and power 1 - beta is (Connor 1987, Biometrics 43:207)

    n = (z_{1-alpha/2} sqrt(psi) + z_{1-beta} sqrt(psi - delta^2))^2 / delta^2,

solved here for ``delta`` at the observed ``n`` and ``psi``.  At n = 400 and 40-50 discordant
pairs (psi = 0.10-0.125) this gives 4.4-5.0 percentage points, the paper's "approximately 4 to
5 pp".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from judgelab.stats.intervals import DEFAULT_ALPHA


@dataclass(frozen=True)
class McNemarResult:
    b: int  # baseline correct, other wrong
    c: int  # baseline wrong, other correct
    statistic: float
    pvalue: float
    reason: str = ""  # why there is no statistic (no discordant pair); "" when the test ran


#: why a McNemar test on ``b + c = 0`` has no p-value (:func:`mcnemar_test`)
NO_DISCORDANT = "no discordant pair: both sides are right (or wrong) on the same instances, so the test has no variance"


def mcnemar_test(b: int, c: int, *, correction: bool = True) -> McNemarResult:
    """McNemar's chi-square test from the discordant counts (continuity-corrected by default).

    With no discordant pair (``b + c = 0``) the statistic is 0/0: the comparison carries no
    information about which side is better, so statistic and p-value are NaN and ``reason`` says
    why (a p-value of 1.0 would read as "tested, no difference")."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    if b + c == 0:
        return McNemarResult(int(b), int(c), math.nan, math.nan, NO_DISCORDANT)
    # statsmodels and scipy are imported where used: a job that only counts pairs does not pay them
    from statsmodels.stats.contingency_tables import mcnemar

    res = mcnemar(np.array([[0, b], [c, 0]]), exact=False, correction=correction)
    return McNemarResult(int(b), int(c), float(res.statistic), float(res.pvalue))


def mcnemar_exact_p(b: int, c: int) -> float:
    """Exact (binomial) McNemar p-value from the discordant counts; NaN without a discordant pair
    (as :func:`mcnemar_test`)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    if b + c == 0:
        return math.nan
    from statsmodels.stats.contingency_tables import mcnemar

    return float(mcnemar(np.array([[0, b], [c, 0]]), exact=True).pvalue)


def discordant_counts(base_correct: Sequence[bool] | np.ndarray,
                      other_correct: Sequence[bool] | np.ndarray) -> tuple[int, int]:
    """(b, c) over paired instances."""
    x = np.asarray(base_correct, dtype=bool)
    y = np.asarray(other_correct, dtype=bool)
    if x.shape != y.shape:
        raise ValueError("paired correctness vectors must have the same length")
    return int(np.sum(x & ~y)), int(np.sum(~x & y))


def holm(pvalues: Sequence[float], alpha: float = DEFAULT_ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Holm-Bonferroni: (adjusted p-values, reject flags)."""
    p = np.asarray(pvalues, dtype=float)
    if p.size == 0:
        return p, np.zeros(0, dtype=bool)
    from statsmodels.stats.multitest import multipletests

    reject, adj, _, _ = multipletests(p, alpha=alpha, method="holm")
    return adj, reject


def mcnemar_sample_size(delta: float, psi: float, alpha: float = DEFAULT_ALPHA, power: float = 0.8) -> float:
    """Pairs needed to detect ``delta`` at discordance ``psi`` (Connor 1987)."""
    if not 0 < abs(delta) < math.sqrt(psi) <= 1:
        raise ValueError(f"need 0 < |delta| < sqrt(psi) <= 1, got delta={delta}, psi={psi}")
    from scipy.stats import norm

    za, zb = norm.ppf(1 - alpha / 2), norm.ppf(power)
    return (za * math.sqrt(psi) + zb * math.sqrt(psi - delta**2)) ** 2 / delta**2


def mcnemar_mde(n: int, psi: float, alpha: float = DEFAULT_ALPHA, power: float = 0.8) -> float:
    """Smallest |P(c) - P(b)| detectable with ``n`` pairs at discordance ``psi`` (Connor 1987)."""
    if n <= 0 or not 0 < psi <= 1:
        return float("nan")
    hi = math.sqrt(psi) * (1 - 1e-12)
    f = lambda d: mcnemar_sample_size(d, psi, alpha, power) - n  # noqa: E731
    if f(hi) > 0:  # even the largest possible effect needs more pairs
        return float("nan")
    from scipy.optimize import brentq

    return float(brentq(f, 1e-9, hi, xtol=1e-12))
