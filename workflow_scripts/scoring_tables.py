"""Rule scoring_tables: Table 3, fluctuation, score distributions and aggregation over variants."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import write_table
from judgelab.scoring.human import absent_table3_rows, log_absent, with_absent
from judgelab.scoring.items import study_items
from judgelab.scoring.metrics import (
    aggregation_table,
    correlation_tables,
    distributions,
    gold_frame,
    gold_gaps,
    table3_wide,
)
from judgelab.scoring.prompt import get_variant
from judgelab.scoring.query import reference_coverage
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    items = pd.concat([pd.read_parquet(f) for f in sm.input.item_tables], ignore_index=True)
    items = items[items["in_sample"].astype(bool)]
    gold_scores = pd.read_parquet(sm.input.gold)
    scores = pd.concat([pd.read_parquet(f) for f in sm.input.scores], ignore_index=True)
    golds = gold_frame(items, gold_scores)
    gaps = gold_gaps(gold_scores, golds)  # a data set whose gold judge gave no score keeps its rows, with why
    m = p.metrics
    table3, fluct = correlation_tables(scores, golds, n_boot=m["n_boot"], alpha=m["alpha"], seed=p.seed, gaps=gaps)
    agg = aggregation_table(scores, golds, p.aggregation["variant_sets"], p.aggregation["aggregators"],
                            n_boot=m["n_boot"], alpha=m["alpha"], seed=p.seed, gaps=gaps)
    # items without a matched reference at a score leave that variant (on_reject: drop): counted per variant
    coverage = reference_coverage(study_items(sm.input.item_tables, sm.input.get("responses")),
                                  [get_variant(v) for v in p.perturbations], pd.read_parquet(sm.input.references),
                                  variants_of=p.get("dataset_perturbations"))
    table3 = table3.merge(coverage[["dataset", "variant", "n_dropped"]].rename(columns={"n_dropped": "n_no_reference"}),
                          on=["dataset", "variant"], how="left")
    table3["n_no_reference"] = table3["n_no_reference"].fillna(0).astype(int)
    # paper 004's human-scored sets not downloaded: their rows, empty, say why (judgelab/scoring/human.py)
    log_absent(p.absent)
    table3 = with_absent(table3, absent_table3_rows(p.absent, sorted(set(scores["judge"])), p.absent_perturbations))
    table3["n_no_reference"] = table3["n_no_reference"].fillna(0).astype(int)
    pv = provenance(p.provenance["config_hash"], p.provenance["seed"], p.provenance["judges"])
    write_table(coverage, sm.output.reference_coverage, provenance=pv)
    write_table(table3, sm.output.table3, provenance=pv)
    write_table(table3_wide(table3), sm.output.table3_wide, provenance=pv)
    write_table(fluct, sm.output.fluctuation, provenance=pv)
    write_table(distributions(scores, golds), sm.output.distributions, provenance=pv)
    write_table(agg, sm.output.aggregation, provenance=pv)


run_script(snakemake, main)
