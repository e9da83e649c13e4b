"""Rule scoring_table2: paper 004's Table 2, gold candidates against human scores."""

from pathlib import Path

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import write_table
from judgelab.scoring.gold_candidates import table2
from judgelab.scoring.human import absent_table2_rows, log_absent, with_absent
from judgelab.scoring.items import items_frame, study_items
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    items = items_frame(study_items(sm.input.item_tables, sm.input.get("responses")))
    gold = pd.read_parquet(sm.input.gold)
    candidates = {str(gold["judge"].iloc[0]) if len(gold) else "gold judge": gold}
    for f in sm.input.candidates:  # results/scoring/gold_candidates/{judge}.parquet: named even when empty
        candidates.setdefault(Path(f).stem, pd.read_parquet(f))
    out = table2(items, candidates, against=p.against, n_boot=p.metrics["n_boot"], alpha=p.metrics["alpha"],
                 seed=p.seed)
    if "human" in p.against:  # paper 004's human-scored sets not downloaded: their rows, empty, say why
        log_absent(p.absent)
        out = with_absent(out, absent_table2_rows(p.absent, p.candidates))
    prov = p.provenance
    write_table(out, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
