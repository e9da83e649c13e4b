"""Rule rbd_figures: Fig. 3 (bias existence), Table 2 as bars, Fig. 10 (stubbornness, overconfidence), Fig. 6."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table
from judgelab.plots.rbd import behaviour_figure, bias_existence_figure, detector_sizes_figure, loop_figure
from judgelab.workflow import run_script, simulated_inputs_of


def main(sm):
    inputs = simulated_inputs_of(sm.input)
    bias_existence_figure(read_table(sm.input.evaluation), sm.output.bias, simulated_inputs=inputs)
    loop_figure(read_table(sm.input.table2), sm.output.loop, detector=sm.params.main_detector, simulated_inputs=inputs)
    behaviour_figure(read_table(sm.input.behaviour), sm.output.behaviour, detector=sm.params.main_detector,
                     simulated_inputs=inputs)
    detector_sizes_figure(read_table(sm.input.sizes), sm.output.sizes, simulated_inputs=inputs)


run_script(snakemake, main)
