"""The fit's shortcuts change no number: the directly written sparse design is, array for array,
the stacked blocks it replaces; the cached thread-pool controller limits BLAS exactly as
``threadpool_limits`` does and rescans after an import; a fit without its identifiability check
has the same estimates and posterior to the bit."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from scipy import sparse
from threadpoolctl import threadpool_info

from judgelab.ranking import bias_aware
from judgelab.ranking.bias_aware import (
    Comparisons,
    FitOptions,
    design_matrix,
    fit_bias_aware,
    one_blas_thread,
    sparse_design_matrix,
)


def _stacked(comp: Comparisons, n_items: int, X, options: FitOptions, pair_X=None) -> sparse.csr_array:
    """The design as ``sparse.hstack`` of its blocks: items (+1/-1), covariate differences,
    comparison covariates, position (the construction the fits summed in before)."""
    n = len(comp)
    rows = np.arange(n)
    blocks = [sparse.csr_array((np.r_[np.ones(n), -np.ones(n)], (np.r_[rows, rows], np.r_[comp.first, comp.second])),
                               shape=(n, n_items))]
    if X is not None and options.covariates:
        blocks.append(sparse.csr_array(np.asarray(X[comp.first] - X[comp.second], float)))
    if pair_X is not None and options.covariates:
        blocks.append(sparse.csr_array(np.asarray(pair_X, float)))
    if options.position:
        blocks.append(sparse.csr_array(np.ones((n, 1))))
    return sparse.hstack(blocks, format="csr")


def _random_design(rng: np.random.Generator):
    n_items = int(rng.integers(2, 30))
    n = int(rng.integers(0, 120))
    first = rng.integers(0, n_items, n)
    second = (first + rng.integers(1, n_items, n)) % n_items
    comp = Comparisons(first, second, rng.random(n))
    d = int(rng.integers(0, 3))
    X = rng.integers(0, 2, (n_items, d)).astype(float) if rng.random() < 0.8 else None  # many zero differences
    e = int(rng.integers(0, 3))
    pair_X = np.where(rng.random((n, e)) < 0.5, 0.0, rng.normal(size=(n, e))) if rng.random() < 0.5 else None
    options = FitOptions(covariates=bool(rng.random() < 0.7), position=bool(rng.random() < 0.7))
    return comp, n_items, X, options, pair_X


def test_the_written_design_is_the_stacked_blocks_array_for_array():
    rng = np.random.default_rng(20261129)
    for _ in range(150):
        comp, n_items, X, options, pair_X = _random_design(rng)
        want = _stacked(comp, n_items, X, options, pair_X)
        got = sparse_design_matrix(comp, n_items, X, options, pair_X)
        assert got.shape == want.shape
        for part in ("data", "indices", "indptr"):
            np.testing.assert_array_equal(getattr(got, part), getattr(want, part))
            assert getattr(got, part).dtype == getattr(want, part).dtype
        np.testing.assert_array_equal(got.toarray(), design_matrix(comp, n_items, X, options, pair_X))


def test_a_row_keeps_its_item_entries_in_column_order_and_stores_no_zero():
    # first-shown item 3 against 1, same covariate value (no entry), then position
    comp = Comparisons(np.array([3, 0]), np.array([1, 2]), np.array([1.0, 0.0]))
    X = np.array([[1.0], [0.0], [0.0], [0.0]])
    Z = sparse_design_matrix(comp, 4, X, FitOptions())
    np.testing.assert_array_equal(Z.indptr, [0, 3, 7])
    np.testing.assert_array_equal(Z.indices, [1, 3, 5, 0, 2, 4, 5])
    np.testing.assert_array_equal(Z.data, [-1.0, 1.0, 1.0, 1.0, -1.0, 1.0, 1.0])


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_one_blas_thread_limits_and_restores():
    before = _blas_threads()
    assert before, "no BLAS loaded"
    with one_blas_thread():
        assert _blas_threads() == [1] * len(before)
        with one_blas_thread():  # nested, as the study's context around each fit's
            assert _blas_threads() == [1] * len(before)
        assert _blas_threads() == [1] * len(before)
    assert _blas_threads() == before


def test_the_controller_is_kept_until_a_module_is_imported(monkeypatch):
    monkeypatch.setattr(bias_aware, "_CONTROLLER", None)
    with one_blas_thread():
        pass
    kept = bias_aware._CONTROLLER
    with one_blas_thread():
        pass
    assert bias_aware._CONTROLLER is kept
    monkeypatch.setitem(sys.modules, "judgelab_test_fresh_module", types.ModuleType("judgelab_test_fresh_module"))
    with one_blas_thread():
        pass
    assert bias_aware._CONTROLLER is not kept and bias_aware._CONTROLLER is not None
    assert bias_aware._CONTROLLER[0] == len(sys.modules)


@pytest.mark.parametrize("hierarchical", [False, True])
def test_a_fit_without_its_identifiability_check_has_the_same_numbers(hierarchical):
    rng = np.random.default_rng(7)
    n = 12
    X = (np.arange(n) % 2).astype(float)[:, None]
    first = rng.integers(0, n, 80)
    second = (first + rng.integers(1, n, 80)) % n
    comp = Comparisons(first, second, (rng.random(80) < 0.6).astype(float))
    opts = FitOptions(hierarchical=hierarchical)
    full = fit_bias_aware(comp, n, X, options=opts, warn=False)
    bare = fit_bias_aware(comp, n, X, options=opts, warn=False, identify=False)
    assert full.identifiability == {"c[x0]": "identified", "kappa": "identified"}
    assert bare.identifiability == {} and bare.vif == {}
    np.testing.assert_array_equal(bare.beta, full.beta)
    np.testing.assert_array_equal(bare.cov, full.cov)
    assert (bare.tau2, bare.nll, bare.n_iter) == (full.tau2, full.nll, full.n_iter)


def test_the_weighted_gram_matrix_is_the_one_multiply_builds_bit_for_bit():
    rng = np.random.default_rng(11)
    for _ in range(60):
        comp, n_items, X, options, pair_X = _random_design(rng)
        Z = sparse_design_matrix(comp, n_items, X, options, pair_X)
        w = rng.random(len(comp))
        w[rng.random(len(comp)) < 0.2] = 0.0  # a saturated comparison weighs exactly nothing
        want = np.asarray((Z.T @ sparse.csr_array(Z.multiply(w[:, None]))).toarray())
        got = bias_aware._gram(Z, w)
        assert got.tobytes() == want.tobytes()
        assert bias_aware._gram(Z).tobytes() == np.asarray((Z.T @ Z).toarray()).tobytes()
