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
metric         see :data:`judgelab.bias_card.metrics.METRICS`
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
               share read against gold: :func:`~judgelab.stats.gold_excess.excess_over_gold`), or none
statistic      the test statistic (successes, z, chi-square, t)
p_value        two-sided
p_adjusted     the p-value adjusted within its judge's and view's family of tested rows
               (``CardSettings.multiplicity``: Holm by default; :func:`finish_rows`); NaN
               outside the family (descriptive, not estimable, not identified rows)
test_family    the correction and the family's rows ("holm over 8 tests: ..."), "" outside it
mde            minimum detectable effect at the card's alpha and power (metric scale,
               distance from null_value; for untested rates the CI half-width)
underpowered   True when the row is not estimable, or the test did not reject its null
               and the mde exceeds the metric's threshold (:data:`~judgelab.bias_card.metrics.METRICS`)
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
cue-blind errors, :func:`~judgelab.stats.gold_excess.excess_over_gold`; ``*_error_share`` the share of errors that pick
the cue, ``*_share_raw`` the raw share, descriptive), and without gold the raw share against 0.5; the length-controlled view is a
logistic regression of "picks the response shown first" on the log2 length ratio, the
markdown difference and gold, with item-clustered standard errors.

Every test is clustered like its CI: binomial tests use the effective n (design effect
at least :data:`judgelab.stats.clustered.DEFF_FLOOR` with two or more items, 1 with one item, where no clustered
variance exists); the order gap uses the clustered McNemar test of Durkalski et al.
(2003, Stat Med 22:1417), which equals McNemar's (uncorrected) with one pair per item.

Benchmarks' own metrics: ``judgebench_accuracy`` (JudgeBench's pair score from its two
games) and ``arena_hard_score`` (Arena-Hard's two-game aggregation); see
:mod:`judgelab.bias_card.rows_benchmark`.

Scale: clustered variances come from per-item sums (O(rows)); bootstrap resamples are
drawn in chunks of at most ``CardSettings.chunk_cells`` item indices, never a full
resamples x items matrix.

Where things live: this module builds the card (:func:`bias_card`, :func:`judge_rows`) and decides
each row's status (:func:`finish_rows`); the metrics and the row record are in
:mod:`judgelab.bias_card.metrics`, the settings in :mod:`judgelab.bias_card.card_settings`, the
row builders in ``rows_share``, ``rows_cue``, ``rows_logit``, ``rows_benchmark`` and
``rows_human``, and the statistics they call, on plain numbers, in :mod:`judgelab.stats`.
"""


from __future__ import annotations

import math
from dataclasses import asdict
from dataclasses import replace as dc_replace
from functools import partial

import numpy as np
import pandas as pd

from judgelab.bias_card.card_settings import CardSettings
from judgelab.bias_card.codes import judge_tables, per_unique
from judgelab.bias_card.metrics import CARD_COLUMNS, METRICS, NAN, CardRow, _guard
from judgelab.bias_card.metrics import PANEL_METRICS as PANEL_METRICS  # the card's public names, imported from here
from judgelab.bias_card.prepare import _first_row_per_pair, _prepare
from judgelab.bias_card.rows_benchmark import _benchmark_rows
from judgelab.bias_card.rows_cue import _cue_rows, _identify, quality_control
from judgelab.bias_card.rows_human import _human_rows, _repetition_row
from judgelab.bias_card.rows_logit import _logit_rows
from judgelab.bias_card.rows_share import _order_gap_row, _position_row, _share_row
from judgelab.io import any_true
from judgelab.stats.multiplicity import adjust_p_values, family_mde_factor

# ---------------------------------------------------------------------------------------------
# a row's status


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


def _finish(r: CardRow, s: CardSettings, p_adjusted: float = NAN) -> dict:
    """Decide estimable / status / underpowered of a row; the only place a row can become 'detected'.

    A tested row is decided on ``p_adjusted`` (its p-value adjusted within its family,
    :func:`judgelab.stats.multiplicity.adjust_p_values`), and on its raw p-value when it is outside the family (NaN)."""
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


def finish_rows(rows: list[CardRow], s: CardSettings) -> list[dict]:
    """The rows of one judge and view with their statuses, the family's p-values adjusted together
    (``s.multiplicity``); each family row names the family in ``test_family``, and its MDE is the one
    at the family's Bonferroni level (:func:`judgelab.stats.multiplicity.family_mde_factor`), so the stated power holds for the
    adjusted decision."""
    fam = [i for i, r in enumerate(rows) if in_family(r)]
    adj = dict(zip(fam, adjust_p_values([rows[i].p_value for i in fam], s.multiplicity), strict=True))
    factor = family_mde_factor(len(fam), method=s.multiplicity, alpha=s.alpha, power=s.power)
    rows = [dc_replace(r, mde=r.mde * factor) if i in adj else r for i, r in enumerate(rows)]
    label = (f"{s.multiplicity} over {len(fam)} tests: " + ", ".join(rows[i].metric for i in fam)) if fam else ""
    out = []
    for i, r in enumerate(rows):
        d = _finish(r, s, adj.get(i, NAN))
        if i in adj:
            d["test_family"] = label
        out.append(d)
    return out


# ---------------------------------------------------------------------------------------------
# the card


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
        k = judges_kappa(table, n_resamples=s.n_resamples, alpha=s.alpha, seed=s.seed, blank=blank)
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
