"""One Wilson interval (judgelab.stats.intervals), used by every table that reports one."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import norm
from scipy.stats import t as student_t

from judgelab.stats.intervals import wilson_interval
from tests.conftest import REPO


def wilson_by_hand(k: float, n: float, z: float) -> tuple[float, float]:
    """Wilson (1927): (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


@given(n=st.integers(1, 5000), frac=st.floats(0, 1), alpha=st.sampled_from([0.2, 0.1, 0.05, 0.01]))
def test_equals_the_formula(n, frac, alpha):
    k = round(frac * n)
    lo, hi = wilson_interval(k, n, alpha=alpha)
    want = wilson_by_hand(k, n, norm.ppf(1 - alpha / 2))
    assert lo == pytest.approx(want[0], abs=1e-9) and hi == pytest.approx(want[1], abs=1e-9)
    assert -1e-12 <= lo <= k / n + 1e-12 and k / n - 1e-12 <= hi <= 1 + 1e-12


@given(n=st.one_of(st.integers(1, 100_000), st.floats(0.5, 1e5)), frac=st.floats(0, 1),
       alpha=st.floats(1e-4, 0.9), clusters=st.sampled_from([0, 1, 2, 3, 7, 40, 1000]))
def test_the_same_floats_as_statsmodels(n, frac, alpha, clusters):
    """Restated over scipy.special, it gives statsmodels' two floats, bit for bit (the clustered
    level through scipy.stats' t and normal, as the docstring says), so no table moves."""
    from statsmodels.stats.proportion import proportion_confint

    k = frac * n if isinstance(n, float) else round(frac * n)
    level = float(2 * norm.sf(student_t.ppf(1 - alpha / 2, clusters - 1))) if clusters >= 2 else alpha
    want = tuple(float(x) for x in proportion_confint(k, n, alpha=level, method="wilson"))
    got = wilson_interval(k, n, alpha=alpha, clusters=clusters)
    assert all(type(x) is float for x in got)
    assert [x if x == x else "nan" for x in got] == [x if x == x else "nan" for x in want]


def test_the_edges_statsmodels_clips_or_zeroes():
    """All successes at alpha 0.5: the raw upper end rounds to 1.0000000000000002 and is clipped to 1,
    as statsmodels clips it; at alpha 1 the critical value is 0 and an all-or-nothing sample has a
    zero-width interval (a square root of 0, not NaN)."""
    from statsmodels.stats.proportion import proportion_confint

    for k, n, alpha in ((2, 2, 0.5), (9, 9, 0.1), (0, 10, 1.0), (10, 10, 1.0)):
        want = tuple(float(x) for x in proportion_confint(k, n, alpha=alpha, method="wilson"))
        assert wilson_interval(k, n, alpha=alpha) == want
    assert wilson_interval(2, 2, alpha=0.5)[1] == 1.0
    assert wilson_interval(0, 10, alpha=1.0) == (0.0, 0.0)


def test_a_count_above_its_sample_gives_nan_as_numpy_does():
    assert all(math.isnan(x) for x in wilson_interval(3.0, 2.0))


def test_degenerate_samples():
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    assert all(math.isnan(x) for x in wilson_interval(0.0, float("nan")))
    lo, hi = wilson_interval(0, 10)
    assert lo == pytest.approx(0, abs=1e-12) and 0 < hi < 0.35
    lo, hi = wilson_interval(10, 10)
    assert 0.65 < lo < 1 and hi == pytest.approx(1)


def test_effective_n_and_clusters():
    """A fractional count on an effective n; with clusters, Student's t on clusters - 1 df."""
    lo, hi = wilson_interval(0.3 * 40.5, 40.5)
    assert (lo, hi) == pytest.approx(wilson_by_hand(12.15, 40.5, norm.ppf(0.975)))
    for k in (2, 3, 10):
        z = student_t.ppf(0.975, k - 1)
        assert wilson_interval(12, 40, clusters=k) == pytest.approx(wilson_by_hand(12, 40, z))
    # one cluster (or none) keeps the normal z; more clusters approach it from above
    assert wilson_interval(12, 40, clusters=1) == wilson_interval(12, 40)
    widths = [np.subtract(*wilson_interval(12, 40, clusters=k)[::-1]) for k in (2, 5, 30)]
    assert widths[0] > widths[1] > widths[2] > np.subtract(*wilson_interval(12, 40)[::-1])


def test_the_callers_report_it():
    """The audit summary, the bias card and the rbd log audit give exactly this interval."""
    from judgelab.bias_card.card import CardSettings
    from judgelab.bias_card.rows_share import _share_row
    from judgelab.stats.agreement import order_summary

    s = CardSettings(alpha=0.1)
    # 12 successes of 40, one verdict per item: design effect 1, Student's t on 39 items
    row = _share_row("tie_rate", np.ones(40, bool), np.arange(40) < 12, np.arange(40), s, null=None, share_of=40)
    assert (row.ci_low, row.ci_high) == pytest.approx(wilson_interval(12.0, 40.0, alpha=0.1, clusters=40))
    rows = []
    for i in range(20):
        for order, v in (("AB", "A"), ("BA", "B" if i < 13 else "A")):
            rows.append({"judge": "j", "pair_id": i, "order": order, "verdict": v, "correct": v == "A" or i >= 13})
    summ = order_summary(pd.DataFrame(rows))
    lo, hi = wilson_interval(int(pd.DataFrame(rows)["correct"].sum()), 40)
    assert summ.filter(like="acc").shape[1] > 0
    got = summ.iloc[0]
    lows = [c for c in summ.columns if c.endswith("ci_low")]
    assert any(got[c] == pytest.approx(lo) for c in lows), (lo, got.to_dict())
    assert any(got[c.replace("low", "high")] == pytest.approx(hi) for c in lows)


def test_one_home():
    """No module but judgelab/stats/intervals.py computes a Wilson interval itself."""
    hits = []
    for path in (REPO / "judgelab").rglob("*.py"):
        if path.name == "intervals.py":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"proportion_confint|def _?wilson", line):
                hits.append(f"{path.relative_to(REPO)}:{i}: {line.strip()}")
    assert hits == []


@given(alpha=st.floats(1e-9, 0.999999))
def test_the_normal_critical_value_is_scipy_stats_own_float(alpha):
    from judgelab.stats.intervals import normal_critical

    assert normal_critical(alpha) == float(norm.ppf(1 - alpha / 2))
    assert normal_critical() == normal_critical(0.05) and abs(normal_critical() - 1.959963984540054) < 1e-15
