"""Rule rbd_train: fine-tune a detector (LoRA or every weight) on the kept traces, or the label-only classifier."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import write_table
from judgelab.rbd.train import TrainConfig, causal_examples, classifier_examples, train_into
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    where = f"rbd.train.runs.{sm.wildcards.run}"
    cfg = TrainConfig.from_dict(p.run, where=where)
    traces = pd.read_parquet(sm.input[0])
    make = causal_examples if cfg.kind == "causal_lm" else classifier_examples
    res = train_into(make(traces, cfg.max_words), cfg, sm.output.model, where=where)
    prov = p.provenance
    write_table(res.losses.assign(run=sm.wildcards.run, kind=cfg.kind, n_examples=res.n_examples,
                                  merged_sha256=res.merged_sha256),
                sm.output.loss, provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
