"""Rule strategies_selection: strategy registry table, cost-accuracy Pareto front, Algorithm 1 recommendations."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import read_table, write_table
from judgelab.strategies import StrategySettings, strategy_table
from judgelab.strategies.selection import pareto_table, recommend, strategy_budget_costs
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    settings = StrategySettings(temperatures=tuple(p.settings["temperatures"]),
                                cross_family_size=p.settings["cross_family_size"])
    rows = strategy_table(settings, p.strategies)
    agreement, mixed = read_table(sm.input.agreement), read_table(sm.input.mixed)
    sel = p.selector
    prov = provenance(p.provenance["config_hash"], p.provenance["seed"], p.provenance["judges"])
    write_table(pd.DataFrame(rows), sm.output.strategies, provenance=prov)
    write_table(pareto_table(agreement, sel["natural"], exclude=p.exclude), sm.output.pareto, provenance=prov)
    recs = recommend(agreement, mixed, strategy_budget_costs(rows), natural=sel["natural"],
                     adversarial=sel["adversarial"], budgets=sel["budgets"], alpha=p.alpha, use_holm=sel["use_holm"],
                     exclude=p.exclude, cost_cap=sel["cost_cap"])
    write_table(recs, sm.output.recommendations, provenance=prov)


run_script(snakemake, main)
