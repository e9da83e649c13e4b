"""Rule strategies_bias: bias scores, per-topic style, length ablation and cross-bias on the controlled set."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table, read_verdicts, write_table
from judgelab.strategies.analysis import bias_table, cross_bias_table, length_ablation_table, topic_style_table
from judgelab.workflow import provenance, run_script


def main(sm):
    a = sm.params.a
    sv, pairs = read_verdicts(list(sm.input.verdicts)), read_table(sm.input.pairs[0])
    boot = dict(n_resamples=a["bootstrap"]["n_resamples"], alpha=1 - a["bootstrap"]["level"], seed=a["seed"])
    bias = bias_table(sv, pairs, original_target=sm.params.original_target, **boot)
    avg = sm.params.cross_bias_judges or sorted(set(sv["judge"]) - set(sm.params.control_judges))
    prov = provenance(a["provenance"]["config_hash"], a["seed"], a["provenance"]["judges"])
    write_table(bias, sm.output.bias, provenance=prov)
    write_table(topic_style_table(sv, pairs, **boot), sm.output.topic, provenance=prov)
    write_table(length_ablation_table(bias), sm.output.length, provenance=prov)
    write_table(cross_bias_table(bias, average_over=avg), sm.output.cross, provenance=prov)


run_script(snakemake, main)
