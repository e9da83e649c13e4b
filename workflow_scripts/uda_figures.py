"""Rule uda_figures: trajectories (Fig. 3), heatmaps (Fig. 5), Pearson markers (Fig. 4), training curves."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table
from judgelab.plots.uda import heatmap_figure, pearson_figure, training_figure, trajectories_figure
from judgelab.registry import is_simulated
from judgelab.uda.metrics import method_keys
from judgelab.workflow import run_script, simulated_inputs_of


def main(sm):
    prov = sm.params.provenance
    ds = sm.wildcards.dataset
    simulated = any(is_simulated(j) for j in prov["judges"])
    ch = prov["config_hash"]
    inputs = simulated_inputs_of(sm.input)
    traj = read_table(sm.input.trajectories)
    methods = read_table(sm.input.methods)
    ref_name = str(methods["reference"].iloc[0]) if len(methods) else "none"
    trajectories_figure(traj, sm.output.trajectories, title=f"{ds}: Elo trajectories of every judge (Fig. 3)",
                        simulated=simulated, config_hash=ch, methods=method_keys(traj), simulated_inputs=inputs)
    heatmap_figure(read_table(sm.input.matrix), sm.output.heatmap, title=f"{ds}: judge x model scores (Fig. 5)", simulated=simulated,
                   config_hash=ch, reference_name=None if ref_name == "none" else ref_name,
                   simulated_inputs=inputs)
    pearson_figure(read_table(sm.input.reference), sm.output.pearson, title=f"{ds}: Pearson with {ref_name} (Fig. 4)",
                   reference_name=ref_name, simulated=simulated, config_hash=ch, simulated_inputs=inputs)
    hist = read_table(sm.input.history[0]) if len(sm.input.history) else None
    histories = {} if hist is None else {v: g for v, g in hist.groupby("variant", sort=True)}
    training_figure(histories, sm.output.training, title=f"{ds}: adapter training (Eq. 3)", simulated=simulated,
                    config_hash=ch, simulated_inputs=inputs)


run_script(snakemake, main)
