"""Paths and keys resolved once, and the remaining one-line errors of the command line: a relative
``$JUDGELAB_DATA`` made absolute at start, every missing API key variable named by
``check-config``, unknown ``audit_logs`` presets, a damaged call cache met mid-run, misspelt
flags and subcommands with a did-you-mean."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from judgelab import cli
from judgelab.workflow.roles import missing_keys

KEYS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "DEEPSEEK_API_KEY")


def _err_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def test_check_config_names_each_missing_key_variable(monkeypatch, capsys):
    for k in KEYS:
        monkeypatch.delenv(k, raising=False)
    assert cli.main(["check-config", "--configfile", "config/judges/api.yaml"]) == 2
    err = _err_lines(capsys)
    assert [ln.split(" is not set")[0] for ln in err] == [f"judgelab: error: environment variable {k}"
                                                          for k in sorted(KEYS)]
    assert "deepseek-chat" in err[0] and "gemini-2.5-flash" in err[1] and "gpt-4o-mini" in err[2]
    assert "local-vllm-server" not in " ".join(err)  # api_key_env: null needs no key
    monkeypatch.setenv("GEMINI_API_KEY", "x")
    assert cli.main(["check-config", "--configfile", "config/judges/api.yaml"]) == 2
    assert len(_err_lines(capsys)) == 2
    for k in KEYS:
        monkeypatch.setenv(k, "x")
    assert cli.main(["check-config", "--configfile", "config/judges/api.yaml"]) == 0
    for k in KEYS:
        monkeypatch.delenv(k)
    assert cli.main(["check-config", "--offline", "--configfile", "config/judges/api.yaml"]) == 0
    assert cli.main(["check-config"]) == 0  # the simulated panel needs no key


def test_missing_keys_reads_each_entry_and_the_default_variable():
    config = {"judges": [{"name": "a", "backend": "openai", "model": "m"},  # default OPENAI_API_KEY
                         {"name": "b", "backend": "openai", "model": "m", "options": {"api_key_env": "B_KEY"}},
                         {"name": "c", "backend": "openai", "model": "m", "options": {"api_key_env": None}},
                         {"name": "d", "backend": "simulated", "model": "m", "options": {"api_key_env": "D"}}],
              "rbd": {"teacher": {"name": "t", "backend": "openai", "model": "m", "options": {"api_key_env": "B_KEY"}}}}
    assert missing_keys(config, {}) == {"OPENAI_API_KEY": ["a"], "B_KEY": ["b", "t"]}
    assert missing_keys(config, {"B_KEY": "k", "OPENAI_API_KEY": ""}) == {"OPENAI_API_KEY": ["a"]}
    assert missing_keys(config, {"B_KEY": "k", "OPENAI_API_KEY": "k"}) == {}


def test_check_config_refuses_an_unknown_audit_logs_preset(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("audit_logs:\n  sets:\n    mine: {format: llmbarr, files: [x.json]}\n")
    assert cli.main(["check-config", "--offline", "--configfile", str(bad)]) == 2
    (line,) = _err_lines(capsys)
    assert line.startswith("judgelab: error: config: audit_logs/sets/mine/format: unknown verdict-log format "
                           "'llmbarr'")
    assert "known: " in line and "llmbar" in line.split("known: ")[1]
    bad.write_text("audit_logs:\n  sets:\n    mine: {format: llmbar, files: [x.json]}\n")
    assert cli.main(["check-config", "--offline", "--configfile", str(bad)]) == 0


def _pairs(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"pair_id": str(i), "prompt": f"question {i}", "response_a": "a" * (i % 7),
                                        "response_b": "b" * (i % 5), "expected_verdict": "A"}) + "\n"
                            for i in range(n)))
    return path


def test_random_bytes_inside_the_cache_are_the_move_it_aside_line(tmp_path, capsys):
    pairs, cache = _pairs(tmp_path / "pairs.jsonl", 300), tmp_path / "calls.sqlite"
    argv = ["judge", "--judge", "sim-gpt-4o", "--pairs", str(pairs), "--cache", str(cache)]
    assert cli.main(argv) == 0
    with sqlite3.connect(cache) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(cache.read_bytes())
    assert len(data) > 8 * 4096
    rng = np.random.default_rng(0)
    data[3 * 4096:len(data) - 4096] = rng.integers(0, 256, len(data) - 4 * 4096, dtype=np.uint8).tobytes()
    cache.write_bytes(bytes(data))  # the header and the schema page are intact: the open succeeds
    capsys.readouterr()
    assert cli.main(argv) == 2
    (line,) = _err_lines(capsys)
    assert line.startswith(f"judgelab: error: {cache}: not a readable call cache (")
    assert f"mv {cache} {cache}.damaged" in line


def test_a_relative_data_root_is_made_absolute_at_start(tmp_path, monkeypatch, data_root):
    from judgelab.datasets.sources import ENV_VAR
    from judgelab.datasets.sources import data_root as configured_root

    monkeypatch.chdir(data_root.parent)
    monkeypatch.setenv(ENV_VAR, f"./{data_root.name}")
    cli.absolute_data_root()
    assert os.environ[ENV_VAR] == str(data_root.resolve())
    monkeypatch.chdir(tmp_path)  # what plan does (its scratch folder): the root stays the one named
    assert configured_root() == data_root.resolve()
    monkeypatch.setenv(ENV_VAR, "/abs/path")
    cli.absolute_data_root()
    assert os.environ[ENV_VAR] == "/abs/path"


@pytest.mark.parametrize(("argv", "expected"), [
    (["audit", "--format", "llmbar", "x", "--outt", "a"], "judgelab audit: error: unrecognized argument --outt; "
                                                           "did you mean --out?"),
    (["leaderboard", "x", "--fromat", "y", "--out", "b"], "judgelab leaderboard: error: unrecognized argument "
                                                          "--fromat; did you mean --format?"),
    (["check-config", "--ofline"], "judgelab check-config: error: unrecognized argument --ofline; "
                                   "did you mean --offline?"),
    (["plan", "--quite"], "judgelab plan: error: unrecognized argument --quite; did you mean --quiet?"),
    (["audti"], "judgelab: error: invalid choice 'audti'; did you mean 'audit'?"),
    (["detect-bias", "x", "--format", "llmbar", "--detector", "d", "--out", "o", "--bias", "positon"],
     "judgelab detect-bias: error: invalid choice 'positon'; did you mean 'position'?"),
])
def test_a_misspelt_flag_or_command_is_one_line_with_a_suggestion(argv, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    assert _err_lines(capsys) == [expected]


def test_a_flag_abbreviation_still_works_and_an_unknown_word_gets_no_guess(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["backends", "--zzz"])
    assert exit_.value.code == 2
    assert _err_lines(capsys) == ["judgelab backends: error: unrecognized argument: --zzz"]
    assert cli.main(["check-config", "--off"]) == 0  # argparse's own prefix of --offline


def test_plan_with_a_relative_data_root_reads_the_data_it_names(tmp_path, data_root):
    """The documented setup, ``export JUDGELAB_DATA=<relative path>`` then ``judgelab plan``: the
    plan works in a scratch folder, and still reads the public data (offline: no download)."""
    import subprocess
    import sys

    from tests.conftest import REPO

    work = tmp_path / "project"
    work.mkdir()
    (tmp_path / "shared").symlink_to(data_root)  # ../shared from the project, as the README's ../shared/data
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env.update(JUDGELAB_DATA="../shared", PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    res = subprocess.run([sys.executable, "-m", "judgelab.cli", "plan", "--quiet", "--configfile",
                          str(REPO / "config/judges/api.yaml"), "results/orders/verdicts/llmbar_natural/gpt-4o-mini.parquet"],
                         cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = [ln.split() for ln in res.stdout.splitlines() if ln.startswith("gpt-4o-mini ")]
    # LLMBar Natural has 100 pairs: both orders are 200 calls, none cached in an empty project
    assert rows and rows[0][:7] == ["gpt-4o-mini", "orders", "openai", "gpt-4o-mini", "200", "0", "200"]
    assert not (work / "results").exists()  # nothing downloaded, nothing written in the project
