"""The bias card's human rows are computed at the card's own level: at ``alpha = 0.2`` the
``human_kappa`` interval is statsmodels' Cohen's kappa +- the normal 90th percentile times its
standard error, and each PPI row is :func:`judgelab.bias_card.humans.ppi_rows` at ``alpha = 0.2``
(narrower than at the default level, so a level that did not reach them shows)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from statsmodels.stats.inter_rater import cohens_kappa

from judgelab.bias_card import CardSettings
from judgelab.bias_card.card import judge_card
from judgelab.bias_card.humans import PPI_METRICS, ppi_rows
from tests.helpers.bias_card_logs import both_orders, table

LEVEL = CardSettings(alpha=0.2, n_resamples=200, views=("lenient",))


def _partly_labelled_log() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    calls = [c for i in range(60) for c in both_orders(f"q{i}", f"p{i}", *rng.choice(["A", "B", "tie"], 2), gold="")]
    t = table(calls)
    t["human"] = np.repeat(rng.choice(["A", "B", "tie"], 60, p=[0.45, 0.45, 0.1]), 2)
    t.loc[t["pair_id"].isin([f"p{i}" for i in range(0, 60, 3)]), "human"] = ""  # a third unlabelled: PPI rows
    return t


def test_human_kappa_is_at_the_cards_level():
    t = _partly_labelled_log()
    row = {r["metric"]: r for r in judge_card(t, LEVEL)}["human_kappa"]
    both = t[(t["human"] != "") & t["verdict"].isin(["A", "B", "tie"])]
    tab = pd.crosstab(pd.Categorical(both["verdict"], ["A", "B", "tie"]), pd.Categorical(both["human"], ["A", "B", "tie"]),
                      dropna=False).to_numpy()
    ref = cohens_kappa(tab, return_results=True)
    z = norm.ppf(0.9)
    assert row["estimate"] == pytest.approx(ref.kappa) and row["n"] == len(both)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((ref.kappa - z * ref.std_kappa,
                                                             ref.kappa + z * ref.std_kappa))


def test_ppi_rows_are_at_the_cards_level():
    t = _partly_labelled_log()
    rows = {r["metric"]: r for r in judge_card(t, LEVEL)}
    at_level = {m: r for m, r, _ in ppi_rows(t["pair_id"].to_numpy(), t["verdict"].to_numpy(), t["human"].to_numpy(),
                                            alpha=0.2)}
    default = {m: r for m, r, _ in ppi_rows(t["pair_id"].to_numpy(), t["verdict"].to_numpy(), t["human"].to_numpy())}
    for m in PPI_METRICS:
        assert (rows[m]["ci_low"], rows[m]["ci_high"]) == pytest.approx((at_level[m].ci_low, at_level[m].ci_high)), m
        assert at_level[m].ci_high - at_level[m].ci_low < default[m].ci_high - default[m].ci_low, m
