"""Rule uda_tournament: the prompts x answer-models table of one tournament."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table, write_table
from judgelab.uda.tournament import build_tournament
from judgelab.workflow import provenance, run_script


def main(sm):
    prov = sm.params.provenance
    context = {"human": read_table(sm.input.human[0])} if len(sm.input.human) else {}
    spec = dict(sm.params.spec)
    if sm.params.families:  # a generated tournament: answerers' families from their judge entries
        spec["families"] = {**sm.params.families, **dict(spec.get("families") or {})}
    table = build_tournament(sm.params.name, spec, int(prov["seed"]), context=context)
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"]))


run_script(snakemake, main)
