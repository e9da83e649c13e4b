"""Where public data sets live: one configurable root, and the real download code.

Tests, benchmarks and rules read public data through :func:`data_root`: the
``JUDGELAB_DATA`` environment variable, else ``../shared/data`` beside the checkout
when it exists.  A file not found there is downloaded from its upstream repository,
pinned to the commit the MANIFEST names, into ``results/downloads/`` (that is what
users without a local copy run).  :data:`SOURCES` lists every known file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from judgelab.config import REPO_ROOT

ENV_VAR = "JUDGELAB_DATA"


class DataMissing(FileNotFoundError):
    """A public data file is neither under the data root nor downloadable."""


@dataclass(frozen=True)
class Source:
    """A public file: its path under the data root and its pinned upstream URL."""

    rel: str
    url: str


_LLMBAR = "https://raw.githubusercontent.com/princeton-nlp/LLMBar/900616bff90b6c6c8e1681f7d079250637c55992/Dataset"
_FASTCHAT = "https://raw.githubusercontent.com/lm-sys/FastChat/0e6d3e4beaab66f4d3f93db72541a4abab8af28d/fastchat/llm_judge/data"
_JAVICUNA = "https://raw.githubusercontent.com/ku-nlp/ja-vicuna-qa-benchmark/d5bcc37a3061a7edc31ecdfbc20d1d1e369fffd3/fastchat/llm_judge/data"
_GSM8K = "https://raw.githubusercontent.com/openai/grade-school-math/3101c7d5072418e28b9008a6636bde82a006892c/grade_school_math/data"
_PROMETHEUS = "https://raw.githubusercontent.com/prometheus-eval/prometheus-eval/dcfb44272d5d0414832f5dbb8c2a05ebc2614234/eval/benchmark/data"
_FLASK = "https://raw.githubusercontent.com/kaistAI/FLASK/3b4e22bc34aa9dc15ea0c51be3cbf5f3c8b1b5e5"
_RBD = "https://raw.githubusercontent.com/Joyyang158/Reasoning-Bias-Detector/e3f3fe7e7b98d6b5c82649537c24ed207fff9f8f/data/RBD-Bias4-Eval"
#: paper 004's human-scored sets, read when downloaded (judgelab/scoring/human.py): BiGGen-Bench-Results'
#: human_eval split (Hugging Face dataset, pinned revision) and Prometheus' full FLASK with human scores
_BIGGEN_RESULTS = ("https://huggingface.co/datasets/prometheus-eval/BiGGen-Bench-Results/resolve/"
                   "f34b56e0b3e5ce86687796c319c4fbc06f5e7b7e/data")
_ARENA_HARD = "https://raw.githubusercontent.com/meltemi-ai/arena-hard-auto-english/74d985fed4eed51b2dca4dcb37a5753567b43dea/data/arena-hard-v0.1"

SOURCES: dict[str, Source] = {
    **{
        f"llmbar/{sub}": Source(f"llmbar/{sub}/dataset.json", f"{_LLMBAR}/LLMBar/{sub}/dataset.json")
        for sub in ("Natural", "Adversarial/Neighbor", "Adversarial/GPTInst", "Adversarial/GPTOut", "Adversarial/Manual")
    },
    **{
        f"llmbar_judge_outputs/Natural/{j}": Source(
            f"llmbar_judge_outputs/Natural/evaluators/{j}/Vanilla/result.json",
            f"{_LLMBAR}/LLMBar/Natural/evaluators/{j}/Vanilla/result.json",
        )
        for j in ("ChatGPT", "ChatGPT-0301", "GPT-4", "PaLM2", "LLaMA2", "Falcon")
    },
    "mt_bench/question": Source("mt_bench/question.jsonl", f"{_FASTCHAT}/mt_bench/question.jsonl"),
    "mt_bench/judge_prompts": Source("mt_bench/judge_prompts.jsonl", f"{_FASTCHAT}/judge_prompts.jsonl"),
    **{
        f"mt_bench/model_answer/{m}": Source(
            f"mt_bench/model_answer/{m}.jsonl", f"{_JAVICUNA}/mt_bench/model_answer/{m}.jsonl"
        )
        for m in ("alpaca-13b", "claude-v1", "gpt-3.5-turbo", "gpt-4", "llama-13b", "vicuna-13b-v1.3")
    },
    "gsm8k/test": Source("gsm8k/test.jsonl", f"{_GSM8K}/test.jsonl"),
    # paper 000 (uda): Arena-Hard-Auto v0.1 prompts and nine models' answers (MANIFEST 5)
    "arena_hard/question": Source("arena_hard/question.jsonl", f"{_ARENA_HARD}/question.jsonl"),
    **{
        f"arena_hard/model_answer/{m}": Source(
            f"arena_hard/model_answer/{m}.jsonl", f"{_ARENA_HARD}/model_answer/{m}.jsonl"
        )
        for m in ("gpt-4-0314", "gpt-3.5-turbo-0125", "gpt-4-0613", "claude-3-haiku-20240307",
                  "claude-3-opus-20240229", "llama-3-8b-instruct", "gemma-7b-it", "mixtral-8x7b-instruct-v0.1",
                  "qwen1.5-72b-chat")
    },
    # paper 003 (strategies): MT-Bench human votes (turn 1; compact export of the `human` split of
    # lmsys/mt_bench_human_judgments, MANIFEST 1.5) and GPT-4 reference answers (math/reasoning/coding)
    "mt_bench/human_judgments_turn1": Source(
        "mt_bench/human_judgments_turn1.jsonl",
        "https://raw.githubusercontent.com/cprentice9/eval-platform/a138b749b2eb55903ceb1dfcfc378a82dc464307"
        "/data/mt_bench/human_judgments.jsonl",
    ),
    "mt_bench/reference_answer/gpt-4": Source(
        "mt_bench/reference_answer/gpt-4.jsonl", f"{_FASTCHAT}/mt_bench/reference_answer/gpt-4.jsonl"
    ),
    # paper 004: Prometheus absolute-grading sets (instance rubrics, score-5 reference, 3 GPT-4 scores), FLASK
    "prometheus_eval/mt_bench": Source("prometheus_eval/mt_bench_eval.json", f"{_PROMETHEUS}/mt_bench_eval.json"),
    "prometheus_eval/vicuna_bench": Source("prometheus_eval/vicuna_eval.json", f"{_PROMETHEUS}/vicuna_eval.json"),
    "prometheus_eval/flask": Source("prometheus_eval/flask_eval.json", f"{_PROMETHEUS}/flask_eval.json"),
    "biggen/human_eval": Source("biggen/human_eval-00000-of-00001.parquet",
                                f"{_BIGGEN_RESULTS}/human_eval-00000-of-00001.parquet"),
    "flask/hard": Source("flask/flask_hard_evaluation.jsonl", f"{_FLASK}/evaluation_set/flask_hard_evaluation.jsonl"),
    "flask/skillset": Source("flask/skillset_description.json",
                             f"{_FLASK}/metadata_annotation/skillset/src/skillset_description.json"),
    # JudgeBench's GPT-4o response pairs (paper 001, Table 3); not in the shared data folder
    "judgebench/gpt-4o": Source(
        "judgebench/dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl",
        "https://raw.githubusercontent.com/ScalerLab/JudgeBench/12a499c5c29f06940d259b49250fca627d2a0ee5/data/"
        "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl",
    ),
    # paper 001's own biased sets (RBD-Bias4-Eval); ScienceQA_Sentiment doubles as the text-only
    # ScienceQA multiple-choice subset
    **{
        f"rbd_bias4_eval/{name}": Source(f"rbd_bias4_eval/{name}.json", f"{_RBD}/{name}.json")
        for name in ("Arena_Position_and_Bandwagon", "GSM8K_Verbosity", "ScienceQA_Sentiment")
    },
}


def data_root() -> Path | None:
    """The configured root of public data, or None if there is none."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser().resolve()
    default = REPO_ROOT.parent / "shared" / "data"
    return default if default.is_dir() else None


def downloads_dir() -> Path:
    return REPO_ROOT / "results" / "downloads"


def resolve_data_path(rel: str, *, download: bool = True) -> Path:
    """Absolute path of a public data file (``rel`` is relative to the data root).

    Order: absolute path as given; ``<data root>/rel``; ``results/downloads/rel``;
    a download from :data:`SOURCES` when ``rel`` is a known file.
    """
    p = Path(rel)
    if p.is_absolute():
        if p.exists():
            return p
        raise DataMissing(f"data file not found: {p}")
    root = data_root()
    if root is not None and (root / rel).exists():
        return root / rel
    local = downloads_dir() / rel
    if local.exists():
        return local
    src = next((s for s in SOURCES.values() if s.rel == rel), None)
    if src is not None and download:
        return download_file(src.url, local)
    where = f"{root}" if root is not None else f"no data root (set ${ENV_VAR})"
    raise DataMissing(f"data file {rel!r} not found under {where} nor in {downloads_dir()}")


def source_path(name: str, *, download: bool = True) -> Path:
    """Path of a named public file (a key of :data:`SOURCES`)."""
    if name not in SOURCES:
        raise KeyError(f"unknown data source {name!r}; known: {', '.join(sorted(SOURCES))}")
    return resolve_data_path(SOURCES[name].rel, download=download)


def download_file(url: str, dest: Path, *, timeout_s: float = 60.0, sha256: str | None = None) -> Path:
    """Download ``url`` to ``dest`` atomically (temp file + rename), optionally checked."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh, urllib.request.urlopen(url, timeout=timeout_s) as resp:
            shutil.copyfileobj(resp, fh)
        if sha256 is not None:
            got = hashlib.sha256(Path(tmp).read_bytes()).hexdigest()
            if got != sha256:
                raise DataMissing(f"{url}: checksum mismatch ({got} != {sha256})")
        os.replace(tmp, dest)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise DataMissing(f"could not download {url} ({exc}); place the file at {dest} or set ${ENV_VAR}") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest
