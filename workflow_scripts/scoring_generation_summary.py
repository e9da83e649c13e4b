"""Rule scoring_generation_summary: acceptance rates of the generation-review pipeline."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import write_table
from judgelab.scoring.generation import acceptance_summary
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params.provenance
    results = pd.concat([pd.read_parquet(f) for f in sm.input.results], ignore_index=True)
    calls = pd.concat([pd.read_parquet(f) for f in sm.input.calls], ignore_index=True)
    write_table(acceptance_summary(results, calls), sm.output[0],
                provenance=provenance(p["config_hash"], p["seed"], p["judges"]))


run_script(snakemake, main)
