"""Bias-card throughput: recorded verdicts imported and carded per second (JSONL log -> card).

    python benchmarks/bench_audit.py [--items 2000] [--judges 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from judgelab.bias_card import CardSettings, bias_card
from judgelab.bias_card.planted import PlantedJudge, planted_log
from judgelab.io import write_table
from judgelab.verdict_import import import_verdicts, preset_mapping


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=2000, help="items per judge (2 pairs x 2 orders each)")
    ap.add_argument("--judges", type=int, default=3)
    args = ap.parse_args()
    j = PlantedJudge(position=0.2, length=0.2)
    with tempfile.TemporaryDirectory() as d:
        files = []
        for k in range(args.judges):
            p = Path(d) / f"judge{k}.parquet"
            write_table(planted_log(j, n_items=args.items, seed=k, judge=f"judge{k}"), p)
            files.append(p)
        bias_card(import_verdicts(files[:1], preset_mapping("judgelab")).head(200), CardSettings())  # warm imports
        t0 = time.perf_counter()
        table = import_verdicts(files, preset_mapping("judgelab"))
        t1 = time.perf_counter()
        bias_card(table, CardSettings())
        t2 = time.perf_counter()
    n = len(table)
    print(f"{n} verdicts, {args.judges} judges: import {n / (t1 - t0):,.0f} verdicts/s, "
          f"card {n / (t2 - t1):,.0f} verdicts/s ({t2 - t1:.2f} s for {args.judges} cards)")


if __name__ == "__main__":
    main()
