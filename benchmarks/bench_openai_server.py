"""Calls/s of the ``openai`` backend on loopback, beside a bare ``AsyncOpenAI`` client.

Two servers:

* ``--server zero`` (default) -- a zero-work OpenAI-compatible server in a child process
  on 127.0.0.1: a bare asyncio HTTP/1.1 loop that answers every chat-completions POST
  at once with one fixed completion (``"A"``).  The server costs next to nothing, so the
  figures measure judgelab's own overhead, not a model;
* ``--server transformers`` -- ``transformers serve`` with SmolLM2-135M-Instruct
  (judgelab.judges.local_server), or ``--base-url`` of a server you started.

For each concurrency the same N distinct short pairwise requests go three ways, in
alternating rounds so drift in the machine's load hits all of them:

* ``bare`` -- one ``openai.AsyncOpenAI`` client and a semaphore, one event loop;
* ``backend`` -- ``OpenAIJudge.answer`` on all N at once (request building, retries
  machinery, parsing of the HTTP body);
* ``pipeline`` -- ``judgelab.judges.runner.run_requests`` into a fresh call cache: cache keys,
  lookups, hand-overs of ``max(8, 4 x concurrency)`` calls, cache writes and answer
  parsing, as a pipeline job does.

The ratios ``backend / bare`` and ``pipeline / bare`` of calls/s are printed (goal >= 0.9
for the pipeline at every concurrency), and the client process's CPU milliseconds per call
of ``bare`` and ``pipeline`` (``time.process_time``: the judge's loop thread included, the
server's process not), a figure that a machine shared with other jobs disturbs far less
than wall time.

    python benchmarks/bench_openai_server.py [--n 400] [--rounds 2] [--concurrency 1 16 256]
    python benchmarks/bench_openai_server.py --server transformers --n 24 --concurrency 1 4 16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("JUDGELAB_PROGRESS", "0")

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.judges import make_judge
from judgelab.judges.runner import run_requests
from judgelab.records import CallStatus, JudgeRequest, Message, OutputKind

QUESTIONS = ["What is {a} + {b}?", "Is {a} larger than {b}?", "Name a number between {a} and {b}."]
ZERO_MODEL = "zero-work"


# -- the zero-work server ------------------------------------------------------------------
def _zero_body() -> bytes:
    return json.dumps({
        "id": "chatcmpl-zero", "object": "chat.completion", "created": 0, "model": ZERO_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 1, "total_tokens": 21},
    }).encode()


async def _serve_zero(port: int) -> None:
    """HTTP/1.1 keep-alive: read a request (headers + Content-Length body), answer the fixed completion."""
    body = _zero_body()
    response = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                + str(len(body)).encode() + b"\r\n\r\n" + body)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if length:
                    await reader.readexactly(length)
                writer.write(response)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


def start_zero_server() -> tuple[subprocess.Popen, str]:
    """The zero-work server in a child process (its own interpreter: no GIL shared with the client)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve-zero", str(port)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        raise RuntimeError("the zero-work server did not start")
    return proc, f"http://127.0.0.1:{port}/v1"


# -- the three clients -----------------------------------------------------------------------
def requests(n: int) -> list[JudgeRequest]:
    out = []
    for i in range(n):
        q = QUESTIONS[i % len(QUESTIONS)].format(a=i, b=2 * i + 3)
        out.append(JudgeRequest(
            messages=[Message("user", f"{q}\nAnswer A: {i + 1}. Answer B: {i + 2}. Reply with A or B.")],
            kind=OutputKind.PAIRWISE, fmt="letter",
        ))
    return out


def make_bench_judge(base_url: str, model: str, concurrency: int, max_tokens: int):
    spec = JudgeSpec(name="bench", backend="openai", model=model, concurrency=concurrency,
                     sampling={"temperature": 0.0, "max_tokens": max_tokens},
                     output_limits={"verdict": max_tokens},
                     options={"base_url": base_url, "api_key_env": None, "timeout_s": 600, "max_retries": 0})
    return make_judge(spec)


def backend_run(judge, reqs: list[JudgeRequest]) -> float:
    t0 = time.perf_counter()
    answers = judge.answer(reqs)
    dt = time.perf_counter() - t0
    bad = [a.error for a in answers if a.error]
    if bad:
        raise RuntimeError(f"backend: {len(bad)} failed calls, e.g. {bad[0]}")
    return dt


def pipeline_run(judge, reqs: list[JudgeRequest], workdir: str, tag: str) -> float:
    with CallCache(Path(workdir) / f"calls-{tag}.sqlite") as cache:  # a fresh cache: every call is new
        t0 = time.perf_counter()
        out = run_requests(judge, reqs, cache, progress=False)
        dt = time.perf_counter() - t0
    if any(r.cached for r in out) or any(r.status is CallStatus.ERROR for r in out):
        raise RuntimeError("pipeline: a call was cached or failed")
    return dt


def bare_run(base_url: str, model: str, reqs: list[JudgeRequest], concurrency: int, max_tokens: int) -> float:
    import openai

    async def go() -> float:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="EMPTY", timeout=600, max_retries=0)
        sem = asyncio.Semaphore(concurrency)

        async def one(r: JudgeRequest):
            async with sem:
                return await client.chat.completions.create(
                    model=model, messages=[{"role": m.role, "content": m.content} for m in r.messages],
                    temperature=0.0, max_tokens=max_tokens)

        t0 = time.perf_counter()
        out = await asyncio.gather(*(one(r) for r in reqs))
        dt = time.perf_counter() - t0
        await client.close()
        assert all(o.choices for o in out)
        return dt

    return asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", choices=["zero", "transformers"], default="zero")
    ap.add_argument("--n", type=int, default=None, help="requests per run (default 400 zero-work, 24 transformers)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds per concurrency")
    ap.add_argument("--concurrency", type=int, nargs="+", default=None,
                    help="default 1 16 256 (zero-work), 1 4 16 (transformers)")
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of a launched transformers serve")
    ap.add_argument("--base-url", default=None, help="an already running server (then --model too)")
    ap.add_argument("--model", default=None)
    ap.add_argument("--serve-zero", type=int, default=None, help=argparse.SUPPRESS)  # the child process
    args = ap.parse_args()
    if args.serve_zero is not None:
        asyncio.run(_serve_zero(args.serve_zero))
        return
    zero = args.server == "zero" and args.base_url is None
    n = args.n or (400 if zero else 24)
    levels = args.concurrency or ([1, 16, 256] if zero else [1, 4, 16])
    stop = None
    if args.base_url is not None:
        base_url, model = args.base_url, args.model or ZERO_MODEL
    elif zero:
        proc, base_url = start_zero_server()
        model = ZERO_MODEL
        stop = proc.kill
        print(f"zero-work server (pid {proc.pid}) at {base_url}")
    else:
        from judgelab.judges.local_server import start_server

        t0 = time.perf_counter()
        server = start_server(threads=args.threads)
        print(f"transformers serve ready in {time.perf_counter() - t0:.1f} s at {server.base_url} "
              f"(OMP_NUM_THREADS={args.threads})")
        base_url, model, stop = server.base_url, server.model, server.stop
    try:
        reqs = requests(n)
        bare_run(base_url, model, reqs[:2], 2, args.max_tokens)  # warm-up
        print(f"{n} requests x {args.rounds} rounds per concurrency, max_tokens {args.max_tokens}")
        print(f"{'concurrency':>11} {'bare calls/s':>13} {'backend calls/s':>16} {'pipeline calls/s':>17} "
              f"{'backend/bare':>13} {'pipeline/bare':>14} {'bare CPU ms':>13} {'pipeline CPU ms':>17}")
        with tempfile.TemporaryDirectory(prefix="bench-openai-") as workdir:
            for c in levels:
                judge = make_bench_judge(base_url, model, c, args.max_tokens)
                backend_run(judge, reqs[:2])  # the judge's client and loop exist before timing, as in a job
                times = {"bare": 0.0, "backend": 0.0, "pipeline": 0.0}
                cpu = {"bare": 0.0, "backend": 0.0, "pipeline": 0.0}
                for r in range(args.rounds):
                    order = ["bare", "backend", "pipeline"] if r % 2 == 0 else ["pipeline", "backend", "bare"]
                    for name in order:
                        c0 = time.process_time()
                        if name == "bare":
                            times[name] += bare_run(base_url, model, reqs, c, args.max_tokens)
                        elif name == "backend":
                            times[name] += backend_run(judge, reqs)
                        else:
                            times[name] += pipeline_run(judge, reqs, workdir, f"{c}-{r}")
                        cpu[name] += time.process_time() - c0
                judge.close()
                total = n * args.rounds
                rate = {k: total / v for k, v in times.items()}
                ms = {k: 1000 * v / total for k, v in cpu.items()}
                print(f"{c:>11} {rate['bare']:>13.1f} {rate['backend']:>16.1f} {rate['pipeline']:>17.1f} "
                      f"{rate['backend'] / rate['bare']:>13.2f} {rate['pipeline'] / rate['bare']:>14.2f} "
                      f"{ms['bare']:>13.2f} {ms['pipeline']:>17.2f}")
    finally:
        if stop is not None:
            stop()


if __name__ == "__main__":
    main()
