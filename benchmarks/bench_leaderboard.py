"""``judgelab leaderboard`` at scale, and the planted-truth check over many worlds.

    python benchmarks/bench_leaderboard.py --models 200 --items 805          # 161k verdicts, CIs included
    python benchmarks/bench_leaderboard.py --planted 20                      # coverage over 20 planted worlds

Scale: a planted world (:mod:`judgelab.simworld.leaderboard`: 200 models against one baseline,
805 instructions each, a length- and markdown-biased judge) is built as a recorded verdict
table, then the whole leaderboard runs in this process: battles with style counts from the
texts, raw win rates with clustered intervals, AlpacaEval's cross-validated LC per model (with
the difficulty estimated jointly), Arena-Hard's style control with 100 bootstrap rounds, the
bias-aware Bradley-Terry with its Laplace intervals, rank flips.  Printed: verdicts, wall and
CPU seconds of each stage and in all, and the process's peak RSS (``ru_maxrss``).  A plain
baseline beside it: the raw win rates alone (what a user computes with a pandas groupby).

Planted: for each of ``N`` worlds (24 models x 300 items, seeds 0..N-1) the Spearman
correlation of each score with the true quality and the share of true scores inside each
interval; printed per score as mean Spearman, the share of worlds where it beats raw, and the
pooled coverage.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import pandas as pd


def _stage(name: str, fn, times: list):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    times.append((name, time.perf_counter() - w, time.process_time() - c))
    return out


def scale(models: int, items: int, rounds: int) -> None:
    from judgelab.board import table as T
    from judgelab.board.battles import battles_from_table
    from judgelab.board.bias_aware import bias_aware
    from judgelab.board.winrate import win_rates
    from judgelab.simworld.leaderboard import planted_board

    pb = planted_board(models, items, seed=0)
    n = len(pb.table)
    print(f"{n} verdicts ({models} models x {items} items), style bootstrap {rounds} rounds")
    times: list = []
    w0, c0 = time.perf_counter(), time.process_time()
    b = _stage("battles (style counts from texts)", lambda: battles_from_table(pb.table), times)
    s = T.BoardSettings(style_rounds=rounds)
    model, _opp, y, item, *_ = T._oriented(b)
    _stage("raw win rates + clustered CIs", lambda: win_rates(model, y, item, b.n_models), times)
    _stage("length-controlled (CV GLM per model)", lambda: T._lc(b, s), times)
    _stage(f"style control ({rounds} bootstrap fits)", lambda: T._style(b, s), times)
    _stage("bias-aware BT (Laplace CIs)", lambda: bias_aware(b), times)
    board = _stage("whole leaderboard() again, end to end", lambda: T.leaderboard(b, s), times)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    for name, w, c in times:
        print(f"  {name:45s} wall {w:7.1f} s  cpu {c:7.1f} s")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    end_to_end = times[-1]
    print(f"leaderboard() end to end: wall {end_to_end[1]:.1f} s, cpu {end_to_end[2]:.1f} s; "
          f"all stages above: wall {wall:.1f} s, cpu {cpu:.1f} s; peak RSS {rss:.0f} MiB (table included)")
    w, c = time.perf_counter(), time.process_time()
    t = pb.table
    base = (t.assign(p=t["preference"]).groupby("model_b", observed=True)["p"].mean() * 100)
    print(f"plain baseline (pandas groupby mean, no CI, no correction): wall {time.perf_counter() - w:.2f} s, "
          f"cpu {time.process_time() - c:.2f} s; {len(base)} models")
    print(f"{len(board.flips)} rank flips")


def planted(n_worlds: int, models: int, items: int, rounds: int) -> None:
    from scipy.stats import spearmanr

    from judgelab.board.battles import battles_from_table
    from judgelab.board.table import CORRECTIONS, BoardSettings, leaderboard
    from judgelab.simworld.leaderboard import planted_board

    cols = [("win_rate", "win_rate_ci_low", "win_rate_ci_high")] + [c[:3] for c in CORRECTIONS]
    rho = {c[0]: [] for c in cols}
    cover = {c[0]: [] for c in cols}
    for seed in range(n_worlds):
        pb = planted_board(models, items, seed=seed)
        t = leaderboard(battles_from_table(pb.table), BoardSettings(style_rounds=rounds)).table.merge(
            pb.truth, on="model")
        for c, lo, hi in cols:
            rho[c].append(spearmanr(t[c], t["true_score"]).statistic)
            cover[c].extend(((t[lo] <= t["true_score"]) & (t["true_score"] <= t[hi])).tolist())
    raw = np.asarray(rho["win_rate"])
    rows = []
    for c, *_ in cols:
        r = np.asarray(rho[c])
        rows.append({"score": c, "mean_spearman": r.mean(), "min_spearman": r.min(),
                     "beats_raw_share": float(np.mean(r > raw)), "coverage": float(np.mean(cover[c]))})
    print(f"{n_worlds} planted worlds, {models} models x {items} items, style bootstrap {rounds} rounds")
    print(pd.DataFrame(rows).round(3).to_string(index=False))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", type=int, default=200)
    p.add_argument("--items", type=int, default=805)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--planted", type=int, default=0, help="run the planted check over this many worlds instead")
    a = p.parse_args()
    if a.planted:
        planted(a.planted, 24, 300, a.rounds)
    else:
        scale(a.models, a.items, a.rounds)


if __name__ == "__main__":
    main()
