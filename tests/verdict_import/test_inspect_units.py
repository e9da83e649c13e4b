"""Units of :mod:`judgelab.verdict_import.inspect_log` on small logs in inspect_ai's two layouts (a
``.json`` object, an ``.eval`` zip of ``header.json`` and ``samples/*.json``; the real logs from
inspect_ai's repository are checked in tests/verdict_import/test_tools_presets.py): every record field,
the text and grader fallbacks, each refusal's exact line, and the hand-off to inspect_ai's own reader
(a stand-in module with inspect_ai's ``read_eval_log``/``model_dump`` contract, since the library is an
optional extra)."""

from __future__ import annotations

import json
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import pytest

from judgelab.io import InputError
from judgelab.verdict_import import inspect_log
from judgelab.verdict_import.inspect_log import _graders, _output_text, _text, iter_inspect_records


def _sample(**over: Any) -> dict:
    s = {"id": 7, "epoch": 2, "input": [{"role": "user", "content": "Q?"}], "target": ["A", "B"],
         "output": {"completion": "my answer"},
         "scores": {"model_graded_qa": {"value": "C", "answer": "scored", "explanation": "why"}}}
    s.update(over)
    return s


def _header(**over: Any) -> dict:
    h = {"version": 2, "eval": {"task": "t", "run_id": "r1", "model": "openai/gpt-4o"},
         "results": {"scores": [{"name": "model_graded_qa", "params": {"model": "anthropic/claude"}}]}}
    h.update(over)
    return h


def _json_log(tmp_path: Path, samples: Any, **header: Any) -> Path:
    path = tmp_path / "log.json"
    path.write_text(json.dumps({**_header(**header), "samples": samples}))
    return path


def test_a_json_log_gives_one_record_per_sample_and_scorer(tmp_path: Path) -> None:
    two = {"model_graded_qa": {"value": "I"}, "match": {"value": {"b": [2], "a": 1}}}
    recs = list(iter_inspect_records(_json_log(tmp_path, [_sample(), _sample(id=8, scores=two)])))
    assert [r for r, _ in recs] == [0, 1, 2]
    assert recs[0][1] == {"task": "t", "run_id": "r1", "eval_model": "openai/gpt-4o", "scorer": "model_graded_qa",
                          "grader": "anthropic/claude", "sample_id": 7, "epoch": 2, "input": "Q?", "target": "A\nB",
                          "answer": "scored", "value": "C", "explanation": "why"}
    assert recs[1][1]["answer"] == "my answer" and recs[1][1]["explanation"] is None
    # a scorer results does not name grades with the evaluated model; a structured value is JSON
    assert recs[2][1]["grader"] == "openai/gpt-4o" and recs[2][1]["value"] == '{"a": 1, "b": [2]}'
    null = list(iter_inspect_records(_json_log(tmp_path, [_sample(scores={"s": {"value": None}})])))
    assert null[0][1]["value"] is None


def test_unscored_samples_are_skipped_and_later_ones_read(tmp_path: Path) -> None:
    recs = list(iter_inspect_records(_json_log(tmp_path, [_sample(scores=None), _sample(id=9)])))
    assert [(r, d["sample_id"]) for r, d in recs] == [(0, 9)]


def test_an_eval_archive_reads_header_and_every_sample_file(tmp_path: Path) -> None:
    path = tmp_path / "log.eval"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("header.json", json.dumps(_header()))
        zf.writestr("samples/7_epoch_2.json", json.dumps(_sample()))
        zf.writestr("samples/8_epoch_1.json", json.dumps(_sample(id=8, epoch=1)))
        zf.writestr("summaries.json", "[]")
        zf.writestr("samples/readme.txt", "not a sample")
    assert [(d["sample_id"], d["epoch"]) for _, d in iter_inspect_records(path)] == [(7, 2), (8, 1)]


def test_texts_and_outputs() -> None:
    assert _text(None) == "" and _text("x") == "x" and _text(3) == "3"
    assert _text(["a", "", None, "b"]) == "a\nb"
    assert _text({"text": "t"}) == "t" and _text({"content": [{"text": "c1"}, "c2"]}) == "c1\nc2"
    assert _text({"content": "c", "text": "t"}) == "c" and _text({"other": 1}) == ""
    assert _output_text({"output": "str"}) == "" and _output_text({}) == ""
    assert _output_text({"output": {"completion": "", "choices": [{"message": {"content": "m"}}]}}) == "m"
    assert _output_text({"output": {"completion": "c", "choices": [{"message": {"content": "m"}}]}}) == "c"
    assert _output_text({"output": {"choices": []}}) == "" and _output_text({"output": {"choices": ["x"]}}) == ""
    assert _output_text({"output": {"choices": "x"}}) == ""


def test_graders_from_results() -> None:
    header = {"results": {"scores": [{"name": "a", "params": {"grader_model": "g"}}, {"name": "b", "params": "x"},
                                     {"name": "c"}, "junk", {"name": "d", "params": {"model": "m", "grader_model": "g"}}]}}
    assert _graders(header, "dflt") == {"a": "g", "b": "dflt", "c": "dflt", "d": "m"}
    assert _graders({"results": "x"}, "d") == {} and _graders({"results": {"scores": "x"}}, "d") == {}
    assert _graders({}, "d") == {}


def test_a_log_without_a_model_grades_with_an_empty_default(tmp_path: Path) -> None:
    (_, rec), = iter_inspect_records(_json_log(tmp_path, [_sample()], eval={"task": "t"}, results={}))
    assert rec["grader"] is None and rec["eval_model"] is None  # the scorer is unknown to results: the model, None
    (_, rec), = iter_inspect_records(_json_log(tmp_path, [_sample()], eval={"task": "t"},
                                               results={"scores": [{"name": "model_graded_qa"}]}))
    assert rec["grader"] == ""


def _refused(path: Path) -> str:
    with pytest.raises(InputError) as err:
        list(iter_inspect_records(path))
    return str(err.value)


def test_each_refusal_is_its_own_exact_line(tmp_path: Path) -> None:
    p = tmp_path / "log.json"
    p.write_text("[1]")
    assert _refused(p) == f"{p}: expected a JSON object, got list"
    p.write_bytes(b"\xff\xfe{")
    assert _refused(p) == f"{p}: neither a zip archive (.eval) nor UTF-8 JSON (byte at offset 0)"
    p.write_text('{"eval": ')
    assert _refused(p).startswith(f"{p}: not valid JSON (JSONDecodeError: ")
    assert _refused(_json_log(tmp_path, {"a": 1})) == f"{p}: key 'samples' should be a list of samples, got dict"
    assert _refused(_json_log(tmp_path, [_sample(), 4])) == f"{p} sample 1: expected a JSON object, got int"
    keys = {f"k{i:02d}": 0 for i in range(14)}
    p.write_text(json.dumps(keys))
    assert _refused(p) == (f"{p}: format 'inspect_ai' expects key 'eval' in the log header, missing "
                           f"(keys {sorted(keys)[:12]}); is this an inspect_ai eval log?")
    assert _refused(_json_log(tmp_path, [], eval=3)) == f"{p} key 'eval': expected a JSON object, got int"
    where = f"{p} sample 0 (id 7, epoch 2)"
    assert _refused(_json_log(tmp_path, [_sample(scores=[1])])) == (
        f"{where}: key 'scores' should be an object of scorer -> score, got list")
    assert _refused(_json_log(tmp_path, [_sample(scores={"s": 1})])) == f"{where} score 's': expected a JSON object, got int"
    many = {f"k{i:02d}": 0 for i in range(10)}
    assert _refused(_json_log(tmp_path, [_sample(scores={"s": many})])) == (
        f"{where} score 's': expects key 'value', missing (keys {sorted(many)[:8]})")
    assert _refused(_json_log(tmp_path, [_sample(id="x", epoch=None, scores=[])])).startswith(
        f"{p} sample 0 (id 'x', epoch None): ")


def test_damaged_archives_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "log.eval"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(8):
            zf.writestr(f"e{i}.json", "{}")
    assert _refused(path) == (f"{path}: an .eval archive without header.json (entries: "
                              f"{[f'e{i}.json' for i in range(6)]}); is this an inspect_ai log?")
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("header.json", "[]")
    assert _refused(path) == f"{path}:header.json: expected a JSON object, got list"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("header.json", "{")
    assert _refused(path).startswith(f"{path}:header.json: not valid JSON (JSONDecodeError: ")
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("header.json", json.dumps(_header()))
        zf.writestr("samples/1.json", "7")
    assert _refused(path) == f"{path}:samples/1.json: expected a JSON object, got int"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps(_header()) * 50)
    raw = bytearray(path.read_bytes())
    start = raw.index(b"header.json") + len(b"header.json") + 5
    raw[start:start + 40] = b"\x00" * 40  # damage the compressed data, keep the directory
    path.write_bytes(bytes(raw))
    msg = _refused(path)
    assert msg.startswith(f"{path}: cannot read this .eval archive (") and msg.endswith("is the file complete?")
    kind = msg.split("(", 1)[1].split(":", 1)[0]
    assert kind in ("BadZipFile", "error", "EOFError", "OSError"), kind  # the exception's own type


class _Log:
    def __init__(self, doc: dict, seen: dict) -> None:
        self.doc, self.seen = doc, seen

    def model_dump(self, **kw: Any) -> dict:
        self.seen["dump"] = kw
        return json.loads(json.dumps(self.doc))


@pytest.fixture
def fake_inspect(monkeypatch: pytest.MonkeyPatch) -> dict:
    """A stand-in ``inspect_ai.log`` with the library's contract: ``read_eval_log(path: str)`` returns a
    pydantic ``EvalLog`` whose ``model_dump(mode="json", exclude_none=True)`` is the log as JSON."""
    seen: dict = {}
    mod = types.ModuleType("inspect_ai.log")

    def read_eval_log(path: str) -> _Log:
        seen["path"] = path
        if "fail" in seen:
            raise ValueError(seen["fail"])
        return _Log(seen["doc"], seen)

    mod.read_eval_log = read_eval_log  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "inspect_ai", types.ModuleType("inspect_ai"))
    monkeypatch.setitem(sys.modules, "inspect_ai.log", mod)
    return seen


def test_inspect_ais_own_reader_is_used_when_installed(fake_inspect: dict, tmp_path: Path) -> None:
    fake_inspect["doc"] = {**_header(), "samples": [_sample(id=11)]}
    path = tmp_path / "anything.eval"
    path.write_text("read by inspect_ai")
    recs = list(iter_inspect_records(path))
    assert fake_inspect["path"] == str(path) and isinstance(fake_inspect["path"], str)
    assert fake_inspect["dump"] == {"mode": "json", "exclude_none": True}
    assert [(d["sample_id"], d["grader"]) for _, d in recs] == [(11, "anthropic/claude")]
    fake_inspect["doc"] = _header()  # a header-only log (samples left out): no records
    assert list(iter_inspect_records(path)) == []
    header, samples = inspect_log._read_with_inspect(path)  # type: ignore[misc]
    assert samples == [] and "samples" not in header


def test_inspect_ais_failure_is_one_line(fake_inspect: dict, tmp_path: Path) -> None:
    path = tmp_path / "x.eval"
    path.write_text("")
    fake_inspect["fail"] = "bad header\nsecond line"
    assert _refused(path) == f"{path}: inspect_ai cannot read this eval log (ValueError: bad header)"
    fake_inspect["fail"] = ""
    assert _refused(path) == f"{path}: inspect_ai cannot read this eval log (ValueError: )"
