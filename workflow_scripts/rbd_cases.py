"""Rule rbd_cases: detector cases -- the teacher's training tuples, the balanced test set, the diagnostics."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import write_table
from judgelab.rbd.detector import build_cases, cases_frame, split_cases
from judgelab.rbd.sets import items_from_frame
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    items = []
    for path in sm.input.sets:
        items += items_from_frame(pd.read_parquet(path))
    labels = pd.read_parquet(sm.input.labels)
    cases = build_cases(items, labels, p.evaluator_models)
    train, test = split_cases(cases, bias_sets=p.bias_sets, supervision_evaluators=p.supervision_evaluators,
                              test_size=p.test_size, diag_size=p.diag_size, seed=p.seed)
    prov = provenance(p.provenance["config_hash"], p.provenance["seed"], p.provenance["judges"])
    write_table(cases_frame(train), sm.output.train, provenance=prov)
    write_table(cases_frame(test), sm.output.test, provenance=prov)


run_script(snakemake, main)
