"""Rule rbd_loop_summary: Table 2 (with vs without the detector), Fig. 10 behaviour, Table 6 efficiency."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import write_table
from judgelab.rbd.loop import behaviour, efficiency, table2, table2_wide
from judgelab.workflow import provenance, run_script


def main(sm):
    traj = pd.concat([pd.read_parquet(f) for f in sm.input.trajectories], ignore_index=True)
    items = pd.concat([pd.read_parquet(f) for f in sm.input.loop_items], ignore_index=True)
    calls = pd.concat([pd.read_parquet(f) for f in sm.input.calls], ignore_index=True)
    prov = provenance(sm.params.provenance["config_hash"], sm.params.provenance["seed"], sm.params.provenance["judges"])
    t2 = table2(items, traj, int(sm.params.max_iterations))
    write_table(t2, sm.output.table2, provenance=prov)
    write_table(table2_wide(t2), sm.output.table2_wide, provenance=prov)
    write_table(behaviour(items, traj), sm.output.behaviour, provenance=prov)
    write_table(efficiency(calls), sm.output.efficiency, provenance=prov)


run_script(snakemake, main)
