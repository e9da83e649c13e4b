"""Rule <study>_reproduction: the paper's headline numbers beside this run's, with provenance and
verdict (judgelab/reproduction/)."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.reproduction import reproduce, write_reproduction
from judgelab.workflow import run_script


def main(sm):
    p = sm.params
    table = reproduce(p.study, p.root, [str(f) for f in sm.input], p.judges, dict(p.options))
    write_reproduction(table, sm.output[0], config_hash=p.config_hash, seed=p.seed)


run_script(snakemake, main)
