"""Rule strategies_replay: S1 (position swap) from real judges' recorded verdicts in both orders."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_verdicts, write_table
from judgelab.strategies.analysis import replay_s1_table
from judgelab.workflow import provenance, run_script


def main(sm):
    table = replay_s1_table(read_verdicts(list(sm.input.calls)), read_verdicts(list(sm.input.verdicts)))
    prov = sm.params.provenance
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
