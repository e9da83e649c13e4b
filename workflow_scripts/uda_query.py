"""Rule uda_query: one judge answers every prompt, then judges every ordered pair of answers."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.io import read_table, write_table
from judgelab.judges import make_judge
from judgelab.uda.tournament import judge_tournament, own_model_of
from judgelab.workflow import provenance, run_script


def main(sm):
    q = sm.params.q
    table = read_table(sm.input[0])
    judge = make_judge(JudgeSpec.from_dict(q["judge"], where=f"judge {sm.wildcards.judge}"))
    try:
        with CallCache(q["cache"]) as cache:
            answers, verdicts = judge_tournament(
                judge, table, cache, own_model=own_model_of(judge.name, judge.spec.family, q["spec"], table),
                label=f"uda:{sm.wildcards.dataset}", max_error_rate=q["max_error_rate"],
            )
    finally:
        judge.close()
    prov = provenance(q["provenance"]["config_hash"], q["provenance"]["seed"], q["provenance"]["judges"])
    write_table(answers, sm.output.answers, provenance=prov)
    write_table(verdicts, sm.output.verdicts, provenance=prov)


run_script(snakemake, main)
