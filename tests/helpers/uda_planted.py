"""A planted UDA tournament for the tests: quality plus each judge's preference for its own model.

Shared by ``tests/uda/test_core.py`` and ``tests/uda/test_training.py``, which plant it with
different strengths.  Each judge ``k`` answers like model ``k % N`` (its own answer's embedding
shares that model's style vector), so a per-comparison correction can see the preference and
undo it, a constant one cannot.  Verdicts: a logistic draw around
``slope * (q_i - q_j) + bias_k * ([own = i] - [own = j])``, a tie within ``tie`` of 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from judgelab.uda.data import TournamentData


def planted_tournament(seed: int, P: int, N: int, M: int, D: int, *, style_scale: float, slope: float,
                       bias: Sequence[float], tie: float) -> TournamentData:
    rng = np.random.default_rng(seed)
    style = style_scale * rng.normal(size=(N, D))
    E = (style[None] + 0.3 * rng.normal(size=(P, N, D))).astype(np.float32)
    own = np.arange(M) % N
    Ej = (style[own][None] + 0.3 * rng.normal(size=(P, M, D))).astype(np.float32)
    q = np.linspace(-1, 1, N)
    b = np.asarray(bias, dtype=float)[:M]
    scores = np.full((P, N, N, M), np.nan)
    for p in range(P):
        for i in range(N):
            for j in range(N):
                if i != j:
                    z = slope * (q[i] - q[j]) + b * ((own == i).astype(float) - (own == j).astype(float))
                    u = z + rng.logistic(size=M)
                    scores[p, i, j] = np.where(u > tie, 1.0, np.where(u < -tie, 0.0, 0.5))
    return TournamentData("planted", [f"p{p}" for p in range(P)], [f"m{i}" for i in range(N)],
                          [f"j{k}" for k in range(M)], E, Ej, scores)
