"""Rule audit_logs_card: bias card, markdown card and figure of one log set."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.bias_card.card import CardSettings
from judgelab.bias_card.report import write_audit
from judgelab.bias_card.settings import from_config
from judgelab.io import InputError
from judgelab.verdict_import import RECORDED_COLUMNS
from judgelab.workflow import provenance, run_script


def main(sm):
    table = pd.concat([pd.read_parquet(p)[RECORDED_COLUMNS] for p in sm.input], ignore_index=True)
    if table.empty:
        raise InputError(f"log set {sm.wildcards.logset!r}: its files hold no verdicts")
    dup = table.duplicated(["judge", "pair_id", "order"])
    if dup.any():
        r = table[dup].iloc[0]
        raise InputError(f"log set {sm.wildcards.logset!r}: judge {r.judge!r} judged pair {r.pair_id!r} in order "
                         f"{r.order} in two files ({r.source_file} and another)")
    settings = from_config(CardSettings, sm.params.settings, where="config: audit_logs/settings")
    prov = sm.params.provenance
    write_audit(table, sm.output.card.rsplit("/", 1)[0], title=sm.wildcards.logset, settings=settings,
                provenance=provenance(prov["config_hash"], prov["seed"]))


run_script(snakemake, main)
