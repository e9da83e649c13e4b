"""Rules scoring_query / scoring_gold: one judge scores every sampled item under each prompt variant."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.io import write_table
from judgelab.judges import make_judge
from judgelab.scoring.items import study_items
from judgelab.scoring.prompt import get_variant
from judgelab.scoring.query import judge_scores
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    items = study_items(sm.input.item_tables, sm.input.get("responses"))
    refs = pd.read_parquet(sm.input.references) if sm.input.get("references") else None
    judge = make_judge(JudgeSpec.from_dict(p.judge, where=f"judge {p.judge['name']}"))
    try:
        with CallCache(p.cache) as cache:
            table = judge_scores(judge, items, [get_variant(v) for v in p.variants], cache, references=refs,
                                 seed=p.seed, temperature=p.temperature, repeats=p.repeats,
                                 label=sm.rule, max_error_rate=p.max_error_rate,
                                 missing_reference="drop" if p.on_reject == "drop" else "error",
                                 variants_of=p.get("dataset_perturbations"))
    finally:
        judge.close()
    prov = p.provenance
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
