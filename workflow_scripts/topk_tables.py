"""Rule topk_tables: Tables 1-4, shrinkage, frontier, Spearman, probes and LLMBar summaries."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table, read_verdicts, write_table
from judgelab.topk.pipeline import llmbar_table, probe_table, read_eval_tables, study_tables
from judgelab.workflow import provenance, run_script


def main(sm):
    cfg, seed, prov = sm.params.cfg, sm.params.seed, sm.params.provenance
    recall, params, budget = read_eval_tables(sm.input.eval)
    p = provenance(prov["config_hash"], prov["seed"], prov["judges"])
    for name, df in study_tables(recall, params, budget, cfg, seed).items():
        write_table(df, sm.output[name], provenance=p)
    probes = probe_table(read_verdicts(sm.input.probes), read_table(sm.input.probe_pairs), sm.params.judges, cfg)
    write_table(probes, sm.output.probes, provenance=p)
    llmbar = llmbar_table(read_verdicts(sm.input.llmbar), read_table(sm.input.llmbar_pairs), cfg, seed)
    write_table(llmbar, sm.output.llmbar, provenance=p)


run_script(snakemake, main)
