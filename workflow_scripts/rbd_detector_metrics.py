"""Rule rbd_detector_metrics: detector accuracy/precision/recall/F1 (Figs. 4-5) and the training-loss figure."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import read_verdicts, write_table
from judgelab.plots.rbd import detector_figure
from judgelab.rbd.detector import detector_metrics
from judgelab.workflow import provenance, run_script, simulated_inputs_of


def main(sm):
    metrics = detector_metrics(read_verdicts(sm.input.predictions))
    prov = sm.params.provenance
    write_table(metrics, sm.output.table, provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))
    losses = {str(df["run"].iloc[0]): df for df in (pd.read_csv(f) for f in sm.input.losses)}
    detector_figure(pd.read_csv(sm.output.table), losses, sm.output.figure,
                    simulated_inputs=simulated_inputs_of(sm.input))


run_script(snakemake, main)
