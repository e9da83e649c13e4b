"""``--gamed-csv`` is joined by instruction, not by row, and read on AlpacaEval's own [0, 1] scale.

``df_gamed.csv`` is built here as AlpacaEval builds it (``notebooks/notebook_helpers.py``
``load_annotations``: ``index`` = the row in a model's ``annotations.json``, nulls dropped,
``preference`` moved to [0, 1] by ``replace({0.0: 1.5}) - 1``), from the shared AlpacaEval logs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab.board.battles import battles_from_table
from judgelab.board.length_controlled import read_gamed_csv
from judgelab.board.table import BoardSettings, alpaca_eval_index, leaderboard
from judgelab.io import InputError
from judgelab.verdict_import.importer import import_verdicts
from judgelab.verdict_import.presets import preset_mapping

RESULTS = Path("alpaca_eval/results")
FILE = "weighted_alpaca_eval_gpt4_turbo/annotations.json"


def _df_gamed_as_alpaca_eval_builds_it(annotations: Path, rng: np.random.Generator) -> pd.DataFrame:
    df = pd.read_json(annotations)
    df["len_1"], df["len_2"] = df["output_1"].str.len(), df["output_2"].str.len()
    df = df.reset_index()[["index", "preference", "len_1", "len_2"]]
    df = df.query("preference >= 0").copy()
    df["preference"] = df["preference"].astype(float).replace({0.0: 1.5}) - 1
    d = df["len_1"] - df["len_2"]
    df["std_delta_len"] = d / d.std()
    df["instruction_difficulty"] = rng.normal(size=len(df))
    df["not_gamed_baseline"] = False
    df["model"] = "gpt4_1106_preview_verbose"
    return df[["index", "model", "preference", "std_delta_len", "instruction_difficulty", "not_gamed_baseline"]]


def test_a_file_on_alpaca_evals_scale_is_read_as_is_and_the_raw_scale_is_refused(data_root: Path, tmp_path: Path):
    src = data_root / RESULTS / "claude-2.1" / FILE
    built = _df_gamed_as_alpaca_eval_builds_it(src, np.random.default_rng(0))
    p = tmp_path / "df_gamed.csv"
    built.to_csv(p, index=False)
    g = read_gamed_csv(p)
    np.testing.assert_array_equal(g.preference, built["preference"].to_numpy(float))
    assert g.preference.min() >= 0 and g.preference.max() <= 1
    edge = built.head(3).copy()
    edge["preference"] = [0.0, 1.0, 0.5]  # the ends of the scale are a loss and a win, not a tie
    edge.to_csv(p, index=False)
    np.testing.assert_array_equal(read_gamed_csv(p).preference, [0.0, 1.0, 0.5])
    raw = built.copy()
    raw["preference"] = raw["preference"] + 1  # the annotations' own [1, 2] scale
    raw.to_csv(p, index=False)
    with pytest.raises(InputError, match=r"row \d+: key 'preference' is .*AlpacaEval's \[0, 1\] scale"):
        read_gamed_csv(p)


def test_a_log_with_missing_instructions_is_joined_by_instruction_not_row(data_root: Path, tmp_path: Path):
    full = data_root / RESULTS / "claude-2.1" / FILE
    rows = json.loads((data_root / RESULTS / "vicuna-7b" / FILE).read_text())
    short = tmp_path / "vicuna-7b" / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
    short.parent.mkdir(parents=True)
    drop = {3, 100, 400}
    short.write_text(json.dumps([r for i, r in enumerate(rows) if i not in drop]))  # 802 rows, later ones shifted
    table = import_verdicts([full, short], preset_mapping("alpaca_eval"))
    b = battles_from_table(table)
    index = alpaca_eval_index(b)
    model, _, _ = b.evaluated()
    instruction_of = dict(zip(table["item_id"].astype(str), table["instruction"], strict=False))
    text = [instruction_of[b.items[i]] for i in b.item]
    truth = {r["instruction"]: i for i, r in enumerate(json.loads(full.read_text()))}
    assert [truth[t] for t in text] == index.tolist()  # every game keyed by its instruction
    v = model == b.models.index("vicuna-7b")
    assert (b.row[v] != index[v]).sum() > 700  # the row numbers after the first gap are not the key
    rng = np.random.default_rng(1)
    gamed_df = _df_gamed_as_alpaca_eval_builds_it(full, rng)
    p = tmp_path / "df_gamed.csv"
    gamed_df.to_csv(p, index=False)
    gamed = read_gamed_csv(p)
    t = leaderboard(b, BoardSettings(style_rounds=1, gamed=gamed), judges=False).table.set_index("model")
    assert (t["lc_status"] == "ok").all() and np.isfinite(t["lc_win_rate"]).all()
    # vicuna-7b's LC is the piece's value with the difficulty looked up by instruction
    from judgelab.board.length_controlled import length_controlled

    y = b.pref_b[v] if b.models[b.a[v][0]] != "vicuna-7b" else 1 - b.pref_b[v]
    len_m = np.where(b.b[v] == b.models.index("vicuna-7b"), b.len_b[v], b.len_a[v])
    len_base = np.where(b.b[v] == b.models.index("vicuna-7b"), b.len_a[v], b.len_b[v])
    diff = gamed.difficulty.reindex(index[v]).to_numpy(float)
    fit = length_controlled(len_base, len_m, y, diff, index[v], gamed=gamed)
    assert t.loc["vicuna-7b", "lc_win_rate"] == pytest.approx(fit.lc)
    # the shorter log listed first: the key still comes from the fuller one
    table2 = import_verdicts([short, full], preset_mapping("alpaca_eval"))
    b2 = battles_from_table(table2.assign(model_b=table2["model_b"].astype(str).replace({"vicuna-7b": "aaa-vicuna"})))
    text2 = [dict(zip(table2["item_id"].astype(str), table2["instruction"], strict=False))[b2.items[i]]
             for i in b2.item]
    assert alpaca_eval_index(b2).tolist() == [truth[x] for x in text2]
