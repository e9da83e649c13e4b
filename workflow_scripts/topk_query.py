"""Rule topk_query: one judge's oracle (all ordered pairs of every pool), the bias
probes and LLMBar, through the call cache."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.datasets.pairs import load_pairs
from judgelab.io import read_table, write_table
from judgelab.topk.pipeline import llmbar_query, query_judge
from judgelab.workflow import provenance, run_script


def main(sm):
    q = sm.params.q
    oracle, probes = query_judge(q["judge"], q["cfg"], read_table(sm.input.pools), load_pairs(sm.input.probes),
                                 q["cache"], q["max_error_rate"])
    llmbar = llmbar_query(q["judge"], q["cfg"], read_table(sm.input.llmbar), q["cache"], q["max_error_rate"])
    prov = q["provenance"]
    p = provenance(prov["config_hash"], prov["seed"], prov["judges"])
    write_table(oracle, sm.output.oracle, provenance=p)
    write_table(probes, sm.output.probes, provenance=p)
    write_table(llmbar, sm.output.llmbar, provenance=p)


run_script(snakemake, main)
