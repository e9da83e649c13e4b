"""``judgelab audit`` at scale: wall time and peak memory of import + card per log size.

    python benchmarks/bench_audit.py --pairs 10000 100000 1000000 [--judges 2] [--resamples 1000]

For each size a synthetic log in the published JudgeBench layout (``outputs/*.jsonl``: the judge
model inside each game, the second game swapped; half the judges reward models with ``scores``)
is written to a temporary folder, and the real command ``judgelab audit --format judgebench
FOLDER`` runs on it in a child process.  Printed per size: pairs, verdict rows, input size,
wall and CPU seconds and the child's peak RSS (``os.wait4``: that child only), then the growth
exponents (log-log slopes of CPU time and peak memory against pairs between consecutive sizes;
1.0 = linear).

The judges carry a planted position bias (first slot preferred with probability 0.6) and prefer
the longer response, so the card has something to find; texts are short (questions ~150,
responses 60-400 characters) so the log of a million pairs is ~1 GB on disk.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

WORDS = ("the answer follows from the premise because each step is checked against the question and "
         "the result is stated clearly with a short justification that the reader can verify").split()


def _text(rng: np.random.Generator, n_words: int) -> str:
    return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), n_words))


def write_log(folder: Path, n_pairs: int, n_judges: int, seed: int = 0) -> int:
    """JudgeBench-layout files, ``n_pairs`` pairs in all split over ``n_judges`` judge files; bytes written."""
    rng = np.random.default_rng(seed)
    size = 0
    per = [n_pairs // n_judges + (k < n_pairs % n_judges) for k in range(n_judges)]
    for k, n in enumerate(per):
        reward = k % 2 == 1
        jname, model = ("reward_model", f"org/reward-{k}") if reward else ("arena_hard", f"gpt-judge-{k}")
        path = folder / (f"dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name={jname},"
                         f"judge_model={model.replace('/', '_')}.jsonl")
        la = rng.integers(10, 70, n)
        lb = rng.integers(10, 70, n)
        gold_b = rng.random(n) < 0.5
        first = rng.random((n, 2)) < 0.6  # position bias: the slot shown first wins
        with path.open("w", encoding="utf-8") as fh:
            for i in range(n):
                q = f"Question {k}-{i}: " + _text(rng, 20)
                a, b = _text(rng, int(la[i])), _text(rng, int(lb[i]))
                games = []
                for g in range(2):
                    shown_a_len, shown_b_len = (la[i], lb[i]) if g == 0 else (lb[i], la[i])
                    a_wins = first[i, g] if shown_a_len == shown_b_len else (first[i, g] or shown_a_len > shown_b_len)
                    dec = "A>B" if a_wins else "B>A"
                    if reward:
                        sa, sb = (1.5, 0.5) if a_wins else (0.5, 1.5)
                        j = {"judge_model": model, "prompt": "", "response": "", "scores": [sa, sb]}
                    else:
                        j = {"judge_model": model, "prompt": "...", "response": f"My final verdict: [[{dec}]]"}
                    games.append({"judgment": j, "decision": dec})
                rec = {"pair_id": f"{k}-{i}", "original_id": i, "source": "synthetic", "question": q,
                       "response_model": "gpt-4o-2024-05-13", "response_A": a, "response_B": b,
                       "label": "B>A" if gold_b[i] else "A>B", "judge_name": jname, "judgments": games}
                line = json.dumps(rec, ensure_ascii=False) + "\n"
                size += len(line)
                fh.write(line)
    return size


def run_audit(folder: Path, out: Path, resamples: int) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MiB, return code) of ``judgelab audit`` in a child
    process (CPU seconds = user + system: the figure to compare on a shared machine)."""
    cmd = [sys.executable, "-m", "judgelab.cli", "audit", "--format", "judgebench", str(folder),
           "--out", str(out), "--resamples", str(resamples)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0 and proc.stderr is not None:
        sys.stderr.write(proc.stderr.read().decode(errors="replace")[-3000:])
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, rc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--judges", type=int, default=2, help="judge files the pairs are split over (default 2)")
    ap.add_argument("--resamples", type=int, default=1000, help="card bootstrap resamples (default 1000)")
    ap.add_argument("--tmp", help="folder for the synthetic logs (default: the system temp folder)")
    args = ap.parse_args()
    rows = []
    print(f"{'pairs':>9} {'rows':>9} {'input MB':>9} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12} "
          f"{'rows/CPU s':>11}")
    for n in sorted(args.pairs):
        with tempfile.TemporaryDirectory(dir=args.tmp) as d:
            folder = Path(d) / "outputs"
            folder.mkdir()
            size = write_log(folder, n, args.judges)
            wall, cpu, rss, rc = run_audit(folder, Path(d) / "audit", args.resamples)
        if rc != 0:
            raise SystemExit(f"judgelab audit failed on {n} pairs (rc {rc})")
        rows.append((n, cpu, rss))
        print(f"{n:>9} {2 * n:>9} {size / 1e6:>9.1f} {wall:>8.1f} {cpu:>8.1f} {rss:>12.0f} {2 * n / cpu:>11,.0f}",
              flush=True)
    for (n0, t0, m0), (n1, t1, m1) in itertools.pairwise(rows):
        k = math.log(n1 / n0)
        print(f"growth {n0} -> {n1} pairs: CPU time ~ n^{math.log(t1 / t0) / k:.2f}, "
              f"peak memory ~ n^{math.log(m1 / m0) / k:.2f}")


if __name__ == "__main__":
    main()
