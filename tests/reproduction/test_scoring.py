"""Paper 004's "Human" columns (``judgelab/reproduction/scoring.py``): Table 3's correlations of
GPT-4o with the human scores of BiGGen-Bench and FLASK and Table 2's of the GPT-4.1 gold protocol,
read from planted ``table3.csv`` / ``table2.csv`` rows of the human-scored sets; against human
scores the gold judge plays no part; and when the sets are absent the tables' empty cells give the
rows no value, with the tables' reason (:mod:`judgelab.scoring.human`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.io import write_table
from judgelab.reproduction import reproduce
from judgelab.scoring.gold_candidates import RECORDED_GPT4, TABLE2_COLUMNS
from judgelab.scoring.human import absent_table2_rows, absent_table3_rows
from judgelab.scoring.metrics import TABLE3_COLUMNS
from judgelab.workflow import provenance

REAL = {"name": "gpt-4o", "backend": "openai", "model": "gpt-4o", "options": {"api_key_env": None}}
GOLD = {"name": "gpt-4.1", "backend": "openai", "model": "gpt-4.1", "options": {"api_key_env": None}}
T3_BIGGEN = "GPT-4o, BiGGen Bench vs human scores, baseline: Spearman ρ"
T3_FLASK = "GPT-4o, FLASK vs human scores, baseline: Spearman ρ"
T2_BIGGEN = "GPT-4.1 gold protocol, BiGGen Bench vs human scores: Spearman ρ"
T2_FLASK = "GPT-4.1 gold protocol, FLASK vs human scores: Spearman ρ"
NEW = (T3_BIGGEN, T3_FLASK, T2_BIGGEN, T2_FLASK)


def _write(path, df, judges):
    path.parent.mkdir(parents=True, exist_ok=True)
    write_table(df, path, provenance=provenance("h", 0, judges))
    return str(path)


def _t3(dataset, gold_source, variant, rho, n):
    row = dict.fromkeys(TABLE3_COLUMNS, np.nan)
    row.update(dataset=dataset, gold_source=gold_source, judge="gpt-4o", variant=variant, n=n, rho=rho,
               rho_ci_low=rho - 0.04, rho_ci_high=rho + 0.04, r=rho + 0.03, r_ci_low=rho, r_ci_high=rho + 0.06,
               reason="")
    return row


def _t2(dataset, candidate, source, rho, n):
    row = dict.fromkeys(TABLE2_COLUMNS, np.nan)
    row.update(dataset=dataset, reference_source="human", candidate=candidate, source=source, n=n, n_unparsed=0,
               rho=rho, rho_ci_low=rho - 0.03, rho_ci_high=rho + 0.03, r=rho + 0.02, r_ci_low=rho - 0.01,
               r_ci_high=rho + 0.05, simulated=False, reason="")
    return row


def _planted(root, n_biggen=2780, n_flask=2001, judges=(REAL, GOLD)):
    # the human column beside the gold-judge column of the same set (another value): only the former is read
    t3 = [_t3("biggen", "gold_judge", "baseline", 0.75, n_biggen), _t3("biggen", "human", "descending", 0.60, n_biggen),
          _t3("biggen", "human", "baseline", 0.5685, n_biggen), _t3("flask_full", "gold_judge", "baseline", 0.74, n_flask),
          _t3("flask_full", "human", "baseline", 0.5529, n_flask)]
    t2 = [_t2("biggen", "gpt-4o", "gold_protocol", 0.6047, n_biggen), _t2("biggen", RECORDED_GPT4, "recorded", 0.5741, n_biggen),
          _t2("biggen", "gpt-4.1", "gold_protocol", 0.6048, n_biggen), _t2("flask_full", "gpt-4o", "gold_protocol", 0.63, n_flask),
          _t2("flask_full", "gpt-4.1", "gold_protocol", 0.6401, n_flask)]
    return [_write(root / "table3.csv", pd.DataFrame(t3, columns=TABLE3_COLUMNS), list(judges)),
            _write(root / "table2.csv", pd.DataFrame(t2, columns=TABLE2_COLUMNS), list(judges))]


def test_the_human_columns_read_the_human_rows_of_both_tables(tmp_path):
    root = tmp_path / "scoring"
    files = _planted(root)
    t = reproduce("scoring", root, files, {"gpt-4o": REAL, "gpt-4.1": GOLD}, {"gold_judge": "gpt-4.1"}).set_index("cell")
    for cell, value in ((T3_BIGGEN, 0.5685), (T3_FLASK, 0.5529)):
        row = t.loc[cell]
        assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx((value, value - 0.04, value + 0.04))
        assert row["provenance"] == "real" and row["verdict"] == "reproduced", row["reason"]
    for cell, value in ((T2_BIGGEN, 0.6048), (T2_FLASK, 0.6401)):
        row = t.loc[cell]
        assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx((value, value - 0.03, value + 0.03))
        assert row["provenance"] == "real" and row["verdict"] == "reproduced", row["reason"]


def test_the_human_column_does_not_depend_on_the_gold_judge_but_the_set_size_counts(tmp_path):
    root = tmp_path / "scoring"
    sim_gold = {**GOLD, "name": "sim-gpt-4.1", "backend": "simulated", "options": {"profile": {"competence": 2.0}}}
    files = _planted(root, n_flask=48, judges=(REAL, sim_gold))
    t = reproduce("scoring", root, files, {"gpt-4o": REAL, "sim-gpt-4.1": sim_gold},
                  {"gold_judge": "sim-gpt-4.1"}).set_index("cell")
    # the human column involves no gold judge: a simulated one leaves it real
    assert t.loc[T3_BIGGEN, "provenance"] == "real" and t.loc[T3_BIGGEN, "verdict"] == "reproduced"
    # another set size: not comparable, named
    flask = t.loc[T3_FLASK]
    assert flask["run_value"] == pytest.approx(0.5529) and flask["verdict"] == "not comparable"
    assert flask["reason"].startswith("48 flask_full responses, the paper's 2001"), flask["reason"]
    assert t.loc[T2_FLASK, "reason"].startswith("48 flask_full responses, the paper's 2001")
    # Table 2's GPT-4.1 row is the candidate gpt-4.1, whoever the run's gold judge is
    assert t.loc[T2_BIGGEN, "run_value"] == pytest.approx(0.6048)


def test_absent_human_sets_leave_the_rows_empty_with_the_tables_reason(tmp_path):
    root = tmp_path / "scoring"
    absent = {"biggen": "scoring.datasets.biggen: human-scored set absent: biggen/human_eval.parquet is not here",
              "flask_full": "scoring.datasets.flask_full: human-scored set absent: prometheus_eval/flask.json is not here"}
    t3 = absent_table3_rows(absent, ["gpt-4o"], {"biggen": ["baseline"], "flask_full": ["baseline"]})
    t2 = absent_table2_rows(absent, ["gpt-4.1", "gpt-4o"])
    files = [_write(root / "table3.csv", t3, [REAL, GOLD]), _write(root / "table2.csv", t2, [REAL, GOLD])]
    t = reproduce("scoring", root, files, {"gpt-4o": REAL, "gpt-4.1": GOLD}, {"gold_judge": "gpt-4.1"}).set_index("cell")
    for cell, ds in ((T3_BIGGEN, "biggen"), (T3_FLASK, "flask_full"), (T2_BIGGEN, "biggen"), (T2_FLASK, "flask_full")):
        row = t.loc[cell]
        assert pd.isna(row["run_value"]) and row["verdict"] == "not comparable"
        assert row["reason"] == f"this run has no value: {absent[ds]}", row["reason"]


def test_a_run_without_the_human_sets_or_without_table2_says_so(tmp_path):
    root = tmp_path / "scoring"
    t3 = pd.DataFrame([_t3("mt_bench", "gold_judge", "baseline", 0.75, 320)], columns=TABLE3_COLUMNS)
    f = _write(root / "table3.csv", t3, [REAL, GOLD])
    t = reproduce("scoring", root, [f], {"gpt-4o": REAL, "gpt-4.1": GOLD}, {"gold_judge": "gpt-4.1"}).set_index("cell")
    assert "no biggen baseline row against human scores in table3.csv" in t.loc[T3_BIGGEN, "reason"]
    assert "table2.csv is not among this run's outputs" in t.loc[T2_BIGGEN, "reason"]
    assert (t.loc[list(NEW), "verdict"] == "not comparable").all()
    # Table 2 written without the set
    t2 = pd.DataFrame([_t2("rubric_set", "gpt-4.1", "gold_protocol", 0.6, 48)], columns=TABLE2_COLUMNS)
    f2 = _write(root / "table2.csv", t2, [REAL, GOLD])
    t = reproduce("scoring", root, [f, f2], {"gpt-4o": REAL, "gpt-4.1": GOLD}, {"gold_judge": "gpt-4.1"}).set_index("cell")
    assert "no flask_full row against human scores in table2.csv" in t.loc[T2_FLASK, "reason"]
