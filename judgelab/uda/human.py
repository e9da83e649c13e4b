"""Human reference scores for MT-Bench: a Bradley-Terry fit of the expert votes, with bootstrap CIs.

Paper 000 correlates every judge's Elo scores with human-annotated scores of the answer
models (its Tables 3, 6, Fig. 4).  On MT-Bench the human signal is the 1,689 turn-1 votes of
experts and authors (``mt_bench/human_judgments_turn1.jsonl``: model_a, model_b, winner in
model_a / model_b / tie).  We fit the plain Bradley-Terry model (a tie is half a win each
way; :func:`judgelab.ranking.bradley_terry.fit_bradley_terry`) on all votes and map the
strengths to the Elo scale of the tournament (``initial + theta / c``, c = ln 10 / scale).
95% intervals are percentile bootstraps over votes (scipy.stats.bootstrap, seeded).

Columns of the table: model, n_votes, wins, losses, ties, theta (logit strength, mean 0),
elo, elo_ci_low, elo_ci_high.

Caveat (MANIFEST 1.5): the votes judged ``vicuna-13b-v1.2``, whose answers are not in the
data; the tournament uses ``vicuna-13b-v1.3``'s answers and maps them to the v1.2 human
score only where ``human_aliases`` says so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from judgelab.io import InputError, iter_jsonl
from judgelab.ranking.bradley_terry import fit_bradley_terry
from judgelab.stats.intervals import DEFAULT_ALPHA
from judgelab.uda.elo import EloConfig

WINNERS = ("model_a", "model_b", "tie")


def load_votes(path: str | Path) -> pd.DataFrame:
    """The votes as a table (question_id, judge, model_a, model_b, winner); errors name file and line."""
    rows = []
    for n, obj in iter_jsonl(path):
        missing = [k for k in ("model_a", "model_b", "winner") if k not in obj]
        if missing:
            raise InputError(f"{path}:{n}: missing field(s) {missing}")
        if obj["winner"] not in WINNERS:
            raise InputError(f"{path}:{n}: winner must be one of {WINNERS}, got {obj['winner']!r}")
        if obj["model_a"] == obj["model_b"]:
            raise InputError(f"{path}:{n}: model_a and model_b are the same model {obj['model_a']!r}")
        rows.append({"question_id": obj.get("question_id"), "judge": obj.get("judge", ""),
                     "model_a": str(obj["model_a"]), "model_b": str(obj["model_b"]), "winner": obj["winner"]})
    if not rows:
        raise InputError(f"{path}: no votes")
    return pd.DataFrame(rows)


def _design(votes: pd.DataFrame, index: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = votes["model_a"].map(index).to_numpy()
    b = votes["model_b"].map(index).to_numpy()
    w = votes["winner"].to_numpy()
    tie = w == "tie"
    win_a = w == "model_a"
    winners = np.concatenate([np.where(win_a, a, b)[~tie], a[tie], b[tie]])
    losers = np.concatenate([np.where(win_a, b, a)[~tie], b[tie], a[tie]])
    weights = np.concatenate([np.ones((~tie).sum()), np.full(tie.sum(), 0.5), np.full(tie.sum(), 0.5)])
    return winners, losers, weights


def bradley_terry_scores(votes: pd.DataFrame, elo: EloConfig, *, n_boot: int = 1000, seed: int = 0,
                         alpha: float = DEFAULT_ALPHA) -> pd.DataFrame:
    """Bradley-Terry strengths of every voted model on the Elo scale, with bootstrap CIs at level
    ``1 - alpha``."""
    models = sorted(set(votes["model_a"]) | set(votes["model_b"]))
    index = {m: i for i, m in enumerate(models)}
    win, lose, wt = _design(votes, index)
    theta = fit_bradley_terry(win, lose, len(models), weights=wt)
    to_elo = lambda th: elo.initial + (th - th.mean()) / elo.c  # noqa: E731
    out = pd.DataFrame({"model": models, "theta": theta, "elo": to_elo(theta)})
    counts = []
    for m in models:
        as_a, as_b = votes["model_a"] == m, votes["model_b"] == m
        wins = int(((as_a & (votes["winner"] == "model_a")) | (as_b & (votes["winner"] == "model_b"))).sum())
        ties = int(((as_a | as_b) & (votes["winner"] == "tie")).sum())
        n = int((as_a | as_b).sum())
        counts.append({"n_votes": n, "wins": wins, "losses": n - wins - ties, "ties": ties})
    out = pd.concat([out[["model"]], pd.DataFrame(counts), out[["theta", "elo"]]], axis=1)
    if n_boot > 0:
        from scipy import stats  # here: the uda rules that import this module and bootstrap nothing skip it

        idx = np.arange(len(votes))

        def stat(sample: np.ndarray) -> np.ndarray:
            ww, ll, wwt = _design(votes.iloc[sample], index)
            return to_elo(fit_bradley_terry(ww, ll, len(models), weights=wwt))

        res = stats.bootstrap((idx,), stat, vectorized=False, n_resamples=n_boot, confidence_level=1 - alpha,
                              method="percentile", random_state=np.random.default_rng(seed))
        out["elo_ci_low"] = res.confidence_interval.low
        out["elo_ci_high"] = res.confidence_interval.high
    else:
        out["elo_ci_low"] = np.nan
        out["elo_ci_high"] = np.nan
    return out


def human_reference(table: pd.DataFrame, models: list[str], aliases: dict[str, str] | None = None) -> pd.Series:
    """Human Elo per tournament model (via ``aliases``: tournament name -> voted name); NaN if unvoted."""
    aliases = dict(aliases or {})
    by = table.set_index("model")["elo"]
    return pd.Series({m: float(by.get(aliases.get(m, m), np.nan)) for m in models}, name="human_bt")
