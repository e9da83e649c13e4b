"""Rule scoring_stability: run-to-run stability of GPT-4's recorded scorings and of the gold protocol."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import write_table
from judgelab.scoring.metrics import stability_table
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    items = pd.concat([pd.read_parquet(f) for f in sm.input.item_tables], ignore_index=True)  # all items, not the sample
    gold = pd.read_parquet(sm.input.gold)
    table = stability_table(items, gold, n_boot=p.n_boot, alpha=p.alpha, seed=p.seed)
    write_table(table, sm.output[0],
                provenance=provenance(p.provenance["config_hash"], p.provenance["seed"], p.provenance["judges"]))


run_script(snakemake, main)
