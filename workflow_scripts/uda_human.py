"""Rule uda_human: Bradley-Terry scores of MT-Bench models from the human votes, with bootstrap CIs."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.datasets.sources import SOURCES, resolve_data_path, source_path
from judgelab.io import write_table
from judgelab.uda.elo import EloConfig
from judgelab.uda.human import bradley_terry_scores, load_votes
from judgelab.workflow import provenance, run_script


def main(sm):
    votes_key = sm.params.votes
    path = source_path(votes_key) if votes_key in SOURCES else resolve_data_path(votes_key)
    prov = sm.params.provenance
    table = bradley_terry_scores(load_votes(path), EloConfig.from_dict(sm.params.elo), n_boot=int(sm.params.n_boot),
                                 seed=int(prov["seed"]))
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"]))


run_script(snakemake, main)
