"""Top-k-aware active acquisition of pairwise comparisons (paper 002, Sec. 4 and Alg. 1).

The loop (:func:`run_active`) spends a budget of comparisons one at a time.  Every
``refit_every`` acquisitions (paper: 8) it refits the Laplace posterior of the acquisition
model (bias-aware or naive, :mod:`judgelab.ranking.bias_aware`, warm-started) and estimates
the top-k membership probabilities ``p_i`` from ``S`` posterior draws (paper: 1500).  A rule
then picks the next *unordered* pair among those not yet queried; the pair is shown in a
random order (recorded), and the judge's verdict is revealed.

Rules are a registry (:data:`ACQUISITION_RULES`), so a new rule is one entry.  Score rules
multiply factors of Eq. (3),

    s(i, j) = p_ij (1 - p_ij)  x  (Sigma_ii + Sigma_jj - 2 Sigma_ij)  x  (H(p_i) + H(p_j))
              informativeness      Var(theta_i - theta_j)                 boundary relevance

with ``p_ij = sigma(theta_i - theta_j)`` and ``H`` the binary entropy:

=================== ======================================= ===============================
``topk``            all three factors (the paper's rule)
``global``          informativeness x variance              global uncertainty (D-optimal);
                                                            also the "no boundary" ablation
``no_variance``     informativeness x boundary              ablation (Fig. 5)
``no_informativeness`` variance x boundary                  ablation (Fig. 5)
``entropy``         boundary only                           "entropy-only"
``round_robin``     a circle-method tournament schedule     spreads effort uniformly
``random``          uniform over unqueried pairs
=================== ======================================= ===============================

Ties in a score are broken uniformly at random, so the rules differ only in what they
score.  All randomness comes from the run's generator (the strategy seed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.special import entr, expit

from judgelab.ranking.bias_aware import Comparisons, Fit, FitOptions, fit_bias_aware
from judgelab.registry import Registry


def binary_entropy(p: np.ndarray) -> np.ndarray:
    """H(p) in nats (0 at p in {0, 1}, log 2 at 1/2)."""
    p = np.asarray(p, dtype=float)
    return entr(p) + entr(1.0 - p)


@dataclass
class Posterior:
    """What a rule may read: the acquisition model's fit and membership probabilities (the fit
    without its identifiability check, which no rule reads)."""

    fit: Fit
    membership: np.ndarray
    k: int


@dataclass
class PairSpace:
    """All unordered pairs ``(i[m], j[m])`` with ``i < j``, and which are still unqueried."""

    n_items: int
    i: np.ndarray = field(init=False)
    j: np.ndarray = field(init=False)
    open: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.i, self.j = np.triu_indices(self.n_items, 1)
        self.open = np.ones(len(self.i), dtype=bool)

    def index(self, a: int, b: int) -> int:
        lo, hi = min(a, b), max(a, b)
        n = self.n_items
        return lo * n - lo * (lo + 1) // 2 + (hi - lo - 1)


class AcquisitionRule:
    """Chooses the next unordered pair (an index into :class:`PairSpace`)."""

    name: str = ""
    needs_posterior: bool = True
    #: False for a rule that reads no top-k membership probabilities (``Posterior.membership``
    #: is then NaN): the loop still draws the posterior samples' normals, so the run's later
    #: draws stay where they were, but skips the factor, the product and the top-k counts.
    needs_membership: bool = True

    def start(self, space: PairSpace, rng: np.random.Generator) -> None:
        """Called once per run before the first choice."""

    def rescore(self, post: Posterior, space: PairSpace) -> None:
        """Called after every refit."""

    def choose(self, space: PairSpace, rng: np.random.Generator) -> int:
        raise NotImplementedError


def _argmax_random_tie(scores: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
    """Index of the best score among ``mask``; ties broken uniformly with ``rng``.

    A score within ``1e-12 * max(1, |best|)`` of the best (inclusive) ties with it: the
    factors of Eq. (3) are products of floats, and pairs that score the same in exact
    arithmetic may differ in the last bits.  A unique best draws nothing from ``rng``, so
    the run's later draws (presentation orders) stay aligned across rules.
    """
    idx = np.flatnonzero(mask)
    s = scores[idx]
    best = s.max()
    tol = 1e-12 * max(1.0, abs(best))
    ties = idx[s >= best - tol]
    return int(ties[0] if len(ties) == 1 else rng.choice(ties))


FACTORS = ("informativeness", "variance", "boundary")


class ScoreRule(AcquisitionRule):
    """Greedy argmax of a product of Eq. (3)'s factors over unqueried pairs.

    The posterior changes only at refits, so scores are computed once per refit over all
    pairs; between refits the argmax runs over the pairs still open.
    """

    def __init__(self, name: str, factors: Sequence[str]) -> None:
        unknown = set(factors) - set(FACTORS)
        if unknown or not factors:
            raise ValueError(f"rule {name!r}: factors must be a non-empty subset of {FACTORS}")
        self.name = name
        self.factors = tuple(factors)
        self.needs_membership = "boundary" in self.factors
        self.scores: np.ndarray | None = None

    def rescore(self, post: Posterior, space: PairSpace) -> None:
        th = post.fit.theta
        i, j = space.i, space.j
        s = np.ones(len(i))
        if "informativeness" in self.factors:
            p = expit(th[i] - th[j])
            s *= p * (1.0 - p)
        if "variance" in self.factors:
            sig = post.fit.sigma
            s *= np.maximum(sig[i, i] + sig[j, j] - 2.0 * sig[i, j], 0.0)
        if "boundary" in self.factors:
            h = binary_entropy(post.membership)
            s *= h[i] + h[j]
        self.scores = s

    def choose(self, space: PairSpace, rng: np.random.Generator) -> int:
        assert self.scores is not None, "rescore() must run before choose()"
        return _argmax_random_tie(self.scores, space.open, rng)


class RandomRule(AcquisitionRule):
    name = "random"
    needs_posterior = False

    def choose(self, space: PairSpace, rng: np.random.Generator) -> int:
        return int(rng.choice(np.flatnonzero(space.open)))


class RoundRobinRule(AcquisitionRule):
    """Circle-method round robin: every round compares each item once; rounds and the
    matches within a round are shuffled by the run's generator."""

    name = "round_robin"
    needs_posterior = False

    def start(self, space: PairSpace, rng: np.random.Generator) -> None:
        n = space.n_items
        slots = list(range(n)) + ([-1] if n % 2 else [])  # -1 is a bye
        m = len(slots)
        rounds = []
        for _ in range(m - 1):
            matches = [(slots[r], slots[m - 1 - r]) for r in range(m // 2)]
            rounds.append([space.index(a, b) for a, b in matches if a >= 0 and b >= 0])
            slots = [slots[0], slots[-1], *slots[1:-1]]
        order: list[int] = []
        for r in rng.permutation(len(rounds)):
            order.extend(int(x) for x in rng.permutation(rounds[r]))
        self.schedule = order
        self._pos = 0

    def choose(self, space: PairSpace, rng: np.random.Generator) -> int:
        while self._pos < len(self.schedule) and not space.open[self.schedule[self._pos]]:
            self._pos += 1
        if self._pos >= len(self.schedule):
            return int(rng.choice(np.flatnonzero(space.open)))
        return self.schedule[self._pos]


ACQUISITION_RULES: Registry[Callable[[], AcquisitionRule]] = Registry("acquisition rule")
ACQUISITION_RULES.add("topk", lambda: ScoreRule("topk", FACTORS))
ACQUISITION_RULES.add("global", lambda: ScoreRule("global", ("informativeness", "variance")))
ACQUISITION_RULES.add("no_variance", lambda: ScoreRule("no_variance", ("informativeness", "boundary")))
ACQUISITION_RULES.add("no_informativeness", lambda: ScoreRule("no_informativeness", ("variance", "boundary")))
ACQUISITION_RULES.add("entropy", lambda: ScoreRule("entropy", ("boundary",)))
ACQUISITION_RULES.add("round_robin", RoundRobinRule)
ACQUISITION_RULES.add("random", RandomRule)


def make_rule(name: str) -> AcquisitionRule:
    return ACQUISITION_RULES.get(name, where="topk acquisition")()


@dataclass(frozen=True)
class ActiveSettings:
    """Alg. 1's knobs: target k, refit period, membership draws, acquisition-model prior."""

    k: int = 5
    refit_every: int = 8
    n_samples: int = 1500
    options: FitOptions = field(default_factory=FitOptions)


@dataclass
class ActiveRun:
    """The queries of one run in acquisition order.

    ``y`` is 1/0 for a usable verdict on the shown order and NaN for a query that got no
    usable verdict (it still spent budget).  ``n_refits`` counts Laplace refits.
    """

    first: np.ndarray
    second: np.ndarray
    y: np.ndarray
    n_refits: int

    def revealed(self, budget: int) -> Comparisons:
        """Usable comparisons among the first ``budget`` queries."""
        f, s, y = self.first[:budget], self.second[:budget], self.y[:budget]
        ok = ~np.isnan(y)
        return Comparisons(f[ok], s[ok], y[ok])

    def allocation(self, budget: int, n_items: int) -> np.ndarray:
        """How many of the first ``budget`` queries involved each item."""
        return (np.bincount(self.first[:budget], minlength=n_items)
                + np.bincount(self.second[:budget], minlength=n_items))


Oracle = Callable[[int, int], float]


def unread_membership(n_items: int, k: int, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """What a rule that reads no membership gets: NaN, after the very draws
    :func:`~judgelab.ranking.bias_aware.topk_membership` takes from ``rng`` (``n_samples x n_items``
    standard normals, none when ``k`` is not between 0 and ``n_items``), so the presentation
    orders and tie-breaks after it are the ones a full membership estimate leaves."""
    if 0 < k < n_items:
        rng.standard_normal((n_samples, n_items))
    return np.full(n_items, np.nan)


def run_active(
    oracle: Oracle,
    n_items: int,
    X: np.ndarray | None,
    rule: AcquisitionRule,
    budget: int,
    settings: ActiveSettings,
    rng: np.random.Generator,
) -> ActiveRun:
    """Alg. 1: acquire ``budget`` comparisons with ``rule``.

    ``oracle(first, second)`` returns 1.0 if the judge prefers the first-shown item, 0.0
    if the second, NaN if it gave no usable verdict.  The budget is capped at the number
    of unordered pairs.
    """
    space = PairSpace(n_items)
    budget = min(int(budget), len(space.i))
    rule.start(space, rng)
    first = np.zeros(budget, dtype=np.int64)
    second = np.zeros(budget, dtype=np.int64)
    y = np.full(budget, np.nan)
    beta = None
    n_refits = 0
    for t in range(budget):
        if rule.needs_posterior and t % settings.refit_every == 0:
            ok = ~np.isnan(y[:t])
            comp = Comparisons(first[:t][ok], second[:t][ok], y[:t][ok])
            fit = fit_bias_aware(comp, n_items, X, options=settings.options, x0=beta, warn=False, identify=False)
            beta = fit.beta
            n_refits += 1
            if rule.needs_membership:
                membership = fit.membership(settings.k, settings.n_samples, rng)
            else:
                membership = unread_membership(n_items, settings.k, settings.n_samples, rng)
            post = Posterior(fit, membership, settings.k)
            rule.rescore(post, space)
        m = rule.choose(space, rng)
        space.open[m] = False
        a, b = int(space.i[m]), int(space.j[m])
        if rng.random() < 0.5:  # randomised presentation order (identifies kappa)
            a, b = b, a
        first[t], second[t] = a, b
        y[t] = oracle(a, b)
    return ActiveRun(first, second, y, n_refits)
