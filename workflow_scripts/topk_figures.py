"""Rule topk_figures: the paper's Figs. 2, 3, 4, 5, 7 and 8."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table
from judgelab.topk.pipeline import make_figures
from judgelab.workflow import run_script, simulated_inputs_of


def main(sm):
    make_figures(
        budgets=[read_table(p) for p in sm.input.budget], synthetic=read_table(sm.input.synthetic),
        scores=read_table(sm.input.scores), allocation=read_table(sm.input.allocation),
        judges=read_table(sm.input.judges), frontier=read_table(sm.input.frontier), cfg=sm.params.cfg,
        focus=sm.params.focus, config_hash=sm.params.config_hash, outputs=dict(sm.output.items()),
        simulated_inputs=simulated_inputs_of(sm.input),
    )


run_script(snakemake, main)
