"""Rule scoring_items: load a data set into scoring items and flag the seeded sample."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import write_table
from judgelab.scoring.items import items_frame, load_items, mark_sample
from judgelab.scoring.metrics import stable_seed
from judgelab.workflow import provenance, run_script


def main(sm):
    spec, prov, name = sm.params.spec, sm.params.provenance, sm.wildcards.dataset
    items = mark_sample(load_items(name, spec), spec.get("n_items"), stable_seed(sm.params.seed, "sample", name))
    write_table(items_frame(items), sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"]))


run_script(snakemake, main)
