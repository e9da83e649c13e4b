"""Rule rbd_labels: bias labels b_i (Eq. 1) and the bias-existence summary (Fig. 3)."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import read_verdicts, write_table
from judgelab.rbd.evaluate import bias_labels, evaluation_summary
from judgelab.workflow import provenance, run_script


def main(sm):
    verdicts = read_verdicts(sm.input.verdicts)
    rules = {}
    for path in sm.input.sets:
        df = pd.read_parquet(path, columns=["set", "label_rule"])
        rules.update(dict(zip(df["set"], df["label_rule"], strict=True)))
    labels = bias_labels(verdicts, rules)
    simulated = dict(zip(verdicts["judge"], verdicts["simulated"].astype(bool), strict=False))
    prov = provenance(sm.params.provenance["config_hash"], sm.params.provenance["seed"], sm.params.provenance["judges"])
    write_table(labels, sm.output.labels, provenance=prov)
    write_table(evaluation_summary(labels, simulated), sm.output.summary, provenance=prov)


run_script(snakemake, main)
