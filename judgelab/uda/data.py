"""The arrays of one tournament, as the Elo and adapter code read them.

:class:`TournamentData` holds, for P prompts, N answer models and M judges: the answer
embeddings (P, N, D), the judges' own-answer embeddings (P, M, D), and the verdicts as
scores[p, i, j, k] = judge k's score of model i when i was shown as A and j as B (1 win,
0.5 tie, 0 loss, NaN when there is no usable verdict: unparsed, refusal, error, or not
asked).  :func:`from_tables` builds it from the pipeline's tables with errors that name
the table and the offending key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgelab.io import InputError, table_tuples

SCORE_OF_VERDICT = {"A": 1.0, "B": 0.0, "tie": 0.5}


@dataclass
class TournamentData:
    dataset: str
    prompt_ids: list[str]
    models: list[str]
    judges: list[str]
    E_models: np.ndarray  # (P, N, D) float32
    E_judges: np.ndarray  # (P, M, D) float32
    scores: np.ndarray  # (P, N, N, M) float64
    embedder: str = ""

    def __post_init__(self) -> None:
        P, N, M = len(self.prompt_ids), len(self.models), len(self.judges)
        if self.E_models.shape[:2] != (P, N):
            raise ValueError(f"E_models has shape {self.E_models.shape}, expected ({P}, {N}, D)")
        if self.E_judges.shape[:2] != (P, M):
            raise ValueError(f"E_judges has shape {self.E_judges.shape}, expected ({P}, {M}, D)")
        if self.scores.shape != (P, N, N, M):
            raise ValueError(f"scores has shape {self.scores.shape}, expected {(P, N, N, M)}")

    @property
    def n_prompts(self) -> int:
        return len(self.prompt_ids)

    @property
    def dim(self) -> int:
        return int(self.E_models.shape[-1])

    @property
    def n_judgments(self) -> int:
        """Judgments with a usable verdict."""
        return int((~np.isnan(self.scores)).sum())


def from_tables(dataset: str, tournament: pd.DataFrame, verdicts: pd.DataFrame, embeddings: pd.DataFrame,
                *, judges: Sequence[str] | None = None) -> TournamentData:
    """Assemble :class:`TournamentData` from the tournament, verdict and embedding tables.

    ``verdicts`` needs prompt_id, model_a, model_b, judge, verdict (A/B/tie or empty);
    ``embeddings`` needs kind (model/judge), prompt_id, name, embedding.
    """
    prompt_ids = list(dict.fromkeys(tournament["prompt_id"].astype(str)))
    models = list(dict.fromkeys(tournament["model"].astype(str)))
    judges = list(judges) if judges is not None else sorted(verdicts["judge"].astype(str).unique())
    pi = {p: n for n, p in enumerate(prompt_ids)}
    mi = {m: n for n, m in enumerate(models)}
    ki = {k: n for n, k in enumerate(judges)}
    P, N, M = len(prompt_ids), len(models), len(judges)

    emb = embeddings.copy()
    emb["prompt_id"] = emb["prompt_id"].astype(str)
    dims = {len(e) for e in emb["embedding"]}
    if len(dims) != 1:
        raise InputError(f"embeddings of {dataset!r}: rows have different dimensions {sorted(dims)}")
    D = dims.pop()
    E_models = np.full((P, N, D), np.nan, dtype=np.float32)
    E_judges = np.full((P, M, D), np.nan, dtype=np.float32)
    for row in table_tuples(emb, index=False):
        if row.prompt_id not in pi:
            continue
        if row.kind == "model" and row.name in mi:
            E_models[pi[row.prompt_id], mi[row.name]] = np.asarray(row.embedding, dtype=np.float32)
        elif row.kind == "judge" and row.name in ki:
            E_judges[pi[row.prompt_id], ki[row.name]] = np.asarray(row.embedding, dtype=np.float32)
    for arr, names, what in ((E_models, models, "model"), (E_judges, judges, "judge")):
        miss = np.argwhere(np.isnan(arr).any(axis=-1))
        if len(miss):
            p, n = miss[0]
            raise InputError(f"embeddings of {dataset!r}: no {what} embedding for prompt {prompt_ids[p]!r}, "
                             f"{what} {names[n]!r} ({len(miss)} missing)")

    scores = np.full((P, N, N, M), np.nan)
    missing_judges = set(ki) - set(verdicts["judge"].astype(str))
    if missing_judges:
        raise InputError(f"verdicts of {dataset!r}: no verdict table rows for judge(s) {sorted(missing_judges)}")
    for row in table_tuples(verdicts, index=False):
        k = ki.get(str(row.judge))
        if k is None:
            continue
        try:
            p, a, b = pi[str(row.prompt_id)], mi[str(row.model_a)], mi[str(row.model_b)]
        except KeyError as exc:
            raise InputError(f"verdicts of {dataset!r}, judge {row.judge!r}: {exc.args[0]!r} is not in the "
                             f"tournament table") from None
        val = SCORE_OF_VERDICT.get(str(row.verdict))
        if val is not None:
            scores[p, a, b, k] = val
    embedder = str(emb["embedder"].iloc[0]) if "embedder" in emb.columns and len(emb) else ""
    return TournamentData(dataset, prompt_ids, models, judges, E_models, E_judges, scores, embedder)
