"""``judgelab audit`` at scale: CPU time and peak memory of import + card per log size, beside a plain pass.

    python benchmarks/bench_audit.py --pairs 10000 100000 1000000 10000000 [--judges 2] [--resamples 1000]
    python benchmarks/bench_audit.py --pairs 100000 --text-scale 1 10     # memory vs text volume

For each size a synthetic log in the published JudgeBench layout (``outputs/*.jsonl``: the judge
model inside each game, the second game swapped; half the judges reward models with ``scores``)
is written to a temporary folder, and the real command ``judgelab audit --format judgebench
FOLDER`` runs on it in a child process.  Printed per size: pairs, verdict rows, input size,
wall and CPU seconds and the child's peak RSS (``os.wait4``: that child only), the same for the
*plain pass* on the same files (:func:`plain_pass`: pyarrow reads every field, numpy computes the
first-shown share with a 1,000-resample item-cluster bootstrap and the positional agreement; the
floor any audit of these files pays), the audit's CPU over the plain pass's, then the growth
exponents (log-log slopes of CPU time and peak memory against pairs between consecutive sizes;
1.0 = linear).  ``--text-scale 1 10`` runs each size with responses 1x and 10x as long (same
pairs, same verdicts) and prints the peak-memory ratio: the audit keeps features, not texts.

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


CHUNK = 100_000  # pairs built per block of the vectorised writer


def _texts(rng: np.random.Generator, n_words: np.ndarray) -> object:
    """Arrow strings of ``len(n_words)`` texts, each ``n_words[i]`` random words of :data:`WORDS` joined by
    spaces (ASCII letters only: nothing to escape in JSON), built in Arrow's C++ kernels."""
    import pyarrow as pa
    import pyarrow.compute as pc

    offsets = np.zeros(len(n_words) + 1, np.int64)
    np.cumsum(n_words, out=offsets[1:])
    tokens = pa.array(WORDS).take(pa.array(rng.integers(0, len(WORDS), int(offsets[-1]))))
    return pc.binary_join(pa.LargeListArray.from_arrays(pa.array(offsets), tokens), " ")


def _games(model: str, reward: bool) -> list[str]:
    """The two JSON texts a game can take (index 1: the slot shown first wins), as ``json.dumps`` writes them."""
    out = []
    for a_wins in (False, True):
        dec = "A>B" if a_wins else "B>A"
        if reward:
            sa, sb = (1.5, 0.5) if a_wins else (0.5, 1.5)
            j = {"judge_model": model, "prompt": "", "response": "", "scores": [sa, sb]}
        else:
            j = {"judge_model": model, "prompt": "...", "response": f"My final verdict: [[{dec}]]"}
        out.append(json.dumps({"judgment": j, "decision": dec}, ensure_ascii=False))
    return out


def write_log(folder: Path, n_pairs: int, n_judges: int, seed: int = 0, text_scale: int = 1) -> int:
    """JudgeBench-layout files, ``n_pairs`` pairs in all split over ``n_judges`` judge files; bytes written.

    Each line is what ``json.dumps(record, ensure_ascii=False)`` writes for the pair's record,
    assembled from pre-encoded pieces by Arrow's string kernels a block of :data:`CHUNK` pairs at
    a time (a Python ``json.dumps`` per pair wrote ~2 MB/s: over an hour for ten million pairs).
    The texts of a pair with ``text_scale`` > 1 are drawn after its word counts, so the
    verdicts are the same pairs' at every scale."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    size = 0
    per = [n_pairs // n_judges + (k < n_pairs % n_judges) for k in range(n_judges)]
    for k, n in enumerate(per):
        reward = k % 2 == 1
        jname, model = ("reward_model", f"org/reward-{k}") if reward else ("arena_hard", f"gpt-judge-{k}")
        path = folder / (f"dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name={jname},"
                         f"judge_model={model.replace('/', '_')}.jsonl")
        games = pa.array(_games(model, reward))
        labels = pa.array(['"A>B"', '"B>A"'])
        with path.open("wb") as fh:
            for lo in range(0, n, CHUNK):
                m = min(CHUNK, n - lo)
                # the verdicts first, from their own stream: the same at every text scale
                vr = np.random.default_rng([seed, k, lo])
                la, lb = vr.integers(10, 70, m), vr.integers(10, 70, m)
                gold_b = vr.random(m) < 0.5
                first = vr.random((m, 2)) < 0.6  # position bias: the slot shown first wins
                wins = [np.where(sa == sb, first[:, g], first[:, g] | (sa > sb))
                        for g, (sa, sb) in enumerate(((la, lb), (lb, la)))]
                idx = pc.cast(pa.array(np.arange(lo, lo + m)), pa.string())
                q = _texts(rng, np.full(m, 20))
                a, b = _texts(rng, la * text_scale), _texts(rng, lb * text_scale)
                line = pc.binary_join_element_wise(
                    f'{{"pair_id": "{k}-', idx, '", "original_id": ', idx,
                    f', "source": "synthetic", "question": "Question {k}-', idx, ": ", q,
                    '", "response_model": "gpt-4o-2024-05-13", "response_A": "', a, '", "response_B": "', b,
                    '", "label": ', labels.take(pa.array(gold_b.astype(np.int8))),
                    f', "judge_name": "{jname}", "judgments": [', games.take(pa.array(wins[0].astype(np.int8))),
                    ", ", games.take(pa.array(wins[1].astype(np.int8))), "]}\n", "")
                line = line.cast(pa.large_string()) if line.type != pa.large_string() else line
                offs = np.frombuffer(line.buffers()[1], np.int64, m + 1, line.offset * 8)
                data = line.buffers()[2]
                fh.write(memoryview(data)[int(offs[0]):int(offs[-1])])
                size += int(offs[-1] - offs[0])
    return size


#: run in the child: the command (``-m module`` or a script, with its arguments), then the child's
#: own peak resident memory (``VmHWM`` of /proc/self/status) written to the file named first
_PEAK_WRAPPER = """
import runpy, sys
out, args = sys.argv[1], sys.argv[2:]
try:
    if args[0] == "-m":
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")
finally:
    with open("/proc/self/status") as fh:
        hwm = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
    with open(out, "w") as fh:
        fh.write(hwm)
"""


def run_child(cmd: list[str]) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MiB, return code) of a child process (CPU seconds =
    user + system: the figure to compare on a shared machine).

    The peak is the child's own ``VmHWM``, read by the child as it ends (on Linux): ``ru_maxrss``
    from ``wait4`` also counts the memory of this process at the moment it started the child (the
    high-water mark of the address space the child replaced at exec), which after writing a
    log of long texts is larger than the audit's own peak.  Where /proc is missing, ``ru_maxrss``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    linux = Path("/proc/self/status").exists()
    with tempfile.TemporaryDirectory() as d:
        peak_file = Path(d) / "peak"
        if linux:
            cmd = [cmd[0], "-c", _PEAK_WRAPPER, str(peak_file), *cmd[1:]]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status)
        if rc != 0 and proc.stderr is not None:
            sys.stderr.write(proc.stderr.read().decode(errors="replace")[-3000:])
        peak = int(peak_file.read_text()) / 1024 if linux and peak_file.exists() else usage.ru_maxrss / 1024
    return wall, usage.ru_utime + usage.ru_stime, peak, rc


def run_audit(folder: Path, out: Path, resamples: int) -> tuple[float, float, float, int]:
    """:func:`run_child` of ``judgelab audit --format judgebench FOLDER``."""
    return run_child([sys.executable, "-m", "judgelab.cli", "audit", "--format", "judgebench", str(folder),
                      "--out", str(out), "--resamples", str(resamples)])


def plain_pass(folder: Path, resamples: int, seed: int = 0) -> dict[str, float]:
    """The floor: every field parsed by pyarrow, the headline numbers in numpy.

    Reads each JudgeBench file whole with ``pyarrow.json`` (every field, texts included), takes
    the two games' decisions, and computes the first-shown share (P(the slot shown first wins)
    among decisive verdicts) with a ``resamples``-draw item-cluster bootstrap, and the positional
    agreement (same stored verdict in both orders).  The audit's card gives the same two numbers.
    """
    import pyarrow.compute as pc
    import pyarrow.json as pj

    out: dict[str, float] = {}
    for f in sorted(folder.glob("*.jsonl")):
        t = pj.read_json(f, read_options=pj.ReadOptions(block_size=1 << 24))
        games = t.column("judgments")
        shown = [pc.struct_field(pc.list_element(games, g), "decision").to_numpy(zero_copy_only=False)
                 for g in (0, 1)]
        item = pc.binary_join_element_wise(t.column("source"), pc.cast(t.column("original_id"), "string"), "/")
        codes = np.asarray(item.dictionary_encode().combine_chunks().indices)
        first = np.concatenate([shown[0] == "A>B", shown[1] == "A>B"]).astype(float)
        dec = np.concatenate([np.isin(s, ("A>B", "B>A")) for s in shown]).astype(float)
        cl = np.concatenate([codes, codes])
        k = int(cl.max()) + 1
        cn, cd = np.bincount(cl, first * dec, k), np.bincount(cl, dec, k)
        rng = np.random.default_rng(seed)
        boot = np.empty(resamples)
        for r in range(resamples):
            idx = rng.integers(0, k, k)
            boot[r] = cn[idx].sum() / cd[idx].sum()
        stored = [shown[0], np.where(shown[1] == "A>B", "B>A", np.where(shown[1] == "B>A", "A>B", shown[1]))]
        out[f.name] = float(cn.sum() / cd.sum())
        out[f.name + ":ci"] = float(np.quantile(boot, 0.025))
        out[f.name + ":agreement"] = float(np.mean(stored[0] == stored[1]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--judges", type=int, default=2, help="judge files the pairs are split over (default 2)")
    ap.add_argument("--resamples", type=int, default=1000, help="card bootstrap resamples (default 1000)")
    ap.add_argument("--text-scale", type=int, nargs="+", default=[1],
                    help="response lengths x these factors, same pairs (default 1; '1 10' for the memory check)")
    ap.add_argument("--no-plain", action="store_true", help="skip the plain pass")
    ap.add_argument("--tmp", help="folder for the synthetic logs (default: the system temp folder)")
    ap.add_argument("--plain-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.plain_child:  # the plain pass, run in its own process so its peak memory is its own
        print(json.dumps(plain_pass(Path(args.plain_child), args.resamples)))
        return
    rows = []
    print(f"{'pairs':>9} {'scale':>5} {'input MB':>9} {'wall s':>7} {'CPU s':>7} {'peak MB':>8} "
          f"{'plain CPU s':>11} {'plain MB':>8} {'CPU ratio':>9}")
    for n in sorted(args.pairs):
        for scale in args.text_scale:
            with tempfile.TemporaryDirectory(dir=args.tmp) as d:
                folder = Path(d) / "outputs"
                folder.mkdir()
                size = write_log(folder, n, args.judges, text_scale=scale)
                wall, cpu, rss, rc = run_audit(folder, Path(d) / "audit", args.resamples)
                if rc != 0:
                    raise SystemExit(f"judgelab audit failed on {n} pairs (rc {rc})")
                pcpu = prss = math.nan
                if not args.no_plain:
                    _, pcpu, prss, prc = run_child([sys.executable, __file__, "--plain-child", str(folder),
                                                   "--resamples", str(args.resamples)])
                    if prc != 0:
                        raise SystemExit(f"plain pass failed on {n} pairs (rc {prc})")
            rows.append((n, scale, cpu, rss))
            print(f"{n:>9} {scale:>5} {size / 1e6:>9.1f} {wall:>7.1f} {cpu:>7.1f} {rss:>8.0f} {pcpu:>11.1f} "
                  f"{prss:>8.0f} {cpu / pcpu:>9.2f}", flush=True)
    for scale in args.text_scale:
        sized = [(n, c, m) for n, s, c, m in rows if s == scale]
        for (n0, t0, m0), (n1, t1, m1) in itertools.pairwise(sized):
            k = math.log(n1 / n0)
            print(f"growth {n0} -> {n1} pairs (text x{scale}): CPU time ~ n^{math.log(t1 / t0) / k:.2f}, "
                  f"peak memory ~ n^{math.log(m1 / m0) / k:.2f}")
    if len(args.text_scale) > 1:
        base = min(args.text_scale)
        for n in sorted(args.pairs):
            peak = {s: m for nn, s, _, m in rows if nn == n}
            for s in args.text_scale:
                if s != base:
                    print(f"{n} pairs: peak memory with texts x{s} / x{base} = {peak[s] / peak[base]:.3f}")


if __name__ == "__main__":
    main()
