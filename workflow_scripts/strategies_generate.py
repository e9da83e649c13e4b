"""Rule strategies_generate: a generator judge writes the controlled set's texts (expansions, MODEL_ORIGIN answers)."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.datasets.controlled import load_bank
from judgelab.io import write_table
from judgelab.judges import make_judge
from judgelab.strategies.build import controlled_spec, generate_texts
from judgelab.workflow import provenance, run_script


def main(sm):
    p, g = sm.params, sm.params.g
    judge = make_judge(JudgeSpec.from_dict(p.judge, where=f"judge {sm.wildcards.judge}"))
    try:
        with CallCache(g["cache"]) as cache:
            table = generate_texts(judge, load_bank(sm.input.bank), controlled_spec(g["controlled"], g["seed"]), cache,
                                   expansion=p.tasks["expansion"], families=p.tasks["families"],
                                   max_error_rate=g["max_error_rate"])
    finally:
        judge.close()
    prov = p.provenance
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
