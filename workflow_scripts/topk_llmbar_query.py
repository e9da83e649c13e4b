"""Rule topk_llmbar_replay: a replayed judge on the LLMBar subset it was recorded on, both orders."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table, write_table
from judgelab.topk.pipeline import llmbar_query
from judgelab.workflow import provenance, run_script


def main(sm):
    q = sm.params.q
    table = llmbar_query(q["judge"], q["cfg"], read_table(sm.input[0]), q["cache"], q["max_error_rate"])
    prov = q["provenance"]
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
