"""The one Wilson score interval every table of judgelab reports for a proportion.

statsmodels computes it (``proportion_confint(method="wilson")``); this wrapper adds only what
every caller needed around it: NaN for an empty sample (nothing to estimate, not an error),
plain floats, a confidence level instead of ``alpha``, and, for clustered data, the
small-sample correction of cluster-robust inference (Cameron & Miller 2015, J Hum Resour
50:317): with ``clusters >= 2`` the normal critical value is replaced by Student's t on
``clusters - 1`` degrees of freedom, since the clustered variance is estimated from only that
many cluster totals.  ``n`` may be an effective sample size (the count divided by a design
effect) and ``successes`` then fractional.
"""

from __future__ import annotations

import math

from scipy.stats import norm
from scipy.stats import t as student_t
from statsmodels.stats.proportion import proportion_confint


def wilson_interval(successes: float, n: float, *, confidence: float = 0.95,
                    clusters: int = 0) -> tuple[float, float]:
    """(low, high) of the Wilson interval of ``successes / n``; NaNs when ``n`` is 0."""
    if not n or (isinstance(n, float) and math.isnan(n)):
        return math.nan, math.nan
    alpha = 1 - confidence
    if clusters >= 2:
        alpha = float(2 * norm.sf(student_t.ppf(1 - alpha / 2, clusters - 1)))
    lo, hi = proportion_confint(successes, n, alpha=alpha, method="wilson")
    return float(lo), float(hi)
