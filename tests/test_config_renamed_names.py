"""A renamed config key, mapping key or command-line option is refused with its new name (one
line, exit 2), never read as the new one and never ignored (judgelab.config.RENAMED_KEYS and
RENAMED_OPTIONS, the one table of renames); the log mapping's file type is ``file_type``."""

from __future__ import annotations

import json

import pytest
import yaml

from judgelab import cli
from judgelab.config import RENAMED_KEYS, RENAMED_OPTIONS, ConfigError, config_with_files, renamed_keys
from judgelab.verdict_import.importer import import_verdicts
from judgelab.verdict_import.mapping import build_mapping, mapping_schema
from judgelab.verdict_import.presets import PRESETS, mapping_from_config, preset_mapping

MAPPING = {"judge": {"const": "j"}, "pair_id": "id", "response_a": "a", "response_b": "b",
           "verdict": {"label": "v", "values": {"A": "A", "B": "B"}}}


def _log(tmp_path, name="log.data"):
    p = tmp_path / name
    p.write_text("".join(json.dumps({"id": f"p{i}", "a": "x" * (i + 1), "b": "y", "v": "AB"[i % 2]}) + "\n"
                         for i in range(4)))
    return p


def _main(capsys, argv):
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's own exits
        code = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


def test_file_type_says_how_the_files_are_stored(tmp_path):
    log = _log(tmp_path)  # no suffix tells the type: the mapping's file_type does
    table = import_verdicts([str(log)], mapping_from_config({**MAPPING, "file_type": "jsonl"}))
    assert sorted(table["pair_id"]) == ["p0", "p1", "p2", "p3"]
    assert list(table.sort_values("pair_id")["verdict"]) == ["A", "B", "A", "B"]
    with pytest.raises(Exception, match=r"log\.data: cannot tell the file type from the suffix '\.data'; give the "
                                        r"mapping's file_type"):
        import_verdicts([str(log)], mapping_from_config(dict(MAPPING)))


def test_every_preset_names_its_file_type_with_the_new_key():
    for name in PRESETS.names():
        raw = PRESETS.get(name)
        assert "format" not in raw and "format" not in json.dumps(raw.get("tables", {})), name
        assert mapping_from_config(name).file_type == raw.get("file_type", "auto")
    props = mapping_schema()["$defs"]["verdict_mapping"]["properties"]
    assert "file_type" in props and "format" not in props


@pytest.mark.parametrize("spec, message", [
    ({**MAPPING, "format": "jsonl"}, "m.yaml: key 'format' was renamed to 'file_type'"),
    ({"preset": "llmbar", "format": "json"}, "m.yaml: key 'format' was renamed to 'file_type'"),
    ({**MAPPING, "tables": {"answers": {"key": ["id"], "format": "jsonl"}}},
     "m.yaml: key 'tables.answers.format' was renamed to 'tables.answers.file_type'"),
])
def test_the_old_mapping_key_is_refused_with_its_new_name(spec, message):
    with pytest.raises(ConfigError) as exc:
        mapping_from_config(spec, where="m.yaml")
    assert str(exc.value) == message


def test_a_mapping_compiled_directly_or_a_preset_override_refuses_the_old_key_too():
    with pytest.raises(ConfigError) as exc:
        build_mapping({**MAPPING, "format": "jsonl"}, where="m.yaml")
    assert str(exc.value) == "m.yaml: key 'format' was renamed to 'file_type'"
    with pytest.raises(ConfigError) as exc:
        preset_mapping("llmbar", {"format": "json"})
    assert str(exc.value) == "preset 'llmbar': key 'format' was renamed to 'file_type'"


def test_audit_with_an_old_mapping_file_is_one_line_and_exit_2(tmp_path, capsys):
    log = _log(tmp_path, "log.jsonl")
    m = tmp_path / "m.yaml"
    m.write_text(yaml.safe_dump({**MAPPING, "format": "jsonl"}))
    code, err = _main(capsys, ["audit", "--mapping", str(m), str(log), "--out", str(tmp_path / "out")])
    assert code == 2 and err == [f"judgelab: error: {m}: key 'format' was renamed to 'file_type'"]
    assert not (tmp_path / "out").exists()


def test_an_old_key_in_a_config_file_names_the_file_and_the_new_key(tmp_path, capsys):
    cfg = tmp_path / "extra.yaml"
    cfg.write_text(yaml.safe_dump({"audit_logs": {"sets": {"mine": {"format": {"preset": "llmbar", "format": "json"},
                                                                     "files": ["x/*.json"]}}}}))
    line = f"{cfg}: key 'audit_logs.sets.mine.format.format' was renamed to 'audit_logs.sets.mine.format.file_type'"
    with pytest.raises(ConfigError) as exc:
        config_with_files([cfg])
    assert str(exc.value) == line
    code, err = _main(capsys, ["check-config", "--offline", "--configfile", str(cfg)])
    assert code == 2 and err == [f"judgelab: error: {line}"]


def test_a_renamed_top_level_key_is_said_once_not_also_as_unknown(tmp_path, monkeypatch):
    monkeypatch.setitem(RENAMED_KEYS, "config", {**RENAMED_KEYS["config"], "random_seed": "seed"})
    cfg = tmp_path / "old.yaml"
    cfg.write_text("random_seed: 3\n")
    with pytest.raises(ConfigError) as exc:
        config_with_files([cfg])
    assert str(exc.value) == f"{cfg}: key 'random_seed' was renamed to 'seed'"


def test_wildcards_match_names_and_list_indices_and_fill_the_new_path():
    data = {"judges": [{"name": "a", "options": {"mapping": {"format": "csv"}}}, {"name": "b", "options": {}}],
            "audit_logs": {"sets": {"x": {"format": "llmbar"}, "y": {"format": {"format": "json"}}}}}
    assert renamed_keys(data, scope="config", source="f") == [
        "f: key 'audit_logs.sets.y.format.format' was renamed to 'audit_logs.sets.y.format.file_type'",
        "f: key 'judges[0].options.mapping.format' was renamed to 'judges[0].options.mapping.file_type'",
    ]
    assert renamed_keys({"audit_logs": {"sets": {"x": {"format": "llmbar"}}}}, scope="config", source="f") == []


def test_each_renamed_mapping_key_is_gone_from_the_schema_and_its_new_name_is_there():
    props = mapping_schema()["$defs"]["verdict_mapping"]["properties"]
    table_props = props["tables"]["additionalProperties"]["properties"]
    for old, new in RENAMED_KEYS["verdict_mapping"].items():
        where = table_props if old.startswith("tables.*.") else props
        assert old.split(".")[-1] not in where and new.split(".")[-1] in where


def test_a_renamed_option_or_command_is_refused_with_its_new_name(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("judgelab.config.RENAMED_OPTIONS",
                        {("leaderboard", "--level"): "--alpha", ("*", "--out-dir"): "--out",
                         ("", "length-check"): "leaderboard-length"})
    log = str(_log(tmp_path, "log.jsonl"))
    for argv, line in [
        (["leaderboard", "--format", "alpaca_eval", log, "--level", "0.9", "--out", "o"],
         "judgelab leaderboard: error: --level was renamed to --alpha"),
        (["leaderboard", "--format", "alpaca_eval", log, "--level=0.9", "--out", "o"],
         "judgelab leaderboard: error: --level was renamed to --alpha"),
        (["audit", "--format", "llmbar", log, "--out-dir", "o"], "judgelab audit: error: --out-dir was renamed to --out"),
        (["length-check", "board.csv"], "judgelab: error: command length-check was renamed to leaderboard-length"),
    ]:
        code, err = _main(capsys, argv)
        assert (code, err) == (2, [line]), argv
    # a value that happens to look like an old option after "--" is a value, not the option
    parser = cli.build_parser()
    cli.refuse_renamed_options(parser, ["leaderboard", "--", "--level"])


def test_the_table_of_renamed_options_names_options_that_exist():
    subs = cli._subcommands(cli.build_parser())
    for (command, old), new in RENAMED_OPTIONS.items():
        if command == "":
            assert old not in subs and new in subs
            continue
        for name in subs if command == "*" else [command]:
            options = {s for a in subs[name]._actions for s in a.option_strings}
            assert old not in options and (command == "*" or new in options)



def test_the_old_name_of_the_both_orders_study_is_refused_with_its_new_one(tmp_path, capsys):
    """``audit:`` in a config file was the LLMBar both-orders study's section; it is ``orders:``
    now (``audit`` is the bias-card command), and the old key is refused, never ignored."""
    cfg = tmp_path / "old.yaml"
    cfg.write_text("audit:\n  n_pairs: 5\n")
    line = f"{cfg}: key 'audit' was renamed to 'orders'"
    with pytest.raises(ConfigError) as exc:
        config_with_files([cfg])
    assert str(exc.value) == line
    cfg.write_text("orders:\n  n_pairs: 5\n")
    assert config_with_files([cfg])["orders"]["n_pairs"] == 5
