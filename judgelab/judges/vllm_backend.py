"""Backend ``vllm``: offline batched inference with ``vllm.LLM`` on local GPUs.

vLLM pins its own torch and transformers, so it lives in its own environment
(``conda env create -f envs/vllm.yaml``); it is imported only when a judge of this
backend is built.  ``spec.model`` is a checkpoint directory or a hub id.  Options:

* ``tensor_parallel_size`` (1), ``enable_prefix_caching`` (true: judge prompts share
  long instructions), ``gpu_memory_utilization`` (0.9), ``max_model_len``,
  ``dtype`` (``auto``), ``trust_remote_code`` (false), ``batch_size`` (512);
* ``verdict_mode`` -- ``generate`` (default) or ``logits``: one token is generated
  greedily with ``logprobs_top`` (20) top log-probabilities, and the verdict is the
  answer choice with the highest log-probability among them (paper 002's arg max
  of the ``A``/``B`` next-token logits).  A request none of whose choices is in
  the top-k is an *answer without a verdict*: empty text (parsed ``unparsed`` and
  counted, cached like any answer, since asking the same deterministic call again
  gives the same top-k) with ``finish_reason`` "no answer token among top-k
  logprobs (k=...)".  It is not an error, which ``max_error_rate: 0`` would turn
  into a rule that fails on every rerun.  Text requests are always generated.
  ``logit_choices`` as for the transformers backend;
* ``chat_template_kwargs`` -- passed to ``LLM.chat`` (e.g. ``{enable_thinking: false}``).

Requests go through ``LLM.chat`` (a list of conversations, vLLM >= 0.6.3) with one
``SamplingParams`` per request: temperature, top_p, max_tokens (256) and friends
from :meth:`Judge.sampling_for`; at temperature > 0 the seed is the judge's seed
plus a hash of the request, so sampled answers are reproducible per request.
The pure logic (sampling parameters, reading a verdict off a top-logprob dict) is
in plain functions, testable without vllm.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges import BACKENDS
from judgelab.judges.base import BackendUnavailable, Judge, bool_option
from judgelab.judges.transformers_backend import resolve_checkpoint
from judgelab.judges.verdict_text import (
    VERDICT_MODES,
    answer_choices,
    choice_spellings,
    format_choice,
    logsumexp,
    pick_choice,
    request_seed,
    validate_logit_choices,
)
from judgelab.records import JudgeRequest, OutputKind, RawAnswer

__all__ = ["INSTALL_HINT", "VLLMJudge", "pick_choice", "read_logit_verdict", "sampling_kwargs", "top_logprobs_by_text"]

log = logging.getLogger(__name__)

INSTALL_HINT = "install the vllm extra in its own env: conda env create -f envs/vllm.yaml"
NO_ANSWER_TOKEN = "no answer token among top-k logprobs"
#: sampling keys passed on to SamplingParams besides temperature/top_p/max_tokens/seed
_PASSED_SAMPLING = ("top_k", "min_p", "stop", "presence_penalty", "frequency_penalty", "repetition_penalty")


def sampling_kwargs(
    request: JudgeRequest, sampling: Mapping[str, Any], *, logits_mode: bool, logprobs_top: int = 20
) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for one request.

    ``sampling`` is the judge's sampling merged with the request's overrides.  In
    logits mode (not for text requests): one greedy token with ``logprobs_top``
    top log-probabilities.  Otherwise temperature (0), top_p (1), max_tokens (256),
    the keys of ``_PASSED_SAMPLING`` that are set, and at temperature > 0 a
    per-request seed.
    """
    if logits_mode and request.kind is not OutputKind.TEXT:
        return {"max_tokens": 1, "temperature": 0.0, "logprobs": int(logprobs_top)}
    temp = float(sampling.get("temperature", 0.0) or 0.0)
    kw: dict[str, Any] = {
        "temperature": temp,
        "top_p": float(sampling.get("top_p", 1.0) or 1.0),
        "max_tokens": int(sampling.get("max_tokens") or 256),
    }
    for k in _PASSED_SAMPLING:
        if sampling.get(k) is not None:
            kw[k] = sampling[k]
    if temp > 0:
        kw["seed"] = request_seed(int(sampling.get("seed", 0) or 0), request)
    return kw


def top_logprobs_by_text(
    position: Mapping[int, Any], decode: Callable[[int], str] | None = None
) -> dict[str, float]:
    """vLLM's ``{token_id: Logprob}`` at one position as ``{decoded text: logprob}``.

    Distinct token ids with the same text (byte-level duplicates) are merged by
    log-sum-exp; a missing ``decoded_token`` is decoded with ``decode`` if given.
    Plain floats are accepted in place of ``Logprob`` objects.
    """
    merged: dict[str, list[float]] = {}
    for tid, lp in position.items():
        text = getattr(lp, "decoded_token", None)
        if text is None and decode is not None:
            text = decode(int(tid))
        if text is None:
            continue
        value = float(lp.logprob) if hasattr(lp, "logprob") else float(lp)
        merged.setdefault(text, []).append(value)
    return {t: logsumexp(v) for t, v in merged.items()}


def read_logit_verdict(
    request: JudgeRequest, top_logprobs: Mapping[str, float], choices: Sequence[str], *, k: int | None = None
) -> tuple[str | None, dict[str, float] | None, str | None]:
    """``(text, {choice: logprob}, error)`` of a logit verdict from a top-logprob dict."""
    win, scores = pick_choice(top_logprobs, choices, choice_spellings(request.kind, choices))
    if win is None:
        return None, None, NO_ANSWER_TOKEN + (f" (k={k})" if k else "")
    return format_choice(request.kind, request.fmt, request.score_ids, win), scores, None


@BACKENDS.register("vllm")
class VLLMJudge(Judge):
    loads_weights = True
    logit_verdicts = True
    conda_env = "vllm"  # vLLM pins its own torch

    @classmethod
    def gpus(cls, options):
        """vLLM shards the model over ``tensor_parallel_size`` GPUs (1 by default)."""
        return int(options.get("tensor_parallel_size", 1))

    batch_size = 512

    def __init__(self, spec: JudgeSpec) -> None:
        super().__init__(spec)
        self._configure(spec)
        try:
            from vllm import LLM, SamplingParams
        except ImportError as e:
            raise BackendUnavailable(f"judge {spec.name!r}: the vllm backend needs vllm ({e}); {INSTALL_HINT}") from e
        self._SamplingParams = SamplingParams
        self.llm = LLM(**self.engine_kwargs())
        self._after_load()

    # -- configuration (no vllm needed) ------------------------------------------------
    def _configure(self, spec: JudgeSpec) -> None:
        where = f"judge {spec.name!r} options"
        opts = dict(spec.options)
        self.verdict_mode = str(opts.get("verdict_mode", "generate"))
        if self.verdict_mode not in VERDICT_MODES:
            raise ConfigError(f"{where}: verdict_mode {self.verdict_mode!r} unknown; known: {list(VERDICT_MODES)}")
        self.logit_choices = validate_logit_choices(opts.get("logit_choices"), where=where)
        try:
            self.logprobs_top = int(opts.get("logprobs_top", 20))
            self.tensor_parallel_size = int(opts.get("tensor_parallel_size", 1))
            self.gpu_memory_utilization = float(opts.get("gpu_memory_utilization", 0.9))
            self.max_model_len = int(opts["max_model_len"]) if opts.get("max_model_len") else None
            self.batch_size = int(opts.get("batch_size", 512))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{where}: {e}") from None
        if self.logprobs_top < 1 or self.tensor_parallel_size < 1 or self.batch_size < 1:
            raise ConfigError(f"{where}: logprobs_top, tensor_parallel_size and batch_size must be >= 1")
        if not 0.0 < self.gpu_memory_utilization <= 1.0:
            raise ConfigError(f"{where}: gpu_memory_utilization must lie in (0, 1], got {self.gpu_memory_utilization}")
        self.enable_prefix_caching = bool(bool_option(opts, "enable_prefix_caching", True, where))
        self.trust_remote_code = bool(bool_option(opts, "trust_remote_code", False, where))
        self.dtype = str(opts.get("dtype", "auto"))
        self.chat_template_kwargs = opts.get("chat_template_kwargs") or None
        if self.chat_template_kwargs is not None and not isinstance(self.chat_template_kwargs, dict):
            raise ConfigError(f"{where}: chat_template_kwargs must be a mapping")
        self.model_path = resolve_checkpoint(spec)
        self._tokenizer: Any = None
        self._context: int | None = self.max_model_len

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``vllm.LLM``."""
        kw: dict[str, Any] = {
            "model": self.model_path,
            "tensor_parallel_size": self.tensor_parallel_size,
            "enable_prefix_caching": self.enable_prefix_caching,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "trust_remote_code": self.trust_remote_code,
            "dtype": self.dtype,
            "seed": int(self.spec.sampling.get("seed", 0) or 0),
        }
        if self.max_model_len is not None:
            kw["max_model_len"] = self.max_model_len
        if self.verdict_mode == "logits" and self.logprobs_top > 20:
            kw["max_logprobs"] = self.logprobs_top  # vLLM's default cap is 20
        return kw

    def _after_load(self) -> None:
        """Tokenizer and context length for the up-front length check (best effort)."""
        try:
            self._tokenizer = self.llm.get_tokenizer()
        except Exception:  # an engine without one: vLLM checks lengths itself
            self._tokenizer = None
        try:
            self._context = int(self.llm.llm_engine.model_config.max_model_len)
        except Exception:
            self._context = self.max_model_len

    def identity_extra(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"verdict_mode": self.verdict_mode, "dtype": self.dtype}
        if self.verdict_mode == "logits":
            extra["logit_choices"] = self.logit_choices
        if self.chat_template_kwargs:
            extra["chat_template_kwargs"] = self.chat_template_kwargs
        return extra

    # -- answering ----------------------------------------------------------------------
    def _logits(self, request: JudgeRequest) -> bool:
        return self.verdict_mode == "logits" and request.kind is not OutputKind.TEXT

    def _prompt_len(self, conv: list[dict[str, str]]) -> int | None:
        tok = self._tokenizer
        if tok is None:
            return None
        try:
            text = tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
            return len(tok(text, add_special_tokens=False)["input_ids"])
        except Exception:
            return None

    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        out: list[RawAnswer | None] = [None] * len(requests)
        todo: list[tuple[int, list[dict[str, str]], Any, list[str] | None]] = []
        for i, req in enumerate(requests):
            try:
                conv = [{"role": m.role, "content": m.content} for m in req.messages]
                logits = self._logits(req)
                choices = answer_choices(req, {"logit_choices": self.logit_choices}) if logits else None
                params = self._SamplingParams(**sampling_kwargs(
                    req, self.sampling_for(req), logits_mode=logits, logprobs_top=self.logprobs_top,
                ))
                n_in = self._prompt_len(conv) if self._context else None
                if n_in is not None and self._context is not None and n_in + 1 > self._context:
                    raise ValueError(f"input of {n_in} tokens exceeds the model's context of {self._context} tokens")
                todo.append((i, conv, params, choices))
            except Exception as e:  # a bad request must not sink its batch
                out[i] = RawAnswer(text=None, error=f"{type(e).__name__}: {e}")
        for (i, *_), ans in zip(todo, self._run(requests, todo), strict=True):
            out[i] = ans
        return [a if a is not None else RawAnswer(text=None, error="not answered") for a in out]

    def _run(self, requests: Sequence[JudgeRequest], items: list) -> list[RawAnswer]:
        """Answer ``items`` in one ``LLM.chat`` call; if it fails, bisect to isolate the failures."""
        if not items:
            return []
        t0 = time.perf_counter()
        try:
            kwargs: dict[str, Any] = {"use_tqdm": False}
            if self.chat_template_kwargs:
                kwargs["chat_template_kwargs"] = self.chat_template_kwargs
            results = self.llm.chat([it[1] for it in items], [it[2] for it in items], **kwargs)
            if len(results) != len(items):
                raise RuntimeError(f"vLLM returned {len(results)} outputs for {len(items)} conversations")
        except Exception as e:
            if len(items) == 1:
                return [RawAnswer(text=None, error=f"{type(e).__name__}: {e}")]
            log.warning("%s: a batch of %d failed (%s); splitting it", self.name, len(items), e)
            half = len(items) // 2
            return self._run(requests, items[:half]) + self._run(requests, items[half:])
        share = (time.perf_counter() - t0) / len(items)
        return [self._convert(requests[it[0]], it[3], res, share) for it, res in zip(items, results, strict=True)]

    def _convert(self, request: JudgeRequest, choices: list[str] | None, res: Any, latency: float) -> RawAnswer:
        try:
            comp = res.outputs[0]
            n_in = len(getattr(res, "prompt_token_ids", None) or [])
            n_out = len(getattr(comp, "token_ids", None) or [])
            if choices is None:
                return RawAnswer(text=comp.text, tokens_in=n_in, tokens_out=n_out, latency_s=latency,
                                 finish_reason=getattr(comp, "finish_reason", None))
            if not comp.logprobs:
                return RawAnswer(text=None, tokens_in=n_in, tokens_out=n_out, latency_s=latency,
                                 error="vLLM returned no logprobs")
            decode = None
            if self._tokenizer is not None:
                tok = self._tokenizer

                def decode(tid: int) -> str:
                    return tok.decode([tid])

            top = top_logprobs_by_text(comp.logprobs[0], decode)
            text, scores, err = read_logit_verdict(request, top, choices, k=self.logprobs_top)
            if err is not None:  # no verdict among the top-k: an unparsed answer, not a failed call
                return RawAnswer(text="", tokens_in=n_in, tokens_out=n_out, latency_s=latency, finish_reason=err)
            return RawAnswer(text=text, tokens_in=n_in, tokens_out=n_out, latency_s=latency, logprobs=scores,
                             finish_reason="logits")
        except Exception as e:
            return RawAnswer(text=None, error=f"{type(e).__name__}: {e}")

    def close(self) -> None:
        llm = self.__dict__.pop("llm", None)
        if llm is None:
            return
        del llm
        try:
            import gc

            import torch

            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass
