"""Wall time of a no-op rerun of the whole default DAG (goal <= 10 s).

Runs the default DAG once if results are missing, then times `snakemake --cores 2`
with everything up to date (the cost a user pays to confirm nothing changed), and a
forced rerun of the judge-querying rules (every call a cache hit).

    python benchmarks/bench_noop_rerun.py
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def timed(*args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([SNAKEMAKE, "--cores", "2", "-q", *args], cwd=REPO, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    first = timed()
    noop = min(timed() for _ in range(3))
    forced = timed("--forcerun", "orders_query")
    print(f"default DAG: first call {first:.1f} s (includes any missing work)")
    print(f"  no-op rerun: {noop:.2f} s (best of 3; goal <= 10 s)")
    print(f"  forced rerun of all judge queries (all cache hits): {forced:.1f} s")


if __name__ == "__main__":
    main()
