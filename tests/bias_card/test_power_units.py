"""Units of :mod:`judgelab.bias_card.power` that the planted-world check does not pin: the family size
read from the card, Student's t at a tiny probe, the settings and defaults passed through, the
``--delta``/``--assume`` grammar and the command's messages (fast: small pilots)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from judgelab import cli
from judgelab.bias_card import power
from judgelab.bias_card.card import CardSettings, bias_card
from judgelab.bias_card.planted import PlantedJudge, planted_log
from judgelab.config import ConfigError


def test_family_size_reads_the_card_family_and_is_one_without_it() -> None:
    assert power._family_size("holm over 5 tests: a, b") == 5
    assert power._family_size("bh over 12 tests: x") == 12
    assert power._family_size("none") == 1
    assert power._family_size(float("nan")) == 1


def test_z_and_t_sums_are_the_quantile_sums_with_at_least_one_degree_of_freedom() -> None:
    assert power._z_sum(0.05, 0.8) == pytest.approx(norm.ppf(0.975) + norm.ppf(0.8))
    assert power._t_sum(0.05, 0.8, 9) == pytest.approx(student_t.ppf(0.975, 9) + student_t.ppf(0.8, 9))
    # below one degree of freedom both quantiles are taken at one
    one = student_t.ppf(0.975, 1.0) + student_t.ppf(0.8, 1.0)
    assert power._t_sum(0.05, 0.8, 0.5) == pytest.approx(one)
    assert power._t_sum(0.05, 0.8, -3) == pytest.approx(one)


@pytest.fixture(scope="module")
def pilot() -> pd.DataFrame:
    return planted_log(PlantedJudge(position=0.2, accuracy=0.7), n_items=120, seed=3)


def test_the_settings_given_are_the_cards_and_none_is_the_default(pilot: pd.DataFrame) -> None:
    loose = CardSettings(views=("lenient",), alpha=0.2, multiplicity="none")
    got = power.probe_sizes(pilot, 0.1, loose).set_index("metric")
    card = bias_card(pilot, loose)
    card = card[(card["view"] == "lenient") & card["p_value"].notna()].set_index("metric")
    assert (got["pilot_mde"] == card.loc[got.index, "mde"]).all()
    assert (got["level"] == 0.2).all()
    default = power.probe_sizes(pilot, 0.1).set_index("metric")
    ref = bias_card(pilot, CardSettings())
    ref = ref[(ref["view"] == "lenient") & ref["p_value"].notna()].set_index("metric")
    assert (default["pilot_mde"] == ref.loc[default.index, "mde"]).all()


def test_assumed_pilot_defaults_and_its_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict = {}

    def fake(planted, n_items, seed, judge):
        seen.update(n_items=n_items, seed=seed, judge=judge)

    monkeypatch.setattr("judgelab.bias_card.planted.planted_log", fake)
    power.assumed_pilot({"accuracy": 0.8})
    assert seen == {"n_items": 600, "seed": 0, "judge": "assumed"}
    power.assumed_pilot({"accuracy": 0.8}, n_items=7, seed=11)
    assert seen == {"n_items": 7, "seed": 11, "judge": "assumed"}


def test_assumed_pilot_names_unknown_and_known_fields() -> None:
    with pytest.raises(ConfigError) as err:
        power.assumed_pilot({"zeta": 0.1, "alpha": 0.2})
    msg = str(err.value)
    assert msg.startswith("--assume: unknown alpha, zeta; known: accuracy, ")
    assert "family" not in msg  # a judge's family is no rate to assume
    with pytest.raises(ConfigError, match="unknown family"):
        power.assumed_pilot({"family": 1.0})


def test_the_pair_grammar() -> None:
    assert power._pairs(["0.1"], "--delta") == {"*": 0.1}
    assert power._pairs(["a=0.1,b=0.2", " c = 3"], "--delta") == {"a": 0.1, "b": 0.2, "c": 3.0}
    assert power._pairs(None, "--delta") == {}
    with pytest.raises(ConfigError, match=r"^--assume: 'x=y' is not NUMBER or NAME=NUMBER$"):
        power._pairs(["a=1,x=y"], "--assume")


def test_command_messages_are_exact(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    assert cli.main(["power", "--delta", "position_preference=abc"]) == 2
    assert "judgelab: error: --delta: 'position_preference=abc' is not NUMBER or NAME=NUMBER" in capsys.readouterr().err
    assert cli.main(["power", "--assume", "accuracy=q", "--delta", "0.1"]) == 2
    assert "judgelab: error: --assume: 'accuracy=q' is not NUMBER or NAME=NUMBER" in capsys.readouterr().err
    assert cli.main(["power", "--delta", ","]) == 2
    assert "judgelab: error: --delta: '' is not NUMBER or NAME=NUMBER" in capsys.readouterr().err
    (tmp_path / "log.csv").write_text("x\n")
    assert cli.main(["power", str(tmp_path / "log.csv"), "--assume", "accuracy=0.8", "--delta", "0.1"]) == 2
    assert ("judgelab: error: give a pilot log (FILES with --format/--mapping) or --assume, not both"
            in capsys.readouterr().err)


def test_command_passes_items_seed_settings_and_the_default_delta(monkeypatch, tmp_path, capsys) -> None:
    seen = {}
    real_assumed, real_sizes = power.assumed_pilot, power.probe_sizes

    def assumed(assume, *, n_items, seed):
        seen.update(assume=assume, n_items=n_items, seed=seed)
        return real_assumed(assume, n_items=n_items, seed=seed)

    def sizes(pilot, deltas, settings, *, default=None, view="lenient"):
        seen.update(deltas=dict(deltas), alpha=settings.alpha, default=default)
        return real_sizes(pilot, deltas, settings, default=default, view=view)

    monkeypatch.setattr(power, "assumed_pilot", assumed)
    monkeypatch.setattr(power, "probe_sizes", sizes)
    out = tmp_path / "p.csv"
    assert cli.main(["power", "--assume", "accuracy=0.8,position=0.2", "--assume-items", "80", "--seed", "4",
                     "--alpha", "0.1", "--delta", "0.1", "--delta", "position_preference=0.2",
                     "--views", "lenient", "--out", str(out)]) == 0
    assert seen == {"assume": {"accuracy": 0.8, "position": 0.2}, "n_items": 80, "seed": 4,
                    "deltas": {"position_preference": 0.2}, "alpha": 0.1, "default": 0.1}
    table = pd.read_csv(out)
    assert list(table.columns) == ["source", *power.COLUMNS]
    assert (table["source"] == "assumed (a simulated pilot of 80 items)").all()
    printed = capsys.readouterr().out
    assert "source: assumed (a simulated pilot of 80 items); alpha 0.1, power 0.8, multiplicity holm" in printed
    assert "source" not in printed.splitlines()[0]  # the printed table leaves the source column to the last line


def test_help_texts_and_metavars() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd")
    assert {a.dest: a.help for a in sub._choices_actions}["power"] == (
        "items, pairs and games a probe needs to detect an effect, per card row")
    helps = {a.dest: a.help for a in sub.choices["power"]._actions}
    assert {k: helps[k] for k in ("files", "format", "mapping", "table", "judge", "family", "delta", "assume",
                                  "assume_items")} == {
        "files": "a pilot log (as for audit); or use --assume",
        "format": "log format preset",
        "mapping": "YAML mapping",
        "table": "side table, as for audit",
        "judge": "judge name when the log does not name it",
        "family": "judge model family when it cannot be inferred",
        "delta": "effect to detect on each row's scale: NUMBER for every row, or METRIC=NUMBER (repeatable)",
        "assume": "no pilot: a simulated one with these judge rates, e.g. accuracy=0.8,tie=0.05,fail=0.02",
        "assume_items": "items of the simulated pilot (default 600)",
    }
    assert helps["out"].startswith("also write the table here (")
    assert {a.dest: a.metavar for a in sub.choices["power"]._actions}["table"] == "NAME=PATH"
    assert sub.choices["power"].get_default("assume_items") == 600
    args = parser.parse_args(["power", "--delta", "0.1", "--delta", "a=1", "--assume", "x=1", "--assume", "y=2",
                              "--table", "n=p", "--assume-items", "5"])
    assert args.delta == ["0.1", "a=1"] and args.assume == ["x=1", "y=2"] and args.assume_items == 5
    assert args.table == ["n=p"] and args.files == []
    with pytest.raises(SystemExit):
        parser.parse_args(["power"])  # --delta is required


def test_printed_table_has_its_header_no_index_and_four_decimals(capsys) -> None:
    assert cli.main(["power", "--assume", "accuracy=0.8,position=0.2", "--assume-items", "60",
                     "--delta", "position_preference=0.2", "--views", "lenient"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["judge", "metric", "delta"]
    assert lines[1].split()[:2] == ["assumed", "position_preference"]  # only the named metric, no index column
    assert len(lines) == 4  # header, one row, blank, the source line
    import re

    assert not re.search(r"\d\.\d{5,}", "\n".join(lines[:2]))


def _fake_card(monkeypatch: pytest.MonkeyPatch, rows: list[dict]) -> None:
    base = {"view": "lenient", "p_value": 0.5, "estimable": True, "identified": True, "test_family": "none",
            "estimate": 0.0, "null_value": 0.0, "status": "not detected"}
    card = pd.DataFrame([{**base, **r} for r in rows])
    monkeypatch.setattr(power, "bias_card", lambda t, s: card)


NONE = CardSettings(views=("lenient",), multiplicity="none")


def test_a_row_without_a_finite_mde_keeps_every_field(monkeypatch, pilot) -> None:
    _fake_card(monkeypatch, [
        {"judge": "planted", "metric": "nomde", "mde": float("nan"), "n_items": 10, "estimate": 0.7,
         "null_value": 0.5},
        {"judge": "planted", "metric": "zero", "mde": 0.0, "n_items": 10},
        {"judge": "planted", "metric": "ok", "mde": 0.2, "n_items": 10},
    ])
    out = power.probe_sizes(pilot, 0.1, NONE).set_index("metric")
    row = out.loc["nomde"]
    assert row["judge"] == "planted" and row["delta"] == 0.1 and row["pilot_estimate"] == 0.7
    assert row["null_value"] == 0.5 and row["pilot_items"] == 10 and pd.isna(row["pilot_mde"])
    assert row[["level", "items_needed", "pairs_needed", "games_needed"]].isna().all()
    assert row["reason"] == "no finite MDE in the pilot"
    assert out.loc["zero", "reason"] == "no finite MDE in the pilot"
    assert out.loc["ok", "reason"] == "" and out.loc["ok", "items_needed"] > 0  # the loop goes on after a reason
    zero = power.probe_sizes(pilot, 0.0, NONE).set_index("metric")
    assert (zero["reason"] == "delta must be positive").all()
    half = power.probe_sizes(pilot, 0.5, NONE).set_index("metric")
    assert half.loc["nomde", "reason"] == "no finite MDE in the pilot"  # a delta below one is a delta


def test_judges_come_out_sorted_and_an_empty_result_keeps_the_columns(monkeypatch, pilot) -> None:
    _fake_card(monkeypatch, [{"judge": j, "metric": "m", "mde": 0.2, "n_items": 10} for j in ("b", "a")])
    pilot = pd.concat([pilot.assign(judge="b"), pilot.assign(judge="a")])
    assert power.probe_sizes(pilot, 0.1, NONE)["judge"].tolist() == ["a", "b"]
    empty = power.probe_sizes(pilot, {"other": 0.1}, NONE)
    assert empty.empty and list(empty.columns) == power.COLUMNS


def test_holm_level_reads_effects_from_the_null_and_counts_other_rows(monkeypatch, pilot) -> None:
    fam = "holm over 2 tests: m, o"
    holm = CardSettings(views=("lenient",))
    # "o" sits 0.2 from its null of 0.5, below its MDE 0.3: not detected first, so m faces alpha / 2
    _fake_card(monkeypatch, [{"judge": "planted", "metric": "m", "mde": 0.2, "n_items": 100, "test_family": fam},
                             {"judge": "planted", "metric": "o", "mde": 0.3, "n_items": 100, "test_family": fam,
                              "estimate": 0.7, "null_value": 0.5}])
    row = power.probe_sizes(pilot, {"m": 0.2}, holm).iloc[0]
    assert row["level"] == pytest.approx(0.025)
    # at its own level the t-based MDE is a little above the z one: about the pilot's 100 items, no more
    items = row["items_needed"] * 100 / 120  # the row's items are 100 of the log's 120
    assert 100 <= items <= 105
    # "o" far from its null: detected first, m faces alpha
    _fake_card(monkeypatch, [{"judge": "planted", "metric": "m", "mde": 0.2, "n_items": 100, "test_family": fam},
                             {"judge": "planted", "metric": "o", "mde": 0.3, "n_items": 100, "test_family": fam,
                              "estimate": 0.1, "null_value": 0.5}])
    row = power.probe_sizes(pilot, {"m": 0.2}, holm).iloc[0]
    assert row["level"] == pytest.approx(0.05)
    # the MDE was stated at alpha / 2; at alpha the row needs fewer items: (z(.025)+z(.8)) vs (z(.0125)+z(.8))
    ratio = ((norm.ppf(0.975) + norm.ppf(0.8)) / (norm.ppf(1 - 0.025 / 2) + norm.ppf(0.8))) ** 2
    assert row["items_needed"] * 100 / 120 == pytest.approx(100 * ratio, rel=0.04)


def test_small_probes_use_items_minus_one_degrees_of_freedom_and_at_least_one_item(monkeypatch, pilot) -> None:
    _fake_card(monkeypatch, [{"judge": "planted", "metric": "m", "mde": 0.4, "n_items": 5},
                             {"judge": "planted", "metric": "one", "mde": 0.4, "n_items": 1}])
    row = power.probe_sizes(pilot, {"m": 0.4}, NONE).iloc[0]
    # the fixed point n = ceil(5 (t_{n-1} / z)^2) from the pilot's 5 items, by direct search
    z = power._z_sum(0.05, 0.8)
    fixed = next(n for n in range(1, 100) if math.ceil(5 * (power._t_sum(0.05, 0.8, n - 1) / z) ** 2) <= n)
    assert row["items_needed"] == fixed * 120 / 5  # the row's items are 5 of the log's 120
    assert power.probe_sizes(pilot, {"m": 40.0}, NONE).iloc[0]["items_needed"] == 24
    # a row with one eligible item of the log's 120: 120 log items per row item
    one = power.probe_sizes(pilot, {"one": 40.0}, NONE).iloc[0]
    assert one["items_needed"] == 120


def test_smallest_finds_the_first_true_size() -> None:
    for first in (1, 2, 3, 7, 8, 9, 1000, 123457):
        assert power._smallest(lambda n, f=first: n >= f) == first
    assert power._smallest(lambda n: False, limit=64) == 64


def test_a_metric_delta_alone_needs_no_default(capsys) -> None:
    assert cli.main(["power", "--assume", "accuracy=0.8", "--assume-items", "60", "--delta",
                     "accuracy_average=0.1", "--views", "lenient"]) == 0
    assert "accuracy_average" in capsys.readouterr().out


def test_other_rows_are_judged_at_the_probe_size_and_a_row_without_mde_never_counts(monkeypatch, pilot) -> None:
    fam = "holm over 2 tests: m, o"
    holm = CardSettings(views=("lenient",))
    # m needs about four times its 100 items (delta = MDE / 2), so "o" is read with an MDE half its pilot's:
    # its effect 0.2 is below its pilot MDE 0.3 but above 0.3 / 2, so the probe detects it first
    _fake_card(monkeypatch, [{"judge": "planted", "metric": "m", "mde": 0.2, "n_items": 100, "test_family": fam},
                             {"judge": "planted", "metric": "o", "mde": 0.3, "n_items": 100, "test_family": fam,
                              "estimate": 0.2}])
    assert power.probe_sizes(pilot, {"m": 0.1}, holm).iloc[0]["level"] == pytest.approx(0.05)
    _fake_card(monkeypatch, [{"judge": "planted", "metric": "m", "mde": 0.2, "n_items": 100, "test_family": fam},
                             {"judge": "planted", "metric": "o", "mde": float("nan"), "n_items": 100,
                              "test_family": fam, "estimate": 0.2}])
    assert power.probe_sizes(pilot, {"m": 0.1}, holm).iloc[0]["level"] == pytest.approx(0.025)
