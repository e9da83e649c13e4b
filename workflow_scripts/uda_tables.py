"""Rule uda_tables: the paper's tables for one tournament."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.io import read_table, read_verdicts, write_table
from judgelab.uda.elo import EloConfig
from judgelab.uda.study import judge_reasons, judges_table, reference_scores, study_tables
from judgelab.uda.tournament import own_model_of
from judgelab.workflow import provenance, run_script


def main(sm):
    spec, judges = sm.params.spec, list(sm.params.judges)
    tournament = read_table(sm.input.tournament)
    scores = read_table(sm.input.scores)
    verdicts = read_verdicts(sm.input.verdicts)
    answers = pd.concat([read_table(p) for p in sm.input.answers], ignore_index=True)
    human = read_table(sm.input.human[0]) if len(sm.input.human) else None
    reference, ref_name = reference_scores(spec, tournament, human, EloConfig.from_dict(sm.params.elo))
    family = verdicts.drop_duplicates("judge").set_index("judge")["family"]
    own = {j: m for j in judges if (m := own_model_of(j, str(family[j]), spec, tournament))}
    models = list(dict.fromkeys(tournament["model"]))
    tables = study_tables(scores, sm.wildcards.dataset, models, judges, reference, ref_name, own,
                          judge_reasons(verdicts, judges))
    tables["judges"] = judges_table(verdicts, answers, own)
    prov = sm.params.provenance
    p = provenance(prov["config_hash"], prov["seed"], prov["judges"])
    for name, df in tables.items():
        write_table(df.assign(dataset=sm.wildcards.dataset), getattr(sm.output, name), provenance=p)


run_script(snakemake, main)
