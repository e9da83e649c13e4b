"""Bias card: planted biases recovered inside their item-clustered CIs, an unbiased control at
its null, and the replayed LLMBar judges' cards equal to the authors' statistics.json."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from judgelab.bias_card import CARD_COLUMNS, CardSettings, bias_card
from judgelab.bias_card.card import card_view
from judgelab.bias_card.planted import PlantedJudge, planted_log, planted_truth
from judgelab.verdict_import import import_verdicts, preset_mapping

SEEDS = range(20)
FAST = CardSettings(n_resamples=400)
PLANTED = PlantedJudge(position=0.2, length=0.25, markdown=0.2, self_pref=0.15, tie=0.06, fail=0.04)
CONTROL = PlantedJudge(tie=0.06, fail=0.04)
#: the null of every bias metric: what an unbiased judge's card must cover (the cue rows of a log with
#: gold: the excess over gold's share, 0 where gold is balanced on the cue, as in the planted logs)
NULLS = {"position_preference": 0.0, "length_preference": 0.0, "markdown_preference": 0.0,
         "self_preference": 0.0, "length_controlled": 0.0, "markdown_controlled": 0.0}


def _cards(judge: PlantedJudge) -> list[pd.DataFrame]:
    return [card_view(bias_card(planted_log(judge, n_items=60, seed=s), FAST)) for s in SEEDS]


@pytest.fixture(scope="module")
def planted_cards():
    return _cards(PLANTED)


@pytest.fixture(scope="module")
def control_cards():
    return _cards(CONTROL)


def _coverage(cards: list[pd.DataFrame], metric: str, truth: float) -> float:
    return float(np.mean([c.loc[metric, "ci_low"] <= truth <= c.loc[metric, "ci_high"] for c in cards]))


@pytest.mark.parametrize("metric", sorted(planted_truth(PLANTED)))
def test_planted_biases_are_recovered_inside_their_ci(planted_cards, metric):
    truth = planted_truth(PLANTED)[metric]
    assert _coverage(planted_cards, metric, truth) >= 0.9
    # and the estimate is centred on the truth, not merely covered by wide intervals
    est = np.mean([c.loc[metric, "estimate"] for c in planted_cards])
    assert est == pytest.approx(truth, abs=0.02)


@pytest.mark.parametrize("metric", sorted(NULLS))
def test_unbiased_control_is_inside_its_ci_at_the_null(control_cards, metric):
    assert _coverage(control_cards, metric, NULLS[metric]) >= 0.9


@pytest.mark.parametrize("metric", ["position_preference", "length_preference", "markdown_preference",
                                    "self_preference", "length_controlled", "markdown_controlled"])
def test_planted_biases_are_detected_and_the_control_is_not(planted_cards, control_cards, metric):
    """The test on the planted log rejects its null in most seeds; on the control it rarely does."""
    hit = np.mean([c.loc[metric, "p_value"] < 0.05 for c in planted_cards])
    false = np.mean([c.loc[metric, "p_value"] < 0.05 for c in control_cards])
    assert hit >= 0.6 and false <= 0.15
    # in the planted direction
    assert np.mean([c.loc[metric, "estimate"] > NULLS[metric] for c in planted_cards]) >= 0.9


def test_card_columns_and_underpowered_flag():
    card = bias_card(planted_log(PLANTED, n_items=60, seed=0), FAST)
    assert list(card.columns) == CARD_COLUMNS
    assert card["simulated"].all()
    tiny = card_view(bias_card(planted_log(PLANTED, n_items=4, pairs_per_item=1, seed=0), FAST))
    # 8 verdicts cannot detect a 10-point length preference: the card says so
    assert tiny.loc["length_preference", "underpowered"]
    assert not tiny.loc["length_preference", "mde"] <= 0.1  # too large, or none (not estimable here)
    # positional agreement uses only pairs with a verdict in both orders, and reports the share
    log = planted_log(PlantedJudge(fail=0.3), n_items=40, seed=3)
    c = card_view(bias_card(log, FAST))
    ab = log[log.order == "AB"].set_index("pair_id")
    ba = log[log.order == "BA"].set_index("pair_id")
    valid = (ab.verdict != "") & (ba.verdict != "")
    assert c.loc["positional_agreement", "n"] == valid.sum()
    assert c.loc["positional_agreement", "share"] == pytest.approx(valid.mean())
    assert c.loc["positional_agreement", "estimate"] == pytest.approx((ab.verdict[valid] == ba.verdict[valid]).mean())
    assert c.loc["parse_failures", "estimate"] == pytest.approx((log.verdict == "").mean())


def test_single_order_log_warns_that_position_is_confounded():
    log = planted_log(PLANTED, n_items=30, seed=0)
    card = card_view(bias_card(log[log.order == "AB"], FAST))
    assert "one presentation order" in card.loc["position_preference", "note"]
    assert card.loc["positional_agreement", "n"] == 0 and card.loc["positional_agreement", "underpowered"]


def _pct(s: str) -> float:
    m = re.match(r"\s*(\d+) / (\d+)", s)
    assert m, s
    return int(m.group(1)) / int(m.group(2))


@pytest.mark.shared_data
def test_llmbar_cards_equal_the_authors_statistics(data_root):
    """Every subset and judge in llmbar_judge_outputs: card == statistics.json, through the import
    and through a replayed verdict table re-imported with the judgelab preset."""
    files = sorted((data_root / "llmbar_judge_outputs").glob("*/evaluators/*/*/result.json"))
    assert files
    card = card_view(bias_card(import_verdicts(files, preset_mapping("llmbar")), FAST), "strict")
    for f in files:
        stats = json.loads((f.parent / "statistics.json").read_text())
        judge = f"{f.parts[-3]}-{f.parts[-2]}"
        c = card.loc[judge]
        assert c.loc["accuracy_AB", "estimate"] == pytest.approx(_pct(stats["correct_False"]), abs=1e-12)
        assert c.loc["accuracy_BA", "estimate"] == pytest.approx(_pct(stats["correct_True"]), abs=1e-12)
        assert c.loc["correct_both", "estimate"] == pytest.approx(_pct(stats["correct_both"]), abs=1e-12)
        assert c.loc["positional_agreement_all", "estimate"] == pytest.approx(_pct(stats["equal"]), abs=1e-12)
        assert 100 * c.loc["accuracy_average", "estimate"] == pytest.approx(
            float(stats["correct_average"].rstrip("%")), abs=1e-9)


def test_cli_audit_writes_the_card_and_rejects_bad_arguments(tmp_path, capsys):
    from judgelab import cli
    from judgelab.io import write_table

    log = planted_log(PLANTED, n_items=30, seed=0, judge="judge-x")
    write_table(log, tmp_path / "log.csv")
    out = tmp_path / "audit"
    assert cli.main(["audit", "--format", "judgelab", str(tmp_path / "log.csv"), "--out", str(out),
                     "--resamples", "200"]) == 0
    card = pd.read_csv(out / "bias_card.csv")
    assert list(card.columns[: len(CARD_COLUMNS)]) == CARD_COLUMNS and set(card["judge"]) == {"judge-x"}
    assert (out / "bias_card.png").stat().st_size > 0 and (out / "verdicts.parquet").exists()
    md = (out / "bias_card.md").read_text()
    assert "## judge-x" in md and "SIMULATED" in md and "position_preference" in md
    # a custom mapping file (one row per call) gives the same card
    (tmp_path / "m.yaml").write_text(
        "judge: judge\nfamily: family\npair_id: pair_id\nitem_id: item_id\nresponse_a: response_a\n"
        "response_b: response_b\nmodel_a: model_a\nmodel_b: model_b\nsimulated: simulated\n"
        "order: {path: order, values: {AB: AB, BA: BA}}\n"
        "verdict: {label: verdict, values: {A: A, B: B, tie: tie}, frame: stored}\n"
        "gold: {label: expected_verdict, values: {A: A, B: B}}\n")
    out2 = tmp_path / "audit2"
    assert cli.main(["audit", "--mapping", str(tmp_path / "m.yaml"), str(tmp_path / "log.csv"), "--out", str(out2),
                     "--resamples", "200"]) == 0
    card2 = pd.read_csv(out2 / "bias_card.csv")
    pd.testing.assert_series_equal(card2["estimate"], card["estimate"])
    capsys.readouterr()
    assert cli.main(["audit", str(tmp_path / "log.csv"), "--out", str(out)]) == 2
    assert "exactly one of --format PRESET or --mapping FILE" in capsys.readouterr().err
    assert cli.main(["audit", "--format", "nope", str(tmp_path / "log.csv"), "--out", str(out)]) == 2
    assert "unknown verdict-log format 'nope'" in capsys.readouterr().err
