"""Rules strategies_query*: one judge makes every call of every strategy on one pair set."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.io import read_table, write_table
from judgelab.judges import make_judge
from judgelab.strategies import StrategySettings
from judgelab.strategies.run import query_strategies
from judgelab.workflow import provenance, run_script


def main(sm):
    p, q = sm.params, sm.params.q
    judge = make_judge(JudgeSpec.from_dict(p.judge, where=f"judge {sm.wildcards.judge}"))
    settings = StrategySettings(temperatures=tuple(q["settings"]["temperatures"]),
                                cross_family_size=q["settings"]["cross_family_size"])
    try:
        with CallCache(q["cache"]) as cache:
            table = query_strategies(judge, read_table(sm.input[0]), cache, dataset=sm.wildcards.dataset,
                                     strategies=p.strategies, settings=settings, role_templates=q["templates"],
                                     label=f"strategies/{sm.wildcards.dataset}", max_error_rate=q["max_error_rate"])
    finally:
        judge.close()
    prov = p.provenance
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
