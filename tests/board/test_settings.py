"""The leaderboard's statistic options come from one declaration (``BoardSettings``, made with the
bias card's settings helper): ``judgelab leaderboard --help`` lists each with its help, range and
default, the parsed default is the declared one (the interval level: the one constant), and an
out-of-range value is refused by the settings themselves, naming the option."""

from __future__ import annotations

import argparse

import pytest

from judgelab import cli
from judgelab.bias_card.settings import from_args, settings_of
from judgelab.board.table import BoardSettings
from judgelab.config import ConfigError
from judgelab.stats.intervals import DEFAULT_ALPHA


def _leaderboard_parser() -> argparse.ArgumentParser:
    return cli._subcommands(cli.build_parser())["leaderboard"]


def test_help_lists_every_declared_option_with_its_help_range_and_default(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["leaderboard", "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    declared = settings_of(BoardSettings)
    assert [s.flag for _, s, _ in declared] == ["--alpha", "--resamples", "--seed"]
    for _, s, default in declared:
        assert f"{s.flag} {s.key.upper()} {s.help}; {s.range_text()} (default {default})" in text


def test_each_option_is_declared_once_and_no_other_field_is_an_option():
    parser = _leaderboard_parser()
    flags = [o for a in parser._actions for o in a.option_strings]
    for _, s, _ in settings_of(BoardSettings):
        assert flags.count(s.flag) == 1
    assert {name for name, _, _ in settings_of(BoardSettings)} == {"alpha", "style_rounds", "seed"}
    assert "--gamed" not in flags and "--memory-gib" not in flags  # fields read from files or the environment


def test_the_parsed_defaults_are_the_declared_ones_and_alpha_is_the_one_constant():
    args = _leaderboard_parser().parse_args(["--format", "alpaca_eval", "x", "--out", "o"])
    assert args.alpha == DEFAULT_ALPHA == BoardSettings().alpha
    made = from_args(BoardSettings, args, "judgelab leaderboard")
    assert made == BoardSettings()
    assert (made.alpha, made.style_rounds, made.seed) == (DEFAULT_ALPHA, 100, 0)


def test_parsed_values_reach_the_settings_and_other_fields_pass_through():
    args = _leaderboard_parser().parse_args(["--format", "alpaca_eval", "x", "--out", "o", "--alpha", "0.2",
                                             "--resamples", "7", "--seed", "3"])
    made = from_args(BoardSettings, args, "judgelab leaderboard", corrections=("lc",))
    assert (made.alpha, made.style_rounds, made.seed, made.corrections) == (0.2, 7, 3, ("lc",))


@pytest.mark.parametrize("field, value, line", [
    ("alpha", 1.5, "leaderboard setting alpha: must be a number in (0, 1), got 1.5"),
    ("alpha", 0.0, "leaderboard setting alpha: must be a number in (0, 1), got 0.0"),
    ("style_rounds", 0, "leaderboard setting resamples: must be an integer in [1, inf), got 0"),
    ("seed", -2, "leaderboard setting seed: must be an integer in [0, inf), got -2"),
])
def test_a_value_out_of_range_is_refused_by_the_settings(field, value, line):
    with pytest.raises(ValueError) as exc:
        BoardSettings(**{field: value})
    assert str(exc.value) == line


def test_the_command_line_names_the_option_it_refuses():
    args = _leaderboard_parser().parse_args(["--format", "alpaca_eval", "x", "--out", "o", "--resamples", "0",
                                             "--alpha", "1"])
    with pytest.raises(ConfigError) as exc:
        from_args(BoardSettings, args, "judgelab leaderboard")
    assert str(exc.value) == ("judgelab leaderboard: --alpha: must be a number in (0, 1), got 1.0; "
                              "--resamples: must be an integer in [1, inf), got 0")
