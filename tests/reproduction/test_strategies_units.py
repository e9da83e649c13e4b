"""Paper 003's rows against the ``strategies`` study's tables (``judgelab/reproduction/strategies.py``), cell by cell.

* Agreement rows read the judge's agreement with its bootstrap interval, in the row's data set and
  strategy only; the McNemar gain has no interval, so the paper's precision decides.
* A data set of another size than the paper's (the largest ``n`` of the set's rows) is not comparable, named.
* The bias rows read the measure and strategy of the row, not another's.
* A table's ``simulated`` flag makes a row simulated though the judge's backend is real.
* Rows without a value name what was looked for: the set and strategy, the judge among those present,
  the replayed judges (or none).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from judgelab.reproduction import reproduce
from judgelab.reproduction.strategies import ROWS

REAL = {"name": "claude-sonnet-4", "backend": "openai", "model": "m", "options": {"api_key_env": None}}
GPT = {"name": "gpt-4o", "backend": "openai", "model": "gpt-4o", "options": {"api_key_env": None}}
ENTRIES = {"claude-sonnet-4": REAL, "gpt-4o": GPT}
B0 = "MT-Bench agreement, B0, Claude Sonnet 4"
GAIN = "MT-Bench gain of S8 over B0 (pp), Claude Sonnet 4"
S5 = "LLMBar agreement, S5, Claude Sonnet 4"
S1 = "LLMBar: S1 minus B0 agreement (pp), GPT-4o"
STYLE = "style bias b, B0, GPT-4o"
TRUNC = "truncation accuracy, B0, GPT-4o"


def _row(cell: str):
    return next(r for r in ROWS if r.cell == cell)


def _csv(path, rows: list[dict]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def _agreement(ds: str, strategy: str, judge: str, n: int, value: float, simulated: bool = False) -> dict:
    return {"dataset": ds, "judge": judge, "strategy": strategy, "n": n, "agreement": value,
            "ci_low": value - 0.05, "ci_high": value + 0.05, "simulated": simulated}


def test_agreement_reads_its_set_strategy_and_judge_with_the_interval(tmp_path):
    paper = _row(B0).value
    rows = [_agreement("mtbench", "S5", "claude-sonnet-4", 400, 0.10),     # another strategy
            _agreement("llmbar", "B0", "claude-sonnet-4", 400, 0.20),      # another set
            _agreement("mtbench", "B0", "gpt-4o", 400, 0.30),              # another judge
            _agreement("mtbench", "B0", "claude-sonnet-4", 400, paper + 0.01)]
    f = _csv(tmp_path / "tables/agreement.csv", rows)
    t = reproduce("strategies", tmp_path, [f], ENTRIES).set_index("cell")
    row = t.loc[B0]
    assert (row["run_value"], row["run_ci_low"], row["run_ci_high"]) == pytest.approx(
        (paper + 0.01, paper - 0.04, paper + 0.06))
    assert (row["provenance"], row["verdict"]) == ("real", "reproduced")
    assert "inside the run's interval" in row["reason"]


def test_a_set_of_another_size_is_not_comparable_and_named(tmp_path):
    paper_n = _row(S5).params["n"]
    # the set's size is its largest n: one row at the paper's size among smaller ones is not enough ...
    rows = [_agreement("llmbar", "S5", "claude-sonnet-4", 120, _row(S5).value),
            _agreement("llmbar", "S5", "gpt-4o", paper_n + 1, 0.5)]
    f = _csv(tmp_path / "tables/agreement.csv", rows)
    t = reproduce("strategies", tmp_path, [f], ENTRIES).set_index("cell")
    row = t.loc[S5]
    assert row["run_value"] == pytest.approx(_row(S5).value)
    assert row["verdict"] == "not comparable"
    assert row["reason"].startswith(f"{paper_n + 1} llmbar instances, the paper's {paper_n} ("), row["reason"]
    # ... and a set at the paper's size is comparable
    rows[1]["n"] = paper_n
    rows[0]["n"] = paper_n
    f = _csv(tmp_path / "tables/agreement.csv", rows)
    t = reproduce("strategies", tmp_path, [f], ENTRIES).set_index("cell")
    assert t.loc[S5, "verdict"] == "reproduced", t.loc[S5, "reason"]


def test_the_mcnemar_gain_has_no_interval_and_the_precision_decides(tmp_path):
    paper, precision = _row(GAIN).value, _row(GAIN).precision
    rows = [{"dataset": "mtbench", "judge": "claude-sonnet-4", "strategy": "S8", "n": 400, "delta_pp": paper + precision,
             "ci_low": paper - 5, "ci_high": paper + 5}]  # interval columns the row must not read
    f = _csv(tmp_path / "tables/mcnemar.csv", rows)
    t = reproduce("strategies", tmp_path, [f], ENTRIES).set_index("cell")
    row = t.loc[GAIN]
    assert row["run_value"] == pytest.approx(paper + precision)
    assert math.isnan(row["run_ci_low"]) and math.isnan(row["run_ci_high"])
    assert row["verdict"] == "reproduced" and row["reason"].endswith("no interval"), row["reason"]
    rows[0]["delta_pp"] = paper + 3 * precision
    f = _csv(tmp_path / "tables/mcnemar.csv", rows)
    t = reproduce("strategies", tmp_path, [f], ENTRIES).set_index("cell")
    assert t.loc[GAIN, "verdict"] == "not reproduced"


def test_bias_rows_read_their_measure_and_strategy(tmp_path):
    style = _row(STYLE).value
    rows = [{"judge": "gpt-4o", "strategy": s, "measure": m, "value": v, "ci_low": v - 0.1, "ci_high": v + 0.1}
            for s, m, v in (("S5", "style", -0.9), ("B0", "verbosity", -0.8), ("B0", "style", style),
                            ("B0", "truncation_accuracy", 0.5))]
    f = _csv(tmp_path / "tables/bias_scores.csv", rows)
    t = reproduce("strategies", tmp_path, [f], ENTRIES).set_index("cell")
    assert t.loc[STYLE, "run_value"] == pytest.approx(style) and t.loc[STYLE, "verdict"] == "reproduced"
    assert t.loc[TRUNC, "run_value"] == pytest.approx(0.5) and t.loc[TRUNC, "verdict"] == "not reproduced"


def test_a_tables_simulated_flag_makes_the_row_simulated(tmp_path):
    rows = [_agreement("mtbench", "B0", "claude-sonnet-4", 400, _row(B0).value, simulated=True)]
    f = _csv(tmp_path / "tables/agreement.csv", rows)
    t = reproduce("strategies", tmp_path, [f], ENTRIES).set_index("cell")
    assert (t.loc[B0, "provenance"], t.loc[B0, "verdict"]) == ("simulated", "not comparable")
    s1 = [{"dataset": "llmbar_natural", "judge": "gpt-4o", "delta_pp": -11.1, "simulated": True}]
    f = _csv(tmp_path / "tables/replay_s1.csv", s1)
    t = reproduce("strategies", tmp_path, [f], ENTRIES).set_index("cell")
    assert t.loc[S1, "provenance"] == "simulated"


def test_rows_without_a_value_say_what_was_looked_for(tmp_path):
    agreement = _csv(tmp_path / "tables/agreement.csv", [_agreement("mtbench", "B0", "gpt-4o", 400, 0.6)])
    s1 = _csv(tmp_path / "tables/replay_s1.csv", [
        {"dataset": "llmbar_natural", "judge": "replay-gpt-4", "delta_pp": -2.0},
        {"dataset": "llmbar_natural", "judge": "replay-claude", "delta_pp": -1.0},
        {"dataset": "llmbar_adversarial", "judge": "replay-gpt-4o", "delta_pp": -9.0}])  # another set
    t = reproduce("strategies", tmp_path, [agreement, s1], ENTRIES).set_index("cell")
    assert t.loc[B0, "reason"] == "this run has no value: no judge standing for claude-sonnet-4 among ['gpt-4o']"
    assert t.loc[S5, "reason"] == "this run has no value: no llmbar S5 rows in this run's tables"
    assert t.loc[S1, "reason"] == ("this run has no value: no replayed judge standing for gpt-4o among "
                                   "replay-claude, replay-gpt-4")
    s1 = _csv(tmp_path / "tables/replay_s1.csv", [{"dataset": "other", "judge": "replay-gpt-4o", "delta_pp": -9.0}])
    t = reproduce("strategies", tmp_path, [agreement, s1], ENTRIES).set_index("cell")
    assert t.loc[S1, "reason"] == "this run has no value: no replayed judge standing for gpt-4o among none"


def test_a_missing_replayed_judge_leaves_the_row_to_the_replayed_judges_present(tmp_path):
    """No replayed GPT-4o: the row has no value, and its provenance is that of the replayed judges that
    were there (replayed), not of every configured judge (a simulated one among them)."""
    replay = {"backend": "replay", "model": "m", "options": {"source": "llmbar", "dataset": "llmbar_natural",
                                                          "prompt_template": "output_ab", "path": "x.json"}}
    entries = {"replay-gpt-4": {**replay, "name": "replay-gpt-4"},
               "sim-gpt-4o": {"name": "sim-gpt-4o", "backend": "simulated", "model": "s",
                              "options": {"profile": {"competence": 2.0}}}}
    f = _csv(tmp_path / "tables/replay_s1.csv", [{"dataset": "llmbar_natural", "judge": "replay-gpt-4", "delta_pp": -2.0}])
    row = reproduce("strategies", tmp_path, [f], entries).set_index("cell").loc[S1]
    assert math.isnan(row["run_value"]) and row["provenance"] == "replayed", row["provenance"]
