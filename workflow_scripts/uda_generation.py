"""Rule uda_generation: a generated tournament's answer calls by status and the prompts it left out."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import read_table, write_table
from judgelab.uda.tournament import generation_summary
from judgelab.workflow import provenance, run_script


def main(sm):
    prov = sm.params.provenance
    generated = pd.concat([read_table(p) for p in sm.input.calls], ignore_index=True)
    summary = generation_summary(generated, read_table(sm.input.tournament))
    write_table(summary.assign(dataset=sm.wildcards.dataset), sm.output[0],
                provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
