"""Rule topk_llmbar_pairs: the configured LLMBar subsets as one pairs table."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import write_table
from judgelab.topk.pipeline import llmbar_pairs
from judgelab.workflow import provenance, run_script


def main(sm):
    prov = sm.params.provenance
    write_table(llmbar_pairs(sm.params.cfg), sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"]))


run_script(snakemake, main)
