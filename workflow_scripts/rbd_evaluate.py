"""Rule rbd_evaluate: one evaluator judges D and D_bias of every evaluated set."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.io import write_table
from judgelab.judges import make_judge
from judgelab.rbd.evaluate import evaluate_items, select_items
from judgelab.rbd.sets import items_from_frame
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    items = []
    for path in sm.input:
        items += select_items(items_from_frame(pd.read_parquet(path)), p.max_items)
    judge = make_judge(JudgeSpec.from_dict(p.judge, where=f"judge {sm.wildcards.judge}"))
    try:
        with CallCache(p.cache) as cache:
            table = evaluate_items(judge, items, cache, label="rbd evaluation", max_error_rate=p.max_error_rate)
    finally:
        judge.close()
    prov = p.provenance
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
