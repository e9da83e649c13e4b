"""Cluster-robust standard errors of a logistic regression fitted on its distinct rows with frequency
weights, summed over the full rows one regressor at a time: the bias card's length- and
markdown-controlled rows fit a million verdicts this way in bounded memory."""

from __future__ import annotations

import numpy as np


def _cluster_sandwich(x_distinct: np.ndarray, counts: np.ndarray, mu: np.ndarray, row_cols: list[np.ndarray | None],
                      resid: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Cluster-robust standard errors of a logistic GLM fitted on distinct rows with frequency weights.

    What statsmodels computes for ``GLM(...).fit(cov_type="cluster")`` on the full rows
    (``cov_cluster``: the inverse Hessian around the outer product of the per-cluster score sums,
    times G/(G-1) (n-1)/(n-k)), written out because statsmodels' cluster-robust covariance needs
    the full n x k score array, and the whole fit on the full rows holds ~650 bytes per verdict
    (2 GiB at a million pairs): here the Hessian comes from the distinct rows and the score sums
    from one column of rows at a time (``np.bincount`` per regressor)."""
    n, k = len(resid), x_distinct.shape[1]
    hess = x_distinct.T @ (x_distinct * (counts * mu * (1 - mu))[:, None])
    n_groups = int(groups.max()) + 1
    sums = np.column_stack([np.bincount(groups, weights=resid if c is None else c * resid, minlength=n_groups)
                            for c in row_cols])  # (None: the constant column, all ones)
    h_inv = np.linalg.inv(hess)
    cov = h_inv @ (sums.T @ sums) @ h_inv
    cov *= n_groups / (n_groups - 1.0) * ((n - 1.0) / float(n - k))
    return np.sqrt(np.diag(cov))
