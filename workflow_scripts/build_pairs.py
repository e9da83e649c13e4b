"""Rule audit_pairs: load a public pair set into the pairs table."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.datasets.pairs import load_pairset, pairs_frame
from judgelab.io import write_table
from judgelab.workflow import provenance, run_script


def main(sm):
    spec, prov = sm.params.spec, sm.params.provenance
    pairs = load_pairset(spec["loader"], spec["source"], name=sm.wildcards.dataset)
    write_table(pairs_frame(pairs), sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"]))


run_script(snakemake, main)
