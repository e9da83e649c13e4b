"""Rule audit_logs_import: one recorded-verdict file into the recorded verdict table."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.datasets.sources import resolve_data_path
from judgelab.io import write_table
from judgelab.verdict_import import import_verdicts, mapping_from_config
from judgelab.workflow import provenance, run_script


def main(sm):
    spec, prov = sm.params.spec, sm.params.provenance
    mapping = mapping_from_config(spec["format"], where=f"config: audit_logs/sets/{sm.wildcards.logset}/format")
    path = sm.input[0] if len(sm.input) else str(resolve_data_path(sm.params.path))
    table = import_verdicts([path], mapping, tables=spec.get("tables") or {},
                            judge=spec.get("judge"), family=spec.get("family"))
    write_table(table, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"]))


run_script(snakemake, main)
