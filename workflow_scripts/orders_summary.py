"""Rule orders_summary: accuracy and order consistency per judge and pair set."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_verdicts, write_table
from judgelab.stats.agreement import order_summary
from judgelab.workflow import provenance, run_script


def main(sm):
    verdicts = read_verdicts(sm.input, dataset_level=-2)
    table = order_summary(verdicts, by=("dataset", "judge", "simulated"))
    prov = sm.params.provenance
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
