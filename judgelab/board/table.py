"""The corrected leaderboard: raw win rate and three corrections per model, rank flips, judge
agreement.

``leaderboard.csv`` columns (win rates and scores in percent, AlpacaEval's scale):

===================== ==================================================================
model                 the evaluated model as the log names it (AlpacaEval: ``generator_2``)
n                     usable games of the model (verdicts with a preference)
n_failed              its games left out: no preference stated, or a failed game of the pair
win_rate, _ci_low/    raw win rate against the baseline (free battles: against all its
_ci_high              opponents) with the item-clustered interval (:mod:`.winrate`)
lc_win_rate, lc_ci_*  AlpacaEval's length-controlled win rate (:mod:`.length_controlled`)
lc_status             ``ok`` or why it is not estimable
lc_difficulty         where the instruction difficulty came from (``df_gamed.csv`` or
                      ``estimated from the logs``)
style_controlled,     Arena-Hard's style-controlled score (:mod:`.style_control`)
style_ci_*,
style_status
bias_aware, _ci_*,    paper 002's bias-aware Bradley-Terry score (:mod:`.bias_aware`)
bias_aware_status
baseline              the model every score is against (free battles: the reference)
source                the file the model's verdicts came from
===================== ==================================================================

A status other than ``ok`` leaves the number empty: never a number without support.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from judgelab.board.battles import Battles
from judgelab.board.bias_aware import BiasAwareResult, bias_aware, connected_to
from judgelab.board.length_controlled import (
    difficulty_given_weights,
    estimate_difficulty,
    lc_from_weights,
    length_controlled,
    std_delta_len,
)
from judgelab.board.separation import NotEstimable, reason, separated_models
from judgelab.board.settings import CORRECTION_NAMES, BoardSettings
from judgelab.board.winrate import win_rates
from judgelab.io import InputError
from judgelab.ranking.bias_aware import posterior_memory

if TYPE_CHECKING:  # style_control imports torch when it fits
    from judgelab.board.style_control import StyleResult

COLUMNS = ["model", "n", "n_failed", "win_rate", "win_rate_ci_low", "win_rate_ci_high", "lc_win_rate", "lc_ci_low",
           "lc_ci_high", "lc_status", "lc_difficulty", "style_controlled", "style_ci_low", "style_ci_high",
           "style_status", "bias_aware", "bias_aware_ci_low", "bias_aware_ci_high", "bias_aware_status", "baseline",
           "source"]
#: (score column, low, high, label) of each correction
CORRECTIONS = (("lc_win_rate", "lc_ci_low", "lc_ci_high", "length-controlled (AlpacaEval)"),
               ("style_controlled", "style_ci_low", "style_ci_high", "style-controlled (Arena-Hard)"),
               ("bias_aware", "bias_aware_ci_low", "bias_aware_ci_high", "bias-aware BT (paper 002)"))
FLIP_COLUMNS = ["correction", "model_1", "model_2", "win_rate_1", "win_rate_2", "corrected_1", "corrected_2",
                "raw_ci_overlap", "corrected_ci_overlap"]
MIN_LC_GAMES = 10
#: cells of the pairwise rank-flip comparison formed at once
FLIP_BLOCK_CELLS = 2**22
#: environment variable: the memory (GiB) a leaderboard may plan for; default the machine's memory
MEMORY_ENV = "JUDGELAB_MEMORY_GIB"




def left_out(name: str) -> str:
    """The status of a correction ``--corrections`` does not name."""
    return f"not computed: left out by --corrections ({name} not named)"


def memory_limit_bytes(s: BoardSettings) -> int:
    """The memory a run may plan for: the setting, else ``$JUDGELAB_MEMORY_GIB``, else physical memory."""
    if s.memory_gib is not None:
        return int(s.memory_gib * 2**30)
    env = os.environ.get(MEMORY_ENV, "").strip()
    if env:
        try:
            gib = float(env)
        except ValueError:
            raise InputError(f"${MEMORY_ENV}={env!r} is not a number of GiB") from None
        if not gib > 0:
            raise InputError(f"${MEMORY_ENV}={env!r} must be a positive number of GiB")
        return int(gib * 2**30)
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def check_memory(b: Battles, s: BoardSettings) -> None:
    """Refuse, before anything large is allocated, a bias-aware fit whose posterior would not fit.

    The fit's only superlinear need is its Laplace posterior (:func:`judgelab.ranking.bias_aware.
    posterior_memory`: a sparse factor bounded by the core of models compared with one another,
    ``p^2`` numbers only when small); every other correction grows with the games."""
    if "bias_aware" not in s.corrections:
        return
    need, core = posterior_memory(b.a, b.b, b.n_models, 3)
    limit = memory_limit_bytes(s)
    if need > limit:
        keep = ",".join(c for c in CORRECTION_NAMES if c != "bias_aware")
        raise InputError(
            f"{b.n_models} models: the bias-aware fit would need about {need / 2**30:.1f} GiB ({core} models "
            f"compared with one another beyond a chain or a baseline), more than the {limit / 2**30:.1f} GiB "
            f"allowed (${MEMORY_ENV}); rerun with --corrections {keep} to leave the bias-aware fit out, or "
            f"raise ${MEMORY_ENV} on a machine with that memory")


@dataclass
class Board:
    table: pd.DataFrame
    flips: pd.DataFrame
    judges: pd.DataFrame
    style: StyleResult | None  # None without torch
    meta: dict = field(default_factory=dict)


def _oriented(b: Battles) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                   np.ndarray, np.ndarray]:
    """Every game from each side: (model, opponent, P(model wins), item, weight, style model, style opp, game)."""
    g = np.arange(len(b))
    if b.baseline is not None:
        model, y, is_b = b.evaluated()
        opp = np.where(is_b, b.a, b.b)
        sm = np.where(is_b[:, None], b.style_b, b.style_a)
        so = np.where(is_b[:, None], b.style_a, b.style_b)
        return model, opp, y, b.item, b.weight, sm, so, g
    return (np.r_[b.b, b.a], np.r_[b.a, b.b], np.r_[b.pref_b, 1 - b.pref_b], np.r_[b.item, b.item],
            np.r_[b.weight, b.weight], np.vstack([b.style_b, b.style_a]), np.vstack([b.style_a, b.style_b]),
            np.r_[g, g])


def weights_key(model: str, source: str, index: pd.Index) -> str | None:
    """The row of AlpacaEval's weights file for a model: AlpacaEval keys it by the results folder
    (``results/<folder>/<annotator>/annotations.json``), which the annotations' ``generator_2``
    need not repeat (NullModel's say ``example``, itself another row); else the model's name."""
    parts = Path(source).parts
    if len(parts) >= 3 and parts[-1] == "annotations.json" and parts[-3] in index:
        return parts[-3]
    return model if model in index else None


def alpaca_eval_index(b: Battles) -> np.ndarray:
    """Each game's AlpacaEval index (the key of ``df_gamed.csv``), joined by instruction.

    ``df_gamed.csv`` keys an instruction by its row in a complete ``annotations.json`` (805 rows,
    the evaluation set's order); a results file that lacks some instructions (802-804 rows in
    some public folders) has its later rows shifted, so a row number is not a key.  The key is
    taken from the model whose log holds the most distinct instructions, each at one row (its
    rows are the evaluation set's order), and every game is looked up by its instruction."""
    model = b.b if b.baseline is None else b.evaluated()[0]
    best, key = -1, None
    for m in np.unique(model):
        sel = model == m
        pairs = pd.DataFrame({"item": b.item[sel], "row": b.row[sel]}).drop_duplicates()
        if pairs["item"].is_unique and pairs["row"].is_unique and len(pairs) > best:
            best, key = len(pairs), pd.Series(pairs["row"].to_numpy(), index=pairs["item"].to_numpy())
    if key is None:
        raise InputError("--gamed-csv: no model's log holds each instruction at one row, so the AlpacaEval index of "
                         "an instruction cannot be read from the logs")
    index = key.reindex(b.item).to_numpy(float)
    if np.isnan(index).any():
        raise InputError(f"--gamed-csv: instruction {b.items[int(b.item[np.isnan(index)][0])]!r} is in no log "
                         f"that gives the AlpacaEval index (the fullest log has {best} instructions)")
    return index.astype(np.int64)


def lc_inputs(b: Battles) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(evaluated model code, outcome, baseline's length, model's length, standardised length
    difference) of every game: what AlpacaEval's length-controlled GLM reads, the length difference
    standardised per model."""
    model, y, is_b = b.evaluated()
    len_m = np.where(is_b, b.len_b, b.len_a)
    len_base = np.where(is_b, b.len_a, b.len_b)
    sdl = np.zeros(len(b))
    for m in np.unique(model):
        rows = model == m
        sdl[rows] = std_delta_len(len_base[rows], len_m[rows])
    return model, y, len_base, len_m, sdl


def _lc(b: Battles, s: BoardSettings) -> tuple[dict[int, tuple[float, float, float]], dict[int, str], str,
                                               dict[int, float]]:
    """LC per evaluated model code: values, statuses, difficulty source, published-weights LC."""
    out: dict[int, tuple[float, float, float]] = {}
    status: dict[int, str] = {}
    from_weights: dict[int, float] = {}
    if b.baseline is None:
        return out, {m: "not estimable: needs every game against one baseline (free battles)"
                     for m in range(b.n_models)}, "", from_weights
    if "lc" not in s.corrections:
        return out, {m: left_out("lc") for m in range(b.n_models)}, "", from_weights
    model, y, len_base, len_m, sdl = lc_inputs(b)
    if s.gamed is not None:
        diff_series = s.gamed.difficulty
        index = alpaca_eval_index(b)
        missing = ~np.isin(index, diff_series.index.to_numpy())
        if missing.any():
            raise InputError(f"df_gamed.csv has no instruction_difficulty for index {int(index[missing][0])} "
                             f"(instruction {b.items[int(b.item[missing][0])]!r})")
        difficulty = diff_series.reindex(index).to_numpy(float)
        cluster, source = index, "df_gamed.csv"
    else:
        d = estimate_difficulty(model, b.item, sdl, y, b.n_models, len(b.items))
        difficulty, cluster = d[b.item], b.item
        source = f"estimated from the logs ({len(np.unique(model))} models)"
    for m in np.unique(model):
        rows = np.flatnonzero(model == m)
        if len(rows) < MIN_LC_GAMES:
            status[m] = f"not estimable: {len(rows)} games, the cross-validated GLM needs {MIN_LC_GAMES}"
            continue
        try:
            fit = length_controlled(len_base[rows], len_m[rows], y[rows], difficulty[rows], cluster[rows],
                                    gamed=s.gamed, alpha=s.alpha)
        except NotEstimable as exc:
            status[m] = str(exc)
            continue
        out[m] = (fit.lc, fit.ci_low, fit.ci_high)
        status[m] = "ok"
    if s.lc_weights is not None:
        key = {m: weights_key(b.models[m], b.sources.get(b.models[m], ""), s.lc_weights.index)
               for m in np.unique(model)}
        known = [m for m, k in key.items() if k is not None]
        if known:
            rows = np.flatnonzero(np.isin(model, known))
            w = s.lc_weights.loc[[key[m] for m in model[rows]]].to_numpy(float)
            _, item = np.unique(b.item[rows], return_inverse=True)
            d = difficulty_given_weights(w, item, sdl[rows], y[rows], int(item.max()) + 1)
            for m in known:
                sel = model[rows] == m
                from_weights[m] = lc_from_weights(s.lc_weights.loc[key[m]].to_numpy(float), d[item[sel]])
    return out, status, source, from_weights


def _style(b: Battles, s: BoardSettings) -> tuple[StyleResult | None, list[str]]:
    if "style" not in s.corrections:
        return None, [left_out("style")] * b.n_models
    try:  # Arena-Hard's fit is torch's L-BFGS; torch comes with judgelab[train]
        from judgelab.board.style_control import FEATURES, style_controlled, style_controlled_frozen
    except ImportError:
        return None, ["not estimable: Arena-Hard's style control needs torch (pip install 'judgelab[train]')"
                      ] * b.n_models
    model, opp, y, _, weight, sm, so, _ = _oriented(b)
    ref = b.models.index(b.reference)
    if s.style_reference is not None:
        if b.baseline is None:
            raise InputError("--style-reference freezes the style coefficients of logs against one baseline; "
                             "this log is free battles")
        res = style_controlled_frozen(model, y, weight, sm, so, b.models, ref, s.style_reference,
                                      rounds=s.style_rounds, alpha=s.alpha, seed=s.seed)
    else:
        res = style_controlled(model, opp, y, weight, sm, so, b.n_models, ref, rounds=s.style_rounds,
                               alpha=s.alpha, seed=s.seed)
    status = ["ok"] * b.n_models
    if res.separation is not None and res.separation.any:
        cols = res.separation.columns()
        terms = [FEATURES[c - b.n_models] for c in cols if c >= b.n_models]
        for m, (k, n) in separated_models(res.separation.rows, model, opp, b.n_models, ref).items():
            res.score[m] = res.ci_low[m] = res.ci_high[m] = np.nan
            own = ["its score"] if m in cols or ref in cols else []
            status[m] = reason(k, n, own + terms)
    reach = connected_to(model, opp, b.n_models, ref)
    for m in np.flatnonzero(~reach).tolist():
        res.score[m] = res.ci_low[m] = res.ci_high[m] = np.nan
        status[m] = f"not estimable: no chain of games to the reference {b.reference!r}"
    return res, status


def leaderboard(b: Battles, s: BoardSettings | None = None, *, judges: bool = True) -> Board:
    """The leaderboard of the battles ``b`` (see the module doc for the columns)."""
    s = s or BoardSettings()
    unknown = [c for c in s.corrections if c not in CORRECTION_NAMES]
    if unknown:
        raise InputError(f"--corrections: unknown correction {unknown[0]!r} (choose from "
                         f"{', '.join(CORRECTION_NAMES)})")
    check_memory(b, s)
    model, _opp, y, item, *_ = _oriented(b)
    raw = win_rates(model, y, item, b.n_models, s.alpha)
    lc, lc_status, lc_source, lc_w = _lc(b, s)
    style, style_status = _style(b, s)
    if "bias_aware" in s.corrections:
        ba = bias_aware(b, alpha=s.alpha)
    else:
        nan = np.full(b.n_models, np.nan)
        ba = BiasAwareResult(score=nan, ci_low=nan, ci_high=nan, status=[left_out("bias_aware")] * b.n_models,
                             terms={}, note="")
    ref = b.models.index(b.reference)
    rows = []
    for m, name in enumerate(b.models):
        if b.baseline is not None and name == b.baseline:
            continue
        r = raw[m]
        row = {"model": name, "n": r.n, "n_failed": b.failed.get(name, 0), "win_rate": r.win_rate,
               "win_rate_ci_low": r.ci_low, "win_rate_ci_high": r.ci_high}
        v = lc.get(m, (np.nan, np.nan, np.nan))
        row.update(lc_win_rate=v[0], lc_ci_low=v[1], lc_ci_high=v[2],
                   lc_status=lc_status.get(m, "not estimable: no games"), lc_difficulty=lc_source)
        if s.lc_weights is not None:
            row["lc_from_published_weights"] = lc_w.get(m, np.nan)
        st = style if style is not None and style_status[m] == "ok" else None
        row.update(style_controlled=st.score[m] if st is not None else np.nan,
                   style_ci_low=st.ci_low[m] if st is not None else np.nan,
                   style_ci_high=st.ci_high[m] if st is not None else np.nan,
                   style_status="reference (50 by definition)" if m == ref and "style" in s.corrections
                   else style_status[m])
        row.update(bias_aware=ba.score[m], bias_aware_ci_low=ba.ci_low[m], bias_aware_ci_high=ba.ci_high[m],
                   bias_aware_status="reference (50 by definition)" if m == ref and "bias_aware" in s.corrections
                   else ba.status[m],
                   baseline=b.reference, source=b.sources.get(name, ""))
        if r.n == 0:
            for col, lo, hi, _ in CORRECTIONS:
                row[col] = row[lo] = row[hi] = np.nan
        rows.append(row)
    cols = COLUMNS + (["lc_from_published_weights"] if s.lc_weights is not None else [])
    table = pd.DataFrame(rows, columns=cols)
    table = table.sort_values("win_rate", ascending=False, kind="stable").reset_index(drop=True)
    flips = rank_flips(table)
    agree = leave_one_judge_out(b, s, table) if judges and len(b.judges) > 1 else pd.DataFrame(
        columns=["judge_left_out", "score", "kendall_tau", "n_models"])
    meta = {"design": "baseline" if b.baseline is not None else "free battles", "baseline": b.reference,
            "games": len(b), "models": b.n_models, "judges": list(b.judges), "style_source": b.style_source,
            "lc_difficulty": lc_source, "bias_aware_terms": {k: list(v) for k, v in ba.terms.items()},
            "bias_aware_note": ba.note, "simulated": b.simulated, "alpha": s.alpha,
            "style_rounds": s.style_rounds, "style_frozen": s.style_reference is not None}
    return Board(table=table, flips=flips, judges=agree, style=style, meta=meta)


def _overlap(lo1: np.ndarray, hi1: np.ndarray, lo2: np.ndarray, hi2: np.ndarray) -> np.ndarray:
    return (lo1 <= hi2) & (lo2 <= hi1)


def rank_flips(table: pd.DataFrame) -> pd.DataFrame:
    """Pairs of models whose order under a correction is the reverse of their raw order."""
    out = []
    raw = table["win_rate"].to_numpy(float)
    rlo, rhi = table["win_rate_ci_low"].to_numpy(float), table["win_rate_ci_high"].to_numpy(float)
    names = table["model"].to_numpy()
    # rows in blocks: the pairwise comparison of 10,000 models would be 100 million cells at once
    step = max(1, FLIP_BLOCK_CELLS // max(len(raw), 1))
    for col, lo, hi, _ in CORRECTIONS:
        c = table[col].to_numpy(float)
        clo, chi = table[lo].to_numpy(float), table[hi].to_numpy(float)
        found = [np.nonzero((raw[r:r + step, None] > raw[None, :]) & (c[r:r + step, None] < c[None, :]))
                 for r in range(0, len(raw), step)]
        i = np.concatenate([f[0] + r for f, r in zip(found, range(0, len(raw), step), strict=True)]
                           or [np.zeros(0, np.int64)])
        i = i.astype(np.int64)
        j = np.concatenate([f[1] for f in found] or [np.zeros(0, np.int64)]).astype(np.int64)
        if len(i) == 0:
            continue
        out.append(pd.DataFrame({
            "correction": col, "model_1": names[i], "model_2": names[j], "win_rate_1": raw[i], "win_rate_2": raw[j],
            "corrected_1": c[i], "corrected_2": c[j], "raw_ci_overlap": _overlap(rlo[i], rhi[i], rlo[j], rhi[j]),
            "corrected_ci_overlap": _overlap(clo[i], chi[i], clo[j], chi[j])}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=FLIP_COLUMNS)


def leave_one_judge_out(b: Battles, s: BoardSettings, full: pd.DataFrame) -> pd.DataFrame:
    """Kendall tau between the full leaderboard's order and the one without each judge in turn."""
    rows = []
    light = BoardSettings(alpha=s.alpha, style_rounds=max(1, min(s.style_rounds, 20)), seed=s.seed, gamed=s.gamed,
                          style_reference=s.style_reference, corrections=s.corrections, memory_gib=s.memory_gib)
    for j, judge in enumerate(b.judges):
        keep = b.judge != j
        if not keep.any():
            continue
        sub = leaderboard(b.subset(keep), light, judges=False).table.set_index("model")
        for col in ("win_rate", *tuple(c[0] for c in CORRECTIONS)):
            both = full.set_index("model")[col].to_frame("full").join(sub[col].rename("without"), how="inner")
            both = both.dropna()
            tau = kendalltau(both["full"], both["without"]).statistic if len(both) >= 2 else np.nan
            rows.append({"judge_left_out": judge, "score": col, "kendall_tau": tau, "n_models": len(both)})
    return pd.DataFrame(rows, columns=["judge_left_out", "score", "kendall_tau", "n_models"])
