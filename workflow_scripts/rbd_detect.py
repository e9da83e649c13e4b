"""Rule rbd_detect: one detector on the balanced test set and the diagnostic sets."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.io import write_table
from judgelab.judges import make_judge
from judgelab.rbd.detector import PREDICTION_COLUMNS, DetectorSpec, cases_from_frame, few_shot_examples, run_detector
from judgelab.rbd.prompts import DETECTOR_PROMPTS
from judgelab.rbd.train import classify, trained_detector_judge
from judgelab.workflow import provenance, run_script


def classifier_table(spec, cases, model_dir):
    from judgelab.rbd.detector import classifier_texts

    preds = classify(f"{model_dir}/merged", classifier_texts(cases, spec.max_words))
    rows = []
    for c, y in zip(cases, preds, strict=True):
        rows.append({"detector": spec.name, "prompting": spec.prompting, "case_id": c.case_id, "subset": c.subset,
                     "set": c.set, "item_id": c.item_id, "evaluator": c.evaluator, "bias_type": c.bias_type,
                     "truth": c.truth, "pred": y, "reasoning": "", "judge": spec.name, "backend": "classifier",
                     "model": f"{model_dir}/merged", "family": "rbd", "simulated": False, "judge_seed": 0,
                     "status": "ok", "parse_method": "argmax", "raw_text": y, "tokens_in": 0, "tokens_out": 0,
                     "cost_usd": 0.0, "key": ""})
    return pd.DataFrame(rows, columns=PREDICTION_COLUMNS)


def main(sm):
    p = sm.params
    spec = DetectorSpec.from_entry(p.detector, where=f"rbd.detectors ({sm.wildcards.detector})")
    cases = cases_from_frame(pd.read_parquet(sm.input.cases))
    if spec.prompting == "classifier":
        table = classifier_table(spec, cases, sm.input.model)
    else:
        shots = DETECTOR_PROMPTS.get(spec.prompting).shots
        examples = few_shot_examples(pd.read_parquet(sm.input.traces), int(p.seed), shots, spec.example_max_words) \
            if shots else []
        judge = trained_detector_judge(sm.input.model, spec.name, options=spec.options,
                                   sampling={"max_tokens": spec.max_tokens or 64}) if spec.trained else \
            make_judge(JudgeSpec.from_dict(spec.judge, where=f"detector {spec.name}"))
        try:
            with CallCache(p.cache) as cache:
                table = run_detector(judge, spec, cases, cache, examples=examples, label="rbd detector test",
                                     max_error_rate=p.max_error_rate)
        finally:
            judge.close()
    if spec.trained:  # weights learned from the teacher's traces: synthetic when the teacher or panel is
        traces = pd.read_parquet(sm.input.traces, columns=["simulated"])
        table["simulated"] = bool(traces["simulated"].astype(bool).any()) or bool(table["simulated"].any())
    prov = p.provenance
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
