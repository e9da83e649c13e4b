"""Rule strategies_figures: agreement, Pareto, per-category, bias heatmap and cross-bias figures."""

from pathlib import Path

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table
from judgelab.plots.strategies import (
    agreement_figure,
    bias_heatmap,
    category_figure,
    cross_bias_heatmap,
    pareto_figure,
)
from judgelab.workflow import run_script, simulated_inputs_of


def main(sm):
    out = {Path(f).stem: f for f in sm.output}
    inputs = simulated_inputs_of(sm.input)
    agreement_figure(read_table(sm.input.agreement), out["agreement"], simulated_inputs=inputs)
    pareto_figure(read_table(sm.input.pareto), out["pareto"], simulated_inputs=inputs)
    category_figure(read_table(sm.input.category), out["category_agreement"], dataset=sm.params.category_dataset,
                    simulated_inputs=inputs)
    if "bias_heatmap" in out:
        bias_heatmap(read_table(sm.input.bias), out["bias_heatmap"], simulated_inputs=inputs)
        cross_bias_heatmap(read_table(sm.input.cross), out["cross_bias"], simulated_inputs=inputs)


run_script(snakemake, main)
