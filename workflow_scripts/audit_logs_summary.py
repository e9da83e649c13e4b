"""Rule audit_logs_summary: every log set's bias card in one table."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import write_table
from judgelab.workflow import run_script


def main(sm):
    frames = [pd.read_csv(p).assign(set=s) for p, s in zip(sm.input, sm.params.sets, strict=True)]
    table = pd.concat(frames, ignore_index=True)
    write_table(table[["set", *[c for c in table.columns if c != "set"]]], sm.output[0])


run_script(snakemake, main)
