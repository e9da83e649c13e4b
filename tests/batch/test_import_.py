"""``judgelab.batch.import_`` on small in-memory inputs: one export of six calls (two judges,
written by :func:`export_batches` from a hand-made stand-in cache, no plan) is imported from
hand-written output files of both providers; the end to end run is in ``test_batch_files.py``."""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

import pytest

from judgelab.batch import MANIFEST, META, RESULTS_DIR
from judgelab.batch.export import export_batches, request_from_payload
from judgelab.batch.import_ import (
    ANTHROPIC,
    OPENAI,
    _anthropic_answer,
    _line_format,
    _openai_answer,
    _openai_error,
    add_command,
    cmd_batch_import,
    import_batches,
    read_export,
    result_files,
)
from judgelab.cache import CallCache
from judgelab.io import InputError
from judgelab.records import JudgeRequest, Message
from tests.batch.test_batch_files import (
    ENTRY,
    JUDGE,
    _anthropic_line,
    _completion,
    _documented,
    _openai_line,
    _write,
)
from tests.batch.test_export import ENTRIES, OTHER, _requests, _sha

REQ = JudgeRequest(messages=[Message("user", "Hello, world!")])  # 13 characters: 3 tokens by the rule of thumb


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> tuple[Path, list[str]]:
    """An export of the three requests for two judges: (batch dir, keys in manifest order)."""
    import judgelab.batch.export  # noqa: F401

    root = tmp_path_factory.mktemp("export")
    from judgelab.cache import CachedCall

    with CallCache(root / "plan.sqlite") as cache:
        cache.put_many((CachedCall(f"{i:064x}", "s", "simulated", "s", "pairwise", "A", None, 1, 1, 0.0, 0.0, None),
                        r.payload()) for i, r in enumerate(_requests()))
    shas = [_sha(r) for r in _requests()]
    batch = root / "batch"
    export_batches(batch, {JUDGE: shas, OTHER: shas}, root / "plan.sqlite", ENTRIES, root / "calls.sqlite",
                   progress=False)
    keys = [json.loads(x)["custom_id"] for x in (batch / MANIFEST).read_text().splitlines()]
    return batch, keys


def _judge_of(batch: Path) -> dict[str, str]:
    return {m["custom_id"]: m["judge"] for m in map(json.loads, (batch / MANIFEST).read_text().splitlines())}


def _failures(path: Path) -> list[tuple]:
    with CallCache(path) as cache:
        return cache._conn.execute("SELECT key, judge, backend, model, error FROM failures ORDER BY key").fetchall()


def test_answers_are_stored_once_and_failures_recorded_unless_answered(export, tmp_path):
    batch, keys = export
    judge_of = _judge_of(batch)
    k = sorted(keys, key=lambda key: (judge_of[key] != JUDGE, keys.index(key)))  # JUDGE's three, then OTHER's
    err = copy.deepcopy(_documented("openai_batch_errors.jsonl")[0])
    no_usage = _completion("C")
    no_usage.pop("usage")
    openai_file = _write(tmp_path / "a.jsonl", [
        _openai_line(k[0], _completion('{"verdict": "B"}'), 0), "", {**err, "custom_id": k[1]},
        {**err, "custom_id": k[5], "error": "gone"}, _openai_line(k[0], _completion("later, not kept"), 1),
        _openai_line(k[2], no_usage, 2)])
    errored, expired = _documented("anthropic_batch_errored.jsonl")
    answer_without_usage = _anthropic_line(k[1], "A", 7, 2, "claude")  # answered here: its error above is no failure
    answer_without_usage["result"]["message"].pop("usage")
    anthropic_file = _write(tmp_path / "b.jsonl", [
        answer_without_usage,
        _anthropic_line(k[3], "B", 30, 5, "claude"), {**errored, "custom_id": k[4]}, {**expired, "custom_id": k[5]},
        {**expired, "custom_id": k[2]}])
    cache_path = tmp_path / "calls.sqlite"
    summary = import_batches(batch, files=[openai_file, str(anthropic_file)], cache=str(cache_path))
    assert (summary.files, summary.lines, summary.answers, summary.stored, summary.failures) == (2, 10, 4, 4, 2)
    assert summary.by_judge == {JUDGE: {"answers": 3, "failures": 0}, OTHER: {"answers": 1, "failures": 2}}
    # every request's prompt has 23 characters: 5 tokens by the rule of thumb
    assert {len(request_from_payload(json.loads(x)["request"]).prompt_text())
            for x in (batch / MANIFEST).read_text().splitlines()} == {23}
    with CallCache(cache_path) as cache:
        assert len(cache) == 4
        first, second, third, fourth = (cache.get(x) for x in (k[0], k[1], k[3], k[2]))
        assert json.loads(json.dumps(cache.request(k[3]))) == json.loads((batch / MANIFEST).read_text().splitlines()[
            keys.index(k[3])])["request"]
    assert (first.raw_text, first.judge, first.backend, first.model, first.kind) == (
        '{"verdict": "B"}', JUDGE, "openai", ENTRY["model"], "pairwise")
    assert (first.tokens_in, first.tokens_out, first.finish_reason) == (22, 2, "stop")
    assert first.cost_usd == pytest.approx((22 * 0.002 + 2 * 0.008) / 1000 * 0.5)
    # no usage: the tokens by the rule of thumb (characters / 4) of the call's own request and answer
    assert (second.raw_text, second.tokens_in, second.tokens_out, second.finish_reason) == ("A", 5, 0, "end_turn")
    assert (fourth.raw_text, fourth.tokens_in, fourth.tokens_out) == ("C", 5, 0)
    assert (third.judge, third.model, third.raw_text) == (OTHER, "other-model", "B")
    assert third.cost_usd == pytest.approx((30 * 0.002 + 5 * 0.008) / 1000 * 0.5)
    assert _failures(cache_path) == sorted([
        (k[4], OTHER, "openai", "other-model", "errored: invalid_request_error: <string>"),
        (k[5], OTHER, "openai", "other-model", "batch error: gone")])  # the first failure of a call is kept
    again = import_batches(batch, files=[openai_file], cache=str(cache_path))
    assert (again.answers, again.stored) == (2, 0)  # there already


def test_the_results_folder_is_read_by_default_into_the_recorded_cache(export, tmp_path, capsys):
    batch, keys = export
    mine = tmp_path / "batch"
    import shutil

    shutil.copytree(batch, mine)
    meta = json.loads((mine / META).read_text())
    assert meta["cache"] == str(batch.parent / "calls.sqlite")
    meta["cache"] = str(tmp_path / "recorded.sqlite")
    (mine / META).write_text(json.dumps(meta))
    _write(mine / RESULTS_DIR / "2.jsonl", [_anthropic_line(keys[1], "B", 3, 1, "c")])
    _write(mine / RESULTS_DIR / "1.jsonl", [_anthropic_line(keys[0], "A", 3, 1, "c")])
    (mine / RESULTS_DIR / "notes.txt").write_text("not an output file")
    assert result_files(mine) == [mine / RESULTS_DIR / "1.jsonl", mine / RESULTS_DIR / "2.jsonl"]
    assert result_files(mine, ["x.jsonl"]) == [Path("x.jsonl")]
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers())
    args = parser.parse_args(["batch-import", str(mine)])
    assert (args.files, args.cache) == ([], None)
    assert args.fn(args) == 0
    judge_of = _judge_of(mine)
    by = {n: sum(judge_of[x] == n for x in keys[:2]) for n in (JUDGE, OTHER)}
    assert capsys.readouterr().out == (
        "2 files, 2 lines: 2 answers (2 new in the cache, 0 there already), 0 failures recorded (asked again by "
        "the next run)\n" + "".join(f"  {n}: {c} answers, 0 failures\n" for n, c in sorted(by.items()) if c))
    with CallCache(tmp_path / "recorded.sqlite") as cache:
        assert sorted(c.raw_text for c in cache.iter_calls()) == ["A", "B"]
    other = tmp_path / "other.sqlite"
    args = parser.parse_args(["batch-import", str(mine), str(mine / RESULTS_DIR / "1.jsonl"), "--cache", str(other)])
    assert cmd_batch_import(args) == 0
    assert capsys.readouterr().out.startswith("1 files, 1 lines: 1 answers (1 new in the cache, 0 there already)")
    with CallCache(other) as cache:
        assert [c.raw_text for c in cache.iter_calls()] == ["A"]


@pytest.mark.parametrize("fault", ["not-json", "foreign", "input-line", "unknown-id", "mixed", "no-choices",
                                   "bad-type", "no-message", "no-body", "edited"])
def test_a_faulty_line_names_its_file_and_line_and_nothing_is_imported(fault, export, tmp_path):
    batch, keys = export
    good = _write(tmp_path / "good.jsonl", [_openai_line(keys[0], _completion("B"), 0)])
    ok = _anthropic_line(keys[1], "B", 3, 1, "claude")
    broken = copy.deepcopy(ok)
    lines: list = [ok]
    if fault == "not-json":
        lines.append('{"custom_id": "x", "result": {')
    elif fault == "foreign":
        lines.append({"question": "2+2", "answer": 4})
    elif fault == "input-line":
        lines.append({"custom_id": keys[2], "params": {}, "result": {}})
    elif fault == "unknown-id":
        lines.append({**ok, "custom_id": "y" * 100})
    elif fault == "mixed":
        lines.append(_openai_line(keys[2], _completion("A"), 9))
    elif fault == "no-choices":
        lines = [_openai_line(keys[2], {"id": "x"}, 9)]
    elif fault == "no-body":
        lines = [_openai_line(keys[2], {}, 9)]
        lines[0]["response"]["body"] = "text"
    elif fault == "bad-type":
        broken["result"]["type"] = "finished"
        lines.append(broken)
    elif fault == "no-message":
        broken["result"]["message"]["content"] = "text"
        lines.append(broken)
    else:  # the manifest's request of this key changed: the key is no longer its request's
        edited = tmp_path / "edited"
        import shutil

        shutil.copytree(batch, edited)
        rows = (edited / MANIFEST).read_text().splitlines()
        row = json.loads(rows[1])
        row["request"]["fmt"] = "letter"
        rows[1] = json.dumps(row)
        (edited / MANIFEST).write_text("\n".join(rows) + "\n")
        batch = edited
    bad = _write(tmp_path / "bad.jsonl", lines)
    cache = tmp_path / "calls.sqlite"
    with pytest.raises(InputError) as exc:
        import_batches(batch, files=[good, bad], cache=str(cache))
    lineno = 1 if fault in ("no-choices", "no-body", "edited") else 2
    what = {"not-json": "not JSON (", "foreign": "not a line of a batch output file (OpenAI: id, custom_id, response, "
                                              "error; Anthropic: custom_id, result)",
            "input-line": "not a line of a batch output file",
            "unknown-id": f"custom_id {'y' * 80!r} is no call this export wrote ({batch / MANIFEST})",
            "mixed": "an OpenAI line in a file of Anthropic lines",
            "no-choices": "not an OpenAI batch output line (invalid response: no choices",
            "no-body": "not an OpenAI batch output line (no response.body (a chat completion) and no error)",
            "bad-type": "not an Anthropic batch output line (result.type 'finished' is none of succeeded, errored, "
                        "canceled, expired)",
            "no-message": "not an Anthropic batch output line (a succeeded result without a message",
            "edited": f"custom_id {keys[1]!r} is not the key of its manifest request for judge "}[fault]
    message = str(exc.value)
    assert message.startswith(f"{bad}:{lineno}: {what}") and message.endswith("; nothing was imported")
    assert not cache.exists()


def test_a_folder_that_is_no_export_is_refused_with_the_reason(export, tmp_path):
    batch, keys = export
    mine = tmp_path / "b"
    import shutil

    shutil.copytree(batch, mine)
    meta_text = (mine / META).read_text()
    manifest_text = (mine / MANIFEST).read_text()
    cases = [
        ("{not json", manifest_text, rf"^{mine / META}: not JSON \("),
        ("[]", manifest_text, rf"^{mine / META}: not a judgelab batch export \(format 'judgelab-batch/1' expected\)$"),
        (json.dumps({"format": "judgelab-batch/2"}), manifest_text, "not a judgelab batch export"),
        (meta_text, manifest_text + "{}\n", rf"^{mine / MANIFEST}:7: not a line judgelab wrote \(KeyError: "),
        (meta_text, "[1]\n", rf"^{mine / MANIFEST}:1: not a line judgelab wrote \(TypeError: "),
        (meta_text, manifest_text + "x\n", rf"^{mine / MANIFEST}:7: not a line judgelab wrote \(JSONDecodeError: "),
    ]
    for meta, manifest, match in cases:
        (mine / META).write_text(meta)
        (mine / MANIFEST).write_text(manifest)
        with pytest.raises(InputError, match=match):
            import_batches(mine, files=[tmp_path / "none.jsonl"], cache=str(tmp_path / "c.sqlite"))
    (mine / MANIFEST).write_text(manifest_text)
    meta = json.loads(meta_text)
    (mine / META).write_text(json.dumps({**meta, "cache": None}))
    with pytest.raises(InputError, match=rf"^{mine / META}: no call cache recorded .*; name it with --cache$"):
        import_batches(mine)
    (mine / META).write_text(json.dumps({**meta, "cache": ""}))
    with pytest.raises(InputError, match="no call cache recorded"):
        import_batches(mine)
    (mine / META).write_text(json.dumps({**meta, "judges": {JUDGE: meta["judges"][JUDGE]}}))
    with pytest.raises(InputError, match=rf"^{mine / RESULTS_DIR}: no \*\.jsonl output files; save .* \(or name "
                                         rf"them after {mine}\)$"):
        import_batches(mine)
    judge_of = _judge_of(mine)
    other_key = next(x for x in keys if judge_of[x] == OTHER)
    _write(mine / RESULTS_DIR / "r.jsonl", [_anthropic_line(other_key, "A", 1, 1, "c")])
    with pytest.raises(InputError, match=rf"^{mine / META}: no entry for judge '{OTHER}' of the manifest$"):
        import_batches(mine, cache=str(tmp_path / "c.sqlite"))
    (mine / META).write_text(json.dumps({k: v for k, v in meta.items() if k != "judges"}))
    with pytest.raises(InputError, match=rf"^{mine / META}: no entry for judge '{OTHER}' of the manifest$"):
        import_batches(mine, cache=str(tmp_path / "c.sqlite"))
    (mine / RESULTS_DIR / "dir.jsonl").mkdir()
    with pytest.raises(InputError, match=rf"^{mine / RESULTS_DIR / 'dir.jsonl'}: cannot read \(Is a directory\)$"):
        import_batches(mine, files=[mine / RESULTS_DIR / "dir.jsonl"], cache=str(tmp_path / "c.sqlite"))
    assert not (tmp_path / "c.sqlite").exists()
    shutil.rmtree(mine)
    mine.mkdir()
    with pytest.raises(InputError, match=rf"^{mine}: no batch.json here"):
        read_export(mine)


def test_each_line_is_told_apart_by_its_own_fields():
    assert _line_format({"custom_id": "k", "result": {}}) == ANTHROPIC
    assert _line_format({"custom_id": "k", "response": None, "error": {}}) == OPENAI
    assert _line_format({"custom_id": "k", "response": {}}) == OPENAI
    assert _line_format({"custom_id": "k", "error": "x"}) == OPENAI
    for line in ([], {"result": {}}, {"custom_id": 3, "result": {}}, {"custom_id": "k"},
                 {"custom_id": "k", "result": "x"}, {"custom_id": "k", "result": {}, "response": {}},
                 {"custom_id": "k", "result": {}, "error": None}, {"custom_id": "k", "result": {}, "params": {}},
                 {"custom_id": "k", "response": {}, "method": "POST"}, {"custom_id": "k", "error": 1, "body": {}},
                 {"custom_id": "k", "response": {}, "params": {}}):
        assert _line_format(line) is None, line


def test_an_openai_failure_says_what_the_line_says():
    assert _openai_error({"error": {}}) == "batch error unknown (no message)"
    assert _openai_error({"error": {"code": "x"}}) == "batch error x (no message)"
    assert _openai_error({"error": {"code": "x", "message": "gone"}}) == "batch error x: gone"
    assert _openai_error({"error": "boom", "response": {"status_code": 200}}) == "batch error: boom"
    assert _openai_error({"response": {"status_code": 500, "body": "bad gateway"}}) == "HTTP 500: bad gateway"
    assert _openai_error({"response": {"status_code": 400, "body": {"message": "m"}}}) == "HTTP 400: m"
    assert _openai_error({"response": {"status_code": 400, "body": {"error": "e"}}}) == "HTTP 400: e"
    assert _openai_error({"response": {"status_code": 503, "body": None}}) == "HTTP 503: no message"
    assert _openai_error({"response": {"status_code": 503}}) == "HTTP 503: no message"
    assert _openai_error({"response": {"status_code": 200, "body": {"error": "e"}}}) is None
    assert _openai_error({"response": None, "error": None}) is None


def test_an_openai_answer_is_read_by_the_judges_own_parser():
    from judgelab.batch.export import batch_judge

    judge = batch_judge(ENTRY)
    line = _openai_line("k", _completion("B"), 0)
    got = _openai_answer(line, judge, REQ)
    assert got == judge.parse_completion(json.dumps(line["response"]["body"]), REQ) and got.text == "B"
    line["response"]["body"].pop("choices")  # a parser's ValueError other than an error body is raised
    with pytest.raises(ValueError, match=r"^invalid response: no choices"):
        _openai_answer(line, judge, REQ)
    for body in (None, "text"):
        with pytest.raises(ValueError, match=r"no response\.body"):
            _openai_answer({"response": {"status_code": 200, "body": body}}, judge, REQ)


def test_an_anthropic_result_reads_its_blocks_usage_and_failures():
    def line(**message):
        return {"custom_id": "k", "result": {"type": "succeeded", "message": message}}

    got = _anthropic_answer(line(content=[{"type": "text", "text": "Ab"}, "junk", {"type": "thinking", "thinking": " "},
                                          {"type": "text", "text": "cdefghijklm"}, {"type": "tool_use", "text": "no"}],
                                 stop_reason=None), REQ)
    # 13 characters of prompt and of text: 3 tokens each by the rule of thumb (characters // 4)
    assert (got.text, got.tokens_in, got.tokens_out, got.finish_reason, got.reasoning) == ("Abcdefghijklm", 3, 3, None,
                                                                                          None)
    assert isinstance(got.tokens_in, int) and isinstance(got.tokens_out, int)
    assert got.latency_s == 0.0 and got.logprobs is None and got.error is None
    got = _anthropic_answer(line(content=[{"type": "text"}], usage={"input_tokens": 5, "output_tokens": "7"},
                                 stop_reason="max_tokens"), REQ)
    assert (got.text, got.tokens_in, got.tokens_out, got.finish_reason) == ("", 5, 0, "max_tokens")
    got = _anthropic_answer(line(content=[{"type": "thinking", "thinking": "wh"}, {"type": "thinking"},
                                          {"type": "thinking", "thinking": "y"}], usage="x"), REQ)
    assert (got.text, got.reasoning, got.tokens_in) == ("", "why", 3)
    for bad in ({"content": "x"}, None):
        with pytest.raises(ValueError, match="without a message"):
            _anthropic_answer({"result": {"type": "succeeded", "message": bad}}, REQ)
    assert _anthropic_answer({"result": {"type": "canceled"}}, REQ) == "batch request canceled"
    assert _anthropic_answer({"result": {"type": "errored", "error": "down"}}, REQ) == "errored: down"
    assert _anthropic_answer({"result": {"type": "errored", "error": {"message": "m"}}}, REQ) == "errored: error: m"
    assert _anthropic_answer({"result": {"type": "errored", "error": {"error": {"type": "t"}}}}, REQ) == "errored: t:"
    with pytest.raises(ValueError, match=r"^result.type None is none of succeeded, errored, canceled, expired$"):
        _anthropic_answer({"result": {}}, REQ)


def test_the_help_names_the_defaults_the_command_uses():
    """The command's help is its only documentation on the command line: the folder it reads by
    default and the file the default cache comes from are the ones :func:`import_batches` uses."""
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    add_command(sub)
    assert [a.help for a in sub._choices_actions] == [
        "store the providers' batch output files (OpenAI Batch API, Anthropic Message Batches) in the call cache; "
        "see judgelab plan --batch-dir"]
    helps = {a.dest: a.help for a in sub.choices["batch-import"]._actions}
    assert helps["batch_dir"] == "the folder judgelab plan --batch-dir wrote"
    assert helps["files"] == f"output files to read (default: every *.jsonl in BATCH_DIR/{RESULTS_DIR}/)"
    assert helps["cache"] == f"call cache to fill (default: the one the plan counted against, in BATCH_DIR/{META})"
