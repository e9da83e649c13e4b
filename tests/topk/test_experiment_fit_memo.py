"""The estimators share their cold-start fits (judgelab.topk.experiment._fit): a shared fit is the
one a fresh ``fit_bias_aware`` returns, to the bit; equal comparisons on another pool, another
revealed set or other options never share one; and the full-data tables are the same whether the
estimators share fits or each fits afresh."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from judgelab.ranking.bias_aware import Comparisons, Fit, fit_bias_aware, naive_options
from judgelab.simworld.topk import SyntheticJudge, synthetic_oracle
from judgelab.topk import experiment
from judgelab.topk.experiment import ESTIMATORS, TopkSettings, evaluate_full, single_threaded_blas

SMALL = TopkSettings(k=2, n_samples=100, refit_every=4, lam_b_sweep=(0.1, 1.0))


@pytest.fixture(autouse=True)
def _one_blas_thread_and_no_kept_fits(monkeypatch):
    monkeypatch.setattr(experiment, "_FITS", {})
    with single_threaded_blas():
        yield


def _pool(oracle: int = 1, n_items: int = 8):
    return synthetic_oracle(SyntheticJudge(c=(1.0,), kappa=0.5), oracle, n_items=n_items, seed=5)


def _fit_of(estimator: str, comp: Comparisons, pool, settings: TopkSettings) -> Fit:
    fit = ESTIMATORS.get(estimator)(comp, pool, settings).fit
    assert fit is not None
    return fit


def test_a_shared_fit_is_a_fresh_fit_to_the_bit():
    pool = _pool()
    comp = pool.full_comparisons()
    aware = _fit_of("aware", comp, pool, SMALL)
    fresh = fit_bias_aware(comp, pool.n_items, pool.X, options=SMALL.options(), covariate_names=pool.covariate_names,
                           warn=False)
    np.testing.assert_array_equal(aware.beta, fresh.beta)
    np.testing.assert_array_equal(aware.cov, fresh.cov)
    assert aware.identifiability == fresh.identifiability and aware.names == fresh.names
    naive = _fit_of("naive", comp, pool, SMALL)
    fresh_naive = fit_bias_aware(comp, pool.n_items, options=naive_options(SMALL.options()), warn=False)
    np.testing.assert_array_equal(naive.beta, fresh_naive.beta)
    np.testing.assert_array_equal(naive.cov, fresh_naive.cov)
    # resid and gated ask for the naive and aware fits again: nothing new is fitted
    ESTIMATORS.get("resid")(comp, pool, SMALL)
    gated = ESTIMATORS.get("gated")(comp, pool, SMALL)
    assert any(gated.fit is f for f in (aware, naive))
    assert len(experiment._FITS) == 2


def test_other_inputs_never_share_a_fit():
    pool = _pool()
    comp = pool.full_comparisons()
    first = _fit_of("aware", comp, pool, SMALL)
    # the same verdicts with one flipped, the same comparisons on a pool with other covariates,
    # other options: each its own fit
    y = comp.y.copy()
    y[0] = 1.0 - y[0]
    flipped = _fit_of("aware", Comparisons(comp.first, comp.second, y), pool, SMALL)
    other_x = dataclasses.replace(pool, X=1.0 - pool.X)
    moved = _fit_of("aware", comp, other_x, SMALL)
    stronger = _fit_of("aware", comp, pool, dataclasses.replace(SMALL, lam_b=2.0))
    hier = _fit_of("aware_hier", comp, pool, SMALL)
    fits = [first, flipped, moved, stronger, hier]
    assert len({id(f) for f in fits}) == 5
    assert not np.array_equal(first.beta, flipped.beta)
    assert not np.array_equal(first.c, moved.c)
    assert (stronger.tau2, hier.options.hierarchical) == (0.5, True)


def test_only_the_last_few_fits_are_kept():
    pool = _pool()
    comp = pool.full_comparisons()
    for lb in np.linspace(0.1, 3.0, 3 * experiment._FITS_KEPT):
        ESTIMATORS.get("aware")(comp, pool, dataclasses.replace(SMALL, lam_b=float(lb)))
    assert len(experiment._FITS) == experiment._FITS_KEPT


def test_full_data_tables_are_the_same_when_every_estimator_fits_afresh(monkeypatch):
    pool = _pool(oracle=3)
    shared = evaluate_full(pool, SMALL)

    def fresh(comp, pool, options):
        X = pool.X if options.covariates else None
        return fit_bias_aware(comp, pool.n_items, X, options=options,
                              covariate_names=pool.covariate_names if X is not None else None, warn=False)

    monkeypatch.setattr(experiment, "_fit", fresh)
    afresh = evaluate_full(pool, SMALL)
    for a, b in ((shared.recall, afresh.recall), (shared.params, afresh.params), (shared.scores, afresh.scores)):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
