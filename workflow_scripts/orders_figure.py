"""Rule orders_figure: accuracy per judge and presentation order."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table
from judgelab.plots.orders import accuracy_figure
from judgelab.workflow import run_script, simulated_inputs_of


def main(sm):
    accuracy_figure(read_table(sm.input[0]), sm.output[0], simulated_inputs=simulated_inputs_of(sm.input))


run_script(snakemake, main)
