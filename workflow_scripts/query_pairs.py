"""Rules *_query: one judge answers every pair of a pair set, in the configured orders."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.datasets.pairs import load_pairs
from judgelab.io import write_table
from judgelab.judges import make_judge
from judgelab.judges.pairwise import judge_pairs
from judgelab.workflow import provenance, run_script


def main(sm):
    q = sm.params.q
    judge = make_judge(JudgeSpec.from_dict(q["judge"], where=f"judge {sm.wildcards.judge}"))
    try:
        with CallCache(q["cache"]) as cache:
            table = judge_pairs(judge, load_pairs(sm.input[0]), cache, template=q["template"],
                                orders=q["orders"], label=sm.wildcards.dataset,
                                max_error_rate=q["max_error_rate"])
    finally:
        judge.close()
    prov = q["provenance"]
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
