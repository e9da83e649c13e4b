"""The ``inspect_ai`` and ``rewardbench2`` presets: real logs read as the files state them.

Each test reads the fixture's raw file with an independent reader (``json``, ``zipfile``) and checks
the imported table against it row by row; derived copies of the real records (grades changed, a
reward made NaN, a grader named) check the mappings the published files do not exercise; damaged
copies end in one ``judgelab: error:`` line naming the file, exit 2, never a traceback.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from judgelab import cli
from judgelab.verdict_import.importer import import_verdicts
from judgelab.verdict_import.presets import preset_mapping

FIX = Path(__file__).parents[1] / "fixtures" / "verdict_logs"
INSPECT_JSON = FIX / "inspect_ai" / "2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json"
INSPECT_EVAL = FIX / "inspect_ai" / "2024-11-05T13-32-37-05-00_input-task_hxs4q9azL3ySGkjJirypKZ.eval"
RB2 = FIX / "rewardbench2" / "eval-set-scores" / "judgelab-fixture" / "tiny-reward-model.json"
PF = FIX / "promptfoo" / "sample-export.json"
GRADE = {"C": "B", "I": "A", "P": "tie"}


def _inspect_raw(path: Path) -> tuple[dict, list[dict]]:
    """Header and samples of an eval log by the standard library alone."""
    if path.suffix == ".eval":
        with zipfile.ZipFile(path) as zf:
            header = json.loads(zf.read("header.json"))
            samples = [json.loads(zf.read(n)) for n in zf.namelist() if n.startswith("samples/")]
        return header, samples
    doc = json.loads(path.read_text())
    return doc, doc["samples"]


def _import(paths: list[Path], preset: str) -> pd.DataFrame:
    return import_verdicts(paths, preset_mapping(preset))


@pytest.mark.parametrize("path", [INSPECT_JSON, INSPECT_EVAL], ids=["json", "eval"])
def test_inspect_log_rows_hold_what_the_log_states(path):
    header, samples = _inspect_raw(path)
    df = _import([path], "inspect_ai")
    expected = [(s, name, sc) for s in samples for name, sc in s["scores"].items()]
    assert len(df) == len(expected) == 1
    for (_, row), (s, name, sc) in zip(df.iterrows(), expected, strict=True):
        model = header["eval"]["model"]
        assert row["judge"] == f"{name}/{model}" == "model_graded_fact/openai/gpt-4o-mini"
        assert row["model"] == model and row["model_b"] == model and pd.isna(row["model_a"])
        assert row["label"] == sc["value"] == "C"
        assert row["verdict"] == GRADE[sc["value"]] == "B" and row["order"] == "AB" and row["status"] == "ok"
        assert row["instruction"] == s["input"]
        assert row["response_b"] == sc["answer"] and row["response_b"].startswith("Yo,")
        assert row["response_a"] == s["target"] == ""
        assert row["raw_text"] == sc["explanation"] and "GRADE: C" in row["raw_text"]
        assert row["category"] == header["eval"]["task"] == "input_task"
        assert row["pair_id"] == f"input_task/{s['id']}/{s['epoch']}/{header['eval']['run_id']}"
        assert row["item_id"] == "input_task/1"


def test_the_json_and_eval_logs_of_one_task_are_two_runs_of_one_item():
    """Two runs of the task grade the same item twice: two pairs (their answers differ), one item."""
    df = _import([INSPECT_JSON, INSPECT_EVAL], "inspect_ai")
    assert df["pair_id"].nunique() == 2 and df["item_id"].nunique() == 1
    assert df["response_b"].nunique() == 2


def _derived_inspect(tmp_path: Path, values: list, *, grader: str | None = None) -> Path:
    """The real .json log with its sample repeated under new ids, each graded ``values[i]``."""
    doc = json.loads(INSPECT_JSON.read_text())
    base = doc["samples"][0]
    doc["samples"] = []
    for i, v in enumerate(values):
        s = json.loads(json.dumps(base))
        s["id"] = i + 1
        s["scores"]["model_graded_fact"]["value"] = v
        doc["samples"].append(s)
    if grader is not None:
        doc["results"]["scores"][0]["params"]["model"] = grader
    out = tmp_path / INSPECT_JSON.name
    out.write_text(json.dumps(doc))
    return out


def test_inspect_grades_map_to_verdicts_and_other_values_stay_unparsed(tmp_path):
    values = ["C", "I", "P", "N", 0.5]
    df = _import([_derived_inspect(tmp_path, values)], "inspect_ai").sort_values("pair_id")
    assert list(df["verdict"]) == ["B", "A", "tie", "", ""]
    assert list(df["status"]) == ["ok", "ok", "ok", "unparsed", "unparsed"]
    assert list(df["label"]) == ["C", "I", "P", "N", "0.5"]  # the value as the log wrote it, never dropped
    assert list(df["preference"].iloc[:3]) == [1.0, 0.0, 0.5]


def test_inspect_grader_named_in_the_scorer_params_is_the_judge(tmp_path):
    df = _import([_derived_inspect(tmp_path, ["C"], grader="anthropic/claude-3-5-sonnet")], "inspect_ai")
    assert df["judge"].iloc[0] == "model_graded_fact/anthropic/claude-3-5-sonnet"
    assert df["model"].iloc[0] == "anthropic/claude-3-5-sonnet"
    assert df["model_b"].iloc[0] == "openai/gpt-4o-mini"  # the graded model stays the eval's


def test_inspect_scored_text_is_the_score_answer_else_the_sample_output(tmp_path):
    """The grader saw the score's ``answer`` (what the scorer extracted); a scorer that records none
    graded the sample's output."""
    path = _derived_inspect(tmp_path, ["C", "I"])
    doc = json.loads(path.read_text())
    doc["samples"][0]["scores"]["model_graded_fact"]["answer"] = "the extracted answer"
    del doc["samples"][1]["scores"]["model_graded_fact"]["answer"]
    path.write_text(json.dumps(doc))
    df = _import([path], "inspect_ai").sort_values("pair_id")
    output = doc["samples"][1]["output"]["choices"][0]["message"]["content"]
    assert list(df["response_b"]) == ["the extracted answer", output]
    assert output.startswith("Yo,")


def test_inspect_plain_reader_agrees_with_inspect_ai_when_installed():
    inspect_log = pytest.importorskip("inspect_ai.log")
    from judgelab.verdict_import import inspect_log as ours

    for path in (INSPECT_JSON, INSPECT_EVAL):
        lib = inspect_log.read_eval_log(str(path)).model_dump(mode="json", exclude_none=True)
        lib_samples = lib.pop("samples")
        plain_header, plain_samples = ours._read_plain(path)
        assert lib["eval"]["task"] == plain_header["eval"]["task"]
        assert [s["scores"] for s in lib_samples] == [
            {k: {kk: vv for kk, vv in v.items() if vv is not None} for k, v in s["scores"].items()}
            for s in plain_samples]


def test_rewardbench2_pairs_hold_the_rewards_the_file_states():
    raw = json.loads(RB2.read_text())
    df = _import([RB2], "rewardbench2")
    n_pairs = sum(k * (len(s) - k) for k, s in zip(raw["num_correct"], raw["scores"], strict=True))
    assert len(df) == n_pairs == 9
    assert set(df["judge"]) == set(df["model"]) == {raw["model"]}
    for i, pid in enumerate(raw["id"]):
        rows = df[df["item_id"] == pid].sort_values("pair_id")
        k, scores, texts = raw["num_correct"][i], raw["scores"][i], raw["text"][i]
        assert list(rows["category"]) == [raw["subset"][i]] * len(rows)
        for (_, row), r in zip(rows.iterrows(), range(k, len(scores)), strict=True):
            assert row["pair_id"] == f"{pid}/0/{r}"
            assert row["response_a"] == texts[0] and row["response_b"] == texts[r]
            want = "A" if scores[0] > scores[r] else "B" if scores[0] < scores[r] else "tie"
            assert row["verdict"] == want and row["expected_verdict"] == "A"
            assert row["preference"] == pytest.approx(expit(scores[r] - scores[0]), abs=1e-12)
        # the benchmark's own per-prompt score (run_v2.py / reroll_and_score_dataset): 1 when the chosen
        # beats all rejected, 1/(ties at the top) when it shares the top, 0 when any rejected beats it
        verdicts = list(rows["verdict"])
        ours = 0.0 if "B" in verdicts else 1.0 / (1 + verdicts.count("tie"))
        assert ours == raw["results"][i]
    # hand-checked against the file: prompt "1" (Math) has a rejected completion scored 1.75 > 0.5
    assert df.set_index("pair_id").loc["1/0/1", "verdict"] == "B"
    assert df.set_index("pair_id").loc["2/0/1", "verdict"] == "tie"


def test_rewardbench2_a_nan_reward_is_an_unparsed_row_not_a_dropped_one(tmp_path):
    raw = json.loads(RB2.read_text())
    raw["scores"][0][2] = float("nan")
    path = tmp_path / "m.json"
    path.write_text(json.dumps(raw))
    df = _import([path], "rewardbench2").set_index("pair_id")
    assert len(df) == 9
    assert df.loc["0/0/2", "status"] == "unparsed" and df.loc["0/0/2", "verdict"] == ""
    assert df.loc["0/0/1", "status"] == "ok"


def test_rewardbench2_ties_prompts_pair_every_correct_with_every_incorrect(tmp_path):
    raw = json.loads(RB2.read_text())
    raw["num_correct"][2] = 2  # completions 0 and 1 correct (scores 1.0, 1.0), 2 and 3 incorrect
    path = tmp_path / "m.json"
    path.write_text(json.dumps(raw))
    df = _import([path], "rewardbench2")
    rows = df[df["item_id"] == "2"]
    assert sorted(rows["pair_id"]) == ["2/0/2", "2/0/3", "2/1/2", "2/1/3"]
    assert set(rows["verdict"]) == {"A"}


def test_promptfoo_rows_are_the_model_graded_assertions_the_file_states():
    raw = json.loads(PF.read_text())
    df = _import([PF], "promptfoo")
    expected = [(r, j, c) for r in raw["results"]["results"]
                for j, c in enumerate(r["gradingResult"]["componentResults"]) if c["assertion"]["type"] == "llm-rubric"]
    assert len(df) == len(expected) == 4  # contains / cost / latency checks are not judgments
    for (_, row), (r, j, c) in zip(df.iterrows(), expected, strict=True):
        assert row["pair_id"] == f"{raw['evalId']}/{r['testIdx']}/{r['promptIdx']}/{r['provider']['id']}/{j}"
        assert row["item_id"] == f"{raw['evalId']}/{r['testIdx']}"
        assert row["judge"] == "llm-rubric/default" and row["model"] == "default"
        assert row["model_b"] == r["provider"]["id"] and row["response_b"] == r["response"]["output"]
        assert row["instruction"] == r["prompt"]["raw"] and row["category"] == c["assertion"]["value"]
        assert row["verdict"] == ("B" if c["pass"] else "A") == "B" and row["raw_text"] == c["reason"]
    # hand-checked against the file: test 1 through gpt-5 (promptIdx 0), its rubric component third
    row = df.set_index("pair_id").loc["eval-WJi-2025-10-01T20:08:11/1/0/openai:gpt-5/2"]
    assert row["response_b"].startswith("Because “single” is the trick")
    assert row["raw_text"].startswith("The output explains that everyone on the boat is married")


def test_promptfoo_fail_grader_select_best_and_failed_calls(tmp_path):
    raw = json.loads(PF.read_text())
    results = raw["results"]["results"]
    results[0]["gradingResult"]["componentResults"][3]["pass"] = False
    results[1]["gradingResult"]["componentResults"][3]["assertion"]["type"] = "select-best"
    results[2]["testCase"]["options"]["provider"] = {"id": "anthropic:messages:claude-haiku-4-5"}
    del results[3]["gradingResult"]
    results[3]["failureReason"] = 2
    results[3]["error"] = "API error: 500"
    results[3]["testCase"]["assert"].append({"type": "factuality", "value": "Everyone on the boat is married."})
    path = tmp_path / "output.json"
    path.write_text(json.dumps(raw))
    df = _import([path], "promptfoo").set_index("pair_id")
    ev = raw["evalId"]
    assert df.loc[f"{ev}/0/1/openai:gpt-5-mini/3", "verdict"] == "A"
    assert df.loc[f"{ev}/0/0/openai:gpt-5/3", "judge"] == "select-best/default"
    assert df.loc[f"{ev}/1/1/openai:gpt-5-mini/2", "judge"] == "llm-rubric/anthropic:messages:claude-haiku-4-5"
    failed = df.loc[f"{ev}/1/0/openai:gpt-5/2"]  # the failed call: counted for its rubric judge, no verdict
    assert failed["status"] == "error" and failed["verdict"] == "" and failed["raw_text"] == "API error: 500"
    assert failed["judge"] == "llm-rubric/default"
    second = df.loc[f"{ev}/1/0/openai:gpt-5/3"]  # every model-graded assertion of the failed test
    assert second["judge"] == "factuality/default" and second["status"] == "error"
    assert df["source_row"].is_unique and sorted(df["source_row"]) == list(range(len(df)))


@pytest.mark.parametrize(("preset", "paths"), [("inspect_ai", [INSPECT_JSON, INSPECT_EVAL]),
                                               ("rewardbench2", [RB2]), ("promptfoo", [PF])])
def test_audit_with_the_preset_writes_a_card(preset, paths, tmp_path, capsys):
    out = tmp_path / "out"
    rc = cli.main(["audit", "--format", preset, *map(str, paths), "--out", str(out), "--resamples", "20"])
    assert rc == 0, capsys.readouterr().err
    card = pd.read_csv(out / "bias_card.csv")
    assert len(card) > 0 and (out / "report.html").is_file()
    verdicts = pd.read_parquet(out / "verdicts.parquet")
    assert len(verdicts) == {"inspect_ai": 2, "rewardbench2": 9, "promptfoo": 4}[preset]


# ---- damaged files: one error line naming the file, exit 2 ------------------------------------------

def _zip_with(header: bytes | None, sample: bytes | None, path: Path) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        if header is not None:
            zf.writestr("header.json", header)
        if sample is not None:
            zf.writestr("samples/1_epoch_1.json", sample)


def _damaged(kind: str, rng: np.random.Generator, root: Path) -> tuple[Path, str]:
    """A damaged copy of a fixture and the preset that reads it."""
    if kind.startswith("rb2"):
        src, preset = RB2, "rewardbench2"
    elif kind.startswith("pf"):
        src, preset = PF, "promptfoo"
    elif kind.startswith("eval"):
        src, preset = INSPECT_EVAL, "inspect_ai"
    else:
        src, preset = INSPECT_JSON, "inspect_ai"
    path = root / src.name
    data = src.read_bytes()
    if kind.endswith("truncate"):
        path.write_bytes(data[: int(rng.integers(0, len(data) - 1))])
    elif kind.endswith("random-bytes"):
        path.write_bytes(rng.integers(0, 256, int(rng.integers(1, 400)), dtype=np.uint8).tobytes())
    elif kind.endswith("flip-bytes"):
        b = bytearray(data)
        for i in rng.integers(0, len(b), 8):
            b[i] = int(rng.integers(0, 256))
        path.write_bytes(bytes(b))
    elif kind.endswith("wrong-type"):
        path.write_text(json.dumps([json.loads(data)] if src.suffix == ".json" else [1, 2]))
    elif kind == "rb2-missing-key":
        raw = json.loads(data)
        del raw[str(rng.choice(["id", "subset", "num_correct", "scores"]))]
        path.write_text(json.dumps(raw))
    elif kind == "rb2-bad-value":
        raw = json.loads(data)
        key, bad = [("scores", [["x", 1.0]] * 3), ("num_correct", [0, 1, 1]), ("id", ["0"]),
                    ("scores", 5), ("num_correct", [1, 1, 7])][int(rng.integers(0, 5))]
        raw[key] = bad
        path.write_text(json.dumps(raw))
    elif kind == "pf-missing-key":
        raw = json.loads(data)
        choice = int(rng.integers(0, 3))
        res = raw["results"]["results"][int(rng.integers(0, 4))]
        if choice == 0:
            del raw["results"]["results"]
        elif choice == 1:
            del res[str(rng.choice(["testIdx", "promptIdx", "provider"]))]
        else:
            del res["gradingResult"]["componentResults"][-1]["pass"]
        path.write_text(json.dumps(raw))
    elif kind == "pf-bad-value":
        raw = json.loads(data)
        res = raw["results"]["results"][int(rng.integers(0, 4))]
        choice = int(rng.integers(0, 3))
        if choice == 0:
            res["gradingResult"]["componentResults"] = "llm-rubric"
        elif choice == 1:
            res["gradingResult"]["componentResults"][-1] = 7
        else:
            raw["results"] = [res]
        path.write_text(json.dumps(raw))
    elif kind == "json-missing-key":
        raw = json.loads(data)
        choice = int(rng.integers(0, 3))
        if choice == 0:
            del raw["eval"]
        elif choice == 1:
            del raw["samples"][0]["scores"]["model_graded_fact"]["value"]
        else:
            raw["samples"][0]["scores"] = ["C"]
        path.write_text(json.dumps(raw))
    elif kind == "eval-missing-key":
        with zipfile.ZipFile(src) as zf:
            header, sample = zf.read("header.json"), zf.read("samples/1_epoch_1.json")
        choice = int(rng.integers(0, 3))
        if choice == 0:
            _zip_with(None, sample, path)
        elif choice == 1:
            h = json.loads(header)
            del h["eval"]
            _zip_with(json.dumps(h).encode(), sample, path)
        else:
            _zip_with(header, b"[1, 2", path)
    else:  # pragma: no cover - the list below names every kind
        raise AssertionError(kind)
    return path, preset


KINDS = ["json-truncate", "json-random-bytes", "json-flip-bytes", "json-wrong-type", "json-missing-key",
         "eval-truncate", "eval-random-bytes", "eval-flip-bytes", "eval-missing-key",
         "rb2-truncate", "rb2-random-bytes", "rb2-flip-bytes", "rb2-wrong-type", "rb2-missing-key", "rb2-bad-value",
         "pf-truncate", "pf-random-bytes", "pf-flip-bytes", "pf-wrong-type", "pf-missing-key", "pf-bad-value"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_log_is_one_error_line_naming_the_file(kind, tmp_path_factory, capsys):
    rng = np.random.default_rng(sum(map(ord, kind)))
    errors = 0
    for trial in range(6):
        root = tmp_path_factory.mktemp(f"{kind}-{trial}")
        path, preset = _damaged(kind, rng, root)
        capsys.readouterr()
        rc = cli.main(["audit", "--format", preset, str(path), "--out", str(root / "out"), "--resamples", "20",
                       "--views", "lenient"])
        err = capsys.readouterr().err
        if rc == 0:  # a flip that left the records readable: every record still imported
            assert kind.endswith("flip-bytes"), err
            continue
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert rc == 2 and len(lines) == 1 and lines[0].startswith("judgelab: error: "), err
        assert path.name in lines[0], lines[0]
        errors += 1
    assert errors >= (1 if kind.endswith("flip-bytes") else 6)


def test_a_missing_key_is_named(tmp_path, capsys):
    raw = json.loads(RB2.read_text())
    del raw["num_correct"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(raw))
    assert cli.main(["audit", "--format", "rewardbench2", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "'num_correct'" in capsys.readouterr().err
    doc = json.loads(INSPECT_JSON.read_text())
    del doc["samples"][0]["scores"]["model_graded_fact"]["value"]
    path = tmp_path / "i.json"
    path.write_text(json.dumps(doc))
    assert cli.main(["audit", "--format", "inspect_ai", str(path), "--out", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err
    assert "sample 0" in err and "'value'" in err and "model_graded_fact" in err


def test_a_folder_of_inspect_logs_reads_the_eval_and_json_files(tmp_path):
    for p in (INSPECT_JSON, INSPECT_EVAL):
        shutil.copy(p, tmp_path / p.name)
    (tmp_path / "README.md").write_text("not a log")
    df = import_verdicts([tmp_path], preset_mapping("inspect_ai"))
    assert len(df) == 2
