"""Rule scoring_figures: Figure 5 (rho vs reference score) and Figure 6 (score distributions)."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table
from judgelab.plots.scoring import distribution_heatmaps, reference_rho_figure
from judgelab.workflow import run_script, simulated_inputs_of


def main(sm):
    inputs = simulated_inputs_of(sm.input)
    reference_rho_figure(read_table(sm.input.table3), sm.output.reference, gold_order=sm.params.gold_order,
                         simulated_inputs=inputs)
    dist = read_table(sm.input.distributions)
    for dataset, path in zip(sm.params.datasets, sm.output.distributions, strict=True):
        distribution_heatmaps(dist, path, dataset=dataset, gold_order=sm.params.gold_order, simulated_inputs=inputs)


run_script(snakemake, main)
