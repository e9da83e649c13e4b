"""The audit benchmark's vectorised log writer writes what ``json.dumps`` would, in the JudgeBench layout."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from judgelab.verdict_import import import_verdicts, preset_mapping

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_audit.py"
#: the quantile levels the benchmark keeps a length distribution at (every 5 %, then 98 %, 99.5 %, 100 %)
LEVELS = np.array([*np.arange(0, 100, 5), 98, 99.5, 100]) / 100


def _bench():
    spec = importlib.util.spec_from_file_location("bench_audit", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


def test_writer_lines_are_json_dumps_of_their_records_and_import_as_judgebench(tmp_path, monkeypatch):
    bench = _bench()
    monkeypatch.setattr(bench, "CHUNK", 7)  # several blocks per file, one of them short
    size = bench.write_log(tmp_path, 41, 3, seed=5)
    files = sorted(tmp_path.glob("*.jsonl"))
    assert len(files) == 3 and size == sum(f.stat().st_size for f in files)
    recs = []
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            assert json.dumps(rec, ensure_ascii=False) == line
            recs.append(rec)
    assert len(recs) == 41 and len({r["pair_id"] for r in recs}) == 41
    for r in recs:
        k, i = map(int, r["pair_id"].split("-"))
        assert r["original_id"] == i and r["question"].startswith(f"Question {k}-{i}: ")
        assert len(r["question"].split()) == 22 and 10 <= len(r["response_A"].split()) < 70
        for g, (first, second) in zip(r["judgments"], ((r["response_A"], r["response_B"]),
                                                        (r["response_B"], r["response_A"])), strict=True):
            la, lb = len(first.split()), len(second.split())
            if la > lb:  # the longer response shown first always wins; otherwise the position bias decides
                assert g["decision"] == "A>B"
    table = import_verdicts([tmp_path], preset_mapping("judgebench"))
    assert len(table) == 82 and set(table["verdict"]) <= {"A", "B"}


def test_text_scale_keeps_pairs_and_verdicts(tmp_path):
    bench = _bench()
    (tmp_path / "x1").mkdir()
    (tmp_path / "x3").mkdir()
    s1 = bench.write_log(tmp_path / "x1", 20, 2, text_scale=1)
    s3 = bench.write_log(tmp_path / "x3", 20, 2, text_scale=3)
    assert s3 > s1
    for f1 in sorted((tmp_path / "x1").glob("*.jsonl")):
        r1 = [json.loads(x) for x in f1.read_text().splitlines()]
        r3 = [json.loads(x) for x in (tmp_path / "x3" / f1.name).read_text().splitlines()]
        assert [r["judgments"] for r in r1] == [r["judgments"] for r in r3]
        assert [r["label"] for r in r1] == [r["label"] for r in r3]
        assert np.array_equal([3 * len(r["response_A"].split()) for r in r1],
                              [len(r["response_A"].split()) for r in r3])


def test_a_childs_peak_is_its_own_not_the_benchmarks(tmp_path):
    """The benchmark holds 600 MB when it starts a child that touches 100 MB: the child's peak is
    its own (ru_maxrss from wait4 would report the benchmark's 600 MB), and its exit code is kept."""
    import sys

    bench = _bench()
    ballast = bytearray(600 << 20)
    ballast[:: 4096] = b"x" * len(ballast[:: 4096])  # touched: resident
    script = tmp_path / "child.py"
    script.write_text("import sys\nb = bytearray(100 << 20)\nb[::4096] = b'y' * len(b[::4096])\nsys.exit(3)\n")
    _, cpu, peak, rc = bench.run_child([sys.executable, str(script)])
    assert rc == 3 and cpu >= 0
    assert 100 <= peak < 400, peak
    _, _, peak_m, rc_m = bench.run_child([sys.executable, "-m", "json.tool", str(script)])
    assert rc_m == 1 and peak_m < 400  # -m module: run as python -m would (not JSON: exit 1)
    del ballast


def _alpaca_logs(data_root: Path) -> list[list[dict]]:
    files = sorted(data_root.glob("alpaca_eval/results/*/*/annotations.json"))
    if not files:
        pytest.skip(f"no AlpacaEval annotations under {data_root}")
    return [json.loads(f.read_text(encoding="utf-8")) for f in files]


def _words(texts) -> np.ndarray:
    return np.array([len(t.split()) for t in texts])


def test_the_real_shape_is_measured_on_the_shared_files(data_root):
    """Counted here by hand from the five AlpacaEval annotation files: 805 instructions in each,
    the same 805 in all five; lengths of the instructions and of both outputs (pooled)."""
    bench = _bench()
    logs = _alpaca_logs(data_root)
    shape = bench.measure_shape(data_root)
    assert shape.items_per_log == 805 == int(np.median([len(r) for r in logs]))
    instructions = [{r["instruction"] for r in recs} for recs in logs]
    assert shape.judges_per_item == len(logs) == 5 and all(i == instructions[0] for i in instructions)
    outputs = [r[k] or "" for recs in logs for r in recs for k in ("output_1", "output_2")]
    for got, texts in ((shape.question, sorted(instructions[0])), (shape.response, outputs)):
        w = _words(texts)
        assert got.words == tuple(round(float(x)) for x in np.quantile(w, LEVELS))
        assert got.chars_per_word == pytest.approx(sum(map(len, texts)) / w.sum())
    assert shape.response.words[10] > 150  # real answers, not the short shape's 10-70 words
    # AlpacaEval keeps no judge text: the judge texts are the JudgeBench measurements
    assert shape.judge_response == bench.JUDGEBENCH_SHAPE.judge_response


def test_the_judgebench_measurement_reads_judgebench_outputs():
    """On the real (cut) JudgeBench records of tests/fixtures: every count recomputed here."""
    bench = _bench()
    root = Path(__file__).resolve().parents[1] / "fixtures" / "verdict_logs"
    recs = [[json.loads(x) for x in f.read_text(encoding="utf-8").splitlines()]
            for f in sorted((root / "judgebench").glob("*.jsonl"))]
    shape = bench.measure_shape(root)
    assert shape.items_per_log == int(np.median([len(r) for r in recs]))
    files_per_pair = {}
    for f in recs:
        for pid in {r["pair_id"] for r in f}:
            files_per_pair[pid] = files_per_pair.get(pid, 0) + 1
    assert shape.judges_per_item == round(float(np.median(list(files_per_pair.values()))))
    pairs = {}
    for f in recs:
        for r in f:
            pairs.setdefault(r["pair_id"], r)  # each pair's texts once: every judge's file repeats them
    assert len(pairs) < sum(map(len, recs))
    responses = [r[k] for r in pairs.values() for k in ("response_A", "response_B")]
    assert shape.response.words == tuple(round(float(x)) for x in np.quantile(_words(responses), LEVELS))
    answers = [g["judgment"]["response"] for f in recs for r in f for g in r["judgments"] if g["judgment"]["response"]]
    assert len(answers) == 8  # the two arena_hard files' 4 records, two games each; reward games have no text
    assert shape.judge_response.words == tuple(round(float(x)) for x in np.quantile(_words(answers), LEVELS))
    assert bench.measure_shape(None) == bench.JUDGEBENCH_SHAPE


#: measured on the published JudgeBench logs (ScalerLab/JudgeBench e2c52c2, outputs/): mean characters
#: of an arena_hard game's judge prompt and judge response (1,240 games), and bytes a pair of its two
#: arena_hard files (o1-mini-2024-09-12, claude-3-haiku-20240307)
JUDGE_PROMPT_CHARS, JUDGE_RESPONSE_CHARS = 2134, 1509
JUDGEBENCH_LLM_BYTES_PER_PAIR = (11085, 14053)


def test_a_real_shape_log_has_the_shared_files_lengths_and_the_judgebench_layout(data_root, tmp_path):
    """One group of five judges on 805 items, the shape measured on the shared files: the texts'
    length quantiles and per-pair bytes are the real ones', the lines import as JudgeBench."""
    bench = _bench()
    logs = _alpaca_logs(data_root)
    shape = bench.measure_shape(data_root)
    n = 805 * 5 + 100  # a full group of five judges and a sixth log of 100 items
    size = bench.write_real_log(tmp_path, n, shape, seed=3)
    files = sorted(tmp_path.glob("*.jsonl"))
    assert len(files) == 6 and size == sum(f.stat().st_size for f in files)
    by_file = {f.name: [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines()] for f in files}
    for f in files:
        for line, rec in zip(f.read_text(encoding="utf-8").splitlines(), by_file[f.name], strict=True):
            assert json.dumps(rec, ensure_ascii=False) == line
    assert sorted(len(r) for r in by_file.values()) == [100] + [805] * 5
    # judges per item: the five judges of the group judge the same items, with the same texts
    group = [r for r in by_file.values() if len(r) == 805]
    keys = [[(x["pair_id"], x["source"], x["original_id"], x["question"], x["response_A"], x["response_B"])
             for x in recs] for recs in group]
    assert all(k == keys[0] for k in keys) and len({k[0] for k in keys[0]}) == 805
    assert {x["source"] for x in next(r for r in by_file.values() if len(r) == 100)} != {x["source"] for x in group[0]}

    # lengths: quantiles of the written texts against the real ones, counted here from the shared files
    real_q = sorted({r["instruction"] for recs in logs for r in recs})
    real_r = [r[k] or "" for recs in logs for r in recs for k in ("output_1", "output_2")]
    items = group[0]
    for written, real in (([x["question"] for x in items], real_q),
                          ([x[k] for x in items for k in ("response_A", "response_B")], real_r)):
        ww, rw = _words(written), _words(real)
        for p in (25, 50, 75, 90):
            assert np.percentile(ww, p) == pytest.approx(np.percentile(rw, p), rel=0.15, abs=3), p
        assert np.mean([len(t) for t in written]) == pytest.approx(np.mean([len(t) for t in real]), rel=0.12)
        cpw = sum(map(len, written)) / ww.sum(), sum(map(len, real)) / rw.sum()
        assert cpw[0] == pytest.approx(cpw[1], rel=0.02)  # characters per word, spaces included
    # per-pair bytes: a reward file's pair is its texts plus the layout; an LLM judge's adds two games' judge texts
    texts = np.mean([len(t) for t in real_q]) + 2 * np.mean([len(t) for t in real_r])
    reward = next(f for f in files if "reward_model" in f.name and len(by_file[f.name]) == 805)
    llm = next(f for f in files if "arena_hard" in f.name and len(by_file[f.name]) == 805)
    reward_bpp, llm_bpp = reward.stat().st_size / 805, llm.stat().st_size / 805
    skeleton = {**by_file[reward.name][0], "question": "", "response_A": "", "response_B": ""}
    assert reward_bpp == pytest.approx(texts + len(json.dumps(skeleton)) + 1, rel=0.1)
    assert llm_bpp - reward_bpp == pytest.approx(2 * (JUDGE_PROMPT_CHARS + JUDGE_RESPONSE_CHARS), rel=0.15)
    assert 0.9 * JUDGEBENCH_LLM_BYTES_PER_PAIR[0] < llm_bpp < JUDGEBENCH_LLM_BYTES_PER_PAIR[1]

    # the JudgeBench layout: the judge model inside each game, the second game swapped
    for name, recs in by_file.items():
        model = name.split("judge_model=")[1].removesuffix(".jsonl")
        for r in recs:
            assert [g["judgment"]["judge_model"].replace("/", "_") for g in r["judgments"]] == [model, model]
            la, lb = len(r["response_A"].split()), len(r["response_B"].split())
            if la > lb:  # the longer response shown first always wins
                assert r["judgments"][0]["decision"] == "A>B"
            elif lb > la:
                assert r["judgments"][1]["decision"] == "A>B"
            if "arena_hard" in name:
                assert all(g["judgment"]["response"].endswith(f"[[{g['decision']}]]") for g in r["judgments"])
            else:
                assert all("scores" in g["judgment"] and g["judgment"]["response"] == "" for g in r["judgments"])
    table = import_verdicts([tmp_path], preset_mapping("judgebench"))
    assert len(table) == 2 * n and table["judge"].nunique() == 6
    game = {(r["pair_id"], r["judgments"][0]["judgment"]["judge_model"]): r["judgments"]
            for recs in by_file.values() for r in recs}
    flip = {"A>B": "B", "B>A": "A"}
    for row in table.sample(200, random_state=0).itertuples():
        g = game[(row.pair_id, row.judge.split("/", 1)[1])]
        assert row.verdict == (g[0]["decision"][0] if row.order == "AB" else flip[g[1]["decision"]])
    assert table.groupby("item_id")["judge"].nunique().max() == 5
