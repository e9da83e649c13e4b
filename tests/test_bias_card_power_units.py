"""Units of :mod:`judgelab.bias_card.power` that the planted-world check does not pin: the family size
read from the card, Student's t at a tiny probe, the settings and defaults passed through, the
``--delta``/``--assume`` grammar and the command's messages (fast: small pilots)."""

from __future__ import annotations

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


def test_help_names_every_option() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd")
    text = sub.choices["power"].format_help()
    for phrase in ("a pilot log (as for audit); or use --assume", "log format preset", "YAML mapping",
                   "side table, as for audit", "judge name when the log does not name it",
                   "judge model family when it cannot be inferred",
                   "effect to detect on each row's scale: NUMBER for every row, or METRIC=NUMBER (repeatable)",
                   "no pilot: a simulated one with these judge rates, e.g. accuracy=0.8,tie=0.05,fail=0.02",
                   "items of the simulated pilot (default 600)", "also write the table here"):
        assert phrase in " ".join(text.split()), phrase
    assert sub.choices["power"].get_default("assume_items") == 600
    args = parser.parse_args(["power", "--delta", "0.1", "--delta", "a=1", "--assume", "x=1", "--assume", "y=2",
                              "--table", "n=p", "--assume-items", "5"])
    assert args.delta == ["0.1", "a=1"] and args.assume == ["x=1", "y=2"] and args.assume_items == 5
    assert args.table == ["n=p"] and args.files == []
    with pytest.raises(SystemExit):
        parser.parse_args(["power"])  # --delta is required
