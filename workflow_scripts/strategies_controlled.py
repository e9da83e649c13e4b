"""Rule strategies_controlled: assemble the 375-pair controlled bias set and summarise it."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.datasets.controlled import controlled_summary, load_bank
from judgelab.io import read_verdicts, write_table
from judgelab.strategies.build import assemble_controlled, controlled_spec
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    gens = read_verdicts(list(sm.input.generations)) if len(sm.input.generations) else None
    pairs = assemble_controlled(load_bank(sm.input.bank), gens, controlled_spec(p.controlled, p.seed),
                                p.origin_generators)
    prov = provenance(p.provenance["config_hash"], p.provenance["seed"], p.provenance["judges"])
    write_table(pairs, sm.output.pairs, provenance=prov)
    write_table(controlled_summary(pairs), sm.output.summary, provenance=prov)


run_script(snakemake, main)
