"""Rule topk_rank: rank one of the user's items files live with one judge, through the call
cache, until the posterior stopping rule or the budget (judgelab.topk.live)."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import write_table
from judgelab.topk.pipeline import rank_pool
from judgelab.workflow import provenance, run_script


def main(sm):
    q = sm.params.q
    tables = rank_pool(q["judge"], q["cfg"], sm.input.pool_file, sm.wildcards.pool, q["cache"], q["max_error_rate"])
    prov = q["provenance"]
    p = provenance(prov["config_hash"], prov["seed"], prov["judges"])
    for name in ("ranking", "queries", "trace", "summary"):
        write_table(tables[name], sm.output[name], provenance=p)


run_script(snakemake, main)
