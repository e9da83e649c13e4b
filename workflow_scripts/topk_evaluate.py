"""Rule topk_evaluate: full-data fits and budget runs of one judge against its oracles."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table, write_table
from judgelab.topk.pipeline import evaluate_judge
from judgelab.workflow import provenance, run_script


def main(sm):
    prov = sm.params.provenance
    tables = evaluate_judge(read_table(sm.input.oracle), read_table(sm.input.pools), sm.params.judge, sm.params.cfg,
                            sm.params.seed, focus=sm.params.focus)
    p = provenance(prov["config_hash"], prov["seed"], prov["judges"])
    for name, df in tables.items():
        write_table(df, sm.output[name], provenance=p)


run_script(snakemake, main)
