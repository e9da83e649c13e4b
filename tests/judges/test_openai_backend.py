"""The ``openai`` backend against a real HTTP server on 127.0.0.1.

The server speaks the chat-completions API and is scripted by the prompt: a user
message ``id=<name> plan=<a,b,...>`` makes attempt *n* for ``<name>`` behave as
``plan[n]`` (the last entry repeats).  Behaviours: ``ok``, ``429`` (Retry-After: 0),
``ra1`` (429 with Retry-After: 1), ``500``, ``503``, ``400``/``401``/``403``/``404``,
``401echo`` (echoes the bearer token in its message, as real APIs half do),
``timeout`` (answers after the client gave up), ``garbage`` (200, not JSON),
``nochoices`` (200, JSON without choices), ``nousage``, ``refusal``, ``empty``,
``logprobs``, ``slow`` (answers after 0.15 s).  ``force_ok`` makes every attempt ``ok``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import sqlite3
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("openai")

from judgelab.cache import CallCache
from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges import make_judge
from judgelab.judges.base import BackendUnavailable
from judgelab.judges.openai_backend import OpenAIJudge
from judgelab.judges.runner import TooManyErrors, run_requests
from judgelab.records import CallStatus, JudgeRequest, Message, OutputKind

KEY = "sk-secret-XYZ123"
KEY_ENV = "JL_TEST_KEY"
USAGE = {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
TOP = [{"token": "A", "logprob": -0.1}, {"token": "B", "logprob": -2.5}, {"token": "tie", "logprob": -4.0}]


class FakeAPI:
    """State shared by the handler threads; every counter is guarded by ``lock``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.attempts: Counter[str] = Counter()
        self.auth: list[str | None] = []
        self.bodies: list[dict[str, Any]] = []
        self.peers: list[tuple[str, int]] = []  # the client's address per request: its TCP connection
        self.inflight = 0
        self.max_inflight = 0
        self.force_ok = False
        self.stop = threading.Event()
        self.base_url = ""


def _answer_text(pid: str) -> str:
    return json.dumps({"reasoning": f"id={pid}", "verdict": "A"})


def _completion(model: str, content: str | None, *, usage: bool = True, logprobs: Any = None,
                refusal: str | None = None, finish: str = "stop") -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        msg["refusal"] = refusal
    out: dict[str, Any] = {
        "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": logprobs}],
    }
    if usage:
        out["usage"] = dict(USAGE)
    return out


def _handler(api: FakeAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: avoid 40 ms delayed-ACK stalls

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def _send(self, code: int, payload: Any, *, ctype: str = "application/json",
                  headers: dict[str, str] | None = None) -> None:
            data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
            self._send(code, {"error": {"message": message, "type": "test_error", "code": str(code)}}, headers=headers)

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path != "/v1/chat/completions":
                self._error(404, f"no route {self.path}")
                return
            body = json.loads(raw)
            prompt = body["messages"][-1]["content"]
            pid = re.search(r"id=(\S+)", prompt).group(1)
            plan = re.search(r"plan=(\S+)", prompt).group(1).split(",")
            with api.lock:
                attempt = api.attempts[pid]
                api.attempts[pid] += 1
                api.auth.append(self.headers.get("Authorization"))
                api.bodies.append(body)
                api.peers.append(self.client_address)
                api.inflight += 1
                api.max_inflight = max(api.max_inflight, api.inflight)
                action = "ok" if api.force_ok else plan[min(attempt, len(plan) - 1)]
            try:
                self._act(action, body, pid)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            finally:
                with api.lock:
                    api.inflight -= 1

        def _act(self, action: str, body: dict[str, Any], pid: str) -> None:
            model = body["model"]
            if action == "ok":
                self._send(200, _completion(model, _answer_text(pid)))
            elif action == "slow":
                api.stop.wait(0.15)
                self._send(200, _completion(model, _answer_text(pid)))
            elif action == "429":
                self._error(429, "rate limited", {"Retry-After": "0"})
            elif action == "ra1":
                self._error(429, "rate limited", {"Retry-After": "1"})
            elif action in ("400", "401", "403", "404", "500", "503"):
                self._error(int(action), f"scripted {action}")
            elif action == "401echo":
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                self._error(401, f"Incorrect API key provided: {token}. Find your key at ...")
            elif action == "timeout":
                api.stop.wait(3.0)  # the client gave up long ago; finalizer cuts this short
                self.close_connection = True
                self._send(200, _completion(model, _answer_text(pid)))
            elif action == "garbage":
                self._send(200, "<html><body>502 Bad Gateway</body></html>", ctype="text/html")
            elif action == "nochoices":
                self._send(200, {"id": "x", "object": "chat.completion", "model": model})
            elif action == "nousage":
                self._send(200, _completion(model, _answer_text(pid), usage=False))
            elif action == "refusal":
                self._send(200, _completion(model, None, refusal="I'm sorry, I can't help with that."))
            elif action == "empty":
                self._send(200, _completion(model, ""))
            elif action in ("reasoning_yes", "reasoning_no"):  # a reasoning parser's separate field
                out = _completion(model, " Yes" if action.endswith("yes") else " No")
                out["choices"][0]["message"]["reasoning_content"] = (
                    f'id={pid}: the evaluator followed the cue. Draft: {{"verdict": "A"}}')
                self._send(200, out)
            elif action == "logprobs":
                lp = {"content": [{"token": "A", "logprob": -0.1, "top_logprobs": TOP},
                                  {"token": "!", "logprob": -0.5, "top_logprobs": []}]}
                self._send(200, _completion(model, "A!", logprobs=lp))
            else:
                self._error(500, f"unknown scripted action {action}")

    return Handler


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("JUDGELAB_PROGRESS", "0")


@pytest.fixture
def api():
    fake = FakeAPI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield fake
    finally:
        fake.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def make(api: FakeAPI, monkeypatch: pytest.MonkeyPatch, *, concurrency: int = 4,
         sampling: dict[str, Any] | None = None, price: dict[str, float] | None = None,
         **options: Any) -> OpenAIJudge:
    monkeypatch.setenv(KEY_ENV, KEY)
    opts = {"base_url": api.base_url, "api_key_env": KEY_ENV, "timeout_s": 0.5, "max_retries": 4,
            "backoff_s": 0.01, "max_backoff_s": 0.05, **options}
    spec = JudgeSpec.from_dict({
        "name": "fake", "backend": "openai", "model": "fake-model", "family": "test",
        "sampling": {"temperature": 0.0, "max_tokens": 64, "seed": 7} if sampling is None else sampling,
        "price": price or {"input_per_1k": 2.0, "output_per_1k": 10.0},
        "concurrency": concurrency, "options": opts,
    })
    judge = make_judge(spec)
    assert isinstance(judge, OpenAIJudge)
    return judge


def req(pid: str, plan: str = "ok", *, json_mode: bool = False, task: str | None = None,
        **params: Any) -> JudgeRequest:
    return JudgeRequest(
        messages=[Message("system", "You are a fair judge."),
                  Message("user", f"id={pid} plan={plan} Which response is better?")],
        kind=OutputKind.PAIRWISE, fmt="json", params=params, json_mode=json_mode, task=task,
    )


def failure_keys(cache_path) -> list[str]:
    with sqlite3.connect(cache_path) as conn:
        return [r[0] for r in conn.execute("SELECT key FROM failures")]


# ---------------------------------------------------------------------------------
# 1. retries


def test_transient_errors_are_retried_until_success(api, monkeypatch):
    judge = make(api, monkeypatch)
    plans = {"r429": "429,429,ok", "r500": "500,ok", "r503": "503,503,ok", "rgarb": "garbage,nochoices,ok",
             "rtime": "timeout,ok", "rok": "ok"}
    answers = judge.answer([req(pid, plan) for pid, plan in plans.items()])
    for (pid, _), ans in zip(plans.items(), answers, strict=True):
        assert ans.error is None, (pid, ans.error)
        assert json.loads(ans.text)["reasoning"] == f"id={pid}"  # same order as asked
        assert ans.finish_reason == "stop"
        assert ans.latency_s > 0
    assert dict(api.attempts) == {"r429": 3, "r500": 2, "r503": 3, "rgarb": 3, "rtime": 2, "rok": 1}


def test_retry_after_is_honoured_and_capped(api, monkeypatch):
    # the waits the backend sleeps are recorded (not wall time: a loaded machine must not fail it)
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay, *a, **k):
        slept.append(delay)
        await real_sleep(min(delay, 0.01))

    monkeypatch.setattr("judgelab.judges.openai_backend.asyncio.sleep", recording_sleep)
    judge = make(api, monkeypatch, max_backoff_s=5.0)
    [ans] = judge.answer([req("wait", "ra1,ok")])
    assert ans.error is None and slept == [pytest.approx(1.0)]  # the server's Retry-After: 1
    slept.clear()
    capped = make(api, monkeypatch, max_backoff_s=0.05)
    [ans] = capped.answer([req("capped", "ra1,ok")])
    assert ans.error is None and slept == [pytest.approx(0.05)]  # capped at max_backoff_s
    assert api.attempts["wait"] == 2 and api.attempts["capped"] == 2


def test_exponential_backoff_is_jittered_and_capped(api, monkeypatch):
    """No Retry-After (500s): waits double from ``backoff_s`` with jitter in [base/2, base], and no
    wait exceeds ``max_backoff_s`` however many retries."""
    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay, *a, **k):
        slept.append(delay)
        await real_sleep(min(delay, 0.01))

    monkeypatch.setattr("judgelab.judges.openai_backend.asyncio.sleep", recording_sleep)
    judge = make(api, monkeypatch, backoff_s=0.02, max_backoff_s=0.05, max_retries=5)
    [ans] = judge.answer([req("grow", "500,500,500,500,ok")])
    assert ans.error is None and len(slept) == 4
    bases = [min(0.05, 0.02 * 2 ** k) for k in range(4)]  # 0.02, 0.04, 0.05, 0.05
    assert all(b / 2 <= w <= b for w, b in zip(slept, bases, strict=True)), slept
    slept.clear()
    huge = make(api, monkeypatch, backoff_s=60.0, max_backoff_s=0.05, max_retries=3)
    [ans] = huge.answer([req("huge", "500,500,ok")])
    assert ans.error is None and len(slept) == 2 and max(slept) <= 0.05


def test_retry_after_ms_and_http_dates_are_read(monkeypatch):
    """``retry-after-ms`` (OpenAI's, milliseconds) wins over ``Retry-After``; ``Retry-After`` is
    seconds or an HTTP date (RFC 9110 10.2.3), relative to now; what is neither is ignored."""
    import email.utils

    import httpx

    from judgelab.judges import openai_backend as ob

    now = 1_700_000_000.0
    monkeypatch.setattr(ob.time, "time", lambda: now)
    assert ob._retry_after(httpx.Headers({"retry-after-ms": "1500"})) == pytest.approx(1.5)
    assert ob._retry_after(httpx.Headers({"retry-after-ms": "250", "Retry-After": "9"})) == pytest.approx(0.25)
    assert ob._retry_after(httpx.Headers({"Retry-After": "7"})) == 7.0
    date = email.utils.formatdate(now + 12, usegmt=True)  # "Tue, 14 Nov 2023 22:13:32 GMT"
    assert ob._retry_after(httpx.Headers({"Retry-After": date})) == pytest.approx(12.0)
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert ob._retry_after(httpx.Headers({"Retry-After": past})) == 0.0
    assert ob._retry_after(httpx.Headers({"retry-after-ms": "soon", "Retry-After": "2"})) == 2.0
    assert ob._retry_after(httpx.Headers({"Retry-After": "tomorrow"})) is None
    assert ob._retry_after(httpx.Headers({})) is None and ob._retry_after(None) is None


def test_persistent_errors_give_up_after_max_retries(api, monkeypatch):
    judge = make(api, monkeypatch, max_retries=2)
    answers = judge.answer([req("e500", "500"), req("etime", "timeout"), req("egarb", "garbage")])
    assert [a.text for a in answers] == [None, None, None]
    assert "HTTP 500" in answers[0].error and "3 attempts" in answers[0].error
    assert "timeout" in answers[1].error
    assert "not JSON" in answers[2].error
    assert api.attempts == Counter({"e500": 3, "etime": 3, "egarb": 3})


# ---------------------------------------------------------------------------------
# 2./3. failures are not cached, retried next run; successes are never lost


def test_failed_request_is_logged_not_cached_and_retried_next_run(api, monkeypatch, tmp_path):
    judge = make(api, monkeypatch, max_retries=2)
    reqs = [req("good1"), req("bad", "500"), req("good2", "429,ok")]
    keys = [judge.key(r) for r in reqs]
    with CallCache(tmp_path / "cache.db") as cache:
        first = run_requests(judge, reqs, cache, max_error_rate=None, progress=False)
        assert [r.status for r in first] == [CallStatus.OK, CallStatus.ERROR, CallStatus.OK]
        assert first[1].error and "HTTP 500" in first[1].error
        assert keys[0] in cache and keys[2] in cache and keys[1] not in cache
        assert len(cache) == 2
        assert failure_keys(tmp_path / "cache.db") == [keys[1]]
        assert api.attempts == Counter({"good1": 1, "bad": 3, "good2": 2})

        api.force_ok = True  # the server recovers
        second = run_requests(judge, reqs, cache, max_error_rate=None, progress=False)
        assert [r.status for r in second] == [CallStatus.OK] * 3
        assert [r.cached for r in second] == [True, False, True]
        assert api.attempts == Counter({"good1": 1, "bad": 4, "good2": 2})  # only the failure asked again
        assert len(cache) == 3

        third = run_requests(judge, reqs, cache, progress=False)
        assert all(r.cached for r in third)
        assert sum(api.attempts.values()) == 7


def test_successes_are_stored_even_when_the_run_fails(api, monkeypatch, tmp_path):
    judge = make(api, monkeypatch, concurrency=1, max_retries=1)  # batch_size 8: three batches
    reqs = [req(f"q{i}", "500" if i % 4 == 1 else ("503,ok" if i % 4 == 2 else "ok")) for i in range(20)]
    ok_keys = {judge.key(r) for i, r in enumerate(reqs) if i % 4 != 1}
    bad_keys = {judge.key(r) for i, r in enumerate(reqs) if i % 4 == 1}

    with CallCache(tmp_path / "tolerant.db") as cache:
        out = run_requests(judge, reqs, cache, max_error_rate=None, progress=False)
        assert {r.key for r in out if r.status is CallStatus.ERROR} == bad_keys
        stored = cache.get_many([r.key for r in out])
        assert set(stored) == ok_keys
        for r in out:
            if r.key in ok_keys:
                assert stored[r.key].raw_text == r.raw_text
    assert set(failure_keys(tmp_path / "tolerant.db")) == bad_keys

    with CallCache(tmp_path / "strict.db") as cache:  # default max_error_rate=0.0
        with pytest.raises(TooManyErrors, match="5 of 20"):
            run_requests(judge, reqs, cache, progress=False)
        assert set(cache.get_many(list(ok_keys | bad_keys))) == ok_keys
    assert set(failure_keys(tmp_path / "strict.db")) == bad_keys


# ---------------------------------------------------------------------------------
# 4. the key is sent, and never written or logged


def test_api_key_is_sent_but_never_written_or_logged(api, monkeypatch, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    for name in ("openai", "httpx", "httpx2", "httpcore", "judgelab"):
        caplog.set_level(logging.DEBUG, logger=name)
    judge = make(api, monkeypatch, max_retries=1)
    reqs = [req("k1"), req("k2", "500"), req("k3", "401echo"), req("k4", "429,ok")]
    cache_path = tmp_path / "cache.db"
    cache = CallCache(cache_path)
    out = run_requests(judge, reqs, cache, max_error_rate=None, progress=False)
    assert [r.status for r in out] == [CallStatus.OK, CallStatus.ERROR, CallStatus.ERROR, CallStatus.OK]
    (tmp_path / "rows.json").write_text(json.dumps([r.row() for r in out], default=str))
    (tmp_path / "identity.json").write_text(json.dumps(judge.identity()))

    assert api.auth and all(h == f"Bearer {KEY}" for h in api.auth)
    assert "HTTP 401" in out[2].error and KEY not in out[2].error  # the server echoed it; we masked it
    assert KEY not in repr(judge) and KEY not in json.dumps(judge.identity())

    def leaks() -> list[str]:
        files = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert files
        return [str(p) for p in files if KEY.encode() in p.read_bytes()]

    assert (tmp_path / "cache.db-wal").exists()  # WAL still holds the fresh pages
    assert leaks() == []
    cache.close()
    assert leaks() == []
    assert caplog.records  # debug logging did capture something
    for rec in caplog.records:
        text = rec.getMessage() + repr(rec.args) + (rec.exc_text or "")
        assert KEY not in text, rec.name
    assert KEY not in caplog.text


# ---------------------------------------------------------------------------------
# 5. configuration errors, no key, non-retryable statuses


def test_missing_key_env_var_is_a_config_error(monkeypatch):
    monkeypatch.delenv("JL_NOT_SET_ANYWHERE", raising=False)
    spec = JudgeSpec.from_dict({"name": "gpt4o", "backend": "openai", "model": "gpt-4o",
                                "options": {"api_key_env": "JL_NOT_SET_ANYWHERE"}})
    with pytest.raises(ConfigError, match=r"judge 'gpt4o'.*JL_NOT_SET_ANYWHERE"):
        make_judge(spec)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_judge(JudgeSpec.from_dict({"name": "d", "backend": "openai", "model": "m"}))


def test_unknown_option_is_a_config_error(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    spec = JudgeSpec.from_dict({"name": "t", "backend": "openai", "model": "m",
                                "options": {"api_key_env": KEY_ENV, "base_ulr": "http://x"}})
    with pytest.raises(ConfigError, match="base_ulr"):
        make_judge(spec)


def test_no_key_for_a_local_server_sends_empty(api, monkeypatch):
    judge = make(api, monkeypatch, api_key_env=None)
    [ans] = judge.answer([req("local")])
    assert ans.error is None
    assert api.auth == ["Bearer EMPTY"]


@pytest.mark.parametrize("status", ["400", "401", "403", "404"])
def test_client_errors_are_not_retried(api, monkeypatch, status):
    judge = make(api, monkeypatch, max_retries=4)
    [ans] = judge.answer([req("c", f"{status},ok")])
    assert ans.text is None and ans.error.startswith(f"HTTP {status}")
    assert api.attempts["c"] == 1


def test_connection_refused_is_an_error_not_an_exception(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = FakeAPI()
    dead.base_url = f"http://127.0.0.1:{port}/v1"
    judge = make(dead, monkeypatch, max_retries=1)
    answers = judge.answer([req("x"), req("y")])
    assert all(a.text is None and "connection error" in a.error for a in answers)


def test_missing_openai_package_says_how_to_install(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setitem(sys.modules, "openai", None)
    spec = JudgeSpec.from_dict({"name": "t", "backend": "openai", "model": "m", "options": {"api_key_env": KEY_ENV}})
    with pytest.raises(BackendUnavailable, match=re.escape("pip install 'judgelab[api]'")):
        make_judge(spec)


# ---------------------------------------------------------------------------------
# 6. usage, cost, concurrency, what is sent


def test_usage_tokens_and_cost_are_recorded(api, monkeypatch, tmp_path):
    judge = make(api, monkeypatch, price={"input_per_1k": 2.0, "output_per_1k": 10.0})
    reqs = [req("u1"), req("u2", "nousage")]
    with CallCache(tmp_path / "cache.db") as cache:
        out = run_requests(judge, reqs, cache, progress=False)
        assert (out[0].tokens_in, out[0].tokens_out) == (100, 50)
        assert out[0].cost_usd == pytest.approx(100 / 1000 * 2.0 + 50 / 1000 * 10.0)
        stored = cache.get(out[0].key)
        assert (stored.tokens_in, stored.tokens_out) == (100, 50)
        assert stored.cost_usd == pytest.approx(0.7)
        assert out[1].tokens_in == len(reqs[1].prompt_text()) // 4
        assert out[1].tokens_out == len(out[1].raw_text) // 4
        assert cache.stats()[0]["cost_usd"] == pytest.approx(0.7 + out[1].cost_usd)


def test_concurrency_is_respected_and_order_kept(api, monkeypatch):
    judge = make(api, monkeypatch, concurrency=3)
    assert judge.batch_size == 12
    reqs = [req(f"s{i}", "slow") for i in range(12)]
    answers = judge.answer(reqs)
    assert [json.loads(a.text)["reasoning"] for a in answers] == [f"id=s{i}" for i in range(12)]
    assert 2 <= api.max_inflight <= 3


def test_request_body_carries_sampling_and_options(api, monkeypatch):
    judge = make(api, monkeypatch, response_format_json=True, extra_body={"top_k": 5},
                 sampling={"temperature": 0.0, "max_tokens": 64, "seed": 7})
    judge.answer([req("p1", json_mode=True, temperature=0.7, sample=2)])
    [body] = api.bodies
    assert body["model"] == "fake-model"
    assert body["messages"][0] == {"role": "system", "content": "You are a fair judge."}
    assert body["temperature"] == 0.7 and body["max_tokens"] == 64 and body["seed"] == 7
    assert body["response_format"] == {"type": "json_object"}
    assert body["top_k"] == 5
    for absent in ("top_p", "max_completion_tokens", "sample", "logprobs", "api_key"):
        assert absent not in body
    assert judge.identity()["base_url"] == api.base_url

    api.bodies.clear()
    reasoning = make(api, monkeypatch, sampling={"max_completion_tokens": 256})
    reasoning.answer([req("p2")])
    [body] = api.bodies
    assert body["max_completion_tokens"] == 256
    assert not {"temperature", "max_tokens", "seed", "response_format"} & set(body)


def test_refusal_and_empty_answers_are_answers(api, monkeypatch):
    judge = make(api, monkeypatch)
    refusal, empty = judge.answer([req("ref", "refusal"), req("emp", "empty")])
    assert refusal.error is None and refusal.text == "I'm sorry, I can't help with that."
    assert empty.error is None and empty.text == "" and empty.finish_reason == "stop"


def test_answer_works_inside_a_running_event_loop(api, monkeypatch):
    judge = make(api, monkeypatch)

    async def inside() -> list:
        return judge.answer([req("loop")])

    [ans] = asyncio.run(inside())
    assert ans.error is None


def test_one_client_loop_and_connection_serve_every_batch_until_close(api, monkeypatch):
    """A client per batch cost an SSL context, a loop and a connection each time (0.32 of a
    bare client at concurrency 1): every batch of a judge must reuse the same ones."""
    judge = make(api, monkeypatch, concurrency=1)
    assert judge.batch_size == 8
    judge.answer([req("c1")])
    runtime = judge._runtime
    client, thread = runtime.client, runtime.thread
    for batch in ([req("c2"), req("c3")], [req("c4", "429,ok")]):  # a retry keeps the connection too
        assert all(a.error is None for a in judge.answer(batch))
        assert judge._runtime is runtime and runtime.client is client
    assert len(api.peers) == 5 and len(set(api.peers)) == 1  # one keep-alive connection for all calls
    judge.close()
    assert judge._runtime is None and not thread.is_alive() and runtime.loop.is_closed()
    [again] = judge.answer([req("c5")])  # a closed judge opens anew when asked again
    assert again.error is None and judge._runtime.client is not client
    assert api.peers[-1] != api.peers[0]
    judge.close()


def test_a_dropped_judge_stops_its_loop_thread(api, monkeypatch):
    import gc

    judge = make(api, monkeypatch)
    judge.answer([req("d1")])
    thread = judge._runtime.thread
    del judge
    gc.collect()
    thread.join(timeout=5)
    assert not thread.is_alive()


# ---------------------------------------------------------------------------------
# 7. logprobs


def test_logprobs_top_returns_first_token_alternatives(api, monkeypatch, tmp_path):
    judge = make(api, monkeypatch, logprobs_top=3)
    assert judge.identity()["logprobs_top"] == 3
    r = JudgeRequest(messages=[Message("user", "id=lp plan=logprobs Answer A or B.")],
                     kind=OutputKind.PAIRWISE, fmt="letter")
    [ans] = judge.answer([r])
    assert ans.error is None and ans.text == "A!"
    assert ans.logprobs == {"A": -0.1, "B": -2.5, "tie": -4.0}
    assert api.bodies[-1]["logprobs"] is True and api.bodies[-1]["top_logprobs"] == 3
    with CallCache(tmp_path / "cache.db") as cache:
        [out] = run_requests(judge, [r], cache, progress=False)
        assert out.logprobs == {"A": -0.1, "B": -2.5, "tie": -4.0}
        assert cache.get(out.key).logprobs == {"A": -0.1, "B": -2.5, "tie": -4.0}
