"""Rule uda_tournament: the prompts x answer-models table of one tournament."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table, write_table
from judgelab.uda.tournament import build_tournament
from judgelab.workflow import provenance, run_script


def main(sm):
    prov = sm.params.provenance
    context = {"human": read_table(sm.input[0])} if len(sm.input) else {}
    table = build_tournament(sm.params.name, sm.params.spec, int(prov["seed"]), context=context)
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"]))


run_script(snakemake, main)
