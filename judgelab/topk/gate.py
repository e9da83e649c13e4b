"""Trusted-anchor gate: switch the covariate correction on only where it helps (paper 002, Sec. 6).

A covariate can be a spurious presentation preference (LLMBar: correcting it helps) or a
legitimate quality signal (SummEval, Nectar: correcting it hurts).  The gate decides per
pool from a few trusted labels: draw ``n_anchors`` item pairs with a known better item
(from a strong judge or a few human comparisons; here the pool's true quality), and enable
the bias-aware ranking only if it agrees with the anchors *at least as well* as the naive
ranking.  Pairs of equal true quality carry no label and are never drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GateDecision:
    enabled: bool
    agree_naive: float
    agree_aware: float
    n_anchors: int


def anchor_pairs(theta: np.ndarray, n_anchors: int, rng: np.random.Generator) -> np.ndarray:
    """``n_anchors`` rows ``(better, worse)`` drawn without replacement among pairs whose
    true qualities differ."""
    theta = np.asarray(theta, dtype=float)
    i, j = np.triu_indices(len(theta), 1)
    keep = theta[i] != theta[j]
    i, j = i[keep], j[keep]
    pick = rng.choice(len(i), size=min(int(n_anchors), len(i)), replace=False)
    a, b = i[pick], j[pick]
    better = np.where(theta[a] > theta[b], a, b)
    worse = np.where(theta[a] > theta[b], b, a)
    return np.column_stack([better, worse])


def anchor_agreement(scores: np.ndarray, anchors: np.ndarray) -> float:
    """Share of anchors the ranking orders like the trusted label (a score tie counts half)."""
    if len(anchors) == 0:
        return float("nan")
    d = np.asarray(scores)[anchors[:, 0]] - np.asarray(scores)[anchors[:, 1]]
    return float(np.mean(np.where(d > 0, 1.0, np.where(d < 0, 0.0, 0.5))))


def gate(naive_scores: np.ndarray, aware_scores: np.ndarray, anchors: np.ndarray) -> GateDecision:
    an, aa = anchor_agreement(naive_scores, anchors), anchor_agreement(aware_scores, anchors)
    return GateDecision(bool(aa >= an), an, aa, len(anchors))
