"""Rule uda_embed: one sentence embedding per answer and per judge's own answer."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd
import torch

from judgelab.io import read_table, write_table
from judgelab.uda.embeddings import EmbeddingConfig
from judgelab.uda.study import embed_tournament
from judgelab.workflow import provenance, run_script


def main(sm):
    torch.set_num_threads(max(1, int(sm.threads)))
    answers = pd.concat([read_table(p) for p in sm.input.answers], ignore_index=True)
    table = embed_tournament(read_table(sm.input.tournament), answers, EmbeddingConfig.from_dict(sm.params.embedding))
    prov = sm.params.provenance
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
