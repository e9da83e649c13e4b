"""Rule audit_pairs: load a public pair set into the pairs table."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.datasets.pairs import load_pairset, pairs_frame
from judgelab.io import write_table
from judgelab.workflow import provenance, run_script


def main(sm):
    spec, prov = sm.params.spec, sm.params.provenance
    pairs = load_pairset(spec["loader"], spec["source"], name=sm.wildcards.dataset)
    table = pairs_frame(pairs)
    n = spec.get("n_pairs")  # config audit.n_pairs: a seeded sample, kept in stored order
    if n and n < len(table):
        table = table.sample(n=int(n), random_state=int(prov["seed"])).sort_index().reset_index(drop=True)
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"]))


run_script(snakemake, main)
