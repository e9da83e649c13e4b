"""Calls/s of the ``openai`` backend against a real loopback server, beside a bare async client.

Starts ``transformers serve`` with SmolLM2-135M-Instruct on 127.0.0.1 (judgelab.judges.local_server;
or ``--base-url`` of a server you started, e.g. ``scripts/serve-local.sh start``), then for each
concurrency (1, 4, 16) sends the same N short chat requests twice: through
``OpenAIJudge.answer`` (no call cache: the backend's own overhead -- request building, retries
machinery, parsing) and through a bare ``openai.AsyncOpenAI`` client with a semaphore.  The
two alternate in rounds so that drift in the machine's load hits both.  The figure is the ratio
backend / bare (goal >= 0.9).

    python benchmarks/bench_openai_server.py [--n 24] [--rounds 2] [--threads 1] [--max-tokens 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from judgelab.config import JudgeSpec
from judgelab.judges import make_judge
from judgelab.judges.local_server import SMOLLM2_NAME, start_server
from judgelab.records import JudgeRequest, Message, OutputKind

QUESTIONS = ["What is {a} + {b}?", "Is {a} larger than {b}?", "Name a number between {a} and {b}."]


def requests(n: int) -> list[JudgeRequest]:
    out = []
    for i in range(n):
        q = QUESTIONS[i % len(QUESTIONS)].format(a=i, b=2 * i + 3)
        out.append(JudgeRequest(
            messages=[Message("user", f"{q}\nAnswer A: {i + 1}. Answer B: {i + 2}. Reply with A or B.")],
            kind=OutputKind.PAIRWISE, fmt="letter",
        ))
    return out


def backend_run(base_url: str, model: str, reqs: list[JudgeRequest], concurrency: int, max_tokens: int) -> float:
    spec = JudgeSpec(name="bench", backend="openai", model=model, concurrency=concurrency,
                     sampling={"temperature": 0.0, "max_tokens": max_tokens},
                     output_limits={"verdict": max_tokens},
                     options={"base_url": base_url, "api_key_env": None, "timeout_s": 600, "max_retries": 0})
    judge = make_judge(spec)
    t0 = time.perf_counter()
    answers = judge.answer(reqs)
    dt = time.perf_counter() - t0
    bad = [a.error for a in answers if a.error]
    if bad:
        raise RuntimeError(f"backend: {len(bad)} failed calls, e.g. {bad[0]}")
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
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=24, help="requests per run")
    ap.add_argument("--rounds", type=int, default=2, help="alternating backend/bare rounds per concurrency")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of the launched server")
    ap.add_argument("--base-url", default=None, help="an already running server (then --model too)")
    ap.add_argument("--model", default=SMOLLM2_NAME)
    args = ap.parse_args()
    server = None
    if args.base_url is None:
        t0 = time.perf_counter()
        server = start_server(threads=args.threads)
        print(f"transformers serve ready in {time.perf_counter() - t0:.1f} s at {server.base_url} "
              f"(OMP_NUM_THREADS={args.threads})")
        base_url, model = server.base_url, server.model
    else:
        base_url, model = args.base_url, args.model
    try:
        reqs = requests(args.n)
        bare_run(base_url, model, reqs[:2], 2, args.max_tokens)  # warm-up
        print(f"{'concurrency':>11} {'backend calls/s':>16} {'bare calls/s':>13} {'ratio':>6}")
        for c in args.concurrency:
            tb = tr = 0.0
            for r in range(args.rounds):
                if r % 2 == 0:
                    tr += bare_run(base_url, model, reqs, c, args.max_tokens)
                    tb += backend_run(base_url, model, reqs, c, args.max_tokens)
                else:
                    tb += backend_run(base_url, model, reqs, c, args.max_tokens)
                    tr += bare_run(base_url, model, reqs, c, args.max_tokens)
            n = args.n * args.rounds
            print(f"{c:>11} {n / tb:>16.2f} {n / tr:>13.2f} {tr / tb:>6.2f}")
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
