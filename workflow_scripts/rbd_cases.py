"""Rule rbd_cases: detector cases -- the teacher's training tuples, the balanced test set, the diagnostics."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import write_table
from judgelab.rbd.detector import balanced_test_set, build_cases, cases_frame
from judgelab.rbd.prompts import BIAS_TYPES
from judgelab.rbd.sets import items_from_frame, unit_hash
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    items = []
    for path in sm.input.sets:
        items += items_from_frame(pd.read_parquet(path))
    labels = pd.read_parquet(sm.input.labels)
    cases = build_cases(items, labels, p.evaluator_models)
    bias_sets = {p.bias_sets.get(b, b) for b in BIAS_TYPES}  # rbd.bias_sets: constructed or the authors' sets
    train = [c for c in cases if c.subset == "train" and c.set in bias_sets and c.evaluator in p.supervision_evaluators]
    test = balanced_test_set([c for c in cases if c.subset == "test" and c.set in bias_sets], p.test_size, int(p.seed))
    diag = []
    for name in sorted({c.set for c in cases if c.set.startswith("diag_")}):
        chosen = sorted((c for c in cases if c.set == name), key=lambda c: unit_hash(p.seed, "diag", c.case_id))
        diag += chosen if p.diag_size is None else chosen[: p.diag_size]
    for c in diag:
        c.subset = c.set
    prov = provenance(p.provenance["config_hash"], p.provenance["seed"], p.provenance["judges"])
    write_table(cases_frame(train), sm.output.train, provenance=prov)
    write_table(cases_frame(test + diag), sm.output.test, provenance=prov)


run_script(snakemake, main)
