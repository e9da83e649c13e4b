"""How far ``lc_from_published_weights`` (``judgelab leaderboard --lc-weights``) lies from AlpacaEval's
published length-controlled win rate, model by model, and whether AlpacaEval's row-position lookup
of instruction difficulty explains the larger gaps.

Usage::

    python scripts/lc_weights_gap.py RESULTS WEIGHTS.csv LEADERBOARD.csv [--out gaps.csv]

``RESULTS`` holds AlpacaEval's ``<folder>/weighted_alpaca_eval_gpt4_turbo/annotations.json``;
``WEIGHTS.csv`` is ``length_controlled_v1/baseline_gpt4_1106_preview.csv``; ``LEADERBOARD.csv`` is
the published leaderboard (``docs/data_AlpacaEval_2/...`` with ``name``/``samples`` columns, or
``src/alpaca_eval/leaderboards/...`` keyed by the results folder).

Two numbers per model:

``by_instruction``
    what judgelab reports: the instruction difficulty re-estimated from all the logs given the
    published weights (:func:`judgelab.board.length_controlled.difficulty_given_weights`), each game
    looked up by its instruction, then ``100 mean sigma(w_d d + w_ng)`` over the model's games.
``by_position``
    the same difficulties looked up the way AlpacaEval's ``_get_featurized_data`` does
    (``glm_winrate.py``: ``df = df_annotations.reset_index()`` then
    ``df["index"].transform(lambda g: instruction_difficulty[g])``): the game in row ``r`` of the
    model's file gets the difficulty of instruction ``r`` of the complete 805-row evaluation set.
    For a complete file the two agree; for a file that lacks instructions every later row is shifted.

The joint difficulty fit is the library's, not a copy: the script differs from ``_lc`` in
:mod:`judgelab.board.table` only in skipping the per-model GLM fits it does not need
(tests/board/test_lc_weights_gap.py checks ``by_instruction`` against ``leaderboard()``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares
from scipy.special import expit

from judgelab.board.battles import Battles, battles_from_table
from judgelab.board.length_controlled import difficulty_given_weights, read_lc_weights
from judgelab.board.table import lc_inputs, weights_key
from judgelab.io import InputError
from judgelab.verdict_import.importer import import_verdicts
from judgelab.verdict_import.presets import mapping_from_config

ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
THRESHOLD_PP = 0.9
DATASET_SIZE = 805  # AlpacaEval 2.0 instructions


def published_lc(path: str | Path) -> pd.Series:
    """Published ``length_controlled_winrate`` keyed by results folder (the ``samples`` link names it);
    a folder listed twice keeps its first row."""
    df = pd.read_csv(path)
    if "length_controlled_winrate" not in df.columns:
        raise InputError(f"{path}: no length_controlled_winrate column (AlpacaEval's leaderboard CSV)")
    folder = (df["samples"].astype(str).str.extract(r"/results/([^/]+)/", expand=False) if "samples" in df.columns
              else df.iloc[:, 0].astype(str))
    lc = pd.Series(pd.to_numeric(df["length_controlled_winrate"], errors="coerce").to_numpy(float),
                   index=folder.to_numpy()).dropna()
    return lc[lc.index.notna() & ~lc.index.duplicated()]


def annotation_files(results: str | Path) -> list[Path]:
    return sorted(Path(results).glob(f"*/{ANNOTATOR}/annotations.json"))


def gaps(battles: Battles, weights: pd.DataFrame, published: pd.Series) -> tuple[pd.DataFrame, np.ndarray]:
    """One row per model with weights and a published LC (both LCs, their gaps, the file's rows), and
    the re-estimated difficulty of every instruction in AlpacaEval's order."""
    model, y, _, _, sdl = lc_inputs(battles)
    key = {m: weights_key(battles.models[m], battles.sources.get(battles.models[m], ""), weights.index)
           for m in np.unique(model)}
    known = [m for m, k in key.items() if k is not None]
    rows = np.flatnonzero(np.isin(model, known))
    w = weights.loc[[key[m] for m in model[rows]]].to_numpy(float)
    _, item = np.unique(battles.item[rows], return_inverse=True)
    d = difficulty_given_weights(w, item, sdl[rows], y[rows], int(item.max()) + 1)
    # AlpacaEval's index of an instruction: its row in a complete file (the evaluation set's order)
    full = max(known, key=lambda m: int(np.sum(model[rows] == m)))
    sel_full = model[rows] == full
    d_by_row = pd.Series(d[item[sel_full]], index=battles.row[rows][sel_full]).sort_index().to_numpy()
    out = []
    for m in known:
        sel = model[rows] == m
        wm = weights.loc[key[m]].to_numpy(float)
        by_instruction = float(100 * np.mean(expit(wm[1] * d[item[sel]] + wm[2])))
        file_rows = battles.row[rows][sel]
        by_position = float(100 * np.mean(expit(wm[1] * d_by_row[file_rows] + wm[2])))
        folder = key[m]
        if folder not in published.index:
            continue
        pub = float(published.loc[folder])
        out.append({"folder": folder, "rows": int(file_rows.max()) + 1, "games": int(sel.sum()),
                    "published_lc": pub, "by_instruction": by_instruction, "gap": by_instruction - pub,
                    "by_position": by_position, "gap_by_position": by_position - pub})
    return pd.DataFrame(out).sort_values("folder", ignore_index=True), d_by_row


def calibrated_residuals(difficulty: np.ndarray, weights: pd.DataFrame, published: pd.Series,
                         degree: int = 3) -> pd.Series:
    """Published LC minus the LC that every weights row predicts when the difficulty is a polynomial
    of ``difficulty`` fitted (least squares over all rows with a published LC) to the published LCs.

    For a complete file AlpacaEval's LC depends on the difficulty only through its distribution over
    the 805 instructions, so this needs no annotations: if a smooth transform of judgelab's
    re-estimate reproduces every published LC, the weights and the LCs are consistent with one fixed
    difficulty and the gap of ``by_instruction`` is the difficulty, not the logs or the weights.
    scipy's ``least_squares`` does the fit; the model is AlpacaEval's ``predict_winrate``."""
    common = [k for k in weights.index if k in published.index]
    w = weights.loc[common].to_numpy(float)
    target = published.loc[common].to_numpy(float)

    def predicted(coef: np.ndarray) -> np.ndarray:
        return 100 * expit(w[:, 1:2] * np.polyval(coef, difficulty)[None, :] + w[:, 2:3]).mean(axis=1)

    start = np.zeros(degree + 1)
    start[-2] = 1.0  # the identity
    coef = least_squares(lambda c: predicted(c) - target, start).x
    return pd.Series(predicted(coef) - target, index=common, name="gap_calibrated")


def summary(table: pd.DataFrame, column: str) -> str:
    g = table[column].abs()
    over = table.loc[g > THRESHOLD_PP, ["folder", "rows", column]]
    listed = ", ".join(f"{r.folder} ({r.rows} rows, {getattr(r, column):+.2f})" for r in over.itertuples())
    return (f"{column}: {len(g)} models, median |gap| {g.median():.2f} pp, max {g.max():.2f} pp, "
            f"{len(over)} above {THRESHOLD_PP} pp" + (f": {listed}" if listed else ""))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", help="folder of <model>/weighted_alpaca_eval_gpt4_turbo/annotations.json")
    p.add_argument("weights", help="AlpacaEval's length_controlled_v1 weights CSV")
    p.add_argument("leaderboard", help="AlpacaEval's published leaderboard CSV")
    p.add_argument("--out", help="write the per-model table here (CSV)")
    args = p.parse_args(argv)
    files = annotation_files(args.results)
    if not files:
        print(f"lc_weights_gap: error: no */{ANNOTATOR}/annotations.json under {args.results}", file=sys.stderr)
        return 2
    try:
        weights, published = read_lc_weights(args.weights), published_lc(args.leaderboard)
        battles = battles_from_table(import_verdicts(files, mapping_from_config("alpaca_eval")))
    except (InputError, OSError, KeyError) as exc:
        print(f"lc_weights_gap: error: {exc}", file=sys.stderr)
        return 2
    table, difficulty = gaps(battles, weights, published)
    calibrated = None
    if len(difficulty) == DATASET_SIZE:  # a complete file among the logs: the 805 difficulties in order
        calibrated = calibrated_residuals(difficulty, weights, published)
        table["gap_calibrated"] = table["folder"].map(calibrated)
    with pd.option_context("display.width", 160, "display.max_rows", 500):
        print(table.round(2).to_string(index=False))
    print(summary(table, "gap"))
    print(summary(table, "gap_by_position"))
    if calibrated is not None:
        size = calibrated.abs()
        print(f"weights alone, difficulty a cubic of the re-estimate: {len(size)} models, median |gap| "
              f"{size.median():.3f} pp, max {size.max():.3f} pp ({size.idxmax()}), "
              f"{int((size > 0.1).sum())} above 0.1 pp, {int((size > THRESHOLD_PP).sum())} above {THRESHOLD_PP} pp")
    if args.out:
        table.to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
