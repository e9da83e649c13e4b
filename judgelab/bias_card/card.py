"""The bias card: one row per judge x view x metric, from recorded verdicts alone (no judge call).

Input is a recorded verdict table (:mod:`judgelab.verdict_import.importer`; judgelab's
own verdict tables import through the ``judgelab`` preset).  Columns of
``bias_card.csv``:

============== ===================================================================
judge, family  the judge and its model family
view           ``strict``: the source's published extraction: recorded labels as
               written, texts in a format with a published rule re-read with it
               (:func:`judgelab.bias_card.prepare._strict_verdicts`), ``fallback`` verdicts unparsed.
               ``lenient``: ``ok`` and ``fallback`` verdicts (judgelab's parser)
metric         see :data:`METRICS`
status         detected / not detected / underpowered / not estimable / not identified
               (tested metrics), descriptive or not estimable (rates without a null)
estimate       the point estimate on the metric's own scale
ci_low/high    item-clustered CI (``item_id``: the question).  Shares and the position
               score: Wilson interval on the effective n (n / design effect, the design
               effect from the cluster-robust variance over items), which never has zero
               width; the order gap: gap +- z se of its clustered McNemar test; the
               Arena-Hard score: percentile cluster bootstrap; logistic coefficients:
               cluster-robust Wald
se             the standard error the test uses (binomial/score tests: under the null on
               the effective n; McNemar: clustered; Wald: cluster-robust); rates without
               a test: the Wilson half-width over z
null_value     the value of "no bias" / chance the test compares with
n              units the estimate uses (games, pairs or decisive verdicts)
n_items        clusters (distinct items) behind them
share          n over the units it could have used
n_parsed       verdicts with a value (A, B or tie) in this view, and
parsed_share   their share of all calls: position, length, markdown and self
               preferences are computed over parsed verdicts only
test           binomial (design-effect adjusted), score (position), mcnemar-cluster
               (Durkalski's clustered McNemar over items), wald-cluster, t-cluster (a cue
               share read against gold: :func:`excess_over_gold`), or none
statistic      the test statistic (successes, z, chi-square, t)
p_value        two-sided
p_adjusted     the p-value adjusted within its judge's and view's family of tested rows
               (``CardSettings.multiplicity``: Holm by default; :func:`finish_rows`); NaN
               outside the family (descriptive, not estimable, not identified rows)
test_family    the correction and the family's rows ("holm over 8 tests: ..."), "" outside it
mde            minimum detectable effect at the card's alpha and power (metric scale,
               distance from null_value; for untested rates the CI half-width)
underpowered   True when the row is not estimable, or the test did not reject its null
               and the mde exceeds the metric's threshold (:data:`METRICS`)
estimable      False when separation, collinearity, zero variance, a zero or non-finite
               standard error, or fewer than ``CardSettings.min_decisive`` decisive
               verdicts leave nothing to test; ``reason`` says which
identified     False when the design cannot separate the bias from something else
               (one presentation order: position mixes with gold; self preference:
               own-family responses may simply be better); such rows never reach the
               headline
reason, note   why a row is not estimable / not identified; what to keep in mind
simulated      True when the verdicts come from the simulated panel
============== ===================================================================

A row is *detected* only when it is estimable and identified, its standard error is
finite and non-zero, its CI excludes the null and its adjusted p-value is below ``alpha``; the CI's
level is ``1 - alpha`` (:attr:`CardSettings.confidence`), so a larger alpha never detects fewer
rows (both conditions only loosen as alpha grows).  No
exception raised while computing one statistic ends the card: the row is kept, not
estimable, with the exception as its reason.

Conventions: accuracy counts a missing verdict as wrong (LLMBar's convention, so the
card of a replayed LLMBar judge equals the authors' ``statistics.json``); the position
preference ``b`` is paper 003's signed score (:func:`judgelab.stats.bias.bias_score`)
over parsed verdicts, ties in the denominator; the length/markdown/self preferences are,
where the log has gold, the judge's share of the cue's side minus gold's own share among
decisive verdicts on pairs that differ in that cue by the stated margin (tested against
cue-blind errors, :func:`excess_over_gold`; ``*_error_share`` the share of errors that pick
the cue, ``*_share_raw`` the raw share, descriptive), and without gold the raw share against 0.5; the length-controlled view is a
logistic regression of "picks the response shown first" on the log2 length ratio, the
markdown difference and gold, with item-clustered standard errors.

Every test is clustered like its CI: binomial tests use the effective n (design effect
at least :data:`judgelab.stats.clustered.DEFF_FLOOR` with two or more items, 1 with one item, where no clustered
variance exists); the order gap uses the clustered McNemar test of Durkalski et al.
(2003, Stat Med 22:1417), which equals McNemar's (uncorrected) with one pair per item.

Benchmarks' own metrics: ``judgebench_accuracy`` (JudgeBench's pair score from its two
games) and ``arena_hard_score`` (Arena-Hard's two-game aggregation); see
:func:`judgebench_pair_correct` and :func:`arena_hard_pair_scores`.

Scale: clustered variances come from per-item sums (O(rows)); bootstrap resamples are
drawn in chunks of at most ``CardSettings.chunk_cells`` item indices, never a full
resamples x items matrix.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from dataclasses import replace as dc_replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest, chi2, norm
from scipy.stats import t as student_t

from judgelab.bias_card.codes import is_any, judge_tables, per_unique
from judgelab.bias_card.prepare import VIEWS, _first_row_per_pair, _Log, _prepare
from judgelab.bias_card.settings import check as check_settings
from judgelab.bias_card.settings import setting
from judgelab.io import any_true
from judgelab.stats.clustered import (
    DEFF_FLOOR,
    _binomial_mde,
    _cluster_codes,
    _n_distinct,
    _share_stats,
)
from judgelab.stats.intervals import wilson_interval
from judgelab.stats.mcnemar import mcnemar_mde

#: strict: the source's published extraction; lenient: judgelab's parser (ok + fallback)
#: multiplicity corrections of a judge's family of tests (statsmodels ``multipletests`` methods, and none)
MULTIPLICITY = ("holm", "bh", "none")
_MULTIPLETESTS = {"holm": "holm", "bh": "fdr_bh"}
STATUSES = ("detected", "not detected", "underpowered", "not estimable", "not identified", "descriptive")

CARD_COLUMNS = ["judge", "family", "view", "metric", "status", "estimate", "ci_low", "ci_high", "se", "null_value",
                "n", "n_items", "share", "n_parsed", "parsed_share", "test", "statistic", "p_value", "p_adjusted",
                "test_family", "mde", "underpowered", "estimable", "identified", "reason", "note", "simulated"]

NAN = float("nan")


@dataclass(frozen=True)
class Metric:
    """A card metric: its scale, the effect size below which a miss is acceptable, and its kind.

    ``kind`` decides where the row may appear: only ``bias`` rows reach the card's
    "Biases detected" headline; ``accuracy`` rows are tested against chance; ``conditional``
    rows (the share of a judge's errors that go to a cue's side) are tested and in the
    multiplicity family, but a second reading of their bias row, not a headline of their own;
    ``rate`` and ``benchmark`` rows are descriptive.
    """

    scale: str
    threshold: float
    description: str
    kind: str


METRICS: dict[str, Metric] = {
    "accuracy_AB": Metric("proportion", 0.10, "accuracy vs gold, shown in the stored order (binomial vs 0.5)",
                          "accuracy"),
    "accuracy_BA": Metric("proportion", 0.10, "accuracy vs gold, shown swapped", "accuracy"),
    "accuracy_average": Metric("proportion", 0.10, "accuracy vs gold over both orders", "accuracy"),
    "correct_both": Metric("proportion", 0.10, "share of pairs correct in both orders", "rate"),
    "judgebench_accuracy": Metric("proportion", 0.10, "JudgeBench pair score: the two games' decisive verdicts "
                                  "vote, a tie defers, inconsistent pairs count wrong", "benchmark"),
    "arena_hard_score": Metric("proportion", 0.10, "Arena-Hard score of stored B vs stored A: both games, strong "
                               "verdicts (>>) weighted 3", "benchmark"),
    "accuracy_order_gap": Metric("difference", 0.10, "accuracy swapped minus stored (McNemar clustered by item)",
                                 "bias"),
    "positional_agreement": Metric("proportion", 0.10, "same verdict in both orders, pairs with a verdict in both",
                                   "rate"),
    "positional_agreement_all": Metric("proportion", 0.10, "LLMBar 'equal': same verdict (or none) in both orders",
                                       "rate"),
    "position_preference": Metric("b", 0.20, "b = P(picks slot shown first) - P(picks slot shown second), parsed "
                                  "verdicts", "bias"),
    "length_preference": Metric("proportion", 0.10, "with gold: P(picks the longer) minus gold's own share on the "
                                "same decisive verdicts (length ratio >= 1+margin), tested against what errors blind "
                                "to length give; without gold: P(picks the longer) against 0.5", "bias"),
    "length_error_share": Metric("proportion", 0.10, "share of the judge's errors against gold that pick the longer, "
                                 "against the share of eligible pairs where an error would", "conditional"),
    "length_share_raw": Metric("proportion", 0.10, "P(picks the longer) among decisive verdicts, raw (mixes the cue "
                               "with gold's own balance)", "rate"),
    "length_controlled": Metric("log_odds", 0.50, "log-odds per doubling of length, controlling position, markdown, "
                                "gold", "bias"),
    "markdown_preference": Metric("proportion", 0.10, "with gold: P(picks the more formatted) minus gold's own "
                                  "share, tested against markdown-blind errors; without gold: against 0.5", "bias"),
    "markdown_error_share": Metric("proportion", 0.10, "share of the judge's errors against gold that pick the more "
                                   "formatted, against the share of eligible pairs where an error would",
                                   "conditional"),
    "markdown_share_raw": Metric("proportion", 0.10, "P(picks the more formatted) among decisive verdicts, raw",
                                 "rate"),
    "markdown_controlled": Metric("log_odds", 0.50, "log-odds per unit markdown score, controlling position, "
                                  "length, gold", "bias"),
    "self_preference": Metric("proportion", 0.10, "with gold: P(picks the judge's own family) minus gold's own "
                              "share where exactly one response is, tested against family-blind errors; without "
                              "gold: against 0.5", "bias"),
    "self_error_share": Metric("proportion", 0.10, "share of the judge's errors against gold that pick its own "
                               "family, against the share of eligible pairs where an error would", "conditional"),
    "self_share_raw": Metric("proportion", 0.10, "P(picks the judge's own family) where exactly one response is, raw",
                             "rate"),
    "tie_rate": Metric("proportion", 0.10, "share of tie verdicts", "rate"),
    "parse_failures": Metric("proportion", 0.10, "share of calls without a verdict (unparsed, refusal, error; "
                             "strict view: fallback too)", "rate"),
    # human anchor and reliability (judgelab.bias_card.humans / .reliability): descriptive rows
    "human_accuracy": Metric("proportion", 0.10, "verdict equals the human label (a missing verdict disagrees)",
                             "rate"),
    "human_kappa": Metric("kappa", 0.10, "Cohen's kappa, judge vs human label (A/B/tie)", "rate"),
    "ppi_win_rate": Metric("proportion", 0.05, "PPI++ human P(stored B preferred), from the labelled pairs and "
                           "the judge on all", "rate"),
    "ppi_share_A": Metric("proportion", 0.05, "PPI++ share of pairs humans give to stored A", "rate"),
    "ppi_share_B": Metric("proportion", 0.05, "PPI++ share of pairs humans give to stored B", "rate"),
    "ppi_share_tie": Metric("proportion", 0.05, "PPI++ share of pairs humans call a tie", "rate"),
    "repetition_consistency": Metric("proportion", 0.10, "mean share of an instance's repetitions giving its most "
                                     "frequent verdict (Position-Bias-Analyzer)", "rate"),
    "judges_kappa": Metric("kappa", 0.10, "agreement between judges: Cohen's (2) / Fleiss' (3+) kappa", "rate"),
}

#: metrics of the whole table (judge ``all judges``), not of one judge's card
PANEL_METRICS = ("judges_kappa",)
#: the metrics of one judge's card (every one of them has a row in :func:`judge_card`)
JUDGE_METRICS = tuple(m for m in METRICS if m not in PANEL_METRICS)


@dataclass(frozen=True)
class CardSettings:
    """Every setting of the card, declared once (judgelab.bias_card.settings): the
    ``judgelab audit`` options and the ``audit_logs.settings`` config keys derive from these
    fields, and a value out of range is refused here, naming the setting."""

    length_margin: float = setting(0.2, "length preference counts pairs whose word counts differ by a factor "
                                   ">= 1 + margin", minimum=0)
    markdown_margin: float = setting(0.25, "markdown preference counts pairs whose markdown scores (0..1) differ "
                                     "by >= this", minimum=0, maximum=1)
    n_resamples: int = setting(1000, "cluster-bootstrap resamples (fewer than 20 give no interval beyond the "
                               "extremes)", key="resamples", minimum=20)
    alpha: float = setting(0.05, "significance level of every test; every confidence interval is at level "
                           "1 - alpha", exclusive_minimum=0, exclusive_maximum=1)
    power: float = setting(0.8, "power of the minimum detectable effects", exclusive_minimum=0,
                           exclusive_maximum=1)
    seed: int = setting(0, "seed of the cluster bootstrap", minimum=0)
    min_decisive: int = setting(10, "tested rows with fewer decisive verdicts (discordant pairs for the order "
                                "gap) are 'not estimable'", minimum=1)
    parse_failure_alert: float = setting(0.2, "the card's headline leads with parse failures above this share "
                                         "of calls", minimum=0, maximum=1)
    max_logit_se: float = setting(10.0, "a logistic coefficient with a larger cluster-robust SE is treated as "
                                  "(quasi-)separated", exclusive_minimum=0)
    chunk_cells: int = setting(2_000_000, "largest resamples x items block one bootstrap chunk draws (bounds "
                               "memory)", minimum=1)
    views: tuple[str, ...] = setting(VIEWS, "lenient: ok + fallback verdicts; strict: ok only, the authors' "
                                     "extraction", choices=VIEWS)
    multiplicity: str = setting("holm", "correction of each judge's and view's family of tested rows: holm "
                                "(family-wise error), bh (false discovery rate, Benjamini-Hochberg) or none; a "
                                "row's status is decided on its adjusted p-value", choices=MULTIPLICITY)
    min_labels_per_side: int = setting(5, "PPI rows with fewer human labels for stored A, or for stored B, are "
                                       "'underpowered'", key="min_labels_per_side", minimum=1)
    controlled_pairs: bool = setting(False, "the log's pairs were built to differ only in the cue (length, "
                                     "markdown, source family), a design no log format records: it identifies "
                                     "the cue rows without gold")

    def __post_init__(self) -> None:
        check_settings(self)

    @property
    def confidence(self) -> float:
        """The CI level, 1 - alpha: a row is detected when its test rejects at alpha *and* its CI
        excludes the null, so the two must be at one level for a larger alpha never to detect less
        (a fixed 95 % CI made alpha 0.2 detect exactly what 0.05 did)."""
        return 1.0 - self.alpha


@dataclass
class CardRow:
    """One metric of one judge and view, before its status is decided (:func:`_finish`)."""

    metric: str
    estimate: float = NAN
    ci_low: float = NAN
    ci_high: float = NAN
    se: float = NAN
    null_value: float = NAN
    n: int = 0
    n_items: int = 0
    share: float = NAN
    test: str = "none"
    statistic: float = NAN
    p_value: float = NAN
    mde: float = NAN
    reason: str = ""
    note: str = ""
    identified: bool = True
    #: why an estimable row rests on too little data to be read (e.g. too few human labels): its status
    #: is then ``underpowered`` whatever its test says
    underpowered_reason: str = ""


# ---------------------------------------------------------------------------------------------
# clustered statistics from per-item sums


def _bootstrap_totals(cols: np.ndarray, s: CardSettings) -> np.ndarray:
    """(n_resamples, m) column totals of cluster resamples of the (k, m) per-cluster totals.

    Drawn in chunks of at most ``s.chunk_cells`` indices so that memory stays bounded for
    a million items.
    """
    k, m = cols.shape
    col = [np.ascontiguousarray(cols[:, j]) for j in range(m)]
    rng = np.random.default_rng(s.seed)
    out = np.empty((s.n_resamples, m))
    chunk = max(1, min(s.n_resamples, s.chunk_cells // max(k, 1)))
    for start in range(0, s.n_resamples, chunk):
        r = min(chunk, s.n_resamples - start)
        idx = rng.integers(0, k, size=(r, k), dtype=np.int32)
        for j in range(m):  # contiguous 1-d gathers, summed along the last axis: the fast path
            out[start:start + r, j] = np.take(col[j], idx).sum(axis=1)
    return out


def cluster_ratio_ci(num: np.ndarray, den: np.ndarray, clusters: np.ndarray, s: CardSettings
                     ) -> tuple[float, float, float, float]:
    """(estimate, low, high, bootstrap variance) of sum(num)/sum(den), resampling whole clusters.

    Hand-written because the statistic is a ratio of cluster totals whose resampled
    denominator can be zero; scipy.stats.bootstrap has no cluster resampling and fails
    on such resamples, here they are dropped (nan-percentiles).  With one cluster the
    interval is NaN: a percentile bootstrap over one item would have zero width.
    """
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    if den.sum() == 0:
        return NAN, NAN, NAN, NAN
    codes, k = _cluster_codes(clusters)
    # the two views of a judge without fallback verdicts resample the same totals: drawn once
    memo_key = (hashlib.sha1(b"".join(np.ascontiguousarray(a).tobytes() for a in (num, den, codes))).hexdigest(),
                len(num), s.n_resamples, s.seed, s.chunk_cells, s.confidence)
    if memo_key in _RATIO_MEMO:
        return _RATIO_MEMO[memo_key]
    out = _cluster_ratio_ci(num, den, codes, k, s)
    if len(_RATIO_MEMO) >= 8:
        _RATIO_MEMO.pop(next(iter(_RATIO_MEMO)))
    _RATIO_MEMO[memo_key] = out
    return out


#: the last few :func:`cluster_ratio_ci` answers, by a hash of their inputs and settings
_RATIO_MEMO: dict[tuple, tuple[float, float, float, float]] = {}


def _cluster_ratio_ci(num: np.ndarray, den: np.ndarray, codes: np.ndarray, k: int, s: CardSettings
                      ) -> tuple[float, float, float, float]:
    cn = np.bincount(codes, weights=num, minlength=k)
    cd = np.bincount(codes, weights=den, minlength=k)
    est = float(cn.sum() / cd.sum())
    if k < 2:
        return est, NAN, NAN, NAN
    tot = _bootstrap_totals(np.column_stack([cn, cd]), s)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = np.where(tot[:, 1] != 0, tot[:, 0] / tot[:, 1], NAN)  # x / 0 dropped like 0 / 0, not inf
    a = (1 - s.confidence) / 2
    lo, hi = np.nanquantile(boot, [a, 1 - a])
    return est, float(lo), float(hi), float(np.nanvar(boot))


def _wilson(est: float, n_eff: float, s: CardSettings, k: int = 0) -> tuple[float, float]:
    """Wilson's interval on the effective n; with k >= 2 clusters its z is Student's t on k - 1 df.

    The t critical value is the usual small-sample correction of cluster-robust
    inference (Cameron & Miller 2015, J Hum Resour 50:317): the clustered variance is
    estimated from only k cluster totals.
    """
    return wilson_interval(est * n_eff, n_eff, confidence=s.confidence, clusters=k)


def binomial_mde(n: float, p0: float, s: CardSettings) -> float:
    """Smallest p - p0 a two-sided test on n trials detects (Cohen's h, statsmodels power)."""
    return _binomial_mde(int(n), float(p0), s.alpha, s.power)


# ---------------------------------------------------------------------------------------------
# rows


def _row_reason(r: CardRow) -> str:
    """Why a row is not estimable ("" when it is): its own reason, else no estimate, else (tested rows)
    a zero or non-finite standard error or no p-value."""
    if r.reason:
        return r.reason
    if not math.isfinite(r.estimate):
        return "no estimate"
    if r.test != "none":
        if not (math.isfinite(r.se) and r.se > 0):
            return f"standard error {r.se:.3g}: the test has nothing to go on"
        if not math.isfinite(r.p_value):
            return "no p-value"
    return ""


def in_family(r: CardRow) -> bool:
    """Whether a row belongs to its judge's and view's multiplicity family: a tested row that could be
    detected (estimable, identified, with a p-value).  Descriptive, not estimable and not identified
    rows test nothing the card could report, so they are outside it."""
    return r.test != "none" and r.identified and not r.underpowered_reason and not _row_reason(r)


def adjust_p_values(p_values: list[float], method: str) -> list[float]:
    """The family's p-values adjusted by ``method`` (:data:`MULTIPLICITY`): Holm's step-down, or
    Benjamini-Hochberg's step-up (statsmodels ``multipletests``); ``none`` returns them as they are.

    Holm's step-down is written out (sorted p times m, m - 1, ..., 1, running maximum, capped at 1)
    because statsmodels' Holm branch calls ``gc.collect()`` on every call: a tenth of a second per
    judge and view on the heap of a loaded card.  ``tests/test_bias_card_multiplicity.py`` checks it
    equals ``multipletests(method="holm")``."""
    if method == "none" or not p_values:
        return list(p_values)
    if method == "holm":
        p = np.asarray(p_values, float)
        order = np.argsort(p, kind="stable")
        stepped = np.minimum(1.0, np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1)))
        out = np.empty_like(p)
        out[order] = stepped
        return [float(x) for x in out]
    from statsmodels.stats.multitest import multipletests

    return [float(x) for x in multipletests(np.asarray(p_values, float), method=_MULTIPLETESTS[method])[1]]


def _finish(r: CardRow, s: CardSettings, p_adjusted: float = NAN) -> dict:
    """Decide estimable / status / underpowered of a row; the only place a row can become 'detected'.

    A tested row is decided on ``p_adjusted`` (its p-value adjusted within its family,
    :func:`adjust_p_values`), and on its raw p-value when it is outside the family (NaN)."""
    spec = METRICS[r.metric]
    reason = _row_reason(r)
    estimable = not reason
    if r.test == "none":
        half = (r.ci_high - r.ci_low) / 2 if math.isfinite(r.ci_high) and math.isfinite(r.ci_low) else NAN
        status = "descriptive" if estimable else "not estimable"
        under = not estimable or not half <= spec.threshold
        mde = half
    else:
        p_decide = p_adjusted if math.isfinite(p_adjusted) else r.p_value
        excludes = (math.isfinite(r.ci_low) and math.isfinite(r.ci_high)
                    and not r.ci_low <= r.null_value <= r.ci_high)
        rejected = estimable and p_decide < s.alpha and excludes
        under = not estimable or (not rejected and (math.isnan(r.mde) or abs(r.mde) > spec.threshold))
        mde = r.mde
        if not estimable:
            status = "not estimable"
        elif not r.identified:
            status = "not identified"
        elif rejected:
            status = "detected"
        elif under:
            status = "underpowered"
        else:
            status = "not detected"
    if estimable and r.underpowered_reason:
        status, under = "underpowered", True
        reason = r.underpowered_reason
    out = asdict(r)
    out.pop("underpowered_reason")
    out.update(reason=reason, status=status, estimable=estimable, underpowered=bool(under), mde=mde, n=int(r.n),
               n_items=int(r.n_items), p_adjusted=p_adjusted, test_family="")
    return out


def family_mde_factor(m: int, s: CardSettings) -> float:
    """How much a row's minimum detectable effect grows when its test is one of ``m`` corrected together.

    A corrected row is detected when its adjusted p-value is below alpha; Holm's adjusted p is at
    most m p (Bonferroni), so an effect detected with the stated power at level alpha / m is detected
    with at least that power whatever the other rows' p-values (Benjamini-Hochberg rejects at least
    what Bonferroni does, so the same bound holds).  The MDEs are (z_a + z_power) se in the normal
    approximation, so the factor is (z_{alpha/2m} + z_power) / (z_{alpha/2} + z_power); 1 without
    correction."""
    if s.multiplicity == "none" or m <= 1:
        return 1.0
    zp = float(norm.ppf(s.power))
    return (float(norm.ppf(1 - s.alpha / (2 * m))) + zp) / (float(norm.ppf(1 - s.alpha / 2)) + zp)


def finish_rows(rows: list[CardRow], s: CardSettings) -> list[dict]:
    """The rows of one judge and view with their statuses, the family's p-values adjusted together
    (``s.multiplicity``); each family row names the family in ``test_family``, and its MDE is the one
    at the family's Bonferroni level (:func:`family_mde_factor`), so the stated power holds for the
    adjusted decision."""
    fam = [i for i, r in enumerate(rows) if in_family(r)]
    adj = dict(zip(fam, adjust_p_values([rows[i].p_value for i in fam], s.multiplicity), strict=True))
    factor = family_mde_factor(len(fam), s)
    rows = [dc_replace(r, mde=r.mde * factor) if i in adj else r for i, r in enumerate(rows)]
    label = (f"{s.multiplicity} over {len(fam)} tests: " + ", ".join(rows[i].metric for i in fam)) if fam else ""
    out = []
    for i, r in enumerate(rows):
        d = _finish(r, s, adj.get(i, NAN))
        if i in adj:
            d["test_family"] = label
        out.append(d)
    return out


def _share_row(metric: str, mask: np.ndarray, success: np.ndarray, items: np.ndarray, s: CardSettings, *,
               null: float | None, share_of: int, note: str = "", identified: bool = True) -> CardRow:
    """A share with its clustered Wilson CI; with ``null``, the design-effect adjusted binomial test."""
    mask = np.asarray(mask, dtype=bool)
    n = int(mask.sum())
    row = CardRow(metric, null_value=NAN if null is None else null, test="none" if null is None else "binomial",
                  share=n / share_of if share_of else NAN, note=note, identified=identified)
    if n == 0:
        row.reason = "no eligible verdicts"
        return row
    y = np.asarray(success)[mask].astype(float)  # the masked rows only: no float copy of every row
    est, _, n_eff, k = _share_stats(y, items[mask], 1.0 if null is None else DEFF_FLOOR)
    lo, hi = _wilson(est, n_eff, s, k)
    row.estimate, row.ci_low, row.ci_high, row.n, row.n_items = est, lo, hi, n, k
    z = norm.ppf(1 - (1 - s.confidence) / 2)
    if null is None:
        row.se = (hi - lo) / (2 * z)
        return row
    n_int = max(1, round(n_eff))
    succ = round(est * n_int)
    row.statistic = float(succ)
    row.p_value = float(binomtest(succ, n_int, null).pvalue)
    row.se = math.sqrt(null * (1 - null) / n_eff)
    row.mde = binomial_mde(n_int, null, s)
    if n < s.min_decisive:
        row.reason = f"fewer than {s.min_decisive} verdicts to test ({n})"
    return row


def excess_over_gold(judge_cue: np.ndarray, gold_cue: np.ndarray, items: np.ndarray, s: CardSettings
                     ) -> dict[str, Any]:
    """A judge's cue share read against gold's, on the same decisive verdicts (each with gold).

    ``judge_cue`` / ``gold_cue``: the verdict / the gold label is the cue's side (longer, more
    formatted, own family).  The estimate is the paired excess, judge share minus gold share,
    = (c_s - c_l) / n with c_s the errors on pairs where gold is on the other side (an error
    there picks the cue) and c_l the errors on pairs where gold is on the cue's side.

    Why not test the excess against 0: a judge whose errors ignore the cue (error rate e on
    both kinds of pair) reads e (1 - 2 g) below gold's share g, since its errors move the share
    toward 0.5; on a log where gold favours the cue 60 % of the time, a noisy but cue-blind
    judge would be "detected" with a negative preference.  The null value is therefore that
    expectation at the observed error rate, ebar (1 - 2 g), and the excess beyond it is exactly
    2 g (1 - g) (e_s - e_l): the difference of the two conditional error rates, gold's sides
    fixed by the design.  The test's variance (``se``) is the item-clustered (CR0, linearised)
    variance of e_s - e_l under the null e_s = e_l = ebar (a score-type variance: it stays
    positive when every error goes one way, where a Wald variance collapses), times
    (2 g (1 - g))^2, with Student's t on items - 1 df.  The interval (``se_excess``) is the
    excess's own: the item-clustered (CR0) Wald variance of the per-verdict differences
    judge - gold, so it covers the population excess (gold's share, the error rate and the
    cue effect all vary from log to log).  Hand-written because no library offers a clustered
    two-proportion score test on per-item sums.
    """
    jc, gc = np.asarray(judge_cue, bool), np.asarray(gold_cue, bool)
    n = len(jc)
    out: dict[str, Any] = {"estimate": NAN, "null": NAN, "se": NAN, "se_excess": NAN, "k": 0, "n": n, "errors_to_cue": 0, "errors_away": 0,
           "gold_share": NAN, "reason": ""}
    if n == 0:
        out["reason"] = "no eligible verdicts"
        return out
    err = jc != gc
    codes, k = _cluster_codes(items)
    n_l = int(gc.sum())
    n_s = n - n_l
    c_s, c_l = int(np.count_nonzero(err & ~gc)), int(np.count_nonzero(err & gc))
    g = n_l / n
    out.update(estimate=(c_s - c_l) / n, gold_share=g, k=k, errors_to_cue=c_s, errors_away=c_l)
    if n_s == 0 or n_l == 0:
        out["reason"] = (f"gold is on the {'cue' if n_s == 0 else 'other'} side in every eligible pair: errors "
                         "cannot be told from a cue preference")
        return out
    ebar = (c_s + c_l) / n
    out["null"] = ebar * (1 - 2 * g)
    if k < 2:
        out["reason"] = "one item: no clustered standard error"
        return out
    w = np.where(gc, -(err - ebar) / n_l, (err - ebar) / n_s)  # linearised e_s - e_l, per verdict
    u = np.bincount(codes, weights=w, minlength=k)
    out["se"] = 2 * g * (1 - g) * math.sqrt(float(np.dot(u, u)))
    d = jc.astype(float) - gc
    u = np.bincount(codes, weights=d - out["estimate"], minlength=k)
    out["se_excess"] = math.sqrt(float(np.dot(u, u))) / n
    return out


def _gold_cue_rows(metric: str, elig: np.ndarray, cue: np.ndarray, verdict: np.ndarray, gold: np.ndarray,
                   items: np.ndarray, s: CardSettings, *, share_of: int, note: str, cue_word: str) -> CardRow:
    """The bias row read against gold: :func:`excess_over_gold` of the eligible verdicts with gold."""
    mask = np.asarray(elig, bool) & is_any(gold, ("A", "B"))
    jc, gc = verdict[mask] == cue[mask], gold[mask] == cue[mask]
    it = items[mask]
    ex = excess_over_gold(jc, gc, it, s)
    n = int(mask.sum())
    row = CardRow(metric, estimate=ex["estimate"], null_value=ex["null"], n=n, n_items=ex["k"],
                  share=n / share_of if share_of else NAN, test="t-cluster", reason=ex["reason"], note=note)
    if n:
        row.note = "; ".join(x for x in (note, f"judge share minus gold's ({ex['gold_share']:.3f} of these pairs "
                                                f"have gold on the {cue_word} side); errors to the {cue_word} "
                                                f"{ex['errors_to_cue']}, away {ex['errors_away']}") if x)
    if math.isfinite(ex["se"]) and ex["se"] > 0:
        k = ex["k"]
        tcrit = float(student_t.ppf(1 - s.alpha / 2, k - 1))
        row.se = ex["se"]
        row.statistic = (ex["estimate"] - ex["null"]) / ex["se"]
        row.p_value = float(2 * student_t.sf(abs(row.statistic), k - 1))
        if ex["se_excess"] > 0:  # the excess's own interval; zero width (judge - gold constant) is none
            row.ci_low = max(-1.0, ex["estimate"] - tcrit * ex["se_excess"])
            row.ci_high = min(1.0, ex["estimate"] + tcrit * ex["se_excess"])
        row.mde = (tcrit + float(norm.ppf(s.power))) * ex["se"]
    elif not row.reason and math.isfinite(ex["se"]):
        row.se = ex["se"]
        row.reason = ("no error against gold on the eligible verdicts: nothing to read a cue in" if
                      ex["errors_to_cue"] + ex["errors_away"] == 0 else
                      "every eligible verdict is an error: nothing to read a cue in")
    if not row.reason and n < s.min_decisive:
        row.reason = f"fewer than {s.min_decisive} verdicts to test ({n})"
    return row


def _error_share_row(metric: str, elig: np.ndarray, cue: np.ndarray, verdict: np.ndarray, gold: np.ndarray,
                     items: np.ndarray, s: CardSettings) -> CardRow:
    """The conditional form of a cue row read against gold: the share of the judge's errors that pick the
    cue's side, tested (design-effect binomial) against the share of eligible pairs where an error would
    pick it (gold on the other side).  Why that null and not 0.5: with errors blind to the cue, each
    error falls on a pair whatever gold's side, so the errors land on the cue's side in the proportion of
    pairs whose gold is on the other side (gold favouring the longer answer 60 % of the time makes 40 %
    of a cue-blind judge's errors pick the longer)."""
    mask = np.asarray(elig, bool) & is_any(gold, ("A", "B"))
    jc, gc = verdict == cue, gold == cue
    err = mask & (jc != gc)
    n = int(mask.sum())
    cond_null = int(np.count_nonzero(mask & ~gc)) / n if n else 0.5
    row = _share_row(metric, err, mask & jc & ~gc, items, s, null=cond_null, share_of=n,
                     note=f"errors against gold; null: share of these pairs with gold on the other side "
                          f"({cond_null:.3f})")
    if not 0 < cond_null < 1 and not row.reason:
        row.reason = "gold on one side of the cue in every eligible pair: no null to test against"
    return row


def _not_estimable(metric: str, reason: str, *, test: str = "none", null: float = NAN, **kw) -> CardRow:
    return CardRow(metric, reason=reason, test=test, null_value=null, **kw)


def _position_row(shown: np.ndarray, parsed: np.ndarray, items: np.ndarray, s: CardSettings, *, one_order: bool,
                  has_gold: bool = True) -> CardRow:
    """Paper 003's b over parsed verdicts, Wilson CI of (b + 1) / 2 on the effective n, score test.

    (b + 1) / 2 is the mean of a [0, 1] score (first 1, tie 0.5, second 0); p(1 - p)
    bounds the variance of any [0, 1] variable with mean p, so Wilson's interval on the
    effective n is conservative with ties and never collapses at b = +-1.  The score test
    (t on items - 1 df, like the interval) is the one Wilson's interval inverts, so the CI
    excludes 0 exactly when p < 1 - confidence.
    """
    # the note names what the log has: with gold, the slot shown first may simply be gold's more often;
    # without, the better answer's (answer quality, which no column of this log records)
    mixed = "gold" if has_gold else "answer quality (which response is better)"
    note = f"only one presentation order recorded: b mixes position with {mixed}" if one_order else ""
    row = CardRow("position_preference", null_value=0.0, test="score", note=note, identified=not one_order)
    n = int(parsed.sum())
    if n == 0:
        row.reason = "no parsed verdict"
        return row
    sh = shown[parsed]
    first, second = sh == "A", sh == "B"
    y = np.full(n, 0.5)  # (sign + 1) / 2 of sign +1 (first shown), -1 (second), 0 (tie)
    y[first] = 1.0
    y[second] = 0.0
    n_dec = int(np.count_nonzero(first) + np.count_nonzero(second))
    sh = first = second = None
    est, _, n_eff, k = _share_stats(y, items[parsed], DEFF_FLOOR)
    lo, hi = _wilson(est, n_eff, s, k)
    se_y = math.sqrt(0.25 / n_eff)
    zstat = (est - 0.5) / se_y
    n_int = max(1, round(n_eff))
    row.estimate, row.ci_low, row.ci_high = 2 * est - 1, 2 * lo - 1, 2 * hi - 1
    row.n, row.n_items, row.se, row.statistic = n, k, 2 * se_y, zstat
    row.p_value = float(2 * (student_t.sf(abs(zstat), k - 1) if k >= 2 else norm.sf(abs(zstat))))
    row.mde = 2 * binomial_mde(n_int, 0.5, s)
    row.share = n_dec / n
    if n_dec < s.min_decisive:
        row.reason = f"fewer than {s.min_decisive} decisive verdicts ({n_dec})"
    return row


def _order_gap_row(ca: np.ndarray, cb: np.ndarray, items: np.ndarray, s: CardSettings) -> CardRow:
    """Accuracy swapped minus stored; Durkalski's clustered McNemar over items and the CI it inverts.

    Per item i, d_i = (pairs right only swapped) - (pairs right only as stored); the
    statistic (sum d_i)^2 / sum d_i^2 is chi-square(1) under no order effect, treats the
    item as the unit (McNemar's b + c becomes sum d_i^2) and equals McNemar's without
    continuity correction when every item has one pair.  Its standard error is
    se = sqrt(sum d_i^2) / pairs, and the CI is gap +- z se (clipped to [-1, 1]): it
    excludes 0 exactly when the test rejects at 1 - confidence, and it keeps a width
    when every discordant pair goes one way (where a percentile bootstrap collapses).  The MDE is Connor's at the
    effective n: pairs over the design effect sum d_i^2 / (b + c).
    """
    n_p = len(ca)
    row = CardRow("accuracy_order_gap", null_value=0.0, test="mcnemar-cluster")
    if n_p == 0:
        row.reason = "no pair with gold recorded in both orders"
        return row
    d = cb.astype(float) - ca.astype(float)
    b, c = int(np.sum(d < 0)), int(np.sum(d > 0))
    codes, k = _cluster_codes(items)
    dsum = np.bincount(codes, weights=d, minlength=k)
    est = float(d.mean())
    row.estimate, row.n, row.n_items = est, n_p, k
    row.note = f"discordant: {b} right only as stored, {c} only swapped"
    ss = float(np.dot(dsum, dsum))
    if b + c == 0 or ss == 0:
        row.se, row.statistic, row.p_value = 0.0, 0.0, 1.0
        row.reason = "no discordant pair, or every item's discordant pairs cancel"
        return row
    row.statistic = float(dsum.sum() ** 2 / ss)
    row.p_value = float(chi2.sf(row.statistic, 1))
    row.se = math.sqrt(ss) / n_p
    z = norm.ppf(1 - (1 - s.confidence) / 2)
    row.ci_low, row.ci_high = max(-1.0, est - z * row.se), min(1.0, est + z * row.se)
    deff = max(DEFF_FLOOR, ss / (b + c)) if k >= 2 else max(1.0, ss / (b + c))
    row.mde = mcnemar_mde(max(1, round(n_p / deff)), (b + c) / n_p, s.alpha, s.power)
    if b + c < s.min_decisive:
        row.reason = f"fewer than {s.min_decisive} discordant pairs ({b + c})"
    return row


#: the model term of the cue regressions is dense (a column per model, its rank check and fit cost models^2):
#: beyond these many model terms, or verdicts x model terms cells, it is left out (see :func:`_logit_rows`)
MAX_MODEL_TERMS = 1000
MAX_MODEL_TERM_CELLS = 10_000_000


def _logit_rows(lg: _Log, decisive: np.ndarray, s: CardSettings, model_term: bool = False) -> list[CardRow]:
    """Length- and markdown-controlled view: logit P(picks shown first) ~ len + md + gold [+ model term].

    With ``model_term`` (three or more models behind the responses) the regression holds a
    Bradley-Terry strength per model (:func:`_model_term`), so the cue is read within models.  A
    term beyond :data:`MAX_MODEL_TERMS` models or :data:`MAX_MODEL_TERM_CELLS` cells is left out
    before it is built (the note says so); then a log without gold or controlled pairs has no
    control of answer quality left, and the rows are not estimable with that reason.

    Not estimable (never detected) under separation or quasi-separation (statsmodels'
    PerfectSeparation warning or error, fitted probabilities at 0 or 1, or a
    cluster-robust SE above ``max_logit_se``), collinear regressors, a cue without
    variation, or fewer than ``min_decisive`` decisive verdicts.
    """
    from statsmodels.genmod import families
    from statsmodels.genmod.generalized_linear_model import GLM  # not statsmodels.api: 3 s of imports
    from statsmodels.tools.sm_exceptions import PerfectSeparationError, PerfectSeparationWarning

    metrics = (("length_controlled", "len"), ("markdown_controlled", "md"))
    items = lg.items[decisive]
    n, n_items = len(items), _n_distinct(items)

    def fail(reason: str) -> list[CardRow]:
        return [CardRow(m, test="wald-cluster", null_value=0.0, n=n, n_items=n_items, reason=reason)
                for m, _ in metrics]

    if n < s.min_decisive:
        return fail(f"fewer than {s.min_decisive} decisive verdicts with response texts ({n})")
    if n_items < 2:
        return fail("one item: no clustered standard error")
    y = (lg.shown[decisive] == "A").astype(float)
    if y.min() == y.max():
        return fail("every decisive verdict names the same slot: perfect separation")
    cols = lg.shown_cues(decisive)
    if not np.any(cols["gold"] != 0):
        del cols["gold"]
    left_out = ""
    if model_term:
        # one dense column per model, and a rank check and fit whose cost grows with models^2: refused
        # before anything is allocated when the design would not fit (a log of 10,000 models)
        n_terms = _n_distinct(np.concatenate([lg.model_b[decisive]] + ([] if lg.model_a is None
                                                                       else [lg.model_a[decisive]]))) - 1
        if n_terms > MAX_MODEL_TERMS or n * n_terms > MAX_MODEL_TERM_CELLS:
            left_out = (f"model term left out: {n_terms + 1} models x {n} verdicts exceed the card's dense design "
                        f"limit ({MAX_MODEL_TERMS} model terms, {MAX_MODEL_TERM_CELLS:,} cells)")
            if "gold" not in cols and not s.controlled_pairs:
                return fail(left_out + "; no other control of answer quality")
        else:
            cols.update({str(c): v.to_numpy() for c, v in _model_term(lg, decisive).items()})
    # the distinct (covariates, outcome) rows with their counts: the likelihood, and so the fit, of
    # the rows themselves; the clustered sandwich is summed over the rows (_cluster_sandwich)
    key = pd.factorize(y)[0].astype(np.int64, copy=False)
    for v in cols.values():
        codes, uniq = pd.factorize(v)
        key *= len(uniq) + 1
        key += codes
        del codes
        key = pd.factorize(key)[0].astype(np.int64, copy=False)
    counts = np.bincount(key)
    rep = np.full(len(counts), -1)
    rep[key[::-1]] = np.arange(len(key))[::-1]  # first row of each distinct row
    X = pd.DataFrame({"const": 1.0, **{c: v[rep] for c, v in cols.items()}})
    X = X.loc[:, (X.std() > 0) | (X.columns == "const")]
    # model strengths are defined up to the intercept: with one baseline shown first in every row the
    # evaluated models' columns sum to -const, so one of them goes (the cue's coefficient, the
    # column space, is the same whichever does)
    while X.columns[-1].startswith("model[") and np.linalg.matrix_rank(X.to_numpy()) < X.shape[1]:
        X = X.iloc[:, :-1]
    if np.linalg.matrix_rank(X.to_numpy()) < X.shape[1]:
        return fail("collinear regressors (" + ", ".join(X.columns[1:]) + ")")
    groups = pd.factorize(items)[0]
    z = norm.ppf(1 - (1 - s.confidence) / 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = GLM(y[rep], X, family=families.Binomial(), freq_weights=counts.astype(float)).fit()
        except PerfectSeparationError:
            return fail("perfect separation")
    if any(issubclass(w.category, PerfectSeparationWarning) for w in caught):
        return fail("perfect separation")
    mu = np.asarray(fit.fittedvalues)
    if np.any((mu < 1e-8) | (mu > 1 - 1e-8)):
        return fail("quasi-separation: fitted probabilities at 0 or 1")
    params = fit.params  # a Series named by X's columns
    row_cols = [None if c == "const" else cols[c] for c in X.columns]
    resid = mu[key]
    np.subtract(y, resid, out=resid)  # y - mu, row by row
    del key, y
    bse = pd.Series(_cluster_sandwich(X.to_numpy(), counts, mu, row_cols, resid, groups), index=X.columns)
    controls = [c for c in X.columns if c != "const" and not c.startswith("model[")]
    n_model_cols = sum(c.startswith("model[") for c in X.columns)
    rows = []
    for metric, col in metrics:
        if col not in X.columns:
            rows.append(CardRow(metric, test="wald-cluster", null_value=0.0, n=n, n_items=n_items,
                                reason="no variation in this cue"))
            continue
        b, se = float(params[col]), float(bse[col])
        reason = ""
        if not math.isfinite(se) or se <= 0:
            reason = f"cluster-robust standard error {se:.3g}"
        elif se > s.max_logit_se:
            reason = f"quasi-separation: standard error {se:.3g} > {s.max_logit_se:g}"
        mde = (norm.ppf(1 - s.alpha / 2) + norm.ppf(s.power)) * se
        rows.append(CardRow(metric, estimate=b, ci_low=b - z * se, ci_high=b + z * se, se=se, null_value=0.0, n=n,
                            n_items=n_items, test="wald-cluster", statistic=b / se if se > 0 else NAN,
                            p_value=float(2 * norm.sf(abs(b / se))) if se > 0 else NAN, mde=mde, reason=reason,
                            note="; ".join(x for x in (
                                "controls: " + ", ".join(["position"] + [c for c in controls if c != col]
                                                         + ([f"model strength ({n_model_cols} free terms)"]
                                                            if n_model_cols else [])), left_out) if x)))
    return rows


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


# ---------------------------------------------------------------------------------------------
# the benchmarks' own metrics


def judgebench_pair_correct(v_ab: np.ndarray, v_ba: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """JudgeBench's score of a pair from its two games, both verdicts in the stored frame.

    ``compute_final_metrics(..., reverse_order=True)`` in ScalerLab/JudgeBench
    ``utils/metrics.py``: each game's decision adds +1 when it equals the label and -1
    when it equals the flipped label (a tie or a missing decision adds 0); the pair is
    correct when the sum is positive.  So two agreeing decisive verdicts count, a
    decisive verdict plus a tie counts as that verdict, inconsistent verdicts count as
    wrong, and the denominator is every pair, nulls included.
    """
    flip = np.where(gold == "A", "B", np.where(gold == "B", "A", ""))
    counter = ((v_ab == gold).astype(int) + (v_ba == gold) - (v_ab == flip) - (v_ba == flip))
    return counter > 0


#: Arena-Hard's label_to_score weight of a strong verdict (``A>>B``)
ARENA_STRONG_WEIGHT = 3


def arena_hard_pair_scores(v_ab: np.ndarray, v_ba: np.ndarray, strong_ab: np.ndarray, strong_ba: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
    """(score sum, weight) per pair of stored response B against stored A, over both games.

    ``load_judgments`` in lmarena/arena-hard-auto ``show_result.py``: game 1 shows the
    baseline first, game 2 the model first; each game's label becomes battles for the
    model (``A>B`` 1 for A, ``A>>B`` three battles of 1, ``A=B`` 0.5, game 1 taken as
    1 - score), pairs with a null game are dropped, and the score is the mean over all
    battles.  Here stored A plays the baseline: the AB game is game 1, BA is game 2,
    verdicts in the stored frame.
    """
    def score(v: np.ndarray) -> np.ndarray:
        return np.where(v == "B", 1.0, np.where(v == "A", 0.0, np.where(v == "tie", 0.5, NAN)))

    sab, sba = score(np.asarray(v_ab)), score(np.asarray(v_ba))
    wab = np.where(strong_ab, ARENA_STRONG_WEIGHT, 1.0)
    wba = np.where(strong_ba, ARENA_STRONG_WEIGHT, 1.0)
    keep = ~(np.isnan(sab) | np.isnan(sba))
    return np.where(keep, sab * wab + sba * wba, 0.0), np.where(keep, wab + wba, 0.0)


def _benchmark_rows(lg: _Log, ia: np.ndarray, ib: np.ndarray, s: CardSettings) -> list[CardRow]:
    """JudgeBench's and Arena-Hard's pair metrics over the pairs recorded in both orders (rows ia, ib)."""
    if not len(ia):
        return [_not_estimable(m, "no pair was recorded in both orders")
                for m in ("judgebench_accuracy", "arena_hard_score")]
    items = lg.items[ia]
    va, vb = lg.verdict[ia], lg.verdict[ib]
    gold = lg.gold[ia]
    has_gold = (gold == "A") | (gold == "B")
    rows = []
    if not has_gold.any():
        rows.append(_not_estimable("judgebench_accuracy", "no gold in this log"))
    else:
        rows += _guard(("judgebench_accuracy",), lambda: _share_row(
            "judgebench_accuracy", has_gold, judgebench_pair_correct(va, vb, gold), items, s, null=None,
            share_of=len(ia), note="ScalerLab/JudgeBench utils/metrics.py compute_final_metrics"))
    num, den = arena_hard_pair_scores(va, vb, lg.strong[ia], lg.strong[ib])
    kept = den > 0
    if not kept.any():
        rows.append(_not_estimable("arena_hard_score", "no pair with a verdict in both games"))
        return rows
    est, lo, hi, var = cluster_ratio_ci(num[kept], den[kept], items[kept], s)
    n_models = _n_distinct(lg.model_b[ia][kept])
    note = ("lmarena/arena-hard-auto show_result.py load_judgments; stored A is the baseline"
            + (f"; pooled over {n_models} models" if n_models > 1 else ""))
    if not math.isfinite(lo):
        reason = "one item: no cluster bootstrap interval"
    elif not hi > lo:
        # every resample gives the same score (e.g. each pair scores 0.5: the judge reversed its verdict with
        # the order, or tied both games): a zero-width interval would claim certainty the data do not give
        reason = f"every pair scores {est:.3g}: the cluster bootstrap interval has zero width"
    else:
        reason = ""
    rows.append(CardRow("arena_hard_score", estimate=est, ci_low=lo, ci_high=hi, se=math.sqrt(var) if var >= 0 else NAN,
                        n=int(kept.sum()), n_items=_n_distinct(items[kept]), share=float(kept.mean()), note=note,
                        reason=reason))
    return rows


# ---------------------------------------------------------------------------------------------
# identification: is a cue preference separable from answer quality in this log's design?

#: the note of a cue row whose design has no control for answer quality
CONFOUNDED = "not identified: confounded with answer quality"


@dataclass(frozen=True)
class QualityControl:
    """What in a log's design separates a cue preference (length, markdown, own family) from quality.

    A judge that picks the longer answer may simply pick the better one, when the better answers
    are the longer ones (AlpacaEval: one weaker model against one baseline, one order, no gold).
    The cue is separable from quality only by design: ``gold`` labels (the cue regressions hold a
    gold term, so the cue is read beyond what quality explains; a share is read against gold's
    own balance), pairs declared ``controlled`` (built to differ only in the cue,
    ``CardSettings.controlled_pairs``), or, for the regressions only, a ``model_term``: three or
    more models behind the responses, so that a per-model strength term absorbs the quality of
    each model as AlpacaEval's length-controlled GLM does.  A share has no model term, so a
    multi-model log alone leaves the shares descriptive.
    """

    gold: bool
    controlled: bool
    models: int

    @property
    def model_term(self) -> bool:
        return self.models >= 3

    def share(self) -> str:
        """The design control a cue share rests on, or "" when it has none."""
        return "controlled pairs" if self.controlled else "gold labels" if self.gold else ""

    def regression(self) -> str:
        """The control a cue regression rests on, or ""."""
        return self.share() or (f"model term ({self.models} models)" if self.model_term else "")

    def missing(self) -> str:
        """Why a row is not identified: the controls this log lacks."""
        models = (f"{self.models} model(s) behind the responses, no model term" if self.models < 3 else "")
        return "; ".join(x for x in (CONFOUNDED, "no gold labels, no pairs built to differ only in the cue", models)
                         if x)


def quality_control(lg: _Log, s: CardSettings) -> QualityControl:
    """The quality controls of one judge's log (see :class:`QualityControl`)."""
    used = np.unique(lg.model_b) if lg.model_a is None else np.union1d(lg.model_b, lg.model_a)
    models = set(lg.models[used].tolist()) - {""}
    return QualityControl(gold=bool(is_any(lg.gold, ("A", "B")).any()), controlled=s.controlled_pairs,
                          models=len(models))


def _identify(row: CardRow, control: str, qc: QualityControl) -> CardRow:
    """Mark a cue row identified by ``control`` (named in its note), or not identified with the reason.

    A row without eligible verdicts keeps its note (why it has none): it is not estimable anyway."""
    row.identified = bool(control)
    if row.n == 0:
        return row
    extra = f"quality controlled by {control}" if control else ""
    row.note = "; ".join(x for x in ((row.note, extra) if control else (qc.missing(), row.note)) if x)
    return row


def _model_term(lg: _Log, rows: np.ndarray) -> pd.DataFrame:
    """Bradley-Terry strength columns of the models behind the shown responses (+1 shown first,
    -1 shown second), the first model in sorted order the reference; empty without model names."""
    if lg.model_a is None:
        return pd.DataFrame(index=range(int(rows.sum())))
    ab = lg.order[rows] == "AB"
    first = np.where(ab, lg.model_a[rows], lg.model_b[rows])
    second = np.where(ab, lg.model_b[rows], lg.model_a[rows])
    code = {str(lg.models[c]): c for c in np.union1d(first, second)}
    code.pop("", None)
    cols = {f"model[{m}]": (first == code[m]).astype(float) - (second == code[m]) for m in sorted(code)[1:]}
    return pd.DataFrame(cols, index=range(len(first)))


# ---------------------------------------------------------------------------------------------
# the card



def _guard(metrics: tuple[str, ...], fn: Callable[[], list[CardRow] | CardRow]) -> list[CardRow]:
    """Run one statistic; an exception becomes not-estimable rows that name it, never the end of the card."""
    try:
        out = fn()
        return out if isinstance(out, list) else [out]
    except Exception as exc:  # any failure of one statistic must leave the rest of the card
        return [CardRow(m, reason=f"failed: {type(exc).__name__}: {exc}") for m in metrics]


def judge_card(t: pd.DataFrame, s: CardSettings | None = None, view: str = "lenient") -> list[dict]:
    """The card rows of one judge's recorded verdicts in one view (see :data:`VIEWS`)."""
    s = s or CardSettings()
    rows, extra = judge_rows(t, s, view)
    out = []
    for d in finish_rows(rows, s):
        d.update(extra)
        out.append(d)
    return out


def judge_rows(t: pd.DataFrame, s: CardSettings, view: str = "lenient") -> tuple[list[CardRow], dict]:
    """(the rows of one judge and view before their statuses are decided, the columns every row shares):
    :func:`finish_rows` decides them, for any multiplicity setting, from these alone."""
    lg = _prepare(t, view)
    items, verdict, shown, gold = lg.items, lg.verdict, lg.shown, lg.gold
    n_games = len(verdict)
    is_a, is_b, is_tie = verdict == "A", verdict == "B", verdict == "tie"
    decisive = is_a | is_b
    has_value = decisive | is_tie
    with_gold = gold != ""
    correct = verdict == gold
    one_order = set(np.unique(lg.order)) != {"AB", "BA"}
    rows: list[CardRow] = []
    no_gold = "" if with_gold.any() else "no gold in this log"
    for metric, o in (("accuracy_AB", "AB"), ("accuracy_BA", "BA"), ("accuracy_average", None)):
        m = with_gold & ((lg.order == o) if o else True)
        rows += _guard((metric,), partial(_share_row, metric, m, correct, items, s, null=0.5, share_of=0,
                                          note=no_gold))
    # pairs shown in both orders (the first row of each pair and order)
    first_ab = _first_row_per_pair(lg.pairs, lg.order == "AB")
    first_ba = _first_row_per_pair(lg.pairs, lg.order == "BA")
    both = (first_ab >= 0) & (first_ba >= 0)
    ia, ib = first_ab[both], first_ba[both]
    # (pair, order) instances, when every row is shown AB or BA: as many as rows means none repeated
    n_inst = (int(np.count_nonzero(first_ab >= 0) + np.count_nonzero(first_ba >= 0))
              if np.count_nonzero(lg.order == "AB") + np.count_nonzero(lg.order == "BA") == n_games else None)
    del first_ab, first_ba, both  # a ten-million-row log holds what it can let go
    n_pairs = len(ia)
    p_items = items[ia]
    p_gold = gold[ia] != ""
    ca, cb = correct[ia], correct[ib]
    note_pairs = "" if n_pairs else "no pair was recorded in both orders"
    rows += _guard(("correct_both",), partial(_share_row, "correct_both", p_gold, ca & cb, p_items, s, null=None,
                                              share_of=0, note=note_pairs or no_gold))
    rows += _guard(("judgebench_accuracy", "arena_hard_score"), lambda: _benchmark_rows(lg, ia, ib, s))
    rows += _guard(("accuracy_order_gap",), partial(_order_gap_row, ca[p_gold], cb[p_gold], p_items[p_gold], s))
    va, vb = verdict[ia], verdict[ib]
    valid = has_value[ia] & has_value[ib]
    rows += _guard(("positional_agreement",), partial(
        _share_row, "positional_agreement", valid, va == vb, p_items, s, null=None, share_of=n_pairs, note=note_pairs))
    rows += _guard(("positional_agreement_all",), partial(
        _share_row, "positional_agreement_all", np.ones(n_pairs, bool), va == vb, p_items, s, null=None,
        share_of=n_pairs, note=note_pairs))
    rows += _guard(("position_preference",), lambda: _position_row(shown, has_value, items, s, one_order=one_order,
                                                                           has_gold=bool(with_gold.any())))
    del va, vb, valid, ca, cb  # (read by the rows above only; freed at ten million rows)
    n_dec = int(decisive.sum())
    no_text = "" if lg.has_text.any() else "no response texts in this log"
    wa, wb = np.asarray(lg.wa, dtype=float), np.asarray(lg.wb, dtype=float)
    longer = np.where(wa >= (1 + s.length_margin) * wb, "A", np.where(wb >= (1 + s.length_margin) * wa, "B", ""))
    elig = decisive & (longer != "") & lg.has_text
    qc = quality_control(lg, s)
    rows += _cue_rows("length_preference", elig, longer, lg, s, qc, share_of=n_dec, cue_word="longer",
                      note=no_text or f"length ratio >= {1 + s.length_margin:g}")
    del wa, wb
    ma, mb = np.asarray(lg.ma, dtype=float), np.asarray(lg.mb, dtype=float)
    more_md = np.where(ma - mb >= s.markdown_margin, "A", np.where(mb - ma >= s.markdown_margin, "B", ""))
    elig_md = decisive & (more_md != "")
    rows += _cue_rows("markdown_preference", elig_md, more_md, lg, s, qc, share_of=n_dec, cue_word="more formatted",
                      note=no_text or f"markdown difference >= {s.markdown_margin:g}")
    del longer, elig, more_md, elig_md, ma, mb
    rows += _guard(("length_controlled", "markdown_controlled"), lambda: [
        _identify(r, "" if r.reason.startswith("model term left out") else qc.regression(), qc)
        for r in _logit_rows(lg, decisive & lg.has_text, s, qc.model_term)])
    fam = lg.family
    elig_self = decisive & (lg.own != "") & (fam not in ("", "unknown"))
    note = ("judge family unknown" if fam in ("", "unknown") else
            "no pair with exactly one own-family response" if not elig_self.any() else "")
    rows += _cue_rows("self_preference", elig_self, lg.own, lg, s, qc, share_of=n_dec, cue_word="own-family",
                      note=note)
    rows += _guard(("tie_rate",), lambda: _share_row("tie_rate", np.ones(n_games, bool), is_tie, items, s,
                                                     null=None, share_of=n_games))
    rows += _guard(("parse_failures",), lambda: _share_row(
        "parse_failures", np.ones(n_games, bool), ~has_value, items, s, null=None, share_of=n_games))
    rows += _guard(("human_accuracy", "human_kappa", "ppi_win_rate", "ppi_share_A", "ppi_share_B", "ppi_share_tie"),
                   lambda: _human_rows(t, lg, s))
    rows += _guard(("repetition_consistency",), lambda: _repetition_row(lg, s, n_inst))
    n_parsed = int(has_value.sum())
    return rows, {"view": view, "n_parsed": n_parsed, "parsed_share": n_parsed / n_games if n_games else NAN}


def _cue_rows(metric: str, elig: np.ndarray, cue: np.ndarray, lg: _Log, s: CardSettings, qc: QualityControl, *,
              share_of: int, cue_word: str, note: str) -> list[CardRow]:
    """A cue's three rows: the bias row, its conditional form and the raw share (descriptive).

    With gold the bias row is the excess over gold's own share (:func:`_gold_cue_rows`); without it,
    the share against 0.5, identified only by pairs declared controlled.  The raw share P(picks the
    cue's side) is always kept, descriptive: with gold it mixes the cue with gold's own balance."""
    prefix = metric.split("_")[0]
    raw, cond = f"{prefix}_share_raw", f"{prefix}_error_share"
    success = lg.verdict == cue
    out = _guard((raw,), lambda: _share_row(raw, elig, success, lg.items, s, null=None, share_of=share_of,
                                            note="; ".join(x for x in (note, "descriptive, not a finding: "
                                                                        f"P(picks the {cue_word})") if x)))
    if qc.gold:
        main = _guard((metric,), lambda: _identify(_gold_cue_rows(
            metric, elig, cue, lg.verdict, lg.gold, lg.items, s, share_of=share_of, note=note,
            cue_word=cue_word), "gold labels", qc))
        errs = _guard((cond,), lambda: _identify(_error_share_row(cond, elig, cue, lg.verdict, lg.gold, lg.items, s),
                                                 "gold labels", qc))
        out = [*main, *errs, *out]
    else:
        main = _guard((metric,), lambda: _identify(_share_row(
            metric, elig, success, lg.items, s, null=0.5, share_of=share_of, note=note), qc.share(), qc))
        out = [*main, _not_estimable(cond, "no gold in this log"), *out]
    return out


def bias_card(table: pd.DataFrame, settings: CardSettings | None = None) -> pd.DataFrame:
    """One row per judge x view x metric (columns :data:`CARD_COLUMNS`), and with two or more judges
    the between-judge rows (:data:`PANEL_METRICS`, judge ``all judges``)."""
    s = settings or CardSettings()
    out = []
    for judge, g in judge_tables(table):
        fam = str(g["family"].iloc[0]) if "family" in g.columns else "unknown"
        sim = any_true(g)
        for view in s.views:
            for r in judge_card(g, s, view):
                out.append({**r, "judge": judge, "family": fam, "simulated": sim})
    out += _panel_rows(table, s)
    return pd.DataFrame(out, columns=CARD_COLUMNS)


# ---------------------------------------------------------------------------------------------
# human anchor and reliability rows (the statistics live in humans.py and reliability.py)


def _human_rows(t: pd.DataFrame, lg: _Log, s: CardSettings) -> list[CardRow]:
    """Agreement with the human labels, and PPI++ where only some pairs carry one."""
    from judgelab.bias_card.humans import LABELS, PPI_METRICS, human_labels, kappa_of_codes, ppi_rows

    human, source = human_labels(t)
    if not source:
        return [_not_estimable(m, "no human labels in this log") for m in ("human_accuracy", "human_kappa",
                                                                               *PPI_METRICS)]
    lab = human != ""
    rows = [_share_row("human_accuracy", lab, lg.verdict == human, lg.items, s, null=None, share_of=len(human),
                       note=source)]
    both = lab & is_any(lg.verdict, LABELS)
    # both raters' labels are LABELS here: coded by comparison (sorted: A < B < tie), one byte a row
    code_v, code_h = ((x[both] == "B").astype(np.int8) + 2 * (x[both] == "tie").astype(np.int8)
                      for x in (lg.verdict, human))
    kap, se, lo, hi, reason = kappa_of_codes(code_v, code_h, list(LABELS), s.confidence)
    code_v = code_h = None
    rows.append(CardRow("human_kappa", estimate=kap, ci_low=lo, ci_high=hi, se=se, n=int(both.sum()),
                        n_items=_n_distinct(lg.items[both]), share=float(both.sum() / lab.sum()), reason=reason,
                        note=f"{source}; statsmodels cohens_kappa, asymptotic CI"))
    for metric, r, note in ppi_rows(lg.pairs, lg.verdict, human, s.confidence):
        n_a, n_b = r.labels_per_side
        few = (f"{n_a} human label(s) for stored A and {n_b} for stored B: fewer than {s.min_labels_per_side} "
               "per side" if min(n_a, n_b) < s.min_labels_per_side else "")
        rows.append(CardRow(metric, estimate=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high,
                            se=(r.ci_high - r.ci_low) / (2 * norm.ppf(0.5 + s.confidence / 2)),
                            n=r.n_labelled + r.n_unlabelled, n_items=r.n_labelled,
                            share=r.n_labelled / max(1, r.n_labelled + r.n_unlabelled), reason=r.reason,
                            note=f"{note}; {source}", underpowered_reason=few))
    return rows


def _repetition_row(lg: _Log, s: CardSettings, n_instances: int | None = None) -> CardRow:
    """Repetition consistency; ``n_instances`` (the distinct pair x order instances, when known) equal to
    the rows says at once that no call was repeated."""
    from judgelab.bias_card.reliability import instance_codes, repetition_instances

    if n_instances is not None and n_instances == len(lg.pairs):
        return _not_estimable("repetition_consistency", "no call repeated in this log")

    first, cons, n_rep = repetition_instances(lg.pairs, lg.order, lg.verdict)
    if n_rep == 0:
        return _not_estimable("repetition_consistency", "no call repeated in this log")
    n_inst = instance_codes(lg.pairs, lg.order)[1]
    return _share_row("repetition_consistency", np.ones(n_rep, bool), cons, lg.items[first], s, null=None,
                      share_of=n_inst, note="Position-Bias-Analyzer repetitional consistency: each pair x order "
                                            "an instance")


def _panel_rows(table: pd.DataFrame, s: CardSettings) -> list[dict]:
    """The between-judge rows of each view, when the table holds two or more judges."""
    from judgelab.bias_card.reliability import PANEL_JUDGE, judges_kappa

    if "judge" not in table.columns or table["judge"].nunique() < 2:
        return []
    out = []
    for view in s.views:
        blank = None
        if view == "strict" and "status" in table.columns:  # fallback verdicts count as none
            blank = per_unique(table["status"], lambda x: x == "fallback", bool)
        k = judges_kappa(table, n_resamples=s.n_resamples, confidence=s.confidence, seed=s.seed, blank=blank)
        d = _finish(CardRow("judges_kappa", estimate=k["estimate"], ci_low=k["ci_low"], ci_high=k["ci_high"],
                            se=k["se"], n=k["n"], n_items=k["n_items"], reason=k["reason"], note=k["note"]), s)
        sim = any_true(table)
        d.update(view=view, judge=PANEL_JUDGE, family="panel", simulated=sim, n_parsed=k["n"], parsed_share=NAN)
        out.append(d)
    return out


def card_view(card: pd.DataFrame, view: str = "lenient") -> pd.DataFrame:
    """The rows of one view, indexed by (judge, metric) when several judges, else by metric."""
    c = card[card["view"] == view]
    return c.set_index("metric") if c["judge"].nunique() <= 1 else c.set_index(["judge", "metric"])
