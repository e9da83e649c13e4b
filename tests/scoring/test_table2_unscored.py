"""Table 2 keeps a row for every gold candidate, also one it cannot score (every scoring
unparsed, too few items, no scorings), with NaN statistics and the reason: a judge whose scores
all failed to parse used to vanish from scoring/table2.csv."""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgelab.io import read_table, write_table
from judgelab.scoring.gold_candidates import RECORDED_GPT4, TABLE2_COLUMNS, table2


def _items(n: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    h = rng.integers(1, 6, n).astype(float)
    return pd.DataFrame({"dataset": "own", "item_id": [f"i{k}" for k in range(n)], "human_score": h,
                         "design_score": np.nan, "gold_gpt4": np.clip(h + rng.integers(-1, 2, n), 1, 5)})


def _scores(items: pd.DataFrame, judge: str, score) -> pd.DataFrame:
    rows = [{"dataset": "own", "judge": judge, "item_id": i, "score": score(k), "simulated": False}
            for k, i in enumerate(items["item_id"]) for _ in range(3)]
    return pd.DataFrame(rows)


def test_a_candidate_whose_scores_all_failed_keeps_its_row(tmp_path):
    items = _items()
    cands = {"good": _scores(items, "good", lambda k: float(items["human_score"].iloc[k])),
             "broken": _scores(items, "broken", lambda k: -1.0),
             "silent": _scores(items, "silent", lambda k: -1.0).iloc[0:0]}
    t = table2(items, cands, against=["human"], n_boot=100).set_index("candidate")
    assert set(t.index) == {"good", "broken", "silent", RECORDED_GPT4}
    assert t.loc["good", "reason"] == "" and t.loc["good", "rho"] == 1.0
    assert t.loc["broken", "n"] == 0 and t.loc["broken", "n_unparsed"] == 36
    assert np.isnan(t.loc["broken", "rho"]) and t.loc["broken", "reason"] == "no parsable score: 36 of 36 unparsed"
    assert t.loc["silent", "reason"] == "no gold-protocol scorings" and np.isnan(t.loc["silent", "r"])
    # the CSV round trip keeps the unscored rows and their reasons
    write_table(t.reset_index()[TABLE2_COLUMNS], tmp_path / "table2.csv")
    back = read_table(tmp_path / "table2.csv").set_index("candidate")
    assert back.loc["broken", "reason"].startswith("no parsable score")


def test_too_few_common_items_is_a_row_with_its_reason():
    items = _items()
    few = _scores(items, "few", lambda k: float(items["human_score"].iloc[k]) if k < 2 else -1.0)
    t = table2(items, {"few": few}, against=["human"], n_boot=100).set_index("candidate")
    assert t.loc["few", "n"] == 2 and "2 item(s) with both a human score and a candidate score (3 needed)" \
        in t.loc["few", "reason"]
    assert np.isnan(t.loc["few", "rho_ci_low"])
