"""Rule uda_train: train the full and the ablated UDA adapter on one tournament."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd
import torch

from judgelab.io import read_table, read_verdicts, write_table
from judgelab.uda.elo import EloConfig
from judgelab.uda.study import load_data, train_variants
from judgelab.uda.training import TrainConfig, save_adapter
from judgelab.workflow import provenance, run_script


def main(sm):
    torch.set_num_threads(max(1, int(sm.threads)))
    prov = sm.params.provenance
    data = load_data(sm.wildcards.dataset, read_table(sm.input.tournament), read_verdicts(sm.input.verdicts),
                     read_table(sm.input.embeddings), sm.params.judges)
    results = train_variants(data, sm.params.variants, TrainConfig.from_dict(sm.params.training),
                             EloConfig.from_dict(sm.params.elo), order_seed=int(prov["seed"]) + 1)
    histories = []
    for variant, path in zip(sm.params.variants, sm.output.adapters, strict=True):
        save_adapter(path, results[variant])
        histories.append(results[variant].history.assign(dataset=sm.wildcards.dataset, variant=variant))
    write_table(pd.concat(histories, ignore_index=True), sm.output.history,
                provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
