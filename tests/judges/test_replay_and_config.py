"""Replay of real judges, config validation, the CLI's error messages, figure stamps."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from judgelab import cli
from judgelab.bias_card import CardSettings, bias_card
from judgelab.cache import CallCache
from judgelab.config import ConfigError, JudgeSpec, load_config, validate_config
from judgelab.datasets.pairs import load_llmbar, pairs_frame
from judgelab.datasets.sources import source_path
from judgelab.io import write_table
from judgelab.judges import make_judge
from judgelab.judges.pairwise import judge_pairs
from judgelab.stats.agreement import call_summary, order_summary
from judgelab.verdict_import import import_verdicts, preset_mapping
from tests.conftest import REPO

LLMBAR_JUDGES = ["ChatGPT", "ChatGPT-0301", "GPT-4", "PaLM2", "LLaMA2", "Falcon"]


def _pct(s: str) -> float:
    m = re.match(r"\s*(\d+) / (\d+)", s)
    assert m, s
    return int(m.group(1)) / int(m.group(2))


@pytest.mark.shared_data
@pytest.mark.parametrize("name", LLMBAR_JUDGES)
def test_replayed_llmbar_judges_reproduce_published_statistics(name, data_root, tmp_path):
    pairs = load_llmbar(source_path("llmbar/Natural", download=False), subset="Natural")
    spec = JudgeSpec.from_dict({
        "name": f"replay-{name}", "backend": "replay", "model": name,
        "options": {"source": "llmbar", "path": f"llmbar_judge_outputs/Natural/evaluators/{name}/Vanilla/result.json"},
    })
    with CallCache(tmp_path / "c.sqlite") as cache:
        v = judge_pairs(make_judge(spec), pairs, cache, template="output_ab", max_error_rate=None)
    s = order_summary(v).iloc[0]
    stats = json.loads((data_root / f"llmbar_judge_outputs/Natural/evaluators/{name}/Vanilla/statistics.json").read_text())
    assert s["acc_AB"] == pytest.approx(_pct(stats["correct_False"]), abs=1e-12)
    assert s["acc_BA"] == pytest.approx(_pct(stats["correct_True"]), abs=1e-12)
    assert s["correct_both"] == pytest.approx(_pct(stats["correct_both"]), abs=1e-12)
    assert s["positional_agreement_all"] == pytest.approx(_pct(stats["equal"]), abs=1e-12)
    # the verdicts come from parsing the raw completions, and agree with the recorded winners
    raw = json.loads((data_root / f"llmbar_judge_outputs/Natural/evaluators/{name}/Vanilla/result.json").read_text())
    recorded = {(f"Natural-{i:04d}", "AB" if flag == "swap = False" else "BA"): r["winner"]
                for i, item in enumerate(raw) for flag, r in item["results"][0].items()}
    for row in v.itertuples():
        w = recorded[(row.pair_id, row.order)]
        assert row.verdict == ({"1": "A", "2": "B"}.get(w, "")), (row.pair_id, row.order)
    # empty completions are counted, never dropped
    assert call_summary(v).iloc[0]["calls"] == 200
    # the bias card of the replayed verdict table (judgelab preset, texts from the pairs table) equals them too
    write_table(v, tmp_path / "verdicts.csv")
    write_table(pairs_frame(pairs), tmp_path / "pairs.parquet")
    table = import_verdicts([tmp_path / "verdicts.csv"], preset_mapping("judgelab"),
                            tables={"pairs": [tmp_path / "pairs.parquet"]})
    assert (table["response_a"] != "").all() and table["instruction"].notna().all()
    card = bias_card(table, CardSettings(n_resamples=200))
    card = card[card["view"] == "lenient"].set_index("metric")
    assert card.loc["accuracy_AB", "estimate"] == pytest.approx(_pct(stats["correct_False"]), abs=1e-12)
    assert card.loc["accuracy_BA", "estimate"] == pytest.approx(_pct(stats["correct_True"]), abs=1e-12)
    assert card.loc["correct_both", "estimate"] == pytest.approx(_pct(stats["correct_both"]), abs=1e-12)
    assert card.loc["positional_agreement_all", "estimate"] == pytest.approx(_pct(stats["equal"]), abs=1e-12)
    assert card.loc["parse_failures", "n"] == 200


def test_config_defaults_and_errors(tmp_path: Path):
    cfg = load_config(REPO / "config/judges/simulated.yaml", REPO / "config/config.yaml")
    assert cfg["orders"]["orders"] == ["AB", "BA"] and cfg["max_error_rate"] == 0.0
    assert cfg["judges"][0]["concurrency"] == 4  # schema default filled in
    with pytest.raises(ConfigError, match=r"judges\[0\]\.sampling\.temperature"):
        validate_config({"judges": [{"name": "a", "backend": "simulated", "model": "m",
                                     "sampling": {"temperature": -1}}]})
    with pytest.raises(ConfigError, match=r"judges\[0\]"):
        validate_config({"judges": [{"name": "a b", "backend": "simulated", "model": "m"}]})
    with pytest.raises(ConfigError, match=r"judges\[1\]: duplicate judge name 'a'"):
        validate_config({"judges": [{"name": "a", "backend": "simulated", "model": "m"}] * 2})
    with pytest.raises(ConfigError, match="unknown backend 'gpt'"):
        validate_config({"judges": [{"name": "a", "backend": "gpt", "model": "m"}]})
    bad = tmp_path / "bad.yaml"
    bad.write_text("judges: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: not valid YAML"):
        load_config(bad)


def test_cli_errors_name_the_file_and_line(tmp_path: Path, capsys):
    p = tmp_path / "pairs.jsonl"
    p.write_text('{"pair_id": "1", "prompt": "q", "response_a": "a", "response_b": "b", "expected_verdict": "A"}\n'
                 '{"pair_id": "2", "prompt": "q", "response_a": "a", "response_b": "b", "expected_verdict": "C"}\n')
    rc = cli.main(["judge", "--judge", "sim-gpt-4o", "--pairs", str(p), "--cache", str(tmp_path / "c.sqlite")])
    assert rc == 2
    assert f"{p}:2: expected_verdict must be one of" in capsys.readouterr().err
    assert cli.main(["judge", "--judge", "nobody", "--pairs", str(p)]) == 2
    assert "no judge named 'nobody'" in capsys.readouterr().err


def test_cli_judge_and_cache_stats(tmp_path: Path, capsys):
    p = tmp_path / "pairs.jsonl"
    p.write_text("".join(json.dumps({"pair_id": str(i), "prompt": f"q{i}", "response_a": f"a{i}",
                                     "response_b": f"b {i} longer", "expected_verdict": "A"}) + "\n"
                         for i in range(20)))
    out = tmp_path / "v.csv"
    args = ["judge", "--judge", "sim-gpt-4o", "--pairs", str(p), "--cache", str(tmp_path / "c.sqlite"), "--out", str(out)]
    assert cli.main(args) == 0
    assert len(pd.read_csv(out)) == 40
    assert cli.main(args) == 0
    capsys.readouterr()
    assert cli.main(["cache-stats", "--cache", str(tmp_path / "c.sqlite")]) == 0
    text = capsys.readouterr().out
    assert "sim-gpt-4o" in text and "40 hits / 80 requested" in text


def test_figures_are_stamped_when_simulated(tmp_path: Path):
    from judgelab.plots.stamp import STAMP_TEXT, plt, stamp

    for simulated in (True, False):
        fig = plt.figure()
        stamp(fig, simulated=simulated, config_hash="abc123")
        texts = [t.get_text() for t in fig.texts]
        assert (STAMP_TEXT in texts) == simulated
        assert any("config abc123" in t for t in texts)
        plt.close(fig)
