"""The audit benchmark's vectorised log writer writes what ``json.dumps`` would, in the JudgeBench layout."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

from judgelab.verdict_import import import_verdicts, preset_mapping

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_audit.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_audit", BENCH)
    mod = importlib.util.module_from_spec(spec)
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
