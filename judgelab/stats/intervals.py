"""The one Wilson score interval every table of judgelab reports for a proportion, and the one
default level of every interval and test (:data:`DEFAULT_ALPHA`).

One name, ``alpha``, for the level everywhere in judgelab: it is what users type (``--alpha`` of
``judgelab audit`` and ``judgelab leaderboard``, the ``alpha`` keys of the config), and the bias
card decides a row with a test at ``alpha`` *and* an interval at level ``1 - alpha``, so one
number sets both (a separate interval level let a larger alpha detect nothing more).  A function
that reports an interval takes ``alpha`` and computes at ``1 - alpha``; its default is
:data:`DEFAULT_ALPHA`, never a literal (``tests/stats/test_interval_level_names.py`` scans for one).

The interval is statsmodels' ``proportion_confint(method="wilson")``, float for float
(``tests/stats/test_intervals.py`` asserts the same two floats over a grid of counts, sizes,
levels and cluster counts).  Why it is restated here over :mod:`scipy.special` instead of called:
importing ``statsmodels.stats.proportion`` loads ``scipy.stats`` with it, about 0.6 CPU-s, and
rules of the default DAG imported them for this interval alone (docs/benchmarks.md, "Quantiles
from scipy.special, slow imports where they are used").  The quantiles are the functions scipy's
distributions evaluate (``norm.isf`` is ``-ndtri``, ``norm.sf`` is ``ndtr`` of the negation,
``t.ppf`` is ``stdtrit``),
and the arithmetic is statsmodels', in its order.  Around it, what every caller needed: NaN for
an empty sample (nothing to estimate, not an error), plain floats, and, for clustered data, the
small-sample correction of cluster-robust inference
(Cameron & Miller 2015, J Hum Resour 50:317): with ``clusters >= 2`` the normal critical value is replaced by Student's t on
``clusters - 1`` degrees of freedom, since the clustered variance is estimated from only that
many cluster totals.  ``n`` may be an effective sample size (the count divided by a design
effect) and ``successes`` then fractional.
"""

from __future__ import annotations

import math

DEFAULT_ALPHA = 0.05
"""The default significance level of every test, and 1 - the level of every interval (95 %)."""


def normal_critical(alpha: float = DEFAULT_ALPHA) -> float:
    """The two-sided normal critical value ``z`` of level ``1 - alpha``: ``scipy.special.ndtri(1 -
    alpha / 2)``, the float ``scipy.stats.norm.ppf`` returns, without loading ``scipy.stats``."""
    from scipy.special import ndtri

    return float(ndtri(1 - alpha / 2))


def wilson_interval(successes: float, n: float, *, alpha: float = DEFAULT_ALPHA,
                    clusters: int = 0) -> tuple[float, float]:
    """(low, high) of the Wilson interval of ``successes / n`` at level ``1 - alpha``; NaNs when
    ``n`` is 0."""
    from scipy.special import ndtr, ndtri, stdtrit  # imported here: every module imports DEFAULT_ALPHA from this one

    if not n or (isinstance(n, float) and math.isnan(n)):
        return math.nan, math.nan
    if clusters >= 2:  # the normal tail area whose critical value is Student's t on clusters - 1 df
        alpha = float(2 * ndtr(-stdtrit(clusters - 1, 1 - alpha / 2)))
    # statsmodels' proportion_confint(method="wilson"), step for step
    q = successes / n
    crit = float(-ndtri(alpha / 2.0))
    crit2 = crit**2
    denom = 1 + crit2 / n
    center = (q + crit2 / (2 * n)) / denom
    var = q * (1.0 - q) / n + crit2 / (4.0 * n**2)
    dist = crit * (math.sqrt(var) if var >= 0 else math.nan)  # NaN where NumPy's sqrt gives NaN
    dist /= denom
    return float(min(max(center - dist, 0.0), 1.0)), float(min(max(center + dist, 0.0), 1.0))
