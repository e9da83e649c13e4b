"""Rule rbd_loop: Algorithm 1 for one evaluator with every loop detector."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.io import write_table
from judgelab.judges import make_judge
from judgelab.rbd.detector import DetectorSpec, few_shot_examples
from judgelab.rbd.loop import LoopDetector, loop_items, run_loop
from judgelab.rbd.prompts import DETECTOR_PROMPTS
from judgelab.rbd.sets import items_from_frame
from judgelab.rbd.train import trained_detector_judge
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    items = []
    for path in sm.input.sets:
        items += items_from_frame(pd.read_parquet(path))
    evaluator = make_judge(JudgeSpec.from_dict(p.judge, where=f"judge {sm.wildcards.judge}"))
    traces = pd.read_parquet(sm.input.traces)
    models = dict(zip(p.trained_runs, sm.input.models, strict=True))
    detectors = []
    for entry in p.detectors:
        spec = DetectorSpec.from_entry(entry, where="rbd.loop.detectors")
        if spec.prompting == "classifier":
            continue  # a label-only classifier gives no reasoning to re-prompt with
        shots = DETECTOR_PROMPTS.get(spec.prompting).shots
        examples = few_shot_examples(traces, int(p.seed), shots, spec.example_max_words) if shots else []
        judge = trained_detector_judge(models[spec.trained], spec.name, options=spec.options,
                                   sampling={"max_tokens": spec.max_tokens or 64}) if spec.trained \
            else make_judge(JudgeSpec.from_dict(spec.judge, where=f"detector {spec.name}"))
        detectors.append(LoopDetector(spec, judge, examples))
    li = loop_items(items, pd.read_parquet(sm.input.verdicts), evaluator=evaluator.name,
                    evaluator_model=evaluator.spec.model, sets=p.loop_sets)
    try:
        with CallCache(p.cache) as cache:
            traj, item_table, calls = run_loop(evaluator, detectors, li, cache, max_iterations=p.max_iterations,
                                               max_error_rate=p.max_error_rate)
    finally:
        evaluator.close()
        for d in detectors:
            d.judge.close()
    synthetic = bool(traces["simulated"].astype(bool).any())
    for d in detectors:  # a detector trained on a simulated teacher's traces says so
        if d.spec.trained and synthetic:
            calls.loc[(calls["role"] == "detector") & (calls["detector"] == d.spec.name), "simulated"] = True
    prov = provenance(p.provenance["config_hash"], p.provenance["seed"], p.provenance["judges"])
    write_table(traj, sm.output.trajectory, provenance=prov)
    write_table(item_table, sm.output.loop_items, provenance=prov)
    write_table(calls, sm.output.calls, provenance=prov)


run_script(snakemake, main)
