"""Rule strategies_pairs: load a gold-labelled pair set (MT-Bench human votes, LLMBar) with its seeded sample."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import write_table
from judgelab.strategies.datasets import load_study_pairs
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    table = load_study_pairs(p.name, dict(p.spec))
    write_table(table, sm.output[0], provenance=provenance(p.provenance["config_hash"], p.provenance["seed"]))


run_script(snakemake, main)
