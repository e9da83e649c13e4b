"""``judgelab probe`` end to end: the simulated panel with a planted position bias (and a planted null),
a rerun served by the cache, one-line errors, and the REAL CPU judge (SmolLM2-135M) writing a card."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from judgelab.cli import main
from judgelab.io import SET_MANIFEST
from tests.helpers.realllm import smollm2_missing

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "strategies" / "example_pairs.jsonl"
OUTPUTS = {"probe.jsonl", "verdicts.parquet", "bias_card.csv", "bias_card.md", "bias_card.png", "report.html",
           "probe_effects.csv"}

PLANTED = """\
judges:
  - name: planted-position
    backend: simulated
    model: simulated/planted-position
    family: none
    sampling: {temperature: 0.0, seed: 11}
    options: {profile: {competence: 0.0, biases: {position: 0.6}}}
  - name: planted-null
    backend: simulated
    model: simulated/planted-null
    family: none
    sampling: {temperature: 0.0, seed: 12}
    options: {profile: {competence: 0.0, biases: {}}}
  - name: planted-bandwagon
    backend: simulated
    model: simulated/planted-bandwagon
    family: none
    sampling: {temperature: 0.0, seed: 13}
    options: {profile: {competence: 0.0, biases: {bandwagon: 0.8, sentiment: 0.8}}}
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["probe", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def card_row(out: Path, judge: str, metric: str) -> pd.Series:
    card = pd.read_csv(out / "bias_card.csv")
    got = card[(card["judge"] == judge) & (card["metric"] == metric) & (card["view"] == "lenient")]
    assert len(got) == 1, (judge, metric)
    return got.iloc[0]


def test_simulated_probe_writes_one_set_and_a_rerun_asks_nothing(tmp_path: Path, capsys):
    out, cache = tmp_path / "out", tmp_path / "calls.sqlite"
    argv = [str(EXAMPLE), "--judge", "sim-gpt-4o", "--pairs", "10", "--cache", str(cache), "--out", str(out),
            "--resamples", "200"]
    rc, stdout, _ = run(capsys, *argv)
    assert rc == 0
    files = {p.name for p in out.iterdir()}
    assert OUTPUTS <= files
    manifest = json.loads((out / SET_MANIFEST).read_text())
    assert OUTPUTS <= set(json.dumps(manifest).replace('"', " ").split())  # every output is the set's
    probe = pd.read_json(out / "probe.jsonl", lines=True, dtype=False)
    verdicts = pd.read_parquet(out / "verdicts.parquet")
    assert probe["item_id"].nunique() == 10 and set(probe["probe"]) == {
        "position", "length", "truncation", "markdown", "bandwagon", "sentiment"}
    # every probe pair, in both orders, exactly once
    orders = verdicts.groupby("pair_id")["order"].apply(sorted)
    assert set(orders.index) == set(probe["pair_id"]) and all(o == ["AB", "BA"] for o in orders)
    n_calls = len(verdicts)
    # gold as the probe has it: none on the controlled pairs (asked as a tie only for the simulated panel)
    gold = verdicts.groupby("probe")["expected_verdict"].agg(lambda g: set(g))
    assert gold["length"] == gold["markdown"] == {""} and gold["truncation"] <= {"A", "B"}
    assert verdicts.loc[verdicts["probe"] == "length", "correct"].isna().all()
    assert f" {n_calls} new calls, 0 from the cache" in stdout
    # the card has a section per probe, and the controlled probes read their cue as controlled pairs
    card = pd.read_csv(out / "bias_card.csv")
    assert set(card["judge"]) == {f"sim-gpt-4o [{p}]" for p in probe["probe"].unique()}
    md = card_row(out, "sim-gpt-4o [markdown]", "markdown_preference")
    assert md["identified"] and "controlled pairs" in md["note"]
    pos = card_row(out, "sim-gpt-4o [position]", "length_preference")
    assert "controlled pairs" not in str(pos["note"])
    effects = pd.read_csv(out / "probe_effects.csv")
    assert list(effects["probe"]) == ["bandwagon", "sentiment"]

    rc, stdout, _ = run(capsys, *argv)  # the same probe again: every call from the cache
    assert rc == 0 and f" 0 new calls, {n_calls} from the cache" in stdout
    pd.testing.assert_frame_equal(pd.read_parquet(out / "verdicts.parquet").drop(columns=["latency_s"]),
                                  verdicts.drop(columns=["latency_s"]))


def planted_items(path: Path, n: int = 40) -> Path:
    rows = [{"pair_id": f"q{i:02d}", "prompt": f"Question {i}?", "response_a": f"Answer one to question {i}.",
             "response_b": f"Another answer to question {i}.", "expected_verdict": "A" if i % 2 else "B"}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_planted_position_bias_is_detected_and_a_planted_null_is_not(tmp_path: Path, capsys):
    cfg = tmp_path / "planted.yaml"
    cfg.write_text(PLANTED)
    items = planted_items(tmp_path / "items.jsonl")
    found = {}
    for judge in ("planted-position", "planted-null"):
        out = tmp_path / judge
        rc, _, err = run(capsys, str(items), "--configfile", str(cfg), "--judge", judge, "--probes", "position",
                         "--pairs", "40", "--cache", str(tmp_path / "c.sqlite"), "--out", str(out),
                         "--resamples", "200")
        assert rc == 0, err
        found[judge] = card_row(out, f"{judge} [position]", "position_preference")
    hit, null = found["planted-position"], found["planted-null"]
    # planted truth: competence 0 and no other cue, so b is the planted 0.6 (paper 003's score)
    assert hit["status"] == "detected" and hit["ci_low"] <= 0.6 <= hit["ci_high"] and hit["estimate"] > 0.3
    assert null["status"] in ("not detected", "underpowered") and null["ci_low"] <= 0.0 <= null["ci_high"]


def test_planted_insertion_biases_shift_verdicts_to_the_cue(tmp_path: Path, capsys):
    from judgelab.config import JudgeSpec, load_yaml
    from judgelab.judges import make_judge
    from judgelab.judges.simulated import REFERENCE_CONTRASTS, coefficient_for_bias, pairwise_probs

    cfg = tmp_path / "planted.yaml"
    cfg.write_text(PLANTED)
    items = planted_items(tmp_path / "items.jsonl")
    effects = {}
    for judge in ("planted-bandwagon", "planted-null"):
        out = tmp_path / judge
        rc, _, err = run(capsys, str(items), "--configfile", str(cfg), "--judge", judge, "--probes",
                         "position,bandwagon,sentiment", "--pairs", "40", "--cache", str(tmp_path / "c.sqlite"),
                         "--out", str(out), "--resamples", "200")
        assert rc == 0, err
        effects[judge] = pd.read_csv(out / "probe_effects.csv").set_index("probe")
    hit, null = effects["planted-bandwagon"], effects["planted-null"]
    assert (hit["status"] == "detected").all() and (hit["estimate"] > 0).all()
    assert (null["status"] != "detected").all()
    # planted truth of the bandwagon shift: P(picks the named response) with the statement ("90%": cue 0.9)
    # minus without, from the panel's own ordered logit (competence 0, no other cue)
    spec = JudgeSpec.from_dict(next(d for d in load_yaml(cfg)["judges"] if d["name"] == "planted-bandwagon"))
    margin = make_judge(spec).profile.tie_margin
    coef = coefficient_for_bias(0.8, margin, REFERENCE_CONTRASTS["bandwagon"])
    truth = pairwise_probs(coef * 0.9, margin)[0] - pairwise_probs(0.0, margin)[0]
    row = hit.loc["bandwagon"]
    assert row["ci_low"] <= truth <= row["ci_high"], (truth, row.to_dict())


def test_delta_sizes_the_probe_by_power(tmp_path: Path, capsys):
    from judgelab.bias_card.card import CardSettings
    from judgelab.bias_card.power import assumed_pilot, probe_sizes
    from judgelab.probe.command import size_from_delta

    s = CardSettings(n_resamples=200)
    n, _ = size_from_delta({"*": 0.3}, ("position",), s, assume={}, assume_items=200)
    direct = probe_sizes(assumed_pilot({}, n_items=200, seed=0), {"position_preference": 0.3}, s)
    assert n == int(direct["items_needed"].iloc[0]) and n > 0
    smaller, _ = size_from_delta({"*": 0.6}, ("position",), s, assume={}, assume_items=200)
    assert smaller < n  # a larger effect needs fewer items
    n_md, _ = size_from_delta({"*": 0.3}, ("markdown",), s, assume={}, assume_items=200)
    both, _ = size_from_delta({"*": 0.3}, ("position", "markdown"), s, assume={}, assume_items=200)
    assert n_md != n and both == max(n, n_md)  # the probe is as large as its most demanding row needs
    rc, stdout, err = run(capsys, str(EXAMPLE), "--judge", "sim-unbiased", "--probes", "position", "--delta", "0.3",
                          "--assume-items", "200", "--resamples", "200", "--cache", str(tmp_path / "c.sqlite"),
                          "--out", str(tmp_path / "out"))
    assert rc == 0 and "power:" in stdout
    assert "the probe uses all of them and may be underpowered" in err  # 12 items, more needed


@pytest.mark.parametrize(("argv", "message"), [
    (["--probes", "position,markdwon"], "unknown probe 'markdwon'; did you mean 'markdown'?"),
    (["--probes", "position"], "give the probe's size"),  # neither --pairs nor --delta
    (["--pairs", "3", "--controlled-pairs"], "the probe decides it per probe"),
    (["--pairs", "0"], "--pairs must be at least 1"),
])
def test_bad_options_are_one_line(tmp_path: Path, capsys, argv: list[str], message: str):
    full = [str(EXAMPLE), "--judge", "sim-gpt-4o", "--out", str(tmp_path / "out"), *argv]
    if "--probes" in argv and "markdwon" in argv[1]:
        full += ["--pairs", "3"]
    rc, _, err = run(capsys, *full)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("judgelab: error:") and message in lines[0]
    assert not (tmp_path / "out").exists()


def test_bad_items_file_is_one_line_naming_file_and_row(tmp_path: Path, capsys):
    bad = tmp_path / "items.csv"
    bad.write_text("prompt,response_a,response_b\nq,a,b\nq2,,\n,x,y\n")
    rc, _, err = run(capsys, str(bad), "--judge", "sim-gpt-4o", "--pairs", "3", "--out", str(tmp_path / "out"))
    assert rc == 2
    assert err.strip() == f"judgelab: error: {bad} line 4: field 'prompt' is empty or not text"
    rc, _, err = run(capsys, str(tmp_path / "nope.jsonl"), "--judge", "sim-gpt-4o", "--pairs", "3", "--out",
                     str(tmp_path / "out"))
    assert rc == 2 and err.strip() == f"judgelab: error: {tmp_path / 'nope.jsonl'}: no such items file"


def test_out_holding_the_items_is_refused(tmp_path: Path, capsys):
    items = tmp_path / "items.jsonl"
    items.write_text(EXAMPLE.read_text())
    rc, _, err = run(capsys, str(items), "--judge", "sim-gpt-4o", "--pairs", "2", "--out", str(tmp_path))
    assert rc == 2 and f"contains the input {items}" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["items.jsonl"]


@pytest.mark.slow
def test_real_cpu_judge_probe_writes_a_card_and_reruns_from_the_cache(tmp_path: Path, capsys):
    why = smollm2_missing()
    if why:
        pytest.skip(why)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    out, cache = tmp_path / "out", tmp_path / "calls.sqlite"
    argv = [str(EXAMPLE), "--configfile", str(REPO / "config" / "judges" / "local-cpu.yaml"), "--judge",
            "smollm2-gen", "--pairs", "4", "--probes", "position,length", "--cache", str(cache),
            "--out", str(out), "--resamples", "200"]
    rc, stdout, err = run(capsys, *argv)
    assert rc == 0, err
    verdicts = pd.read_parquet(out / "verdicts.parquet")
    # 4 pairs x 2 probes x 2 orders: each probe's rows have verdicts of a real model in both orders (the
    # numbers are the simulated tests'; this checks that a real judge goes through, so it asks few)
    assert len(verdicts) == 4 * 2 * 2 and not verdicts["simulated"].any()
    assert (verdicts["status"] != "error").all() and (verdicts["raw_text"] != "").all()  # a real model answered
    card = pd.read_csv(out / "bias_card.csv")
    assert {"smollm2-gen [position]", "smollm2-gen [length]"} <= set(card["judge"])
    row = card_row(out, "smollm2-gen [position]", "position_preference")
    assert row["n"] == (verdicts[verdicts["probe"] == "position"]["verdict_shown"] != "").sum()
    assert "# Bias card: probe of smollm2-gen" in (out / "bias_card.md").read_text()
    assert f" {len(verdicts)} new calls, 0 from the cache" in stdout
    rc, stdout, err = run(capsys, *argv)
    assert rc == 0 and f" 0 new calls, {len(verdicts)} from the cache" in stdout
