"""The rbd detector over a recorded verdict log (judgelab.rbd.audit_log, ``judgelab detect-bias``).

* the shipped example log (data/rbd/log_audit_example.csv, judgelab layout) gives exactly the
  cases and skip counts its rows imply: position pairs need both orders and two A/B
  verdicts, bandwagon needs a statement, an unparsed verdict is skipped and counted;
* Eq. 1 labels where the log has gold, the cue without it, in the shown frame of each order;
* a simulated detector's planted recall and specificity come back on a generated log with
  gold; without gold it flags cue-following verdicts at its recall;
* unparsed detector answers stay in the per-call table (pred "") and are counted per judge;
* a rerun asks the detector nothing new (call cache);
* the CLI writes the three tables and refuses an unknown detector with exit status 2.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd
import pytest

from judgelab.cache import CallCache
from judgelab.cli import main
from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges import make_judge
from judgelab.rbd.audit_log import (
    CALL_TABLE_COLUMNS,
    SUMMARY_COLUMNS,
    find_statement,
    log_cases,
    resolve_detector,
    run_log_audit,
)
from judgelab.rbd.detector import DetectorSpec
from judgelab.verdict_import import import_verdicts, mapping_from_config

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "rbd" / "log_audit_example.csv"


def sim(name: str, **profile) -> object:
    return make_judge(JudgeSpec.from_dict({"name": name, "backend": "simulated", "model": f"sim/{name}",
                                           "sampling": {"temperature": 0.0, "seed": 0},
                                           "options": {"profile": profile}}))


def example_table() -> pd.DataFrame:
    return import_verdicts([EXAMPLE], mapping_from_config("judgelab"))


def test_example_log_cases_and_skips():
    log = log_cases(example_table(), ["position", "verbosity", "bandwagon", "sentiment"])
    by = {c.case_id: c for c in log.cases}
    n = pd.Series([c.bias_type for c in log.cases]).value_counts().to_dict()
    # 11 rows: q0-q4 in both orders (q1's BA unparsed), q5 in AB only
    assert n == {"position": 4, "verbosity": 10, "sentiment": 10, "bandwagon": 2}
    skipped = {(r.bias_type, r.reason): r.n for r in log.skipped.itertuples()}
    assert skipped == {("position", "no_verdict"): 1, ("position", "one_order"): 1,
                       ("verbosity", "no_verdict"): 1, ("sentiment", "no_verdict"): 1,
                       ("bandwagon", "no_verdict"): 1, ("bandwagon", "no_statement"): 8}
    # q2: stored (A, B) = first slot both times; gold A: right in AB, wrong in BA -> Eq. 1 yes
    q2 = by["my-judge|q2|position"]
    assert q2.verdict == [0, 0] and q2.truth == "yes" and log.cue[q2.case_id] == "yes"
    assert q2.options == q2.swapped_options[::-1] and q2.answer_format == "two_rounds"
    assert q2.evaluator_model == "gpt-4o-mini"
    # q0: response B chosen in both orders (shown B then A): consistent, wrong in AB -> no
    q0 = by["my-judge|q0|position"]
    assert q0.verdict == [1, 0] and q0.truth == "no" and log.cue[q0.case_id] == "no"
    # q3 has no gold: no truth, the cue still observed
    assert by["my-judge|q3|position"].truth == "" and log.cue["my-judge|q3|position"] == "yes"
    # verbosity q0: the long wrong answer chosen in each order (shown B in AB, shown A in BA)
    for order, idx in (("AB", 1), ("BA", 0)):
        c = by[f"my-judge|q0|{order}|verbosity"]
        assert c.verdict == [idx] and c.truth == "yes" and log.cue[c.case_id] == "yes"
        assert "38" in c.options[idx]
    # the statement as the judge saw it; a choice against it is cue "no"
    bw = by["my-judge|q4|BA|bandwagon"]
    assert bw.statement == "90% of people believe that Output (b) is better"
    assert bw.verdict == [0] and log.cue[bw.case_id] == "no" and bw.truth == "no"
    assert by["my-judge|q4|AB|sentiment"].answer_format == "number"


def test_statement_finder():
    assert find_statement("Most users think Output (A) is better. Q?") == "Most users think Output (a) is better"
    assert find_statement("Compare Output (a) and Output (b).") == ""


def _write_log(path: Path, n: int, *, gold: bool, seed: int = 3) -> None:
    """``n`` pairs judged in both orders: a judge that takes the first slot on every third pair."""
    import random

    rng = random.Random(seed)
    rows = []
    for i in range(n):
        short, long_ = f"Answer {i}.", " ".join(["a much longer answer"] * (2 + i % 4)) + f" {i}."
        a, b = (short, long_) if i % 2 else (long_, short)
        g = rng.choice("AB")
        for order in ("AB", "BA"):
            if i % 3 == 0:
                v = "A" if order == "AB" else "B"  # first slot both times
            else:
                v = g if rng.random() < 0.7 else ("B" if g == "A" else "A")
            rows.append({"judge": "j", "model": "m-7b", "pair_id": f"p{i}", "order": order,
                         "instruction": f"Question {i}?", "response_a": a, "response_b": b, "verdict": v,
                         "status": "ok", "expected_verdict": g if gold else ""})
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_simulated_detector_recovers_planted_skill_and_rerun_asks_nothing(tmp_path):
    _write_log(tmp_path / "log.csv", 210, gold=True)
    table = import_verdicts([tmp_path / "log.csv"], mapping_from_config("judgelab"))
    det = sim("det", label_recall=0.9, label_specificity=0.7)
    spec = DetectorSpec(name="det", judge={})
    with CallCache(tmp_path / "c.sqlite") as cache:
        calls, summary, _ = run_log_audit(table, ["position", "verbosity"], spec, det, cache)
        asked = {r["judge"]: r["new_calls"] for r in cache.stats()}["det"]
        calls2, summary2, _ = run_log_audit(table, ["position", "verbosity"], spec, det, cache)
        assert {r["judge"]: r["new_calls"] for r in cache.stats()}["det"] == asked == len(calls)
    pd.testing.assert_frame_equal(calls, calls2)
    pd.testing.assert_frame_equal(summary, summary2)
    assert list(calls.columns) == CALL_TABLE_COLUMNS and list(summary.columns) == SUMMARY_COLUMNS
    assert len(calls) == 210 + 420 and calls["simulated"].all()
    assert set(calls["evaluator"]) == {"j"} and set(calls["judge"]) == {"det"}
    yes, no = calls[calls["truth"] == "yes"], calls[calls["truth"] == "no"]
    assert len(yes) > 100 and len(no) > 100
    assert abs((yes["pred"] == "yes").mean() - 0.9) < 3 * math.sqrt(0.09 / len(yes))
    assert abs((no["pred"] == "no").mean() - 0.7) < 3 * math.sqrt(0.21 / len(no))
    pos = summary.set_index("bias_type").loc["position"]
    # every third pair is position-inconsistent and those right in AB are Eq. 1 yes
    assert pos["n_cases"] == 210 and pos["cue_share"] >= 70 / 210
    assert pos["n_yes"] == int((calls[calls["bias_type"] == "position"]["pred"] == "yes").sum())
    assert pos["flag_ci_low"] < pos["flag_share"] < pos["flag_ci_high"]
    assert pos["n_labelled"] == 210 and 0 < pos["det_recall"] <= 1


def test_without_gold_a_stand_in_flags_the_cue_and_unparsed_answers_are_counted(tmp_path):
    _write_log(tmp_path / "log.csv", 240, gold=False)
    table = import_verdicts([tmp_path / "log.csv"], mapping_from_config("judgelab"))
    det = sim("det", label_recall=0.8, label_specificity=1.0, malformed_rate=0.25, refusal_rate=0.1)
    with CallCache(tmp_path / "c.sqlite") as cache:
        calls, summary, _ = run_log_audit(table, ["position"], DetectorSpec(name="det", judge={}), det, cache)
    assert (calls["truth"] == "").all() and (calls["truth_rule"] == "").all()
    parsed = calls[calls["pred"] != ""]
    unparsed = calls[calls["pred"] == ""]
    assert 0.2 < len(unparsed) / len(calls) < 0.45 and (unparsed["status"] != "ok").all()
    assert set(unparsed["status"]) == {"unparsed", "refusal"}
    assert not unparsed["flagged"].any()
    assert (parsed[parsed["cue"] == "no"]["pred"] == "no").all()  # specificity 1
    cue_yes = parsed[parsed["cue"] == "yes"]
    assert abs((cue_yes["pred"] == "yes").mean() - 0.8) < 3 * math.sqrt(0.16 / len(cue_yes))
    row = summary.iloc[0]
    assert row["n_cases"] == 240 == row["n_yes"] + row["n_no"] + row["n_unparsed"]
    assert row["n_refusal"] == int((unparsed["status"] == "refusal").sum()) > 0
    assert row["n_unparsed"] == len(unparsed) and row["flag_share"] == row["n_yes"] / len(parsed)
    assert row["n_labelled"] == 0 and math.isnan(row["det_accuracy"])


def test_detector_scores_need_a_parsed_answer_unparsed_ones_count_wrong(tmp_path):
    # a detector that states no label on any case of a bias type has no accuracy there (NaN, the
    # answers counted in n_unparsed), not an accuracy or recall of 0; beside parsed answers an
    # unparsed one counts as wrong (the convention of the detector metrics)
    _write_log(tmp_path / "log.csv", 30, gold=True)
    table = import_verdicts([tmp_path / "log.csv"], mapping_from_config("judgelab"))
    spec = DetectorSpec(name="det", judge={})
    with CallCache(tmp_path / "c.sqlite") as cache:
        _, mute, _ = run_log_audit(table, ["position"], spec, sim("det", malformed_rate=1.0), cache)
        calls, half, _ = run_log_audit(table, ["position"], DetectorSpec(name="det2", judge={}),
                                       sim("det2", label_recall=1.0, label_specificity=1.0, malformed_rate=0.5),
                                       cache)
    row = mute.iloc[0]
    assert row["n_labelled"] == 30 == row["n_unparsed"] and row["n_yes"] + row["n_no"] == 0
    assert math.isnan(row["det_accuracy"]) and math.isnan(row["det_recall"]) and math.isnan(row["det_precision"])
    row = half.iloc[0]
    parsed = calls[calls["pred"] != ""]
    assert 0 < len(parsed) < 30 and (parsed["pred"] == parsed["truth"]).all()  # a perfect detector when it answers
    assert row["det_accuracy"] == pytest.approx(len(parsed) / 30)


def test_cli_detect_bias_on_the_example_log(tmp_path, capsys):
    judges = tmp_path / "det.yaml"
    judges.write_text("judges:\n  - {name: my-det, backend: simulated, model: sim/det, "
                      "sampling: {temperature: 0.0, seed: 1}, options: {profile: {label_accuracy: 0.9}}}\n")
    out = tmp_path / "out"
    rc = main(["detect-bias", "--format", "judgelab", str(EXAMPLE), "--detector", str(judges), "--bias",
               "position", "bandwagon", "--out", str(out), "--cache", str(tmp_path / "c.sqlite")])
    assert rc == 0
    calls = pd.read_parquet(out / "calls.parquet")
    summary = pd.read_csv(out / "summary.csv")
    skipped = pd.read_csv(out / "skipped.csv")
    assert len(calls) == 4 + 2 and set(calls["judge"]) == {"my-det"}
    assert summary.set_index("bias_type")["n_skipped"].to_dict() == {"bandwagon": 9, "position": 2}
    assert int(skipped["n"].sum()) == 11
    assert "SIMULATED" in capsys.readouterr().out
    assert main(["detect-bias", "--format", "judgelab", str(EXAMPLE), "--detector", "no-such-detector",
                 "--out", str(out)]) == 2
    # the output is one set: a rerun replaces it whole (a stray file of an older set is gone), files by umask
    (out / "stale.csv").write_text("old")
    import os
    import stat

    old = os.umask(0o022)
    try:
        assert main(["detect-bias", "--format", "judgelab", str(EXAMPLE), "--detector", str(judges), "--bias",
                     "position", "--out", str(out), "--cache", str(tmp_path / "c.sqlite"), "--force"]) == 0
    finally:
        os.umask(old)
    assert sorted(p.name for p in out.iterdir()) == [".judgelab-set.json", "calls.parquet", "skipped.csv", "summary.csv"]
    assert stat.S_IMODE((out / "summary.csv").stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []  # no staging left
    f = tmp_path / "a-file"
    f.write_text("keep me")
    capsys.readouterr()
    assert main(["detect-bias", "--format", "judgelab", str(EXAMPLE), "--detector", str(judges),
                 "--out", str(f)]) == 2
    err = capsys.readouterr().err
    assert f.read_text() == "keep me" and "exists and is a file" in err and len(err.strip().splitlines()) == 1


def test_resolve_detector_by_rbd_name_judge_name_and_file(tmp_path):
    config = {"rbd": {"detectors": [{"prompting": "zero_shot", "judge": {"name": "d1", "backend": "simulated"}}]},
              "judges": [{"name": "j1", "backend": "simulated"}]}
    assert resolve_detector(config, "d1").prompting == "zero_shot"
    assert resolve_detector(config, "j1").judge["name"] == "j1"
    f = tmp_path / "two.yaml"
    f.write_text("judges:\n  - {name: a, backend: simulated}\n  - {name: b, backend: simulated}\n")
    assert resolve_detector(config, f"{f}:b").name == "b"
    with pytest.raises(ConfigError, match="name one judge"):
        resolve_detector(config, str(f))
    with pytest.raises(ConfigError, match="choose one or more"):
        log_cases(example_table(), ["length"])


def test_config_log_audit_is_off_by_default_and_validated(tmp_path):
    from judgelab.config import default_config_paths, load_config

    assert load_config(*default_config_paths())["rbd"]["log_audit"]["files"] == []
    bad = tmp_path / "bad.yaml"
    bad.write_text("rbd:\n  log_audit: {files: [x.csv], bias_types: [length]}\n")
    with pytest.raises(ConfigError, match="length"):
        load_config(*default_config_paths(), bad)
    ok = tmp_path / "ok.yaml"
    ok.write_text("rbd:\n  log_audit: {files: [x.csv], format: {preset: alpaca_eval}}\n")
    assert load_config(*default_config_paths(), ok)["rbd"]["log_audit"]["bias_types"] == ["verbosity", "position"]
