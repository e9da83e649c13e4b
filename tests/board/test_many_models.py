"""Many models: the bias-aware fit runs on a sparse design and inverts its Laplace Hessian in place, with
the same numbers as the dense forms; a 10,000-model log ranks within 2 GiB (slow, in a subprocess; the
sparse posterior and identifiability behind it: tests/board/test_many_models_sparse.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from judgelab.ranking.bias_aware import (
    Comparisons,
    FitOptions,
    _gram,
    _laplace_cov,
    design_matrix,
    sparse_design_matrix,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("position", [False, True])
def test_the_sparse_design_is_the_dense_one(position: bool) -> None:
    rng = np.random.default_rng(0)
    n, k = 40, 7
    first = rng.integers(0, k, n)
    second = (first + rng.integers(1, k, n)) % k
    comp = Comparisons(first, second, rng.random(n))
    X = rng.normal(size=(k, 2))
    W = rng.normal(size=(n, 3))
    opts = FitOptions(position=position)
    np.testing.assert_array_equal(sparse_design_matrix(comp, k, X, opts, W).toarray(),
                                  design_matrix(comp, k, X, opts, W))
    empty = sparse_design_matrix(Comparisons.empty(), k, X, opts, np.zeros((0, 3)))
    assert empty.shape == (0, k + 2 + 3 + int(position))


def test_the_in_place_laplace_covariance_is_the_inverse_hessian() -> None:
    rng = np.random.default_rng(1)
    n, k = 60, 9
    first = rng.integers(0, k, n)
    second = (first + rng.integers(1, k, n)) % k
    Z = sparse_design_matrix(Comparisons(first, second, rng.random(n)), k, None, FitOptions(covariates=False))
    w = rng.random(n) * 0.25
    prior = np.full(Z.shape[1], 0.7)
    H = _gram(Z, w) + np.diag(prior)
    cov = _laplace_cov(Z, w, prior)
    np.testing.assert_allclose(cov, np.linalg.inv(H), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(cov, cov.T)


@pytest.mark.slow
def test_ten_thousand_models_rank_within_two_gib() -> None:
    script = REPO / "scripts" / "many_models_board.py"
    out = subprocess.run([sys.executable, str(script), "10000"], capture_output=True, text=True, timeout=900,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    fields = out.stdout.split()
    peak = float(fields[fields.index("peak_gib") + 1])
    assert peak < 2.0
    assert int(fields[fields.index("ranked") + 1]) == 10000
