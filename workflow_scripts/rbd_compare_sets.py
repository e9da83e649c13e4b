"""Rule rbd_compare_sets: sizes and length ratios of the constructed sets vs the authors' own."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import write_table
from judgelab.rbd.sets import AUTHOR_SETS, compare_sets, items_frame
from judgelab.workflow import provenance, run_script


def main(sm):
    frames = {str(df["set"].iloc[0]): df for df in (pd.read_parquet(f) for f in sm.input)}
    for name in AUTHOR_SETS.names():
        frames[name] = items_frame(AUTHOR_SETS.get(name)(int(sm.params.seed)))
    prov = sm.params.provenance
    write_table(compare_sets(frames), sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"]))


run_script(snakemake, main)
