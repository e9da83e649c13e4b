"""Backend ``openai``: any OpenAI-compatible chat-completions endpoint.

Works for api.openai.com, other providers with the same API, and a local
``vllm serve``.  Options (``spec.options``):

* ``base_url`` -- API root (``None``: OpenAI's).
* ``launch: transformers-serve`` (with ``launch_model``, ``gguf_file``, ``launch_threads``,
  ``launch_timeout_s``) -- instead of ``base_url``: the judge starts ``transformers serve``
  on 127.0.0.1 on first use and stops it on close; ``model`` is the served id
  (:class:`judgelab.judges.local_server.Launcher`).
* ``api_key_env`` -- name of the environment variable holding the key (default
  ``OPENAI_API_KEY``); ``null`` means "no key" (a local vllm server) and sends the
  placeholder ``EMPTY``.  The key itself is never written to a file, a log record,
  the judge identity or an error message.
* ``timeout_s`` (60), ``max_retries`` (5: up to 6 attempts), ``backoff_s`` (1.0,
  first backoff, doubled each retry, with jitter), ``max_backoff_s`` (30: cap on
  every wait, ``Retry-After`` included).
* ``response_format_json`` (false) -- send ``response_format={"type": "json_object"}``
  on the requests whose prompt asks for a JSON object only (``JudgeRequest.json_mode``),
  never on CoT, ``[[A]]``-style, generation or rewriting requests.
* ``logprobs_top`` (None) -- ask for ``top_logprobs`` and return the first
  generated token's alternatives as ``{token: logprob}``.
* ``extra_body`` -- dict merged into the request body (provider/vllm extras).

Sampling parameters (``temperature``, ``max_tokens``, ``max_completion_tokens``,
``top_p``, ``seed``, ``stop``, ``presence_penalty``, ``frequency_penalty``) come
from :meth:`Judge.sampling_for`; keys not given are not sent, other keys (e.g.
bookkeeping in ``request.params``) are ignored.

``max_tokens`` is the request's task limit and ``drop_params`` / ``rename_params`` of
the judge apply (:meth:`Judge.sampling_for`).  Reasoning returned beside the answer
(``message.reasoning_content`` or ``message.reasoning``) comes back in
``RawAnswer.reasoning``; the runner keeps it in the cached text as a think block.

Retries are done here, not by the SDK (its ``max_retries`` is 0): on 408/409/429,
5xx, timeouts, connection errors and bodies that are not a chat completion
(non-JSON, no ``choices``).  Other 4xx fail at once.  A request that still fails
returns ``RawAnswer(error=...)``; :meth:`OpenAIJudge.answer` never raises for a
failed call.

One ``AsyncOpenAI`` client and one event loop serve every call of a judge: the loop runs
in a daemon thread of the judge, started on the first :meth:`OpenAIJudge.answer`, and
the client is made on it then (and again only if the launched server's URL changes).
A client per batch cost a new SSL context (~23 ms), a new loop and a new connection
for every ``max(8, 4 x concurrency)`` calls -- a third of the throughput of a bare
client at concurrency 1.  :meth:`OpenAIJudge.close` closes both.  Because the loop is
the judge's own, :meth:`answer` works alike from plain code and from inside a running
event loop (a notebook).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import json
import logging
import os
import random
import re
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges import BACKENDS
from judgelab.judges.base import BackendUnavailable, Judge
from judgelab.records import JudgeRequest, RawAnswer

log = logging.getLogger(__name__)

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
NO_KEY = "EMPTY"  # what vllm and most local servers accept when no key is configured

_OPTIONS = {
    "base_url", "api_key_env", "timeout_s", "max_retries", "backoff_s", "max_backoff_s",
    "response_format_json", "logprobs_top", "extra_body",
    "prompt_template",  # read by the workflow (this judge's pairwise template)
    # launch: transformers-serve -- the judge serves its model on 127.0.0.1 itself (local_server.Launcher)
    "launch", "launch_model", "gguf_file", "launch_threads", "launch_timeout_s",
}
_SAMPLING_KEYS = (
    "temperature", "max_tokens", "max_completion_tokens", "top_p", "seed",
    "stop", "presence_penalty", "frequency_penalty",
)
_RETRY_STATUS = {408, 409, 429}
_MAX_ERROR_CHARS = 300
# Anything that looks like a credential in a server's error message is masked.
_SECRETISH = re.compile(r"(?i)\b(sk-|bearer\s+|api[_-]?key[\"':= ]+)[A-Za-z0-9_\-\.\*]{4,}")


class _Retryable(Exception):
    """One attempt failed in a way worth trying again."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _Fatal(Exception):
    """One attempt failed in a way that another attempt will not fix."""


@dataclass
class _Settings:
    base_url: str | None
    timeout_s: float
    max_retries: int
    backoff_s: float
    max_backoff_s: float
    response_format_json: bool
    logprobs_top: int | None
    extra_body: dict[str, Any] | None


@BACKENDS.register("openai")
class OpenAIJudge(Judge):
    needs_api_slot = True

    @classmethod
    def weights_in_job(cls, options):
        """A judge with ``launch`` serves its model inside the job (``transformers serve``)."""
        return bool(options.get("launch"))

    @classmethod
    def key_env(cls, options):
        """``options.api_key_env`` (default :data:`DEFAULT_KEY_ENV`; null: a server that needs no key)."""
        var = options.get("api_key_env", DEFAULT_KEY_ENV)
        return None if var is None else str(var)

    def __init__(self, spec: JudgeSpec) -> None:
        super().__init__(spec)
        try:
            import openai
        except ImportError:
            raise BackendUnavailable(
                f"judge {spec.name!r}: backend 'openai' needs the openai package: pip install 'judgelab[api]'"
            ) from None
        self._openai = openai
        self.settings = _parse_options(spec)
        opts = spec.options
        key_env = opts.get("api_key_env", DEFAULT_KEY_ENV)
        if key_env is None:
            self._api_key = NO_KEY
        else:
            value = os.environ.get(str(key_env))
            if not value:
                raise ConfigError(
                    f"judge {spec.name!r}: environment variable {key_env} is not set (options.api_key_env)"
                )
            self._api_key = value
        self.batch_size = max(8, spec.concurrency * 4)
        from judgelab.judges.local_server import Launcher

        self._launcher = Launcher.from_spec(spec)
        self._runtime: _Runtime | None = None
        self._runtime_lock = threading.Lock()

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIJudge(name={self.spec.name!r}, model={self.spec.model!r}, base_url={self.settings.base_url!r})"

    def identity_extra(self) -> dict[str, Any]:
        s = self.settings
        extra: dict[str, Any] = {"base_url": s.base_url if self._launcher is None else self._launcher.identity()}
        # Options that change the answer enter the key only when set, so turning
        # them on asks again while the default identity stays stable.
        if s.response_format_json:
            extra["response_format_json"] = True
        if s.logprobs_top is not None:
            extra["logprobs_top"] = s.logprobs_top
        if s.extra_body:
            extra["extra_body"] = s.extra_body
        return extra

    # -- entry point ----------------------------------------------------------------
    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        if not requests:
            return []
        reqs = list(requests)
        if self._launcher is not None:  # start the judge's own local server on first use
            self.settings.base_url = self._launcher.ensure()
        runtime = self._ensure_runtime()
        return runtime.run(self._answer_all(reqs))

    def close(self) -> None:
        """Close the client and stop the judge's event loop, then stop a launched server."""
        with self._runtime_lock:
            runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.close()
        if self._launcher is not None:
            self._launcher.stop()

    def _ensure_runtime(self) -> _Runtime:
        with self._runtime_lock:
            if self._runtime is None:
                self._runtime = _Runtime(f"judgelab-openai-{self.name}")
            return self._runtime

    # -- async machinery ----------------------------------------------------------------
    async def _client(self) -> Any:
        """The judge's client, made on its loop on first use (again if ``base_url`` changed)."""
        runtime = self._runtime
        assert runtime is not None
        s = self.settings
        if runtime.client is not None and runtime.client_url == s.base_url:
            return runtime.client
        if runtime.client is not None:
            await _close_quietly(runtime.client, self.name)
            runtime.client = None
        kwargs: dict[str, Any] = {"api_key": self._api_key, "timeout": s.timeout_s, "max_retries": 0}
        if s.base_url is not None:
            kwargs["base_url"] = s.base_url
        runtime.client = self._openai.AsyncOpenAI(**kwargs)
        runtime.client_url = s.base_url
        return runtime.client

    async def _answer_all(self, requests: list[JudgeRequest]) -> list[RawAnswer]:
        try:
            client = await self._client()
        except Exception as exc:  # e.g. a malformed base_url
            msg = self._scrub(f"cannot create client: {type(exc).__name__}: {exc}")
            return [RawAnswer(text=None, error=msg) for _ in requests]
        sem = asyncio.Semaphore(max(1, self.spec.concurrency))
        return list(await asyncio.gather(*(self._answer_one(client, sem, r) for r in requests)))

    async def _answer_one(self, client: Any, sem: asyncio.Semaphore, req: JudgeRequest) -> RawAnswer:
        s = self.settings
        attempts = s.max_retries + 1
        last = "no attempt made"
        try:
            body = self._body(req)
            for attempt in range(attempts):
                try:
                    async with sem:
                        return await self._attempt(client, body, req)
                except _Fatal as exc:
                    return RawAnswer(text=None, error=str(exc))
                except _Retryable as exc:
                    last = str(exc)
                    if attempt + 1 >= attempts:
                        break
                    delay = self._delay(attempt, exc.retry_after)
                    log.debug("%s: attempt %d/%d failed (%s); retrying in %.2fs",
                              self.name, attempt + 1, attempts, last, delay)
                    await asyncio.sleep(delay)
            return RawAnswer(text=None, error=f"{last} (gave up after {attempts} attempts)")
        except Exception as exc:  # a bug or an unforeseen SDK error: report, never raise
            return RawAnswer(text=None, error=self._scrub(f"unexpected {type(exc).__name__}: {exc}"[:_MAX_ERROR_CHARS]))

    def _body(self, req: JudgeRequest) -> dict[str, Any]:
        s = self.settings
        sampling = self.sampling_for(req)
        body: dict[str, Any] = {
            "model": self.spec.model,
            "messages": [{"role": m.role, "content": m.content} for m in req.messages],
        }
        for k in _SAMPLING_KEYS:
            if sampling.get(k) is not None:
                body[k] = sampling[k]
        if s.response_format_json and req.json_mode:  # only where the prompt asks for JSON only
            body["response_format"] = {"type": "json_object"}
        if s.logprobs_top is not None:
            body["logprobs"] = True
            body["top_logprobs"] = s.logprobs_top
        if s.extra_body:
            body["extra_body"] = dict(s.extra_body)
        return body

    def wire_body(self, req: JudgeRequest) -> dict[str, Any]:
        """The JSON body this judge POSTs to ``/chat/completions`` for ``req``: :meth:`_body` with
        ``extra_body`` merged in, as the SDK sends it (what a provider batch input line carries)."""
        body = self._body(req)
        extra = body.pop("extra_body", None) or {}
        return {**body, **extra}

    def parse_completion(self, text: str, req: JudgeRequest) -> RawAnswer:
        """A chat completion's JSON text (HTTP 200) read as a live answer is read; ``ValueError``
        naming what is wrong where it is no chat completion (a batch output line's body)."""
        try:
            return self._parse(text, 200, "application/json", req, 0.0)
        except _Retryable as exc:
            raise ValueError(str(exc)) from None

    async def _attempt(self, client: Any, body: dict[str, Any], req: JudgeRequest) -> RawAnswer:
        oa = self._openai
        t0 = time.perf_counter()
        try:
            raw = await client.chat.completions.with_raw_response.create(**body)
            text = raw.text
        except oa.APITimeoutError:
            raise _Retryable(f"timeout after {self.settings.timeout_s:g}s") from None
        except oa.APIConnectionError as exc:
            cause = type(exc.__cause__).__name__ if exc.__cause__ is not None else "no detail"
            raise _Retryable(f"connection error ({cause})") from None
        except oa.APIStatusError as exc:
            code = exc.status_code
            msg = f"HTTP {code}: {self._scrub(_error_message(exc))}"
            if code in _RETRY_STATUS or code >= 500:
                raise _Retryable(msg, _retry_after(exc.response.headers)) from None
            raise _Fatal(msg) from None
        latency = time.perf_counter() - t0
        return self._parse(text, raw.status_code, raw.headers.get("content-type", ""), req, latency)

    def _parse(self, text: str, status: int, ctype: str, req: JudgeRequest, latency: float) -> RawAnswer:
        try:
            data = json.loads(text)
        except (ValueError, TypeError):
            raise _Retryable(f"invalid response: not JSON (HTTP {status}, {ctype or 'no content-type'})") from None
        if not isinstance(data, dict):
            raise _Retryable("invalid response: JSON is not an object")
        if "error" in data and "choices" not in data:  # some servers say 200 with an error body
            raise _Retryable(f"error in response body: {self._scrub(_short(data['error']))}")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _Retryable("invalid response: no choices")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise _Retryable("invalid response: choice without message")
        content = message.get("content")
        if content is None:
            content = message.get("refusal") or ""
        if isinstance(content, list):  # content parts: keep their text, in order
            content = "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
        elif not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        # DeepSeek's and vLLM's reasoning parsers return the reasoning beside the answer.
        reasoning = message.get("reasoning_content")
        if reasoning is None:
            reasoning = message.get("reasoning")
        usage = data.get("usage")
        if not isinstance(usage, dict):
            usage = {}
        tokens_in = _as_int(usage.get("prompt_tokens"))
        tokens_out = _as_int(usage.get("completion_tokens"))
        if tokens_in is None:
            tokens_in = len(req.prompt_text()) // 4
        if tokens_out is None:
            tokens_out = len(content) // 4
        finish = choice.get("finish_reason")
        return RawAnswer(
            text=content,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latency_s=latency,
            logprobs=_first_token_logprobs(choice.get("logprobs")) if self.settings.logprobs_top is not None else None,
            finish_reason=None if finish is None else str(finish),
            reasoning=reasoning if isinstance(reasoning, str) and reasoning.strip() else None,
        )

    # -- helpers ---------------------------------------------------------------------------
    def _delay(self, attempt: int, retry_after: float | None) -> float:
        s = self.settings
        if retry_after is not None:
            return max(0.0, min(retry_after, s.max_backoff_s))
        base = min(s.max_backoff_s, s.backoff_s * (2**attempt))
        return random.uniform(base / 2, base)  # jitter: spread the retries of a batch

    def _scrub(self, text: str) -> str:
        if self._api_key and self._api_key != NO_KEY:
            text = text.replace(self._api_key, "***")
        return _SECRETISH.sub(lambda m: m.group(1) + "***", text)


class _Runtime:
    """An event loop in a daemon thread, and the client made on it, for one judge.

    ``run`` submits a coroutine from any thread (a notebook's running loop included)
    and waits for it.  A judge dropped without :meth:`OpenAIJudge.close` still has its
    loop stopped by a finalizer (the thread holds no reference to the judge).
    """

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.client: Any = None
        self.client_url: str | None = None
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()
        self._finalizer = weakref.finalize(self, _stop_loop, self.loop, self.thread)

    def run(self, coro: Any) -> Any:
        if threading.current_thread() is self.thread:
            raise RuntimeError("OpenAIJudge.answer called from its own event loop")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        if self.client is not None and self.thread.is_alive():
            try:
                self.run(_close_quietly(self.client, self.thread.name))
            except (RuntimeError, concurrent.futures.CancelledError):
                pass
        self.client = None
        self._finalizer()


def _stop_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    if loop.is_closed():
        return
    loop.call_soon_threadsafe(loop.stop)
    if thread is not threading.current_thread():
        thread.join(timeout=5)
    if not loop.is_running():
        loop.close()


async def _close_quietly(client: Any, name: str) -> None:
    try:
        await client.close()
    except Exception as exc:  # closing must not lose the answers
        log.debug("%s: closing the client failed: %s", name, type(exc).__name__)


def _parse_options(spec: JudgeSpec) -> _Settings:
    where = f"judge {spec.name!r} options"
    opts = spec.options
    unknown = set(opts) - _OPTIONS
    if unknown:
        raise ConfigError(f"{where}: unknown option(s) {sorted(unknown)} for backend 'openai'; known: {sorted(_OPTIONS)}")

    def num(key: str, default: float, *, integer: bool = False, minimum: float = 0.0) -> Any:
        v = opts.get(key, default)
        try:
            v = int(v) if integer else float(v)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: {key} must be a number, got {v!r}") from None
        if v < minimum:
            raise ConfigError(f"{where}: {key} must be >= {minimum}, got {v}")
        return v

    logprobs_top = opts.get("logprobs_top")
    if logprobs_top is not None:
        logprobs_top = num("logprobs_top", 0, integer=True, minimum=0)
    extra_body = opts.get("extra_body")
    if extra_body is not None and not isinstance(extra_body, dict):
        raise ConfigError(f"{where}: extra_body must be a mapping, got {type(extra_body).__name__}")
    base_url = opts.get("base_url")
    return _Settings(
        base_url=None if base_url is None else str(base_url),
        timeout_s=num("timeout_s", 60.0, minimum=0.001),
        max_retries=num("max_retries", 5, integer=True),
        backoff_s=num("backoff_s", 1.0),
        max_backoff_s=num("max_backoff_s", 30.0),
        response_format_json=bool(opts.get("response_format_json", False)),
        logprobs_top=logprobs_top,
        extra_body=dict(extra_body) if extra_body else None,
    )


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _short(obj: Any) -> str:
    if isinstance(obj, dict):
        obj = obj.get("message") or obj
    s = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, default=str)
    return s[:_MAX_ERROR_CHARS]


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        return _short(inner)
    if isinstance(body, str) and body.strip():
        return body.strip()[:_MAX_ERROR_CHARS]
    return type(exc).__name__


def _retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
    except (TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _first_token_logprobs(lp: Any) -> dict[str, float] | None:
    """``choices[0].logprobs.content[0].top_logprobs`` as ``{token: logprob}``."""
    if not isinstance(lp, dict):
        return None
    content = lp.get("content")
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        return None
    first = content[0]
    out: dict[str, float] = {}
    for alt in first.get("top_logprobs") or []:
        if isinstance(alt, dict) and isinstance(alt.get("token"), str) and alt.get("logprob") is not None:
            tok, val = alt["token"], float(alt["logprob"])
            out[tok] = max(val, out.get(tok, float("-inf")))
    if not out and isinstance(first.get("token"), str) and first.get("logprob") is not None:
        out[first["token"]] = float(first["logprob"])
    return out or None
