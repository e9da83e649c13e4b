"""Rule strategies_verdicts: aggregate each strategy's calls into one verdict per judge and instance."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.io import read_table, read_verdicts, write_table
from judgelab.strategies import StrategySettings
from judgelab.strategies.aggregate import aggregate_strategies, cross_family_members
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    settings = StrategySettings(temperatures=tuple(p.settings["temperatures"]),
                                cross_family_size=p.settings["cross_family_size"])
    members = cross_family_members([tuple(x) for x in p.families], settings.cross_family_size, p.control_judges,
                                   explicit=p.ensembles)
    table = aggregate_strategies(read_verdicts(list(sm.input.calls)), read_table(sm.input.pairs), p.judges,
                                 settings, members)
    prov = p.provenance
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
