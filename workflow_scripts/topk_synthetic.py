"""Rule topk_synthetic: the synthetic Bradley-Terry simulator with planted c*, kappa*."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import write_table
from judgelab.topk.pipeline import synthetic_tables
from judgelab.workflow import provenance, run_script


def main(sm):
    prov = sm.params.provenance
    tables = synthetic_tables(sm.params.cfg, sm.params.seed)
    p = provenance(prov["config_hash"], prov["seed"], []) | {"simulated": True}  # no judge: the simulator
    for name, df in tables.items():
        write_table(df, sm.output[name], provenance=p)


run_script(snakemake, main)
