"""A family of tests corrected together: the adjusted p-values, and how much the correction raises
each test's minimum detectable effect.  On plain numbers (p-values, a method name, alpha and power),
so that the bias card, the probe and any study correct their families the same way."""

from __future__ import annotations

import numpy as np

#: multiplicity corrections of a family of tests (statsmodels ``multipletests`` methods, and none)
MULTIPLICITY = ("holm", "bh", "none")
_MULTIPLETESTS = {"holm": "holm", "bh": "fdr_bh"}


def adjust_p_values(p_values: list[float], method: str) -> list[float]:
    """The family's p-values adjusted by ``method`` (:data:`MULTIPLICITY`): Holm's step-down, or
    Benjamini-Hochberg's step-up (statsmodels ``multipletests``); ``none`` returns them as they are.

    Holm's step-down is written out (sorted p times m, m - 1, ..., 1, running maximum, capped at 1)
    because statsmodels' Holm branch calls ``gc.collect()`` on every call: a tenth of a second per
    judge and view on the heap of a loaded card.  ``tests/bias_card/test_multiplicity.py`` checks it
    equals ``multipletests(method="holm")``."""
    if method == "none" or not p_values:
        return list(p_values)
    if method == "holm":
        p = np.asarray(p_values, float)
        order = np.argsort(p, kind="stable")
        stepped = np.minimum(1.0, np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1)))
        out = np.empty_like(p)
        out[order] = stepped
        return [float(x) for x in out]
    from statsmodels.stats.multitest import multipletests

    return [float(x) for x in multipletests(np.asarray(p_values, float), method=_MULTIPLETESTS[method])[1]]


def family_mde_factor(m: int, *, method: str, alpha: float, power: float) -> float:
    """How much a test's minimum detectable effect grows when it is one of ``m`` corrected together by
    ``method`` (:data:`MULTIPLICITY`) at level ``alpha``, for the stated ``power``.

    A corrected test rejects when its adjusted p-value is below alpha; Holm's adjusted p is at
    most m p (Bonferroni), so an effect detected with the stated power at level alpha / m is detected
    with at least that power whatever the other tests' p-values (Benjamini-Hochberg rejects at least
    what Bonferroni does, so the same bound holds).  The MDEs are (z_a + z_power) se in the normal
    approximation, so the factor is (z_{alpha/2m} + z_power) / (z_{alpha/2} + z_power); 1 without
    correction."""
    if method == "none" or m <= 1:
        return 1.0
    from scipy.stats import norm  # here: the workflow's planner imports this module's names, not scipy

    zp = float(norm.ppf(power))
    return (float(norm.ppf(1 - alpha / (2 * m))) + zp) / (float(norm.ppf(1 - alpha / 2)) + zp)
