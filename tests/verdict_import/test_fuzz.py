"""Malformed logs end in one error line or in every record counted, never a traceback.

For every preset and a custom mapping, hypothesis damages a real log (truncates it, re-encodes
it as latin-1 or UTF-16, drops or adds a field, repeats a key, gzips it, empties it) and runs
``judgelab audit`` on it: either the command fails with rc 2 and exactly one ``judgelab: error:``
line on stderr, or it succeeds and the verdict table has one row per game of every record an
independent reader finds in the damaged file.

Values no format writes end the same way, deterministically: a preference off its format's scale
(NaN, infinity, -1, 7, a JSON ``true``, a word) in AlpacaEval annotations, a judgelab table, a custom
JSONL log read by columns, and a reward model's scores; an empty mapping file; a JSON array given
to a format that reads JSON lines.  Each is one ``judgelab: error:`` line naming the file (and the
row), rc 2, and no output.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FIX = Path(__file__).parents[1] / "fixtures" / "verdict_logs"
JB = FIX / "judgebench" / ("dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=arena_hard,"
                           "judge_model=o1-mini-2024-09-12.jsonl")

MAPPING = ("judge: judge\npair_id: pair_id\nitem_id: item_id\nresponse_a: response_a\nresponse_b: response_b\n"
           "order: {path: order, values: {AB: AB, BA: BA}}\nverdict: {label: verdict, values: {A: A, B: B}, "
           "frame: stored}\n")


def _llmbar(root: Path) -> Path:
    rows = [{"input": f"Pick {i}.", "output_1": f"a {i} é", "output_2": f"b {i}", "label": 1 + i % 2,
             "results": [{flag: {"completion": [f"Output ({w})", "stop"], "winner": w}
                          for flag, w in (("swap = False", "1"), ("swap = True", "2"))}]} for i in range(3)]
    d = root / "Natural" / "evaluators" / "GPT-4" / "Vanilla"
    d.mkdir(parents=True)
    (d / "result.json").write_text(json.dumps(rows))
    return d / "result.json"


def _table_csv(root: Path, name: str) -> Path:
    rows = [{"judge": "j", "pair_id": f"p{i}", "item_id": f"q{i}", "order": o, "response_a": f"a é {i}",
             "response_b": f"b {i}", "verdict": "AB"[(i + k) % 2]} for i in range(3) for k, o in enumerate(("AB", "BA"))]
    path = root / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _source(name: str, root: Path) -> tuple[Path, list[str], int]:
    """(the log file to damage, the other audit arguments, games per record)."""
    if name == "judgebench":
        return shutil.copy(JB, root / JB.name), ["--format", "judgebench"], 2
    if name == "alpaca_eval":
        return shutil.copy(FIX / "alpaca_eval" / "annotations.json", root / "annotations.json"), \
            ["--format", "alpaca_eval"], 1
    if name in ("arena_hard", "arena_hard_v2", "fastchat_pairwise"):
        src = FIX / ("fastchat" if name == "fastchat_pairwise" else name)
        log = next((src / "model_judgment").rglob("*.jsonl"))
        return shutil.copy(log, root / log.name), ["--format", name, "--table", f"answers={src / 'model_answer'}",
                                                   "--table", f"questions={src / 'question.jsonl'}"], 2
    if name == "llmbar":
        return _llmbar(root), ["--format", "llmbar"], 2
    if name == "judgelab":
        return _table_csv(root, "log.csv"), ["--format", "judgelab"], 1
    (root / "m.yaml").write_text(MAPPING)
    return _table_csv(root, "custom.csv"), ["--mapping", str(root / "m.yaml")], 1


SOURCES = ["judgebench", "alpaca_eval", "arena_hard", "arena_hard_v2", "fastchat_pairwise", "llmbar", "judgelab",
           "custom-mapping"]
DAMAGE = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.sampled_from(["latin-1", "utf-16", "gzip", "gzip-suffix", "empty"]), st.just(0.0)),
    st.tuples(st.sampled_from(["drop", "add", "duplicate", "null"]), st.floats(0, 1)),
)


def _records(data: bytes, suffix: str) -> list:
    """The records of a file by an independent reader (json / csv modules), or raise."""
    text = data.decode("utf-8")
    if suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if suffix == ".json":
        return json.loads(text)
    return list(csv.DictReader(io.StringIO(text)))


def _damage(data: bytes, suffix: str, how: str, x: float) -> bytes:
    if how == "truncate":
        return data[: int(len(data) * x)]
    if how == "empty":
        return b""
    if how == "latin-1":
        return data.decode("utf-8").encode("latin-1", errors="replace")
    if how == "utf-16":
        return codecs.BOM_UTF16_LE + data.decode("utf-8").encode("utf-16-le")
    if how.startswith("gzip"):
        return gzip.compress(data)
    recs = _records(data, suffix)
    i = int(x * (len(recs) - 1))
    rec = recs[i]
    keys = sorted(rec)
    k = keys[int(x * (len(keys) - 1))]
    if how == "drop":
        del rec[k]
    elif how == "add":
        rec["extra_field"] = {"nested": [1, 2]}
    elif how == "null":
        rec[k] = None
    if suffix == ".csv":
        out = io.StringIO()
        w = csv.DictWriter(out, fieldnames=sorted({f for r in recs for f in r}), restval="")
        w.writeheader()
        w.writerows(recs)
        return out.getvalue().encode()
    if how == "duplicate":  # the key again, first, with another value (JSON keeps the last)
        text = json.dumps(rec, ensure_ascii=False)
        line = '{"' + k + '": ["dup"], ' + text[1:]
        return "\n".join([*(json.dumps(r, ensure_ascii=False) for r in recs[:i]), line,
                          *(json.dumps(r, ensure_ascii=False) for r in recs[i + 1:])]).encode() \
            if suffix == ".jsonl" else ("[" + ",".join([*(json.dumps(r) for r in recs[:i]), line,
                                                          *(json.dumps(r) for r in recs[i + 1:])]) + "]").encode()
    if suffix == ".jsonl":
        return "\n".join(json.dumps(r, ensure_ascii=False) for r in recs).encode()
    return json.dumps(recs, ensure_ascii=False).encode()


@pytest.mark.parametrize("source", SOURCES)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=DAMAGE)
def test_a_damaged_log_is_one_error_line_or_every_record(source, damage, tmp_path_factory, capsys):
    from judgelab import cli

    root = tmp_path_factory.mktemp(source)
    log, args, n_games = _source(source, root)
    how, x = damage
    if how in ("drop", "add", "duplicate", "null") and source != "custom-mapping" and log.suffix == ".csv" \
            and how == "duplicate":
        how = "add"  # a CSV has no repeated key to write
    data = _damage(log.read_bytes(), log.suffix, how, x)
    target = log.with_name(log.name + ".gz") if how == "gzip-suffix" else log
    if target != log:
        log.unlink()
    target.write_bytes(data)
    capsys.readouterr()
    rc = cli.main(["audit", str(target), *args, "--out", str(root / "out"), "--resamples", "20",
                   "--views", "lenient"])
    err = capsys.readouterr().err
    if rc != 0:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert rc == 2 and len(lines) == 1 and lines[0].startswith("judgelab: error: "), err
        return
    recs = _records(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data, log.suffix)
    verdicts = pd.read_parquet(root / "out" / "verdicts.parquet")
    assert len(verdicts) == n_games * len(recs)


# --- values no format writes: one line naming the file and the row -------------------------------

BAD_PREFERENCES = [float("nan"), float("inf"), -1, 7, True, "much"]


def _bad_input(case: str, value: object, root: Path) -> tuple[Path, list[str], str]:
    """(the damaged log, the other audit arguments, what the error line must name after the file)."""
    if case == "alpaca_eval":  # AlpacaEval's preference on 1..2
        rows = json.loads((FIX / "alpaca_eval" / "annotations.json").read_text())
        rows[1]["preference"] = value
        f = root / "annotations.json"
        f.write_text(json.dumps(rows))
        return f, ["--format", "alpaca_eval"], " row 1: the preference at 'preference' is "
    if case == "judgelab":  # a recorded table's own preference in [0, 1], as a CSV cell
        f = _table_csv(root, "log.csv")
        t = pd.read_csv(f, dtype=str, keep_default_na=False)
        t["preference"] = ""
        t.loc[3, "preference"] = str(value).lower() if isinstance(value, bool) else str(value)
        t.to_csv(f, index=False)
        return f, ["--format", "judgelab"], " row 3: preference is "
    if case == "custom-jsonl":  # read by columns first: the columnar reader hands it back
        recs = [{"judge": "j", "id": i, "a": f"a {i}", "b": f"b {i}", "w": 1 + i % 2} for i in range(4)]
        recs[2]["w"] = value
        f = root / "w.jsonl"
        f.write_text("".join(json.dumps(r) + "\n" for r in recs))
        (root / "w.yaml").write_text("file_type: jsonl\njudge: judge\npair_id: id\nresponse_a: a\nresponse_b: b\n"
                                     "verdict: {weight: w, weight_range: [1, 2], frame: stored}\n")
        return f, ["--mapping", str(root / "w.yaml")], " row 3: the preference at 'w' is "
    if case == "judgebench-scores":  # a reward model's two scores
        recs = [json.loads(line) for line in next(JB.parent.glob("*internlm*")).read_text().splitlines()]
        recs[0]["judgments"][1]["judgment"]["scores"] = [1.0, value]
        f = root / JB.name.replace("arena_hard,judge_model=o1-mini-2024-09-12", "reward_model,judge_model=rm")
        f.write_text("".join(json.dumps(r) + "\n" for r in recs))
        return f, ["--format", "judgebench"], " row 1: the scores at 'judgments.1.judgment.scores' are "
    raise AssertionError(case)


@pytest.mark.parametrize("case", ["alpaca_eval", "judgelab", "custom-jsonl", "judgebench-scores"])
@pytest.mark.parametrize("value", BAD_PREFERENCES, ids=repr)
def test_a_preference_off_its_scale_is_one_error_line_naming_file_and_row(case, value, tmp_path, capsys):
    from judgelab import cli

    if case == "judgebench-scores" and isinstance(value, str):
        value = [value]  # a word, as a one-element list: no pair of scores either
    log, args, names = _bad_input(case, value, tmp_path)
    capsys.readouterr()
    rc = cli.main(["audit", str(log), *args, "--out", str(tmp_path / "out"), "--resamples", "20",
                   "--views", "lenient"])
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    if case == "judgebench-scores" and type(value) is int:  # -1 and 7 are scores: a reward model's scale is open
        assert rc == 0 and len(pd.read_parquet(tmp_path / "out" / "verdicts.parquet")) == 2 * len(
            log.read_text().splitlines()), lines
        return
    assert rc == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"judgelab: error: {log}{names}"), lines
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", ["empty mapping", "mapping without a verdict", "array as JSON lines",
                                  "pretty array as JSON lines"])
def test_a_wrong_kind_of_file_is_one_error_line(case, tmp_path, capsys):
    from judgelab import cli

    if case.endswith("mapping") or case.startswith("mapping"):
        m = tmp_path / "mapping.yaml"
        m.write_text("" if case == "empty mapping" else "judge: judge\npair_id: pair_id\n")
        log, args = _table_csv(tmp_path, "log.csv"), ["--mapping", str(m)]
        want = f"judgelab: error: {m}: " + ("the verdict mapping is empty" if case == "empty mapping"
                                            else "no 'verdict' (one game per record) or 'games'")
    else:
        recs = [json.loads(line) for line in JB.read_text().splitlines()]
        log = tmp_path / JB.name
        log.write_text(json.dumps(recs, indent=2 if case.startswith("pretty") else None))
        args, want = ["--format", "judgebench"], f"judgelab: error: {log}: a JSON array, expected JSON lines"
    capsys.readouterr()
    rc = cli.main(["audit", str(log), *args, "--out", str(tmp_path / "out"), "--resamples", "20"])
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith(want), lines
