"""Rule uda_answers: one answerer of a generated tournament answers every prompt (paper 000's answer prompt)."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.io import write_jsonl, write_table
from judgelab.judges import make_judge
from judgelab.uda.tournament import generate_answers, load_prompts, model_answer_rows
from judgelab.workflow import provenance, run_script


def main(sm):
    q = sm.params.q
    ds = sm.wildcards.dataset
    prov = q["provenance"]
    prompts = load_prompts(sm.input[0], q["spec"].get("n_prompts"), int(prov["seed"]))
    answerer = make_judge(JudgeSpec.from_dict(q["answerer"], where=f"judge {sm.wildcards.answerer}"))
    try:
        with CallCache(q["cache"]) as cache:
            generated = generate_answers(answerer, prompts, cache, dataset=ds, label=f"uda:{ds}:generate",
                                         max_error_rate=q["max_error_rate"])
    finally:
        answerer.close()
    write_jsonl(sm.output.jsonl, model_answer_rows(generated))
    write_table(generated, sm.output.calls, provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
