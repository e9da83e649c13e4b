"""``judgelab power``: probe sizes from the card's own MDE, checked by simulation.

The promise: a probe of the size ``probe_sizes`` gives detects the effect δ at the card's stated
power.  Each check plants δ, sizes the probe from a pilot of the same judge, then runs the card on
200 planted worlds of that size and counts the worlds where the row is detected: within ±5 points
of the stated power (0.8) for a position, a length and an accuracy row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab import cli
from judgelab.bias_card.card import CardSettings, bias_card
from judgelab.bias_card.planted import PlantedJudge, planted_log, planted_truth
from judgelab.bias_card.power import assumed_pilot, probe_sizes

LENIENT = CardSettings(views=("lenient",))


@pytest.mark.parametrize("judge,metric,null", [
    (PlantedJudge(position=0.17), "position_preference", 0.0),
    (PlantedJudge(length=0.2), "length_preference", 0.0),
    (PlantedJudge(accuracy=0.62), "accuracy_average", 0.5),
])
def test_the_stated_power_holds_over_200_planted_worlds(judge, metric, null):
    delta = planted_truth(judge)[metric] - null
    sizes = probe_sizes(planted_log(judge, n_items=600, seed=99), {metric: delta}, LENIENT)
    (row,) = sizes.itertuples()
    items = int(row.items_needed)
    assert row.pairs_needed == 2 * items and row.games_needed == 4 * items  # the pilot's design
    detected = [bias_card(planted_log(judge, n_items=items, seed=5000 + w), LENIENT)
                .set_index("metric").loc[metric, "status"] == "detected" for w in range(200)]
    assert abs(np.mean(detected) - LENIENT.power) <= 0.05, (metric, items, np.mean(detected))


def _card_row(mde: float, n_items: int, family: str = "holm over 4 tests: a, b, c, d", status: str = "not detected",
              estimate: float = 0.0) -> dict:
    return {"metric": "m", "mde": mde, "n_items": n_items, "test_family": family, "status": status,
            "estimate": estimate, "null_value": 0.0}


def test_items_scale_with_the_square_of_mde_over_delta(monkeypatch):
    """Half the effect needs four times the items; the family's level only through Holm's step-down."""
    from judgelab.bias_card import power

    pilot = planted_log(PlantedJudge(), n_items=10, seed=1)
    rows = [_card_row(0.4, 10, family="none"), {**_card_row(0.5, 5, family="none"), "metric": "half"}]
    card = pd.DataFrame([{**r, "judge": "planted", "view": "lenient", "p_value": 0.5, "estimable": True,
                          "identified": True} for r in rows])
    monkeypatch.setattr(power, "bias_card", lambda t, s: card)
    s = CardSettings(views=("lenient",), multiplicity="none")
    one = probe_sizes(pilot, {"m": 0.1}, s).iloc[0]
    half = probe_sizes(pilot, {"m": 0.05}, s).iloc[0]
    assert one["level"] == 0.05
    # 10 x (0.4 / 0.1)^2 = 160 items, a little more with Student's t on the probe's items
    assert 160 <= one["items_needed"] <= 165
    assert half["items_needed"] / one["items_needed"] == pytest.approx(4, rel=0.02)
    # a row whose items are half the log's (eligible verdicts on half the items): twice the log items
    assert probe_sizes(pilot, {"half": 0.125}, s).iloc[0]["items_needed"] == pytest.approx(2 * 5 * 16, rel=0.05)
    assert one["pairs_needed"] == 2 * one["items_needed"] and one["games_needed"] == 4 * one["items_needed"]
    assert probe_sizes(pilot, {"m": -0.1}, s).iloc[0]["reason"] == "delta must be positive"
    assert probe_sizes(pilot, {"zzz": 0.1}, s).empty


def test_holm_level_counts_the_rows_the_probe_would_detect_first(monkeypatch):
    from judgelab.bias_card import power

    pilot = planted_log(PlantedJudge(), n_items=10, seed=1)
    fam = "holm over 3 tests: m, big, small"
    rows = [_card_row(0.2, 100, fam), {**_card_row(0.1, 100, fam), "metric": "big", "estimate": 0.5},
            {**_card_row(0.1, 100, fam), "metric": "small", "estimate": 0.01}]
    card = pd.DataFrame([{**r, "judge": "planted", "view": "lenient", "p_value": 0.5, "estimable": True,
                          "identified": True} for r in rows])
    monkeypatch.setattr(power, "bias_card", lambda t, s: card)
    out = probe_sizes(pilot, {"m": 0.2}, CardSettings(views=("lenient",))).iloc[0]
    assert out["level"] == pytest.approx(0.05 / 2)  # "big" is detected before m, "small" is not


def test_a_planted_pilot_from_assumptions_is_marked_simulated():
    pilot = assumed_pilot({"accuracy": 0.8, "tie": 0.1}, n_items=20)
    assert pilot["simulated"].all() and pilot["item_id"].nunique() == 20
    from judgelab.config import ConfigError

    with pytest.raises(ConfigError, match="unknown accuracyy"):
        assumed_pilot({"accuracyy": 0.8})
    with pytest.raises(ConfigError, match="--assume"):
        assumed_pilot({"tie": 0.6, "fail": 0.5})


def test_the_command_from_a_log_and_from_assumptions(tmp_path, capsys, data_root):
    log = data_root / "llmbar_judge_outputs" / "Natural" / "evaluators" / "ChatGPT" / "Vanilla" / "result.json"
    out = tmp_path / "power.csv"
    assert cli.main(["power", "--format", "llmbar", str(log), "--delta", "0.1", "--delta", "position_preference=0.15",
                     "--views", "lenient", "--out", str(out)]) == 0
    t = pd.read_csv(out).set_index("metric")
    assert t.loc["position_preference", "delta"] == 0.15 and t.loc["accuracy_average", "delta"] == 0.1
    assert (t["source"] == "pilot log").all()
    pos = t.loc["position_preference"]
    # ChatGPT's accuracy rows are detected first (Holm), so position faces a looser level than alpha / m
    assert 0.05 / 13 < pos["level"] <= 0.05 and pos["items_needed"] > 0
    assert cli.main(["power", "--assume", "accuracy=0.8", "--assume-items", "100", "--delta", "0.1",
                     "--views", "lenient"]) == 0
    assert "simulated pilot of 100 items" in capsys.readouterr().out
    assert cli.main(["power", "--assume", "acc=0.8", "--delta", "0.1"]) == 2
    assert cli.main(["power", "--assume", "accuracy=0.8", "--delta", "x"]) == 2
    assert "not NUMBER or NAME=NUMBER" in capsys.readouterr().err


def test_a_pilot_without_a_tested_row_is_one_line(tmp_path, capsys):
    planted_log(PlantedJudge(), n_items=1, seed=1).iloc[:1].to_csv(tmp_path / "one.csv", index=False)
    assert cli.main(["power", "--format", "judgelab", str(tmp_path / "one.csv"), "--delta", "0.1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no tested row" in err[0]
