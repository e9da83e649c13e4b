"""Rule uda_scores: baseline and UDA Elo scores and trajectories of every judge on one tournament."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import torch

from judgelab.io import read_table, read_verdicts, write_table
from judgelab.uda.elo import EloConfig
from judgelab.uda.study import load_data, score_tournament
from judgelab.workflow import provenance, run_script


def main(sm):
    torch.set_num_threads(max(1, int(sm.threads)))
    prov = sm.params.provenance
    data = load_data(sm.wildcards.dataset, read_table(sm.input.tournament), read_verdicts(sm.input.verdicts),
                     read_table(sm.input.embeddings), sm.params.judges)
    adapters = [(p, str(p).split("/")[-3]) for p in sm.input.adapters]  # results/uda/<trained_on>/adapters/<v>.pt
    scores, trajectories = score_tournament(data, adapters, EloConfig.from_dict(sm.params.elo),
                                            order_seed=int(prov["seed"]) + 1)
    p = provenance(prov["config_hash"], prov["seed"], prov["judges"])
    write_table(scores, sm.output.scores, provenance=p)
    write_table(trajectories, sm.output.trajectories, provenance=p)


run_script(snakemake, main)
