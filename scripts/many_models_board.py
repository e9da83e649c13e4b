"""Peak memory of ``leaderboard`` on a synthetic log of N distinct models (three games each against one
baseline: a win, a loss, a tie).  Prints ``models N seconds S peak_gib G ranked R``; used by
tests/board/test_many_models.py (``python scripts/many_models_board.py 10000``)."""

from __future__ import annotations

import resource
import sys
import time

import numpy as np
import pandas as pd

from judgelab.board.battles import battles_from_table
from judgelab.board.table import BoardSettings, leaderboard
from judgelab.verdict_import.importer import RECORDED_COLUMNS


def peak_rss_kib() -> float:
    """This process's peak resident memory in KiB: ``VmHWM`` of ``/proc/self/status`` (the high-water mark
    of this program's own memory map), else ``ru_maxrss``.  Why not ``ru_maxrss`` alone: Linux carries it
    across ``fork`` and ``exec``, so a script started by a large parent (a pytest worker holding 2 GiB)
    reports the parent's peak, not its own."""
    try:
        for line in open("/proc/self/status", encoding="ascii"):
            if line.startswith("VmHWM:"):
                return float(line.split()[1])
    except OSError:
        pass
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def main(n_models: int) -> None:
    per = 3
    k = n_models * per
    table = pd.DataFrame({c: "" for c in RECORDED_COLUMNS}, index=range(k)).assign(
        judge="j", item_id=[f"q{i % 50}" for i in range(k)], pair_id=[f"p{i}" for i in range(k)], order="AB",
        response_a="a b c", response_b=["w " * (2 + i % 7) for i in range(k)], model_a="base",
        model_b=np.repeat([f"m{i}" for i in range(n_models)], per), preference=np.tile([1.0, 0.0, 0.5], n_models),
        status="ok", simulated=False, source_file="synthetic", source_row=np.arange(k), label="")
    start = time.time()
    board = leaderboard(battles_from_table(table), BoardSettings(style_rounds=2), judges=False)
    peak = peak_rss_kib() / 2**20  # KiB -> GiB
    ranked = int(board.table["bias_aware_status"].eq("ok").sum())
    print(f"models {n_models} seconds {time.time() - start:.1f} peak_gib {peak:.3f} ranked {ranked}")


if __name__ == "__main__":
    main(int(sys.argv[1]))
