"""Rule strategies_human: human STYLE annotations (CSV) vs the judges' markdown preference (Table 9)."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table, read_verdicts, write_table
from judgelab.strategies.human import human_gap_table, load_annotations
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    table = human_gap_table(load_annotations(sm.input.annotations), read_verdicts(list(sm.input.verdicts)),
                            read_table(sm.input.pairs[0]), exclude_constant_slot=p.exclude_constant_slot)
    prov = p.provenance
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
