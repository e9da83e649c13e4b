"""``judgelab.batch.export`` on small in-memory inputs: a hand-made stand-in cache of a few
requests goes through :func:`export_batches` without a plan (the plan end to end is in
``test_batch_files.py``, marked slow)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from judgelab.batch import ANTHROPIC_DIR, MANIFEST, META, OPENAI_DIR, RESULTS_DIR
from judgelab.batch.export import (
    BATCH_FORMAT,
    _placeholder_key,
    anthropic_params,
    batch_judge,
    check_batch_dir,
    export_batches,
    format_export,
    request_from_payload,
)
from judgelab.cache import CachedCall, CallCache
from judgelab.io import InputError
from judgelab.records import JudgeRequest, Message, canonical_json, sha256_hex
from tests.batch.test_batch_files import ENTRY, JUDGE

OTHER = "smollm2-other"  # a second openai judge (another model: other keys)
SIM = "sim-judge"  # a judge of a backend without a provider batch job
ENTRIES = {JUDGE: ENTRY, OTHER: {**ENTRY, "name": OTHER, "model": "other-model"},
           SIM: {"name": SIM, "backend": "simulated", "model": "sim"}}


def _requests() -> list[JudgeRequest]:
    return [JudgeRequest(messages=[Message("system", "Be fair."), Message("user", f"A or B? ({i}) é")],
                         params={"temperature": 0.5} if i == 2 else {}, json_mode=i == 1, task="verdict" if i else None)
            for i in range(3)]


def _sha(req: JudgeRequest) -> str:
    return sha256_hex(canonical_json(req.payload()))


@pytest.fixture
def stand_in(tmp_path) -> Path:
    """A plan's stand-in cache holding the three requests, each answered by two stand-ins (as for two
    judges of one plan: one payload, two keys)."""
    path = tmp_path / "plan-cache.sqlite"
    with CallCache(path) as cache:
        cache.put_many((CachedCall(f"{i + 100 * j:064x}", f"stand-in-{j}", "simulated", "sim", "pairwise", "A", None,
                                   1, 1, 0.0, 0.0, None), req.payload())
                       for j in range(2) for i, req in enumerate(_requests()))
    return path


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_each_wanted_call_is_written_once_per_judge_with_its_key_body_and_params(stand_in, tmp_path):
    reqs = _requests()
    shas = [_sha(r) for r in reqs]
    # a judge without calls, one of a backend without batch jobs and one without a config entry come first:
    # each is passed over, and the judges after them are exported all the same
    todo = {"idle": [], SIM: [shas[0]], "unlisted": [shas[1]], JUDGE: [shas[2], shas[0]],
            OTHER: [shas[1], shas[0], shas[2]]}
    batch = tmp_path / "new" / "batch"  # its parent is made too
    table = export_batches(batch, todo, stand_in, ENTRIES, tmp_path / "calls.sqlite", progress=False)
    assert table.to_dict("records") == [
        {"judge": SIM, "backend": "simulated", "requests": 0, "openai_files": 0, "anthropic_files": 0,
         "note": "not exported: 1 calls of backend 'simulated', which has no provider batch job (it runs live)"},
        {"judge": "unlisted", "backend": "unknown", "requests": 0, "openai_files": 0, "anthropic_files": 0,
         "note": "not exported: 1 calls of backend 'unknown', which has no provider batch job (it runs live)"},
        {"judge": JUDGE, "backend": "openai", "requests": 2, "openai_files": 1, "anthropic_files": 1, "note": ""},
        {"judge": OTHER, "backend": "openai", "requests": 3, "openai_files": 1, "anthropic_files": 1, "note": ""}]
    judges = {n: batch_judge(ENTRIES[n]) for n in (JUDGE, OTHER)}
    manifest = _lines(batch / MANIFEST)
    want = {(JUDGE, 0), (JUDGE, 2), (OTHER, 0), (OTHER, 1), (OTHER, 2)}  # each (judge, call) once, not per stand-in
    assert sorted((m["judge"], shas.index(_sha(request_from_payload(m["request"])))) for m in manifest) == sorted(want)
    for name, judge in judges.items():
        mine = [m for m in manifest if m["judge"] == name]
        openai = _lines(batch / OPENAI_DIR / f"{name}-001.jsonl")
        anthropic = _lines(batch / ANTHROPIC_DIR / f"{name}-001.jsonl")
        assert [o["custom_id"] for o in openai] == [m["custom_id"] for m in mine] == [a["custom_id"] for a in anthropic]
        for m, o, a in zip(mine, openai, anthropic, strict=True):
            req = request_from_payload(m["request"])
            assert m["custom_id"] == judge.key(req) and m["request"] == req.payload()
            assert o == {"custom_id": m["custom_id"], "method": "POST", "url": "/v1/chat/completions",
                         "body": judge.wire_body(req)}
            assert a == {"custom_id": m["custom_id"], "params": anthropic_params(judge.wire_body(req))}
    assert "é" in (batch / MANIFEST).read_text(encoding="utf-8")  # written as UTF-8, not escaped
    assert "é" in (batch / OPENAI_DIR / f"{JUDGE}-001.jsonl").read_text(encoding="utf-8")
    assert "é" in (batch / ANTHROPIC_DIR / f"{JUDGE}-001.jsonl").read_text(encoding="utf-8")
    assert (batch / RESULTS_DIR).is_dir() and not any((batch / RESULTS_DIR).iterdir())
    assert not (batch / OPENAI_DIR / f"{SIM}-001.jsonl").exists()
    meta = json.loads((batch / META).read_text(encoding="utf-8"))
    assert meta == {"format": BATCH_FORMAT, "cache": str(tmp_path / "calls.sqlite"),
                    "judges": {JUDGE: ENTRY, OTHER: ENTRIES[OTHER]},
                    "files": {n: {"openai": [f"{OPENAI_DIR}/{n}-001.jsonl"],
                                  "anthropic": [f"{ANTHROPIC_DIR}/{n}-001.jsonl"]} for n in (JUDGE, OTHER)}}


def test_a_cache_url_with_a_password_is_not_written(stand_in, tmp_path):
    url = "postgresql://me:secret@db/calls"
    (tmp_path / "b").mkdir()  # an empty folder is taken
    export_batches(tmp_path / "b", {JUDGE: [_sha(_requests()[0])]}, stand_in, ENTRIES, url, progress=False)
    meta = json.loads((tmp_path / "b" / META).read_text())
    assert meta["cache"] is None and "secret" not in (tmp_path / "b" / META).read_text()
    assert len(_lines(tmp_path / "b" / MANIFEST)) == 1


def test_a_key_that_does_not_fit_a_custom_id_stops_the_export(stand_in, tmp_path, monkeypatch):
    from judgelab.judges.openai_backend import OpenAIJudge

    monkeypatch.setattr(OpenAIJudge, "key", lambda self, req: "no spaces allowed")
    with pytest.raises(RuntimeError, match=r"^call key 'no spaces allowed' does not fit a batch custom_id$"):
        export_batches(tmp_path / "b", {JUDGE: [_sha(_requests()[0])]}, stand_in, ENTRIES, "c", progress=False)


def test_nothing_to_export_writes_an_empty_manifest_and_says_so(tmp_path, capsys):
    batch = tmp_path / "b"
    table = export_batches(batch, {JUDGE: [], SIM: []}, tmp_path / "absent.sqlite", ENTRIES, "c.sqlite")
    assert table.empty and list(table.columns) == ["judge", "backend", "requests", "openai_files",
                                                    "anthropic_files", "note"]
    assert (batch / MANIFEST).read_text() == "" and not (tmp_path / "absent.sqlite").exists()
    assert json.loads((batch / META).read_text())["judges"] == {}
    assert capsys.readouterr().err == f"judgelab plan: batch files of 0 calls written to {batch}\n"
    assert format_export(table, batch) == f"batch files: none written to {batch} (no call of this run is left to ask)\n"


def test_a_planned_call_missing_from_the_stand_in_cache_is_a_bug_not_a_file(stand_in, tmp_path):
    with pytest.raises(RuntimeError, match=r"^1 planned calls have no request in the plan's cache"):
        export_batches(tmp_path / "b", {JUDGE: [_sha(_requests()[0]), "0" * 64]}, stand_in, ENTRIES, "c",
                       progress=False)


def test_the_progress_line_counts_the_exported_calls(stand_in, tmp_path, capsys):
    shas = [_sha(r) for r in _requests()]
    table = export_batches(tmp_path / "b", {JUDGE: shas[:2], OTHER: shas}, stand_in, ENTRIES, "c")
    assert capsys.readouterr().err == f"judgelab plan: batch files of 5 calls written to {tmp_path / 'b'}\n"
    text = format_export(table, tmp_path / "b")
    b = tmp_path / "b"
    assert text == "\n".join([f"batch files in {b}:", table.to_string(index=False),
                              f"submit {b}/openai/*.jsonl (OpenAI Batch API, endpoint /v1/chat/completions) or "
                              f"{b}/anthropic/*.jsonl (Anthropic Message Batches: each file's lines are its "
                              f"requests), save the output files in {b}/results/, then: judgelab batch-import {b}"]
                             ) + "\n"


def test_a_folder_with_anything_in_it_or_a_file_is_refused(tmp_path):
    check_batch_dir(tmp_path / "new")
    check_batch_dir(tmp_path)  # empty
    (tmp_path / "x").write_text("mine")
    for path in (tmp_path, tmp_path / "x"):
        with pytest.raises(InputError, match="exists and is not an empty folder"):
            check_batch_dir(path)
    with pytest.raises(InputError):
        export_batches(tmp_path, {}, tmp_path / "p.sqlite", {}, "c", progress=False)
    assert [p.name for p in tmp_path.iterdir()] == ["x"]


def test_the_api_key_variable_holds_a_placeholder_only_while_the_judge_is_built(monkeypatch):
    var = "JUDGELAB_TEST_BATCH_KEY"
    monkeypatch.delenv(var, raising=False)
    with _placeholder_key(var):
        assert os.environ[var]
    assert var not in os.environ
    monkeypatch.setenv(var, "real")
    with _placeholder_key(var):
        assert os.environ[var] == "real"
    assert os.environ[var] == "real"
    with _placeholder_key(None):
        pass
    monkeypatch.delenv(var)
    with pytest.raises(KeyError), _placeholder_key(var):
        raise KeyError("x")
    assert var not in os.environ
    # a judge whose key variable is unset is built all the same, and leaves it unset
    judge = batch_judge({**ENTRY, "options": {**ENTRY["options"], "api_key_env": var}})
    assert judge.name == JUDGE and var not in os.environ


def test_a_payload_gives_back_its_request():
    for req in _requests():
        again = request_from_payload(req.payload())
        assert again.payload() == req.payload() and again == JudgeRequest(
            messages=req.messages, kind=req.kind, fmt=req.fmt, score_ids=req.score_ids, params=req.params,
            task=req.task, json_mode=req.json_mode)
    bare = {"messages": [{"role": "user", "content": "q"}], "kind": "score", "fmt": "result", "score_ids": "letter"}
    got = request_from_payload(bare)
    assert (got.params, got.task, got.json_mode) == ({}, None, False) and got.kind.value == "score"
    assert got.payload() == {**bare, "params": {}}


def test_anthropic_params_of_a_body_with_developer_messages_and_stop_lists():
    body = {"model": "m", "messages": [{"role": "developer", "content": "One."}, {"role": "system", "content": 2},
                                       {"role": "user", "content": "q"}],
            "stop": ["a", "b"], "temperature": None, "top_k": 0, "max_completion_tokens": 5}
    assert anthropic_params(body) == {"model": "m", "max_tokens": 5, "system": "One.\n\n2",
                                      "messages": [{"role": "user", "content": "q"}], "top_k": 0,
                                      "stop_sequences": ["a", "b"]}
    assert anthropic_params({"model": "m", "messages": [{"role": "user", "content": "q"}], "stop": ""}) == {
        "model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "q"}]}


def test_a_file_is_split_exactly_at_the_byte_limit(tmp_path):
    from judgelab.batch.export import _Parts

    parts = _Parts(tmp_path / "x" / "y", "j", max_lines=100, max_bytes=18)  # two 9-byte lines fill a file exactly
    for i in range(4):
        parts.write(f'{{"n": {i}}}')
    parts.close()
    parts.close()  # closing again is harmless (the export closes every file in a finally)
    assert [len(p.read_text().splitlines()) for p in parts.files] == [2, 2]
    assert [p.stat().st_size for p in parts.files] == [18, 18]
    tight = _Parts(tmp_path / "t", "j", max_lines=100, max_bytes=17)  # one byte short of two lines
    for i in range(2):
        tight.write(f'{{"n": {i}}}')
    tight.close()
    assert [p.stat().st_size for p in tight.files] == [9, 9]


def test_a_broken_entry_is_named_in_the_error():
    from judgelab.config import ConfigError

    with pytest.raises(ConfigError, match=rf"^judge {JUDGE}: missing key\(s\)"):
        batch_judge({"name": JUDGE, "backend": "openai"})
