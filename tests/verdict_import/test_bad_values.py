"""Values no published format writes are refused with the file and the row, on both read paths.

A preference lives on its format's scale: AlpacaEval writes 1 to 2 (0 for identical outputs,
nothing for a failed call), a recorded judgelab table P(stored B preferred) in [0, 1], a reward
model two finite scores.  NaN, infinity, -1, 7, a word, or a JSON ``true`` (which Python counts as
1: a win for the first output) is a damaged file, and the import stops with one line naming the
file and row instead of reading it as a verdict or crashing in the ranking models later.  The
columnar reader hands such a file to the record path, so both give the record path's message.
An empty mapping file, and a JSON array given to a format that reads JSON lines, are one line each.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from judgelab.config import ConfigError
from judgelab.io import InputError
from judgelab.verdict_import import build_mapping, columnar, import_verdicts, mapping_from_config, preset_mapping

FIX = Path(__file__).parents[1] / "fixtures" / "verdict_logs"
ANNOTATIONS = FIX / "alpaca_eval" / "annotations.json"
JB = FIX / "judgebench"
BAD = [float("nan"), float("inf"), float("-inf"), -1, 7, True, False, "much", [1.5], {"p": 1.5}]


@pytest.fixture
def tried(monkeypatch):
    """(files the columnar reader started, files it read to the end)."""
    started: list[str] = []
    done: list[str] = []
    real = columnar.read_file

    def spy(path, *a, **k):
        started.append(Path(path).name)
        out = real(path, *a, **k)
        done.append(Path(path).name)
        return out

    monkeypatch.setattr(columnar, "read_file", spy)
    return started, done


def _error(*args, **kw) -> str:
    with pytest.raises(InputError) as e:
        import_verdicts(*args, **kw)
    return str(e.value)


# --- AlpacaEval: a preference on 1..2 ------------------------------------------------------------


@pytest.mark.parametrize("value", [*BAD, 0.999, 2.001, "2.5"])
def test_alpaca_eval_preference_off_its_scale_is_refused_with_file_and_row(tmp_path, value):
    rows = json.loads(ANNOTATIONS.read_text())  # real AlpacaEval records
    rows[1]["preference"] = value
    f = tmp_path / "annotations.json"
    f.write_text(json.dumps(rows))  # (json writes NaN and Infinity as Python reads them)
    msg = _error([f], preset_mapping("alpaca_eval"))
    assert msg.startswith(f"{f} row 1: the preference at 'preference' is {value!r}, ")
    assert "the scale [1, 2] or one of the mapped values ['0']" in msg and "\n" not in msg


def test_alpaca_eval_preferences_on_its_scale_are_read(tmp_path):
    """The values AlpacaEval writes still read as before: 1..2 scaled to [0, 1], 0 a tie, null none."""
    real = json.loads(ANNOTATIONS.read_text())[0]
    rows = [{**real, "instruction": f"{real['instruction']} ({k})", "preference": p}
            for k, p in enumerate([1, 2, 1.25, "1.75", 0, None])]
    f = tmp_path / "annotations.json"
    f.write_text(json.dumps(rows))
    t = import_verdicts([f], preset_mapping("alpaca_eval"))
    assert t["verdict"].tolist() == ["A", "B", "A", "B", "tie", ""]
    assert t["preference"].tolist()[:5] == pytest.approx([0.0, 1.0, 0.25, 0.75, 0.5])
    assert math.isnan(t["preference"].iloc[5])


# --- a recorded table's own preference column: [0, 1] ---------------------------------------------


def _table_rows(pref: object) -> list[dict]:
    return [{"judge": "j", "pair_id": f"p{i}", "order": o, "response_a": f"a{i}", "response_b": f"b{i}",
             "verdict": "B", "preference": pref if (i, o) == (1, "BA") else ""} for i in range(3) for o in ("AB", "BA")]


@pytest.mark.parametrize("cell", ["nan", "NaN", "inf", "-1", "7", "1.0001", "true", "much"])
def test_a_judgelab_table_preference_cell_off_zero_one_is_refused(tmp_path, cell):
    f = tmp_path / "log.csv"
    pd.DataFrame(_table_rows(cell)).to_csv(f, index=False)
    msg = _error([f], preset_mapping("judgelab"))
    assert msg.startswith(f"{f} row 3: preference is {cell!r}, not a number in [0, 1]")


@pytest.mark.parametrize("value", BAD)
def test_a_judgelab_jsonl_preference_that_is_no_probability_is_refused(tmp_path, value):
    f = tmp_path / "log.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in _table_rows(value)))
    for col in (True, False):
        msg = _error([f], preset_mapping("judgelab"), texts=False, columnar=col)
        assert msg.startswith(f"{f} row 4: preference is {value!r}, not a number in [0, 1]")


def test_a_judgelab_table_preference_in_range_survives(tmp_path):
    f = tmp_path / "log.csv"
    pd.DataFrame(_table_rows("0.25")).to_csv(f, index=False)
    t = import_verdicts([f], preset_mapping("judgelab")).set_index(["pair_id", "order"])
    assert t.at[("p1", "BA"), "preference"] == 0.25 and t.at[("p0", "AB"), "preference"] == 1.0


# --- both read paths: the columnar reader gives the record path's message -------------------------

WEIGHTS = {"file_type": "jsonl", "judge": "judge", "pair_id": "id", "response_a": "a", "response_b": "b",
           "verdict": {"weight": "w", "weight_range": [1, 2], "frame": "stored"}}


@pytest.mark.parametrize(("weights", "row", "shown"), [
    ([1, 2, 1, 7, 2], 4, "7"),  # integers: the columnar reader evaluates the column and meets 7
    ([1, 2, -1, 2], 3, "-1"),
    ([True, True, False], 1, "True"),  # booleans all the way: a column of its own type
])
def test_both_read_paths_refuse_a_weight_off_the_scale_alike(tmp_path, tried, weights, row, shown):
    f = tmp_path / "w.jsonl"
    f.write_text("".join(json.dumps({"judge": "j", "id": i, "a": "x", "b": "y", "w": w}) + "\n"
                         for i, w in enumerate(weights)))
    fast = _error([f], build_mapping(WEIGHTS), texts=False)
    started, done = tried
    assert started == [f.name] and done == []  # the columnar reader tried and handed the file back
    slow = _error([f], build_mapping(WEIGHTS), texts=False, columnar=False)
    assert fast == slow
    assert fast.startswith(f"{f} row {row}: the preference at 'w' is {shown}, ")


@pytest.mark.parametrize("scores", [[float("nan"), 1.0], [1.0, float("inf")], [True, False], [1.0, None], [1.0]])
def test_judgebench_scores_that_are_no_two_numbers_are_refused_on_both_paths(tmp_path, scores):
    src = next(JB.glob("*internlm*"))  # a real reward-model log: scores on every game
    recs = [json.loads(line) for line in src.read_text().splitlines()]
    recs[1]["judgments"][0]["judgment"]["scores"] = scores
    f = tmp_path / src.name
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    fast = _error([f], preset_mapping("judgebench"), texts=False)
    slow = _error([f], preset_mapping("judgebench"), texts=False, columnar=False)
    assert fast == slow
    assert fast.startswith(f"{f} row 2: the scores at 'judgments.0.judgment.scores' are {scores!r}, not two finite")


# --- a JSON array where JSON lines are expected ---------------------------------------------------


@pytest.mark.parametrize("indent", [None, 2])
def test_a_json_array_given_to_a_json_lines_format_says_so(tmp_path, indent):
    src = sorted(JB.glob("*.jsonl"))[0]
    recs = [json.loads(line) for line in src.read_text().splitlines()]
    f = tmp_path / src.name
    f.write_text("\n" + json.dumps(recs, indent=indent) + "\n")  # a blank first line too
    for col in (True, False):
        msg = _error([f], preset_mapping("judgebench"), texts=False, columnar=col)
        assert msg.startswith(f"{f}: a JSON array, expected JSON lines (one JSON object per line)")
    assert "not valid JSON" not in msg


def test_a_json_lines_file_that_is_damaged_later_keeps_its_own_message(tmp_path):
    src = sorted(JB.glob("*.jsonl"))[0]
    lines = src.read_text().splitlines()
    f = tmp_path / src.name
    f.write_text("\n".join([lines[0], "[1, 2", *lines[1:]]) + "\n")
    assert _error([f], preset_mapping("judgebench")).startswith(f"{f}:2: not valid JSON")


# --- an empty mapping -----------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [None, {}, [], 3])
def test_an_empty_or_odd_mapping_is_one_line(spec):
    with pytest.raises(ConfigError, match=r"^my\.yaml: the verdict mapping is (empty|a \w+, not a mapping); give a "
                                          r"preset name"):
        mapping_from_config(spec, where="my.yaml")


def test_a_mapping_without_a_verdict_names_what_is_missing():
    with pytest.raises(ConfigError, match=r"^m: no 'verdict' \(one game per record\) or 'games'"):
        build_mapping({"judge": "j", "pair_id": "id"}, where="m")


@pytest.mark.parametrize("text", ["", "\n# nothing here\n"])
def test_the_audit_command_with_an_empty_mapping_file_is_one_line(tmp_path, capsys, text):
    from judgelab import cli

    m = tmp_path / "mapping.yaml"
    m.write_text(text)
    log = tmp_path / "log.jsonl"
    log.write_text('{"id": 1, "v": "A"}\n')
    rc = cli.main(["audit", str(log), "--mapping", str(m), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err == [f"judgelab: error: {m}: the verdict mapping is empty; give a preset name, "
                               f"{{preset: NAME, ...}} or the fields of a custom mapping (docs/audit.md)"]


def test_the_leaderboard_command_refuses_a_preference_of_seven(tmp_path, capsys):
    """The crash of the issue: the ranking model's ``y must lie in [0, 1]`` traceback is now the
    import's one line naming the file and row."""
    from judgelab import cli

    rows = [{"judge": "j", "pair_id": f"p{i}", "item_id": f"q{i}", "order": o, "response_a": f"a {i}",
             "response_b": f"b {i}", "model_a": "m1", "model_b": "m2", "verdict": "AB"[(i + k) % 2],
             "preference": 7 if (i, k) == (2, 0) else ""} for i in range(6) for k, o in enumerate(("AB", "BA"))]
    f = tmp_path / "log.csv"
    pd.DataFrame(rows).to_csv(f, index=False)
    rc = cli.main(["leaderboard", str(f), "--format", "judgelab", "--out", str(tmp_path / "board")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert err[0].startswith(f"judgelab: error: {f} row 4: preference is '7', not a number in [0, 1]")
