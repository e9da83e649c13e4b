"""Rule topk_items: item pools of known quality and the bias-probe pairs."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import write_table
from judgelab.topk.pipeline import make_items
from judgelab.workflow import provenance, run_script


def main(sm):
    prov = sm.params.provenance
    items, probes = make_items(sm.params.cfg, prov["seed"])
    p = provenance(prov["config_hash"], prov["seed"])
    write_table(items, sm.output.pools, provenance=p)
    write_table(probes, sm.output.probes, provenance=p)


run_script(snakemake, main)
