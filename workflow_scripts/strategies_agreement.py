"""Rule strategies_agreement: agreement, kappa, distributions, per-category, McNemar, mixed models, MDE."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_verdicts, write_table
from judgelab.strategies.analysis import agreement_table, category_table, mcnemar_table, mde_table, mixed_table
from judgelab.workflow import provenance, run_script


def main(sm):
    a = sm.params.a
    sv = read_verdicts(list(sm.input))
    boot = dict(n_resamples=a["bootstrap"]["n_resamples"], alpha=1 - a["bootstrap"]["level"], seed=a["seed"])
    prov = provenance(a["provenance"]["config_hash"], a["seed"], a["provenance"]["judges"])
    write_table(agreement_table(sv, **boot), sm.output.agreement, provenance=prov)
    write_table(category_table(sv, **boot), sm.output.category, provenance=prov)
    mcn = mcnemar_table(sv, alpha=a["alpha"], family=a["holm_family"])
    write_table(mcn, sm.output.mcnemar, provenance=prov)
    mixed = mixed_table(sv, alpha=a["alpha"], n_nodes=a["glmm_nodes"], strategies=a["mixed_strategies"],
                        family=a["holm_family"])
    write_table(mixed, sm.output.mixed, provenance=prov)
    write_table(mde_table(mcn, alpha=a["alpha"], power=a["power"]), sm.output.mde, provenance=prov)


run_script(snakemake, main)
