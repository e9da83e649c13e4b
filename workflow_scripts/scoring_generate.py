"""Rules scoring_references / scoring_responses: the generation-review pipeline (paper 004, Fig. 4)."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.io import write_table
from judgelab.judges import make_judge
from judgelab.scoring.generation import generation_levels, run_generation_review, tasks_for
from judgelab.scoring.items import study_items
from judgelab.workflow import provenance, run_script


def main(sm):
    g, prov, purpose = sm.params.generation, sm.params.provenance, sm.params.purpose
    items = study_items(sm.input.item_tables, sm.input.get("responses"))
    groups = sorted({(it.dataset, it.group_id) for it in items})
    levels = generation_levels(groups, purpose, seed=sm.params.seed, generation=g,
                               perturbations=sm.params.perturbations,
                               dataset_perturbations=sm.params.get("dataset_perturbations"))
    judges = [make_judge(JudgeSpec.from_dict(e, where=f"judge {e['name']}")) for e in sm.params.models]
    try:
        with CallCache(sm.params.cache) as cache:
            results, calls = run_generation_review(
                tasks_for(items, purpose, levels), judges, cache, max_attempts=g["max_attempts"],
                temperature=g["temperature"], sim_hit_rate=g["sim_hit_rate"], on_reject=g["on_reject"],
                label=purpose, max_error_rate=sm.params.max_error_rate)
    finally:
        for j in judges:
            j.close()
    pv = provenance(prov["config_hash"], prov["seed"], prov["judges"])
    write_table(results, sm.output.results, provenance=pv)
    write_table(calls, sm.output.calls, provenance=pv)


run_script(snakemake, main)
