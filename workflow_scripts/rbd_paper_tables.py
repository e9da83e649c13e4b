"""Rule rbd_paper_tables: paper 001's Tables 3, 4, 5 and Fig. 6 (judgelab/rbd/tables.py)."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import read_table, write_table
from judgelab.rbd import tables as T
from judgelab.workflow import provenance, run_script


def _concat(paths, **kw):
    frames = [pd.read_parquet(p, **kw) for p in paths]
    return pd.concat(frames, ignore_index=True) if frames else None


def main(sm):
    p = sm.params
    prov = provenance(p.provenance["config_hash"], p.provenance["seed"], p.provenance["judges"])
    T_max = int(p.max_iterations)
    final = T.final_verdicts(_concat(sm.input.loop_items), _concat(sm.input.trajectories), T_max)
    verdicts = _concat(sm.input.verdicts, columns=["judge", "simulated"])
    verdict_flags = verdicts.groupby("judge")["simulated"].any().astype(bool).to_dict()
    flags = T.simulated_of(_concat(sm.input.calls), verdict_flags)

    t3 = T.table3(final, list(p.external_detectors), T_max, flags, verdict_flags)
    write_table(t3, sm.output.table3, provenance=prov)
    write_table(T.table3_wide(t3), sm.output.table3_wide, provenance=prov)

    baselines = {b: (kind, pd.read_parquet(path))
                 for (b, kind), path in zip(p.baselines.items(), sm.input.baselines, strict=True)}
    t4 = T.table4(final, evaluator=p.baseline_evaluator, detector=p.baseline_detector, bias_sets=p.bias_sets,
                  baselines=baselines, sim_flags=flags, verdict_flags=verdict_flags,
                  left_out=p.baselines_left_out) \
        if p.baseline_evaluator else pd.DataFrame(columns=T.TABLE4_COLUMNS)
    write_table(t4, sm.output.table4, provenance=prov)
    write_table(T.wide(t4, ["bias_type", "metric"], "method", "value"), sm.output.table4_wide, provenance=prov)

    if len(sm.input.feedback_items):
        label_only = T.final_verdicts(_concat(sm.input.feedback_items), _concat(sm.input.feedback_trajectories), T_max)
        t5 = T.table5(final, label_only, detector=p.feedback_detector, bias_sets=p.bias_sets, sim_flags=flags,
                      verdict_flags=verdict_flags)
    else:
        t5 = pd.DataFrame(columns=T.TABLE5_COLUMNS)
    write_table(t5, sm.output.table5, provenance=prov)
    t5_long = t5.melt(id_vars=["judge", "bias_type", "metric"], value_vars=["original", "label_only", "reasoning"],
                      var_name="feedback", value_name="value")
    write_table(T.wide(t5_long, ["judge", "bias_type", "metric"], "feedback", "value"), sm.output.table5_wide,
                provenance=prov)

    sim_detectors = {d for (_, d), v in flags.items() if v}
    sizes = T.size_gains(read_table(sm.input.table2), p.sizes, max_iterations=T_max, bias_sets=p.bias_sets,
                         simulated=sim_detectors, panel_simulated=any(verdict_flags.values()))
    write_table(sizes, sm.output.fig6_sizes, provenance=prov)


run_script(snakemake, main)
