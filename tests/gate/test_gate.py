"""``--fail-on``: the rule grammar, its evaluation on real cards and boards, and the exit codes.

Exit 1 when a rule trips (the rows printed one per line and written to ``gate.json``), 2 for a
malformed rule or one that names no row (with the closest names; nothing written), 0 otherwise.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from judgelab import cli
from judgelab.bias_card.card import CardSettings, bias_card
from judgelab.bias_card.planted import PlantedJudge, planted_log
from judgelab.gate.rules import GateError, Rule, board_subject, card_subject, evaluate, parse_rule, parse_rules


# ---- grammar ------------------------------------------------------------------------------------------
def test_each_form_parses():
    assert parse_rule("any-detected") == Rule("any-detected", "any-detected")
    assert parse_rule(" detected:position_preference ") == Rule("detected:position_preference", "detected",
                                                                  "position_preference")
    r = parse_rule("position_preference[judge=gpt-4, view=lenient].estimate>0.05")
    assert (r.kind, r.name, r.filters, r.column, r.op, r.value) == (
        "threshold", "position_preference", (("judge", "gpt-4"), ("view", "lenient")), "estimate", ">", 0.05)
    assert parse_rule("human_accuracy.ci_high<0.7").op == "<"
    assert parse_rule("gpt-4.1-mini.win_rate <= 40").name == "gpt-4.1-mini"  # dots in a model name
    assert parse_rule("m.win_rate>=-1e-3").value == -0.001
    for op in ("<", "<=", ">", ">=", "==", "!="):
        assert parse_rule(f"x.estimate{op}1").op == op
    assert parse_rule("rank-flip:style_controlled[corrected_ci_overlap=False]").filters == (
        ("corrected_ci_overlap", "False"),)


@pytest.mark.parametrize("bad", ["", "detected", "position_preference.estimate", "x.estimate>abc",
                                 "x.estimate>nan", "x.estimate=>1", "x[judge].estimate>1", "detect:x",
                                 "x.1col>2"])
def test_malformed_rules_are_one_error_naming_the_rule(bad):
    with pytest.raises(GateError, match="--fail-on"):
        parse_rules([bad])


# ---- evaluation on real cards ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cards():
    biased = planted_log(PlantedJudge(position=0.5), n_items=60, seed=3, judge="biased")
    fair = planted_log(PlantedJudge(), n_items=60, seed=4, judge="fair")
    return bias_card(pd.concat([biased, fair], ignore_index=True))


def test_detected_trips_on_the_detected_rows_only(cards):
    res = evaluate(parse_rules(["detected:position_preference"]), card_subject(cards))
    judges = {t["row"]["judge"] for t in res.tripped}
    assert judges == {"biased"} and res.exit_code == 1
    pos = cards[(cards["metric"] == "position_preference") & (cards["judge"] == "biased")]
    assert len(res.tripped) == int((pos["status"] == "detected").sum()) == 2  # both views
    one_view = evaluate(parse_rules(["detected:position_preference[view=strict,judge=biased]"]), card_subject(cards))
    assert [(t["row"]["view"], t["row"]["judge"]) for t in one_view.tripped] == [("strict", "biased")]
    assert evaluate(parse_rules(["detected:position_preference[judge=fair]"]), card_subject(cards)).exit_code == 0


def test_any_detected_reads_bias_rows_not_accuracy(cards):
    fair = cards[cards["judge"] == "fair"]
    assert (fair[fair["metric"] == "accuracy_average"]["status"] == "detected").all()  # above chance: no bias
    res = evaluate(parse_rules(["any-detected"]), card_subject(fair))
    assert all(t["row"]["metric"] != "accuracy_average" for t in res.tripped)
    biased = evaluate(parse_rules(["any-detected"]), card_subject(cards))
    assert {"position_preference"} <= {t["row"]["metric"] for t in biased.tripped}


def test_thresholds_compare_the_named_column(cards):
    est = cards.query("judge == 'biased' and view == 'lenient' and metric == 'position_preference'")["estimate"].item()
    below = evaluate(parse_rules([f"position_preference[judge=biased,view=lenient].estimate>{est - 1e-6}"]),
                     card_subject(cards))
    above = evaluate(parse_rules([f"position_preference[judge=biased,view=lenient].estimate>{est + 1e-6}"]),
                     card_subject(cards))
    assert below.exit_code == 1 and above.exit_code == 0
    assert below.tripped[0]["row"]["estimate"] == pytest.approx(est)
    # a row without a number (PPI without human labels) never trips, and is listed as unchecked
    nov = evaluate(parse_rules(["ppi_win_rate.estimate<2"]), card_subject(cards))
    assert nov.exit_code == 0 and len(nov.no_value) == int(cards["metric"].eq("ppi_win_rate").sum())


@pytest.mark.parametrize("rule,hint", [
    ("detected:position_preferance", "did you mean 'position_preference'"),
    ("position_preference.estimat>0.1", "did you mean 'estimate'"),
    ("position_preference[jugde=x].estimate>0.1", "did you mean 'judge'"),
    ("position_preference[judge=biassed].estimate>0.1", "did you mean 'biased'"),
    ("rank-flip:style_controlled", "has no rank-flip rule"),
    ("detected:zzzzzz", "known: "),
])
def test_a_rule_naming_no_row_is_an_error_with_the_closest_names(cards, rule, hint):
    with pytest.raises(GateError, match=hint.replace("(", r"\(")):
        evaluate(parse_rules([rule]), card_subject(cards))


def test_gate_json_lists_rules_trips_and_exit_code(cards):
    res = evaluate(parse_rules(["detected:position_preference", "tie_rate.estimate>0.99"]), card_subject(cards))
    doc = json.loads(res.to_json())
    assert doc["rules"] == ["detected:position_preference", "tie_rate.estimate>0.99"]
    assert doc["exit_code"] == 1 and len(doc["tripped"]) == 2
    assert res.lines()[0].startswith("detected:position_preference: judge=biased, view=")


def test_null_judges_pass_the_position_gate_in_95_percent_of_worlds():
    """The gate's false alarms are the card's: at alpha 0.05, a fair judge trips
    ``detected:position_preference`` in at most 5 % of worlds (200 planted null worlds)."""
    s = CardSettings(views=("lenient",))
    rule = parse_rules(["detected:position_preference"])
    tripped = sum(evaluate(rule, card_subject(bias_card(planted_log(PlantedJudge(), n_items=40, seed=1000 + w),
                                                        s))).exit_code
                  for w in range(200))
    assert tripped / 200 <= 0.05


# ---- leaderboard ------------------------------------------------------------------------------------------
def _board() -> tuple[pd.DataFrame, pd.DataFrame]:
    table = pd.DataFrame({"model": ["gpt-4.1", "m2", "=cmd"], "win_rate": [60.0, 40.0, np.nan],
                          "style_controlled": [45.0, 55.0, 50.0], "lc_win_rate": [58.0, 42.0, 50.0]})
    flips = pd.DataFrame({"correction": ["style_controlled"], "model_1": ["gpt-4.1"], "model_2": ["m2"],
                          "win_rate_1": [60.0], "win_rate_2": [40.0], "corrected_1": [45.0], "corrected_2": [55.0],
                          "raw_ci_overlap": [False], "corrected_ci_overlap": [True]})
    return table, flips


def test_board_rules_rank_flips_and_thresholds():
    subject = board_subject(*_board())
    flip = evaluate(parse_rules(["rank-flip:style_controlled"]), subject)
    assert flip.exit_code == 1 and flip.tripped[0]["row"]["model_1"] == "gpt-4.1"
    assert evaluate(parse_rules(["rank-flip:lc_win_rate"]), subject).exit_code == 0
    assert evaluate(parse_rules(["rank-flip:style_controlled[corrected_ci_overlap=False]"]), subject).exit_code == 0
    assert evaluate(parse_rules(["gpt-4.1.win_rate<50"]), subject).exit_code == 0
    assert evaluate(parse_rules(["m2.win_rate<50"]), subject).exit_code == 1
    with pytest.raises(GateError, match="did you mean 'style_controlled'"):
        evaluate(parse_rules(["rank-flip:style_control"]), subject)
    with pytest.raises(GateError, match="has no detected rule"):
        evaluate(parse_rules(["detected:m2"]), subject)
    with pytest.raises(GateError, match=r"did you mean 'gpt-4\.1'"):
        evaluate(parse_rules(["gpt-41.win_rate<50"]), subject)


# ---- the commands' exit codes ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("logs")
    biased = planted_log(PlantedJudge(position=0.5), n_items=40, seed=5, judge="biased")
    fair = planted_log(PlantedJudge(), n_items=40, seed=6, judge="fair")
    biased.to_csv(root / "biased.csv", index=False)
    fair.to_csv(root / "fair.csv", index=False)
    return root


def _audit(log, out, *rules):
    return cli.main(["audit", "--format", "judgelab", str(log), "--out", str(out),
                     *(a for r in rules for a in ("--fail-on", r))])


def test_audit_exits_1_on_a_planted_worsening_and_writes_gate_json(logs, tmp_path, capsys):
    out = tmp_path / "card"
    assert _audit(logs / "biased.csv", out, "detected:position_preference[view=lenient]") == 1
    err = capsys.readouterr().err
    assert "judgelab: gate tripped: detected:position_preference[view=lenient]: judge=biased" in err
    gate = json.loads((out / "gate.json").read_text())
    assert gate["exit_code"] == 1 and gate["tripped"][0]["row"]["metric"] == "position_preference"
    assert (out / "bias_card.csv").exists()  # the whole set is written, the gate beside it


def test_audit_exits_0_on_the_fair_judge(logs, tmp_path):
    out = tmp_path / "card"
    assert _audit(logs / "fair.csv", out, "detected:position_preference") == 0
    assert json.loads((out / "gate.json").read_text())["tripped"] == []
    assert _audit(logs / "fair.csv", tmp_path / "plain") == 0
    assert not (tmp_path / "plain" / "gate.json").exists()  # no rule, no gate file


def test_audit_exits_2_on_an_unknown_row_and_writes_nothing(logs, tmp_path, capsys):
    out = tmp_path / "card"
    assert _audit(logs / "fair.csv", out, "detected:position_bias") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("judgelab: error: --fail-on 'detected:position_bias'")
    assert "did you mean 'position_preference'" in err[0]
    assert not out.exists()


def test_a_malformed_rule_stops_before_the_log_is_read(tmp_path, capsys):
    assert _audit(tmp_path / "no-such-log.csv", tmp_path / "card", "position_preference.estimate>>1") == 2
    assert "--fail-on 'position_preference.estimate>>1'" in capsys.readouterr().err


def test_leaderboard_exits_on_its_rules(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for m in ("m1", "m2"):
        rows = [{"instruction": f"q{i}", "output_1": "base answer " * (1 + i % 4), "generator_1": "base",
                 "output_2": f"{m} answer " * (1 + (i * 7) % 6), "generator_2": m, "dataset": "d",
                 "annotator": "ann", "preference": 1 + float(rng.random() < (0.8 if m == "m1" else 0.3)),
                 "raw_completion": None} for i in range(30)]
        p = tmp_path / "results" / m / "ann" / "annotations.json"
        p.parent.mkdir(parents=True)
        p.write_text(json.dumps(rows), encoding="utf-8")
    base = ["leaderboard", "--format", "alpaca_eval", str(tmp_path / "results"), "--resamples", "2"]
    assert cli.main([*base, "--out", str(tmp_path / "b1"), "--fail-on", "m2.win_rate<50"]) == 1
    assert json.loads((tmp_path / "b1" / "gate.json").read_text())["tripped"][0]["row"]["model"] == "m2"
    assert cli.main([*base, "--out", str(tmp_path / "b2"), "--fail-on", "m1.win_rate<50"]) == 0
    assert cli.main([*base, "--out", str(tmp_path / "b3"), "--fail-on", "m3.win_rate<50"]) == 2
    assert "no model named 'm3'" in capsys.readouterr().err
    assert not (tmp_path / "b3").exists()


@pytest.mark.parametrize("op,trips", [("<", [False, False, True]), ("<=", [False, True, True]),
                                      (">", [True, False, False]), (">=", [True, True, False]),
                                      ("==", [False, True, False]), ("!=", [True, False, True])])
def test_every_operator_at_the_boundary(op, trips):
    """40 OP 50, 50 OP 50, 60 OP 50 for each operator: the boundary case decides < from <=."""
    table = pd.DataFrame({"model": ["a", "b", "c"], "win_rate": [60.0, 50.0, 40.0]})
    subject = board_subject(table, pd.DataFrame(columns=["correction"]))
    got = [evaluate(parse_rules([f"{m}.win_rate{op}50"]), subject).exit_code == 1 for m in ("a", "b", "c")]
    assert got == trips


def test_filters_need_a_key_and_a_matching_row():
    with pytest.raises(GateError, match="not KEY=VALUE"):
        parse_rules(["x[=v].estimate>1"])
    table = pd.DataFrame({"metric": ["m", "m", "k"], "judge": ["j1", "j2", "j1"], "view": ["lenient"] * 3,
                          "status": ["detected"] * 3, "estimate": [0.1, 0.2, 0.3]})
    subject = card_subject(table)
    with pytest.raises(GateError, match="no metric 'k' has judge=j2"):  # j2 exists, but not for k
        evaluate(parse_rules(["k[judge=j2].estimate>0"]), subject)
    text = table.assign(estimate=["high", "low", "mid"])
    with pytest.raises(GateError, match="holds no numbers"):
        evaluate(parse_rules(["m.estimate>0"]), card_subject(text))
