"""Rule <study>_reproduction: the paper's headline numbers beside this run's, with provenance and
verdict (judgelab/reproduction/)."""

from pathlib import Path

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.reproduction import reproduce, write_reproduction
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    # the study's result folder: results/<study>, where reproduction.csv goes
    table = reproduce(p.study, Path(sm.output[0]).parent, [str(f) for f in sm.input], p.judges, dict(p.options))
    write_reproduction(table, sm.output[0], provenance(p.config_hash, p.seed, list(p.judges.values())))


run_script(snakemake, main)
