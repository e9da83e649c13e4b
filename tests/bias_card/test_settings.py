"""The bias card's settings are declared once (CardSettings); the CLI, the config schema and the
Snakemake config reading are derived from that declaration and agree with it."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from judgelab.bias_card.card import CardSettings
from judgelab.bias_card.settings import from_args, from_config, schema_fragment, settings_of
from judgelab.config import SCHEMA_PATH, ConfigError, default_config_paths, load_config, load_yaml, validate_config


def _audit_parser() -> argparse.ArgumentParser:
    from judgelab.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["audit"]


def _other_values() -> dict[str, object]:
    """A valid non-default value of every setting (field name -> value)."""
    out = {}
    for name, s, default in settings_of(CardSettings):
        if s.kind is tuple:
            out[name] = (default[-1],)
        elif s.kind is bool:
            out[name] = not default
        elif s.kind is str:
            out[name] = next(c for c in s.choices if c != default)
        elif s.kind is int:
            out[name] = default + 7
        else:
            out[name] = default / 2
    return out


def test_the_schema_holds_exactly_the_declared_settings():
    schema = load_yaml(SCHEMA_PATH)
    props = schema["properties"]["audit_logs"]["properties"]["settings"]["properties"]
    assert props == schema_fragment(CardSettings)
    assert len(props) == len(dataclasses.fields(CardSettings)) == 14


def test_the_cli_offers_every_setting_with_the_declared_default():
    parser = _audit_parser()
    flags = {o: a for a in parser._actions for o in a.option_strings}
    for name, s, default in settings_of(CardSettings):
        assert s.flag in flags, s.flag
        action = flags[s.flag]
        assert action.dest == name
        assert (tuple(action.default) if s.kind is tuple else action.default) == default
    args = parser.parse_args(["x.jsonl", "--format", "llmbar", "--out", "o"])
    assert from_args(CardSettings, args) == CardSettings()


def test_every_setting_reaches_the_card_through_cli_and_config():
    want = CardSettings(**_other_values())
    argv = ["x.jsonl", "--format", "llmbar", "--out", "o"]
    cfg = {}
    for name, s, _ in settings_of(CardSettings):
        v = getattr(want, name)
        if s.kind is bool:
            argv += [s.flag if v else "--no-" + s.flag[2:]]
        else:
            argv += [s.flag, *map(str, v)] if s.kind is tuple else [s.flag, str(v)]
        cfg[s.key] = list(v) if s.kind is tuple else v
    assert from_args(CardSettings, _audit_parser().parse_args(argv)) == want
    # the Snakemake config: the schema accepts each key, the rule's script reads it
    full = load_config(*default_config_paths())
    full["audit_logs"]["settings"] = cfg
    checked = validate_config(full)
    assert from_config(CardSettings, checked["audit_logs"]["settings"], where="config: audit_logs/settings") == want


def test_the_defaults_filled_by_the_schema_make_the_default_card():
    cfg = load_config(*default_config_paths())
    cfg["audit_logs"]["settings"] = {}
    filled = validate_config(cfg)["audit_logs"]["settings"]
    assert from_config(CardSettings, filled, where="x") == CardSettings()


def test_bad_options_are_refused_in_one_line_naming_each(capsys, tmp_path):
    from judgelab.cli import main

    rc = main(["audit", str(tmp_path / "none.jsonl"), "--format", "llmbar", "--out", str(tmp_path / "o"),
               "--alpha", "-1", "--resamples", "0", "--power", "2"])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert "\n" not in err and "Traceback" not in err
    assert "--alpha: must be a number in (0, 1), got -1.0" in err
    assert "--resamples: must be an integer in [20, inf), got 0" in err
    assert "--power: must be a number in (0, 1), got 2.0" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("key", "value", "why"), [
    ("alpha", 1.0, "(0, 1)"), ("alpha", 0, "(0, 1)"), ("resamples", 19, "[20, inf)"),
    ("markdown_margin", 1.5, "[0, 1]"), ("min_decisive", 0, "[1, inf)"), ("seed", -1, "[0, inf)"),
    ("max_logit_se", 0.0, "(0, inf)"), ("views", ["loose"], "unknown card view 'loose'"),
    ("views", [], "one or more"), ("resamples", 100.5, "an integer"),
])
def test_config_values_out_of_range_are_refused(key, value, why):
    with pytest.raises(ConfigError, match=rf"config: audit_logs/settings/{key}: .*{__import__('re').escape(why)}"):
        from_config(CardSettings, {key: value}, where="config: audit_logs/settings")
    # and by the schema Snakemake validates against first
    cfg = load_config(*default_config_paths())
    cfg["audit_logs"]["settings"] = {key: value}
    with pytest.raises(ConfigError):
        validate_config(cfg)


def test_unknown_config_keys_and_bad_constructions_are_refused():
    with pytest.raises(ConfigError, match=r"unknown key.*n_resamples; known: length_margin"):
        from_config(CardSettings, {"n_resamples": 100}, where="config: audit_logs/settings")
    with pytest.raises(ValueError, match="card setting power: must be a number in \\(0, 1\\), got 2"):
        CardSettings(power=2)
    with pytest.raises(ValueError, match="card setting resamples"):
        CardSettings(n_resamples=0)
