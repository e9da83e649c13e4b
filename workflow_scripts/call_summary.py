"""Rule call_summary: calls, outcomes, tokens and cost per judge across all studies."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_verdicts, write_table
from judgelab.stats.agreement import CALL_SUMMARY_COLUMNS, call_summary
from judgelab.workflow import provenance, run_script


def main(sm):
    table = call_summary(read_verdicts(sm.input, columns=CALL_SUMMARY_COLUMNS))
    prov = sm.params.provenance
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
