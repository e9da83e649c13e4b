"""Elo tournaments per judge: the update order, baseline Elo, and the differentiable recursion.

The rule (paper 000, Eq. 1 and Algorithm 2).  For a comparison of models i and j by judge k,

    p_hat = sigma(c * (R_i - R_j)),   R_i += K (s_i - p_hat),   R_j += K (s_j - (1 - p_hat)),

with s_i + s_j = 1, so every update is zero-sum and the mean rating stays at the initial
rating.  Baseline Elo uses K = 32 and the judge's verdict as s_i (1 win, 0.5 tie, 0 loss);
UDA takes K and s_i from the adapter.

**Logistic scale.**  The paper writes sigma(R_i - R_j) with no scale.  We use the
conventional Elo scale, c = ln(10) / 400 (a 400-point gap is 10:1 odds), and an initial
rating of 1200: with c = 1 a gap of a few points already gives p_hat ~ 0 or 1 and K = 32
would make the ratings oscillate by whole K-steps, while the paper's published score
matrices (Tables 5-7) spread over several hundred points around a mean of exactly 1200 in
every row -- what zero-sum updates from 1200 on the 400-point scale produce.  Both are
configurable (``uda.elo``).

**Update order.**  Elo depends on the order of updates, so the order is part of the method
and is seeded.  Prompts are visited in a seeded random order; within a prompt, the
N(N-1) ordered presentations (every pair shown once as A/B and once as B/A) are arranged
by the circle method into rounds of disjoint pairs (N-1 rounds per presentation leg, a
bye when N is odd; model labels, leg orientation and round order are shuffled per prompt).
Updates inside a round touch disjoint ratings, so applying a round at once equals applying
its comparisons one after another in any order: the recursion is an exact sequential Elo,
and it has P * 2(N-1) sequential steps instead of P * N(N-1).  All judges share the
schedule (each with its own verdicts), so the state is an (M judges x N models) matrix and
every step is batched over judges.

**Differentiable recursion.**  :class:`judgelab.uda.autograd.EloRecursion` is a torch autograd Function whose
forward runs the recursion in numpy (float64) and whose backward is the exact adjoint,
run backwards over the same steps: with a = K p(1-p) c and g = lambda_i - lambda_j,
dL/dK = g (s - p), dL/ds = g K, lambda_i -= a g, lambda_j += a g.  That is the gradient
autograd would compute through 9,000 small steps, without 9,000 graph nodes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EloConfig:
    """Elo constants: baseline K, initial rating and the logistic scale (points per 10x odds)."""

    k: float = 32.0
    initial: float = 1200.0
    scale: float = 400.0

    @property
    def c(self) -> float:
        """Logit per rating point: p_hat = sigma(c (R_i - R_j))."""
        return math.log(10.0) / self.scale

    @classmethod
    def from_dict(cls, d: dict | None) -> EloConfig:
        d = dict(d or {})
        return cls(k=float(d.get("k", 32.0)), initial=float(d.get("initial", 1200.0)),
                   scale=float(d.get("scale", 400.0)))


@dataclass(frozen=True)
class Schedule:
    """The seeded update order shared by all judges.

    ``prompts[s]`` is the prompt of round ``s``; ``first[s, h]`` / ``second[s, h]`` the models
    shown as A and B in slot ``h`` (``n_models`` is the bye, a dummy column); ``valid`` marks
    real comparisons; ``prompt_end[s]`` is True on the last round of a prompt (trajectory
    points are taken there).
    """

    prompts: np.ndarray  # (S,) int
    first: np.ndarray  # (S, H) int
    second: np.ndarray  # (S, H) int
    valid: np.ndarray  # (S, H) bool
    prompt_end: np.ndarray  # (S,) bool
    n_models: int

    @property
    def n_rounds(self) -> int:
        return int(self.prompts.shape[0])

    @property
    def width(self) -> int:
        return int(self.first.shape[1])

    @property
    def n_comparisons(self) -> int:
        return int(self.valid.sum())


def _circle_rounds(n: int) -> list[list[tuple[int, int]]]:
    """Round-robin rounds of disjoint pairs (circle method); n must be even."""
    players = list(range(n))
    rounds = []
    for _ in range(n - 1):
        rounds.append([(players[i], players[n - 1 - i]) for i in range(n // 2)])
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


def make_schedule(prompt_ids: Sequence[int] | np.ndarray, n_models: int, seed: int) -> Schedule:
    """The update order for ``prompt_ids`` (see module docstring); deterministic in ``seed``."""
    if n_models < 2:
        raise ValueError("an Elo tournament needs at least two models")
    rng = np.random.default_rng(seed)
    n_even = n_models + (n_models % 2)  # add a bye (index n_models) when odd
    base = _circle_rounds(n_even)
    width = n_even // 2
    order = rng.permutation(np.asarray(list(prompt_ids), dtype=int))
    prompts, first, second, valid, ends = [], [], [], [], []
    for p in order:
        labels = np.append(rng.permutation(n_models), n_models) if n_models % 2 else rng.permutation(n_models)
        flips = rng.random((len(base), width)) < 0.5
        legs = []
        for r, rnd in enumerate(base):
            a = [labels[x] for x, _ in rnd]
            b = [labels[y] for _, y in rnd]
            fa = np.where(flips[r], b, a)
            fb = np.where(flips[r], a, b)
            legs.append((fa, fb))
            legs.append((fb, fa))  # the other presentation order of the same pairs
        for idx in rng.permutation(len(legs)):
            fa, fb = legs[idx]
            ok = (fa != n_models) & (fb != n_models)
            fa = np.where(ok, fa, n_models)
            fb = np.where(ok, fb, n_models)
            prompts.append(p)
            first.append(fa)
            second.append(fb)
            valid.append(ok)
            ends.append(False)
        ends[-1] = True
    return Schedule(
        prompts=np.asarray(prompts, dtype=int), first=np.asarray(first, dtype=int),
        second=np.asarray(second, dtype=int), valid=np.asarray(valid, dtype=bool),
        prompt_end=np.asarray(ends, dtype=bool), n_models=n_models,
    )


def gather_outcomes(scores: np.ndarray, sched: Schedule) -> np.ndarray:
    """Per round and slot, each judge's score for the model shown first.

    ``scores[p, i, j, k]`` is judge k's score of model i when i was shown as A and j as B
    (1 win, 0.5 tie, 0 loss, NaN no usable verdict).  Returns (S, M, H); NaN where the
    comparison is a bye or has no verdict.
    """
    P, N, _, M = scores.shape
    if N != sched.n_models:
        raise ValueError(f"scores cover {N} models, the schedule {sched.n_models}")
    padded = np.full((P, N + 1, N + 1, M), np.nan)
    padded[:, :N, :N, :] = scores
    out = padded[sched.prompts[:, None], sched.first, sched.second, :]  # (S, H, M)
    return np.ascontiguousarray(out.transpose(0, 2, 1))


def elo_forward(K: np.ndarray, s: np.ndarray, sched: Schedule, c: float, initial: float, n_judges: int,
                keep_p: bool, trajectory: bool) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Run the recursion. K, s: (S, M, H) float64 (K = 0 where there is no comparison)."""
    from scipy.special import expit  # here, not at the top: the query jobs import this module's config only

    R = np.full((n_judges, sched.n_models + 1), initial, dtype=np.float64)
    S = sched.n_rounds
    P = np.empty_like(K) if keep_p else None
    traj = [R[:, : sched.n_models].copy()] if trajectory else None
    for t in range(S):
        fi = sched.first[t]
        se = sched.second[t]
        diff = R[:, fi] - R[:, se]
        p = expit(c * diff)
        d = K[t] * (s[t] - p)
        R[:, fi] += d
        R[:, se] -= d
        if P is not None:
            P[t] = p
        if traj is not None and sched.prompt_end[t]:
            traj.append(R[:, : sched.n_models].copy())
    return R[:, : sched.n_models], P, (np.stack(traj, axis=1) if traj is not None else None)


def elo_adjoint(gR: np.ndarray, K: np.ndarray, s: np.ndarray, P: np.ndarray, sched: Schedule,
                c: float) -> tuple[np.ndarray, np.ndarray]:
    """Adjoint of :func:`elo_forward`: gradients of the loss w.r.t. K and s."""
    lam = np.zeros((gR.shape[0], sched.n_models + 1), dtype=np.float64)
    lam[:, : sched.n_models] = gR
    gK = np.empty_like(K)
    gs = np.empty_like(s)
    for t in range(sched.n_rounds - 1, -1, -1):
        fi = sched.first[t]
        se = sched.second[t]
        p = P[t]
        g = lam[:, fi] - lam[:, se]
        gK[t] = g * (s[t] - p)
        gs[t] = g * K[t]
        a = g * K[t] * p * (1.0 - p) * c
        lam[:, fi] -= a
        lam[:, se] += a
    return gK, gs


def run_elo(K: np.ndarray, s: np.ndarray, sched: Schedule, cfg: EloConfig) -> tuple[np.ndarray, np.ndarray]:
    """Final ratings (M, N) and trajectories (M, prompts + 1, N) for given K and s (S, M, H)."""
    R, _, traj = elo_forward(np.asarray(K, dtype=np.float64), np.asarray(s, dtype=np.float64), sched, cfg.c,
                             cfg.initial, K.shape[1], keep_p=False, trajectory=True)
    assert traj is not None  # trajectory=True
    return R, traj


def baseline_elo(outcomes: np.ndarray, sched: Schedule, cfg: EloConfig) -> tuple[np.ndarray, np.ndarray]:
    """Baseline Elo (Eq. 1, constant K) of every judge from gathered outcomes (S, M, H)."""
    mask = ~np.isnan(outcomes)
    K = np.where(mask, cfg.k, 0.0)
    s = np.where(mask, outcomes, 0.5)
    return run_elo(K, s, sched, cfg)
