"""Rule uda_summary: one row per tournament and method across the study."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import read_table, write_table
from judgelab.uda.study import summary_row
from judgelab.workflow import provenance, run_script


def main(sm):
    rows = []
    for ds, m, s, c in zip(sm.params.datasets, sm.input.methods, sm.input.self_preference, sm.input.controls,
                           strict=True):
        rows += summary_row(ds, read_table(m), read_table(s), read_table(c))
    prov = sm.params.provenance
    write_table(pd.DataFrame(rows), sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
