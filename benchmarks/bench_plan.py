"""Time ``judgelab plan`` on each shipped paper config (and the default config's whole DAG).

Each plan runs as its own ``judgelab plan --quiet`` process with an empty project directory
(nothing cached), as a user would start it; the script prints, per config, the CPU seconds of
that process (user + system, from ``os.wait4`` of the finished child), its wall time,
its peak RSS and the load average before and after, and the calls it planned.  CPU seconds are
the figure that compares on a shared machine: wall time grows with the other jobs beside it.

    python benchmarks/bench_plan.py                       # the five paper configs
    python benchmarks/bench_plan.py --configs default     # the whole DAG of the default config
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
#: name -> (config file or None for the default config, targets): the commands of docs/benchmarks-plan.md
CONFIGS = {
    "paper-strategies": ("config/judges/paper-strategies.yaml", ["results/strategies/tables/agreement.csv"]),
    "paper-scoring": ("config/judges/paper-scoring.yaml", ["results/scoring/table3.csv"]),
    "paper-topk": ("config/judges/paper-topk.yaml", ["results/topk/tables/table4_recall_at_k.csv"]),
    "paper-uda": ("config/judges/paper-uda.yaml", ["results/uda/summary.csv"]),
    "paper-rbd": ("config/judges/paper-rbd.yaml", ["results/rbd/loop/table2.csv", "results/rbd/tables/table3.csv"]),
    "default": (None, []),
}
PAPER = [n for n in CONFIGS if n != "default"]


def time_plan(name: str) -> dict[str, object]:
    cfg, targets = CONFIGS[name]
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        out = Path(tmp) / "plan.csv"
        cmd = [sys.executable, "-m", "judgelab.cli", "plan", "--quiet", "--directory", str(Path(tmp) / "empty"),
               "--out", str(out), *(["--configfile", cfg] if cfg else []), *targets]
        load0 = os.getloadavg()[0]
        started = time.perf_counter()
        with open(Path(tmp) / "stderr", "w+") as err:
            proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own CPU time and peak RSS
            wall = time.perf_counter() - started
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                err.seek(0)
                raise SystemExit(f"{name}: judgelab plan failed:\n{err.read()[-2000:]}")
        table = pd.read_csv(out, keep_default_na=False)
    totals = table[table["study"] == "(all studies)"]
    return {"config": name, "calls": int(totals["calls"].sum()), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "wall_s": round(wall, 1), "peak_rss_mib": round(usage.ru_maxrss / 1024),
            "load": f"{load0:.1f}-{os.getloadavg()[0]:.1f}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=PAPER)
    args = ap.parse_args()
    rows = []
    for name in args.configs:
        rows.append(time_plan(name))
        print(rows[-1], flush=True)
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
