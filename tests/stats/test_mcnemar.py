"""McNemar, Holm and the minimum detectable effect at their edges (mutation-tested, issue 13).

The values are worked by hand from the closed forms in :mod:`judgelab.stats.mcnemar`'s
docstring, so a changed sign, exponent, bound or default fails here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2, norm

from judgelab.stats.mcnemar import (
    McNemarResult,
    discordant_counts,
    holm,
    mcnemar_mde,
    mcnemar_sample_size,
    mcnemar_test,
)


def test_no_discordant_pair_has_no_p_value():
    r = mcnemar_test(0, 0)
    assert (r.b, r.c) == (0, 0)
    assert np.isnan(r.statistic) and np.isnan(r.pvalue)
    assert "no discordant pair" in r.reason
    assert mcnemar_test(1, 0).reason == "" and mcnemar_test(1, 0).pvalue == pytest.approx(1.0)
    assert isinstance(mcnemar_test(2, 3), McNemarResult)


@pytest.mark.parametrize("bc", [(3, 3), (5, 5), (1, 1)])
def test_balanced_discordance_still_runs_the_test(bc):
    # b == c but b + c > 0: the corrected statistic is 1 / (b + c), not the "no evidence" shortcut
    b, c = bc
    r = mcnemar_test(b, c)
    assert r.statistic == pytest.approx(1 / (b + c))
    assert r.pvalue == pytest.approx(chi2.sf(1 / (b + c), 1))
    assert (r.b, r.c) == (b, c) and isinstance(r.b, int) and isinstance(r.c, int)


def test_counts_are_returned_in_order():
    r = mcnemar_test(np.int64(12), np.int64(31))
    assert (r.b, r.c) == (12, 31) and type(r.b) is int and type(r.c) is int


def test_uncorrected_statistic():
    r = mcnemar_test(12, 31, correction=False)
    assert r.statistic == pytest.approx((31 - 12) ** 2 / 43)
    assert r.pvalue == pytest.approx(chi2.sf((31 - 12) ** 2 / 43, 1))
    assert mcnemar_test(12, 31).statistic == pytest.approx((19 - 1) ** 2 / 43)


def test_negative_counts_raise_naming_them():
    with pytest.raises(ValueError, match=r"^discordant counts must be non-negative, got b=-1, c=3$"):
        mcnemar_test(-1, 3)
    with pytest.raises(ValueError, match=r"got b=2, c=-4"):
        mcnemar_test(2, -4)


def test_discordant_counts_cast_to_bool():
    # 0/1 integers (and other truthy values) are correctness flags, not bit patterns
    assert discordant_counts([1, 0, 1, 0, 1], [0, 0, 1, 1, 1]) == (1, 1)
    assert discordant_counts([2, 0, 0], [0, 5, 0]) == (1, 1)
    assert discordant_counts([True, True, False], [False, False, True]) == (2, 1)
    assert discordant_counts([1, 0], [2, 2]) == (0, 1)  # 2 is "correct" too, whatever its bits
    assert discordant_counts([2, 2], [1, 0]) == (1, 0)
    with pytest.raises(ValueError, match=r"^paired correctness vectors must have the same length$"):
        discordant_counts([1, 0], [1])


def test_holm_edges():
    adj, rej = holm([])
    assert adj.size == 0 and rej.size == 0 and rej.dtype == bool
    adj, rej = holm([0.03])  # one test: Holm is the test itself
    assert adj.tolist() == [0.03] and rej.tolist() == [True]
    adj, rej = holm([0.03], alpha=0.01)
    assert rej.tolist() == [False]
    assert holm([0.2])[1].tolist() == [False]  # default alpha 0.05
    # alpha is passed on: p = (0.01, 0.04) -> adjusted (0.02, 0.04)
    adj, rej = holm([0.01, 0.04], alpha=0.03)
    assert adj == pytest.approx([0.02, 0.04]) and rej.tolist() == [True, False]


def test_sample_size_closed_form_by_hand():
    # Connor 1987 at delta = 0.05, psi = 0.10, alpha = 0.05, power = 0.8
    za, zb = 1.959963984540054, 0.8416212335729143
    n = (za * math.sqrt(0.10) + zb * math.sqrt(0.10 - 0.05**2)) ** 2 / 0.05**2
    assert n == pytest.approx(311.59, abs=0.01)
    assert mcnemar_sample_size(0.05, 0.10) == pytest.approx(n, rel=1e-12)
    assert mcnemar_sample_size(-0.05, 0.10) == pytest.approx(n, rel=1e-12)  # two-sided
    # alpha and power are used
    za2, zb2 = norm.ppf(0.995), norm.ppf(0.9)
    n2 = (za2 * math.sqrt(0.2) + zb2 * math.sqrt(0.2 - 0.1**2)) ** 2 / 0.1**2
    assert mcnemar_sample_size(0.1, 0.2, alpha=0.01, power=0.9) == pytest.approx(n2, rel=1e-12)
    # psi = 1 (every pair discordant) is allowed
    assert math.isfinite(mcnemar_sample_size(0.1, 1.0))


@pytest.mark.parametrize(("delta", "psi"), [(0.0, 0.1), (0.5, 0.25), (0.6, 0.25), (0.1, 2.0), (0.1, 1.5)])
def test_sample_size_rejects_impossible_effects(delta, psi):
    with pytest.raises(ValueError, match=r"^need 0 < \|delta\| < sqrt\(psi\) <= 1, got delta="):
        mcnemar_sample_size(delta, psi)


def test_mde_inverts_sample_size_with_its_alpha_and_power():
    d = mcnemar_mde(400, 0.1, alpha=0.01, power=0.9)
    assert mcnemar_sample_size(d, 0.1, alpha=0.01, power=0.9) == pytest.approx(400, rel=1e-9)
    assert d > mcnemar_mde(400, 0.1)  # stricter alpha and more power need a larger effect
    # the root is found to high precision
    d0 = mcnemar_mde(400, 0.1)
    assert mcnemar_sample_size(d0, 0.1) == pytest.approx(400, rel=1e-10)


def test_mde_edges():
    assert math.isnan(mcnemar_mde(0, 0.1))
    assert math.isnan(mcnemar_mde(-5, 0.1))
    assert math.isnan(mcnemar_mde(100, 0.0))
    assert math.isnan(mcnemar_mde(100, 1.5))
    assert math.isfinite(mcnemar_mde(100, 1.0))
    # even the largest effect needs z_{1-alpha/2}^2 = 3.84 pairs: n = 3 cannot detect anything
    assert math.isnan(mcnemar_mde(3, 0.5))
    assert math.isfinite(mcnemar_mde(4, 0.5))
    # a single pair can, at a lax enough alpha (z^2 = 0.45 at alpha = 0.5)
    assert math.isfinite(mcnemar_mde(1, 0.5, alpha=0.5, power=0.5))
