"""PPI with few human labels: intervals inside [0, 1], coverage over planted worlds at 10, 20 and 50
labels, and PPI rows 'underpowered' (with the reason) below the minimum of labels per side."""

from __future__ import annotations

import numpy as np
import pytest

from judgelab.bias_card.card import CardSettings, card_view
from judgelab.bias_card.humans import PPI_METRICS, ppi_mean, ppi_rows
from tests.helpers.bias_card_logs import Call, table

WORLDS = 600
N_PAIRS = 300


def _world(rng: np.random.Generator, n_labels: int, accuracy: float, mean: float = 0.6):
    """Pairs whose human label is B with probability q ~ Beta (mean ``mean``), the judge agreeing with the
    human on ``accuracy`` of them; ``n_labels`` pairs chosen at random carry the human label."""
    q = rng.beta(6 * mean, 6 * (1 - mean), N_PAIRS)
    y = (rng.random(N_PAIRS) < q).astype(float)
    yhat = np.where(rng.random(N_PAIRS) < accuracy, y, 1 - y)
    lab = np.zeros(N_PAIRS, bool)
    lab[rng.choice(N_PAIRS, n_labels, replace=False)] = True
    return y, yhat, lab


@pytest.fixture(scope="module")
def coverage():
    """(labels, judge accuracy) -> (share of intervals covering the truth, every interval in [0, 1])."""
    rng = np.random.default_rng(7)
    out = {}
    for n in (10, 20, 50):
        for acc in (0.6, 0.8):
            hit, inside = [], []
            for _ in range(WORLDS):
                y, yhat, lab = _world(rng, n, acc)
                r = ppi_mean(y[lab], yhat[lab], yhat[~lab])
                hit.append(r.ci_low <= 0.6 <= r.ci_high)
                inside.append(0 <= r.ci_low <= r.estimate <= r.ci_high <= 1)
            out[n, acc] = (float(np.mean(hit)), all(inside))
    return out


@pytest.mark.parametrize("n", [20, 50])
@pytest.mark.parametrize("acc", [0.6, 0.8])
def test_ppi_covers_the_truth_from_twenty_labels(coverage, n, acc):
    cov, inside = coverage[n, acc]
    assert inside
    assert cov >= 0.93, (n, acc, cov)


@pytest.mark.parametrize("acc", [0.6, 0.8])
def test_ppi_with_ten_labels_stays_in_bounds(coverage, acc):
    cov, inside = coverage[10, acc]
    assert inside
    assert cov >= 0.88, cov  # below the minimum per side the card calls these rows underpowered anyway


def test_an_interval_that_would_leave_0_1_is_clipped_with_a_note():
    rng = np.random.default_rng(3)
    clipped = 0
    for _ in range(50):
        y, yhat, lab = _world(rng, 8, 0.7, mean=0.95)
        r = ppi_mean(y[lab], yhat[lab], yhat[~lab])
        assert 0 <= r.ci_low <= r.estimate <= r.ci_high <= 1
        if "clipped to [0, 1]" in r.note:
            clipped += 1
            assert r.ci_high == 1.0 or r.ci_low == 0.0
    assert clipped > 0


def test_ppi_rows_carry_the_labels_per_side_and_the_notes():
    pairs = np.array([f"p{i}" for i in range(30)])
    verdict = np.array(["B"] * 15 + ["A"] * 15)
    human = np.array(["B", "B", "A", "tie"] + [""] * 26)
    rows = ppi_rows(pairs, verdict, human, alpha=0.05)
    assert [m for m, _, _ in rows] == list(PPI_METRICS)
    assert all(r.labels_per_side == (1, 2) for _, r, _ in rows)
    win = dict((m, (r, note)) for m, r, note in rows)["ppi_win_rate"]
    assert "lambda 1 (plain PPI): fewer than 50 labels to tune it" in win[1]


def _card_with_labels(labels: list[str], n_pairs: int = 40):
    from judgelab.bias_card import bias_card

    calls = [Call(f"q{i}", f"p{i}", "AB", "A" if i % 3 else "B", gold="") for i in range(n_pairs)]
    t = table(calls)
    t["human"] = labels + [""] * (n_pairs - len(labels))
    return card_view(bias_card(t, CardSettings(n_resamples=50, views=("lenient",))))


def test_too_few_labels_on_one_side_make_the_ppi_rows_underpowered():
    # seven labels, none for stored A (the MT-Bench case): underpowered, saying how many each side has
    c = _card_with_labels(["B"] * 6 + ["tie"])
    for m in PPI_METRICS:
        row = c.loc[m]
        assert row["status"] == "underpowered", m
        assert row["reason"] == "0 human label(s) for stored A and 6 for stored B: fewer than 5 per side"
        assert row["estimable"] and row["underpowered"]
        assert 0 <= row["ci_low"] <= row["ci_high"] <= 1
    # enough on both sides: descriptive (the tie share has no tie label: zero width, not estimable)
    c = _card_with_labels(["A", "B"] * 6)
    assert (c.loc[["ppi_win_rate", "ppi_share_A", "ppi_share_B"], "status"] == "descriptive").all()
    # the threshold is the setting
    from judgelab.bias_card import bias_card

    calls = [Call(f"q{i}", f"p{i}", "AB", "A" if i % 3 else "B", gold="") for i in range(40)]
    t = table(calls)
    t["human"] = ["A", "B"] * 6 + [""] * 28
    c = card_view(bias_card(t, CardSettings(n_resamples=50, views=("lenient",), min_labels_per_side=7)))
    assert (c.loc[["ppi_win_rate", "ppi_share_A", "ppi_share_B"], "status"] == "underpowered").all()
