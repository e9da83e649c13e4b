"""Provider batch files (``judgelab plan --batch-dir``, ``judgelab batch-import``).

End to end on the real CPU judge: the plan of a small config exports its calls; each exported
OpenAI body is POSTed as it stands to a real ``transformers serve`` (SmolLM2); its answers are
written in both providers' documented output formats (``tests/fixtures/batch/README.md`` says
where each format comes from) and imported; then a plan counts 0 calls to ask, the workflow's
own rule (Snakemake) runs without asking anything, and its verdicts equal a live run's.  Without
the server: the documented example lines parse as documented, errors become recorded failures
(asked again), a malformed or foreign file is one line naming file and line with nothing
imported, and the batch price is the list price less the configured discount.
"""

from __future__ import annotations

import copy
import json
import shutil
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
import yaml

from judgelab.batch import ANTHROPIC_DIR, MANIFEST, META, OPENAI_DIR, RESULTS_DIR
from judgelab.batch.export import anthropic_params, batch_judge, request_from_payload
from judgelab.batch.import_ import _anthropic_answer, _openai_answer, import_batches
from judgelab.cache import CallCache
from judgelab.config import ConfigError, default_config_paths, load_config
from judgelab.judges.local_server import SMOLLM2_NAME
from judgelab.judges.runner import run_requests
from judgelab.records import JudgeRequest, Message
from judgelab.workflow.plan import ALL_STUDIES, plan
from tests.conftest import REPO
from tests.helpers.realllm import server_missing, smollm2_launch_judge, smollm2_server  # noqa: F401 (fixtures)

FIXTURES = REPO / "tests" / "fixtures" / "batch"
PARTS = ("Snakefile", "rules", "config", "workflow_scripts", "report", "envs", "judgelab", "data", "pyproject.toml")
JUDGE = "smollm2-batch"
TARGET = f"results/orders/verdicts/mine/{JUDGE}.parquet"
#: The real CPU judge as a config entry: served by its own ``transformers serve`` (a port-free
#: identity, so the keys do not depend on where the server listens), greedy, 8-token verdicts.
ENTRY = {"name": JUDGE, "backend": "openai", "model": SMOLLM2_NAME, "family": "smollm2",
         "sampling": {"temperature": 0.0, "max_tokens": 8, "seed": 0}, "output_limits": {"verdict": 8},
         "price": {"input_per_1k": 0.002, "output_per_1k": 0.008, "batch_discount": 0.5}, "concurrency": 2,
         "options": {"api_key_env": None, "timeout_s": 300, "max_retries": 1, "launch": "transformers-serve"}}
N_PAIRS = 3  # x 2 orders: 6 calls


def _documented(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


def _project(root: Path) -> tuple[Path, Path]:
    wd = root / "proj"
    wd.mkdir()
    for part in PARTS:
        (wd / part).symlink_to(REPO / part)
    rows = [{"pair_id": str(i), "prompt": f"Which number is larger, {i} or {i + 7}?", "response_a": f"{i}",
             "response_b": f"{i + 7} is larger.", "expected_verdict": "B"} for i in range(N_PAIRS)]
    (root / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    extra = root / "mine.yaml"
    extra.write_text(yaml.safe_dump({"orders": {"datasets": {"mine": {"loader": "pairs",
                                                                       "source": str(root / "pairs.jsonl")}}},
                                     "judges": [ENTRY]}, sort_keys=False))
    return wd, extra


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path, Path, pd.DataFrame]:
    """One plan with ``--batch-dir`` of the small config: (project, config file, batch dir, plan)."""
    root = tmp_path_factory.mktemp("batch")
    wd, extra = _project(root)
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("JUDGELAB_PROGRESS", "0")
    try:
        table = plan([extra], targets=[TARGET], directory=str(wd), progress=False, batch_dir=root / "batch")
    finally:
        mp.undo()
    return wd, extra, root / "batch", table


def _copy(exported, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A fresh copy of the export and of the project (so each test imports into its own cache)."""
    batch = exported[2]
    new_wd, new_extra = _project(tmp_path)
    new_batch = tmp_path / "batch"
    shutil.copytree(batch, new_batch)
    meta = json.loads((new_batch / META).read_text())
    meta["cache"] = str(new_wd / "results" / "cache" / "calls.sqlite")
    (new_batch / META).write_text(json.dumps(meta))
    return new_wd, new_extra, new_batch


def _manifest(batch: Path) -> list[dict]:
    return [json.loads(line) for line in (batch / MANIFEST).read_text().splitlines()]


def _openai_line(key: str, completion: dict, n: int) -> dict:
    """The documented OpenAI output line with this call's key and completion."""
    line = copy.deepcopy(_documented("openai_batch_output.jsonl")[0])
    line.update(id=f"batch_req_{n}", custom_id=key)
    line["response"].update(request_id=f"req_{n}", body=completion)
    return line


def _anthropic_line(key: str, text: str, tokens_in: int, tokens_out: int, model: str) -> dict:
    """The documented Anthropic results line with this call's key and answer."""
    line = copy.deepcopy(_documented("anthropic_batch_results.jsonl")[0])
    line["custom_id"] = key
    msg = line["result"]["message"]
    msg.update(model=model, content=[{"type": "text", "text": text}],
               usage={"input_tokens": tokens_in, "output_tokens": tokens_out})
    return line


def _completion(text: str) -> dict:
    body = copy.deepcopy(_documented("openai_batch_output.jsonl")[0]["response"]["body"])
    body["choices"][0]["message"]["content"] = text
    return body


def _write(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def _row(table: pd.DataFrame) -> pd.Series:
    return table[table["study"] == ALL_STUDIES].set_index("judge").loc[JUDGE]


# -- the documented formats --------------------------------------------------------------------------

def test_the_documented_output_lines_read_as_documented():
    """The providers' own example lines: text, tokens and stop reason as the docs show them; the
    documented error lines (OpenAI's expired, Anthropic's errored and expired) are failures."""
    judge = batch_judge(ENTRY)
    req = JudgeRequest(messages=[Message("user", "Hello world!")])
    first, second = (_openai_answer(line, judge, req) for line in _documented("openai_batch_output.jsonl"))
    assert (first.text, first.tokens_in, first.tokens_out, first.finish_reason) == ("Hello.", 22, 2, "stop")
    assert (second.text, second.tokens_in, second.tokens_out) == ("Hello! How can I assist you today?", 20, 9)
    expired = [_openai_answer(line, judge, req) for line in _documented("openai_batch_errors.jsonl")]
    assert expired == ["batch error batch_expired: This request could not be executed before the completion "
                       "window expired."] * 2
    a = _anthropic_answer(_documented("anthropic_batch_results.jsonl")[0], req)
    assert a.text.startswith("Hello again! It's nice to see you.") and (a.tokens_in, a.tokens_out) == (11, 36)
    assert a.finish_reason == "end_turn" and a.reasoning is None
    errored, expired_a = (_anthropic_answer(line, req) for line in _documented("anthropic_batch_errored.jsonl"))
    assert errored == "errored: invalid_request_error: <string>" and expired_a == "batch request expired"
    # a non-200 status with an error body is a failure, not an answer
    line = copy.deepcopy(_documented("openai_batch_output.jsonl")[0])
    line["response"].update(status_code=429, body={"error": {"message": "Rate limit reached"}})
    assert _openai_answer(line, judge, req) == "HTTP 429: Rate limit reached"
    # a server's error said with status 200 is a failure too (the live backend records it so)
    line["response"].update(status_code=200, body={"error": {"message": "overloaded"}})
    assert _openai_answer(line, judge, req) == "error in response body: overloaded"


def test_thinking_blocks_become_the_reasoning_as_a_live_reasoning_field_does():
    line = copy.deepcopy(_documented("anthropic_batch_results.jsonl")[0])
    line["result"]["message"]["content"] = [{"type": "thinking", "thinking": "A is shorter.", "signature": "x"},
                                            {"type": "text", "text": '{"verdict": "B"}'}]
    got = _anthropic_answer(line, JudgeRequest(messages=[Message("user", "q")]))
    assert (got.text, got.reasoning) == ('{"verdict": "B"}', "A is shorter.")


def test_anthropic_params_move_the_system_prompt_and_drop_what_the_messages_api_lacks():
    body = {"model": "claude-x", "messages": [{"role": "system", "content": "Be fair."},
                                              {"role": "user", "content": "Which?"}],
            "temperature": 0.0, "max_tokens": 16, "seed": 3, "stop": "\n\n", "top_p": 0.9,
            "response_format": {"type": "json_object"}, "frequency_penalty": 0.1}
    assert anthropic_params(body) == {"model": "claude-x", "max_tokens": 16, "system": "Be fair.",
                                      "messages": [{"role": "user", "content": "Which?"}], "temperature": 0.0,
                                      "top_p": 0.9, "stop_sequences": ["\n\n"]}
    assert anthropic_params({**body, "max_tokens": None, "max_completion_tokens": 64})["max_tokens"] == 64


def test_only_judges_whose_backend_sends_chat_bodies_are_exported():
    from judgelab.batch.export import has_batch_job

    assert has_batch_job(ENTRY)
    for backend in ("simulated", "vllm", "transformers", "replay", "no-such-backend"):
        assert not has_batch_job({**ENTRY, "backend": backend}), backend


def test_the_wire_body_merges_extra_body_as_the_sdk_sends_it():
    judge = batch_judge({**ENTRY, "options": {**ENTRY["options"], "extra_body": {"top_k": 5}}})
    req = JudgeRequest(messages=[Message("system", "Be fair."), Message("user", "A or B?")])
    body = judge.wire_body(req)
    assert body == {**{k: v for k, v in judge._body(req).items() if k != "extra_body"}, "top_k": 5}
    assert "extra_body" not in body and anthropic_params(body)["top_k"] == 5


def test_a_judges_file_is_split_where_it_would_pass_a_providers_limit(tmp_path):
    from judgelab.batch.export import _Parts

    by_lines = _Parts(tmp_path / "a", "j", max_lines=2, max_bytes=10**6)
    for i in range(5):
        by_lines.write(f'{{"n": {i}}}')
    by_lines.close()
    assert [p.name for p in by_lines.files] == ["j-001.jsonl", "j-002.jsonl", "j-003.jsonl"]
    assert [len(p.read_text().splitlines()) for p in by_lines.files] == [2, 2, 1]
    by_bytes = _Parts(tmp_path / "b", "j", max_lines=100, max_bytes=20)  # each line is 9 bytes with its newline
    for i in range(5):
        by_bytes.write(f'{{"n": {i}}}')
    by_bytes.close()
    assert [len(p.read_text().splitlines()) for p in by_bytes.files] == [2, 2, 1]
    assert all(p.stat().st_size <= 20 for p in by_bytes.files)
    assert "".join(p.read_text() for p in by_bytes.files) == "".join(f'{{"n": {i}}}\n' for i in range(5))


# -- the export -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_export_holds_each_planned_call_once_with_the_live_body_and_key(exported):
    _, extra, batch, table = exported
    row = _row(table)
    assert (row["calls"], row["to_call"]) == (2 * N_PAIRS, 2 * N_PAIRS)
    assert row["est_usd"] > 0 and row["est_batch_usd"] == pytest.approx(row["est_usd"] * 0.5, abs=1e-4)
    assert row["max_batch_usd"] == pytest.approx(row["max_usd"] * 0.5, abs=1e-4)
    manifest = _manifest(batch)
    openai_lines = [json.loads(x) for x in (batch / OPENAI_DIR / f"{JUDGE}-001.jsonl").read_text().splitlines()]
    anthropic_lines = [json.loads(x) for x in (batch / ANTHROPIC_DIR / f"{JUDGE}-001.jsonl").read_text().splitlines()]
    assert len(manifest) == len(openai_lines) == len(anthropic_lines) == 2 * N_PAIRS
    keys = [m["custom_id"] for m in manifest]
    assert len(set(keys)) == len(keys)
    assert [x["custom_id"] for x in openai_lines] == keys == [x["custom_id"] for x in anthropic_lines]
    # the key and the body a live call of the configured judge would use (built from the merged config)
    cfg = load_config(*default_config_paths(), extra)
    from judgelab.config import fill_output_limits

    fill_output_limits(cfg)
    live = batch_judge(next(j for j in cfg["judges"] if j["name"] == JUDGE))
    for m, o, a in zip(manifest, openai_lines, anthropic_lines, strict=True):
        req = request_from_payload(m["request"])
        assert req.payload() == m["request"] and live.key(req) == m["custom_id"]
        assert o["method"] == "POST" and o["url"] == "/v1/chat/completions" and o["body"] == live._body(req)
        assert o["body"]["model"] == SMOLLM2_NAME and o["body"]["max_tokens"] == 8
        assert a["params"]["model"] == SMOLLM2_NAME and a["params"]["max_tokens"] == 8
        assert a["params"]["messages"] == [mm for mm in o["body"]["messages"] if mm["role"] != "system"]
        assert "seed" not in a["params"] and len(a["custom_id"]) == 64
    assert (batch / RESULTS_DIR).is_dir() and not any((batch / RESULTS_DIR).iterdir())


@pytest.mark.slow
def test_the_export_refuses_a_folder_with_files_in_it(exported, tmp_path, monkeypatch, capsys):
    from judgelab.cli import main

    wd, extra, _, _ = exported
    mine = tmp_path / "batch"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc = main(["plan", "--quiet", "--directory", str(wd), "--configfile", str(extra), "--batch-dir", str(mine), TARGET])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"judgelab: error: {mine}: exists and is not an empty")
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"] and (mine / "notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_the_cli_prints_the_plan_with_batch_prices_and_the_next_steps(exported, tmp_path, monkeypatch, capsys):
    from judgelab.cli import main

    wd, extra, _, _ = exported
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out_dir = tmp_path / "new" / "batch"
    rc = main(["plan", "--quiet", "--directory", str(wd), "--configfile", str(extra), "--batch-dir", str(out_dir),
               TARGET])
    out = capsys.readouterr().out
    assert rc == 0 and "est_batch_usd" in out.splitlines()[0] and "price.batch_discount" in out
    assert f"batch files in {out_dir}:" in out and f"judgelab batch-import {out_dir}" in out
    assert len((out_dir / OPENAI_DIR / f"{JUDGE}-001.jsonl").read_text().splitlines()) == 2 * N_PAIRS


# -- import: errors and malformed files ---------------------------------------------------------------

@pytest.mark.slow
def test_errored_lines_are_recorded_failures_and_asked_again(exported, tmp_path, monkeypatch):
    """Answers of both formats stored, an OpenAI error line and an Anthropic errored line recorded as
    failures (never answers): the next plan asks exactly those two again."""
    wd, extra, batch = _copy(exported, tmp_path)
    keys = [m["custom_id"] for m in _manifest(batch)]
    _write(batch / RESULTS_DIR / "batch_abc_output.jsonl",
           [_openai_line(k, _completion('{"verdict": "B"}'), i) for i, k in enumerate(keys[:2])])
    err = copy.deepcopy(_documented("openai_batch_errors.jsonl")[0])
    err["custom_id"] = keys[2]
    _write(batch / RESULTS_DIR / "batch_abc_error.jsonl", [err])
    errored = copy.deepcopy(_documented("anthropic_batch_errored.jsonl")[0])
    errored["custom_id"] = keys[3]
    answered_elsewhere = copy.deepcopy(_documented("anthropic_batch_errored.jsonl")[1])  # expired here,
    answered_elsewhere["custom_id"] = keys[0]  # answered in the OpenAI output file: not a failure
    _write(batch / RESULTS_DIR / "msgbatch_results.jsonl",
           [_anthropic_line(k, '{"verdict": "A"}', 30, 5, "claude") for k in keys[4:]] + [errored])
    _write(batch / RESULTS_DIR / "msgbatch_other.jsonl", [answered_elsewhere])
    summary = import_batches(batch)
    assert (summary.files, summary.answers, summary.stored, summary.failures) == (4, 4, 4, 2)
    assert summary.by_judge == {JUDGE: {"answers": 4, "failures": 2}}
    with CallCache(wd / "results" / "cache" / "calls.sqlite") as cache:
        assert len(cache) == 4 and keys[2] not in cache and keys[3] not in cache
        failed = dict(cache._conn.execute("SELECT key, error FROM failures").fetchall())
        stored = cache.get(keys[4])
    assert failed == {keys[2]: "batch error batch_expired: This request could not be executed before the "
                               "completion window expired.",
                      keys[3]: "errored: invalid_request_error: <string>"}
    assert stored.raw_text == '{"verdict": "A"}' and (stored.tokens_in, stored.tokens_out) == (30, 5)
    assert stored.cost_usd == pytest.approx((30 * 0.002 + 5 * 0.008) / 1000 * 0.5)  # the batch price
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    row = _row(plan([extra], targets=[TARGET], directory=str(wd), progress=False, batch_dir=tmp_path / "again"))
    assert (row["cached"], row["to_call"]) == (4, 2)
    # a second export holds exactly the two failed calls: what is cached is not sent again
    assert [m["custom_id"] for m in _manifest(tmp_path / "again")] == keys[2:4]


def _one_line_error(batch: Path, capsys) -> str:
    from judgelab.cli import main

    rc = main(["batch-import", str(batch)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert "Traceback" not in err[0]
    return err[0]


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["not-json", "foreign", "input-file", "unknown-id", "mixed", "no-choices",
                                   "bad-type"])
def test_a_malformed_or_foreign_file_is_one_line_and_nothing_is_imported(fault, exported, tmp_path, capsys):
    wd, _, batch = _copy(exported, tmp_path)
    keys = [m["custom_id"] for m in _manifest(batch)]
    good = [_openai_line(k, _completion('{"verdict": "B"}'), i) for i, k in enumerate(keys[:3])]
    (batch / RESULTS_DIR / "a_good.jsonl").write_text("".join(json.dumps(x) + "\n" for x in good))
    bad_path = batch / RESULTS_DIR / "b_bad.jsonl"
    anthropic_ok = _anthropic_line(keys[3], "B", 3, 1, "claude")
    if fault == "not-json":
        lines = [anthropic_ok, '{"custom_id": "x", "result": {']
    elif fault == "foreign":
        lines = [{"question": "2+2", "answer": 4}]
    elif fault == "input-file":  # the export's own input file saved among the results
        lines = (batch / OPENAI_DIR / f"{JUDGE}-001.jsonl").read_text().splitlines()
    elif fault == "unknown-id":  # the documented example file as it stands: ids no export wrote
        lines = [anthropic_ok, *_documented("anthropic_batch_results.jsonl")]
    elif fault == "mixed":
        lines = [anthropic_ok, _openai_line(keys[4], _completion("A"), 9)]
    elif fault == "no-choices":
        broken = _openai_line(keys[4], _completion("A"), 9)
        broken["response"]["body"].pop("choices")
        lines = [broken]
    else:
        broken = copy.deepcopy(anthropic_ok)
        broken["result"]["type"] = "finished"
        lines = [broken]
    _write(bad_path, lines)
    line = _one_line_error(batch, capsys)
    lineno = {"not-json": 2, "unknown-id": 2, "mixed": 2}.get(fault, 1)
    assert line.startswith(f"judgelab: error: {bad_path}:{lineno}: ") and line.endswith("nothing was imported")
    what = {"not-json": "not JSON", "foreign": "not a line of a batch output file",
            "input-file": "not a line of a batch output file", "unknown-id": "custom_id 'my-second-request' is no call",
            "mixed": "an OpenAI line in a file of Anthropic lines", "no-choices": "invalid response: no choices",
            "bad-type": "result.type 'finished'"}[fault]
    assert what in line
    cache = wd / "results" / "cache" / "calls.sqlite"
    assert not cache.exists()  # nothing written: the good file's answers neither


@pytest.mark.slow
def test_an_edited_manifest_is_refused(exported, tmp_path, capsys):
    """A manifest request that is not the call its key names (edited by hand) cannot be imported:
    storing it would put an answer under a key whose request it does not answer."""
    _, _, batch = _copy(exported, tmp_path)
    manifest = _manifest(batch)
    manifest[0]["request"]["messages"][-1]["content"] += " (edited)"
    (batch / MANIFEST).write_text("".join(json.dumps(m) + "\n" for m in manifest))
    _write(batch / RESULTS_DIR / "out.jsonl", [_openai_line(manifest[0]["custom_id"], _completion("B"), 1)])
    line = _one_line_error(batch, capsys)
    assert "is not the key of its manifest request" in line and f"{batch / RESULTS_DIR / 'out.jsonl'}:1:" in line


def test_a_folder_no_export_wrote_is_one_line(tmp_path, capsys):
    (tmp_path / RESULTS_DIR).mkdir()
    line = _one_line_error(tmp_path, capsys)
    assert line == f"judgelab: error: {tmp_path}: no {META} here: not a folder that judgelab plan --batch-dir wrote"


# -- the batch price in config ------------------------------------------------------------------------

@pytest.mark.parametrize("price, message", [({"batch_discount": 1.5}, "batch_discount"),
                                            ({"batch_discount": -0.1}, "batch_discount"),
                                            ({"batch_price": 0.5}, "batch_price")])
def test_the_batch_discount_is_a_share_and_unknown_price_keys_are_errors(price, message, tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({"judges": [{**ENTRY, "price": {"input_per_1k": 1.0, "batch_discount": 0.5}}]}))
    spec_price = load_config(*default_config_paths(), good)["judges"][0]["price"]
    assert spec_price["batch_discount"] == 0.5
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"judges": [{**ENTRY, "price": {"input_per_1k": 1.0, **price}}]}))
    with pytest.raises(ConfigError, match=message):
        load_config(*default_config_paths(), bad)


def test_the_batch_cost_is_the_list_cost_less_the_discount():
    from judgelab.config import JudgeSpec

    spec = JudgeSpec.from_dict({**ENTRY, "price": {"input_per_1k": 3.0, "output_per_1k": 15.0, "batch_discount": 0.5}})
    assert spec.price.cost(1000, 2000) == pytest.approx(33.0)
    assert spec.price.batch_cost(1000, 2000) == pytest.approx(16.5)
    plain = JudgeSpec.from_dict({**ENTRY, "price": {"input_per_1k": 3.0}})
    assert plain.price.batch_cost(1000, 0) == pytest.approx(3.0)  # no discount configured: the list price
    for bad in (2, -0.25, "half"):
        with pytest.raises(ConfigError, match=rf"judges: price.batch_discount must be a number in \[0, 1\], got "
                                              rf"{bad!r}"):
            JudgeSpec.from_dict({**ENTRY, "price": {"batch_discount": bad}})
    assert JudgeSpec.from_dict({**ENTRY, "price": {"batch_discount": 1}}).price.batch_cost(10**6, 10**6) == 0.0


# -- end to end on the real local server -------------------------------------------------------------

def _post(base_url: str, body: dict) -> dict:
    req = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer EMPTY"})
    with urllib.request.urlopen(req, timeout=300) as resp:
        return json.loads(resp.read())


@pytest.mark.slow
def test_exported_bodies_answered_by_the_real_server_import_to_a_run_that_asks_nothing(
        exported, tmp_path, monkeypatch, smollm2_server):  # noqa: F811 (fixture)
    """Export -> each OpenAI body POSTed as it stands to ``transformers serve`` -> its answers
    written as OpenAI output lines (half) and Anthropic results lines (half) -> import.  Then a
    plan counts 0 calls to ask; the workflow's own query rule runs and asks nothing (the judge's
    server is never started); and its verdicts equal those of the same judge asked live."""
    import subprocess
    import sys

    from judgelab.io import read_table

    if server_missing():
        pytest.skip(server_missing())
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("JUDGELAB_PROGRESS", "0")
    wd, extra, batch = _copy(exported, tmp_path)
    lines = [json.loads(x) for x in (batch / OPENAI_DIR / f"{JUDGE}-001.jsonl").read_text().splitlines()]
    completions = {x["custom_id"]: _post(smollm2_server.base_url, x["body"]) for x in lines}
    keys = list(completions)
    half = len(keys) // 2
    _write(batch / RESULTS_DIR / "batch_output.jsonl",
           [_openai_line(k, completions[k], i) for i, k in enumerate(keys[:half])])
    anthropic_lines = []
    for k in keys[half:]:
        c = completions[k]
        anthropic_lines.append(_anthropic_line(k, c["choices"][0]["message"]["content"], c["usage"]["prompt_tokens"],
                                               c["usage"]["completion_tokens"], c["model"]))
    _write(batch / RESULTS_DIR / "msgbatch_results.jsonl", anthropic_lines)
    from judgelab.cli import main

    assert main(["batch-import", str(batch)]) == 0
    row = _row(plan([extra], targets=[TARGET], directory=str(wd), progress=False))
    assert (row["calls"], row["cached"], row["to_call"]) == (len(keys), len(keys), 0)

    # the live run: the same judge (the config's entry) asks the same server, into a cache of its own
    meta = json.loads((batch / META).read_text())
    live = batch_judge(meta["judges"][JUDGE])
    live._launcher.server = smollm2_server  # the running server stands in for the one it would launch
    requests = [request_from_payload(m["request"]) for m in _manifest(batch)]
    try:
        fresh = run_requests(live, requests, CallCache(tmp_path / "live.sqlite"), max_error_rate=0.0)
        with CallCache(wd / "results" / "cache" / "calls.sqlite") as imported_cache:
            again = run_requests(live, requests, imported_cache, max_error_rate=0.0)
    finally:
        live._launcher.server = None  # the fixture's server is not this judge's to stop
        live.close()
    assert not any(r.cached for r in fresh) and all(r.cached for r in again)  # the import asked nothing
    assert all(r.raw_text for r in fresh)  # real answers, each with text
    assert [r.key for r in fresh] == [r.key for r in again] == [m["custom_id"] for m in _manifest(batch)]
    assert [(r.value, r.status) for r in again] == [(r.value, r.status) for r in fresh]
    assert [r.raw_text for r in again] == [r.raw_text for r in fresh]  # greedy: the same words

    # the workflow's own rule after the import: asks nothing, writes the live run's verdicts
    snakemake = Path(sys.executable).with_name("snakemake")
    proc = subprocess.run([str(snakemake), "--cores", "1", "--configfile", str(extra), "--", TARGET],
                          cwd=wd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = read_table(wd / TARGET)
    with CallCache(wd / "results" / "cache" / "calls.sqlite") as cache:
        runs = cache._conn.execute("SELECT requested, hits, new_calls FROM runs WHERE judge = ?", (JUDGE,)).fetchall()
    assert runs and all(new == 0 and hits == req for req, hits, new in runs)
    by_key = {r.key: (r.value or "", r.raw_text) for r in fresh}
    assert len(table) == len(keys) and sorted(table["key"]) == sorted(by_key)
    assert {k: (v, t) for k, v, t in zip(table["key"], table["verdict_shown"], table["raw_text"], strict=True)} == by_key
