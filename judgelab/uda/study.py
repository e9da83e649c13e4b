"""The steps of study ``uda`` as functions of tables, so the rule scripts stay thin.

``rules/uda.smk`` runs, per tournament (config ``uda.datasets``): build the tournament table
-> every judge answers and judges (``judge_tournament``) -> embed every answer once
(:func:`embed_tournament`) -> train the full and the ablated adapter (:func:`train_variants`)
-> baseline and UDA scores, in-domain and zero-shot transferred (:func:`score_tournament`)
-> the paper's tables (:func:`study_tables`) and figures.

**Scores table** (``scores.parquet``): dataset, method (baseline / label_smoothing /
uda_untrained / uda / uda_ablated), trained_on (the tournament the adapter was trained on;
empty for baseline), split (``all`` prompts -- the paper's protocol, in-sample for an
in-domain adapter -- or, for a tournament an adapter was trained on, its ``train`` and
held-out validation ``heldout`` prompts, each an Elo run of its own), judge, model, score
(final Elo).  The two controls stand beside every full adapter: ``uda_untrained`` is the
same network before training (plain Elo unless ``uda.training.init_label`` < 1) and
``label_smoothing`` the constant-(K, label) Elo fitted by Eq. (3) on the adapter's training
prompts.  **Trajectories** (``trajectories.parquet``): the keys of the ``all`` split plus
``step`` (number of prompts processed, 0 = initial ratings) and ``score``.

**Controls table** (``tables/controls.csv``): per split and method the mean inter-judge std,
its reduction against the baseline on the same prompts, the consensus spread and the
relative std (std / spread) with its reduction: raw and relative, in-sample and held-out.

**Summary** (``results/uda/summary.csv``): per tournament and method the number of judges with a
usable verdict (``n_judges``; the others are left out of every statistic), the mean inter-judge std,
its reduction, the relative std, Pearson with the reference (mean over judges, consensus), the
self-preference range (all on every prompt, as in the paper), and from the controls table the
raw and relative std on the held-out validation prompts (``heldout_std``,
``heldout_relative_std``) next to the baseline's on those prompts.

**Judges table** (``tables/judges.csv``): per judge its own model, answers, verdict counts by
status (ok, fallback, unparsed, refusal, error), share of presentations with a usable
verdict, tie rate and first-slot win rate; unparsed answers are comparisons that no Elo
update uses, and they are counted here.  A judge with no usable verdict keeps its row: the
rates NaN (its Elo scores are the initial ones) and ``reason`` saying why
(:mod:`judgelab.stats.unscored`; empty on a scored row).  The same reason (:func:`judge_reasons`)
blanks that judge's initial-rating row in every other table (:mod:`judgelab.uda.metrics`): its
rows there are NaN with the reason, and spreads and consensus are over the scored judges.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from judgelab.io import any_true, table_tuples
from judgelab.records import CallStatus
from judgelab.stats.unscored import blank, no_value_reason
from judgelab.uda import metrics
from judgelab.uda.data import TournamentData, from_tables
from judgelab.uda.embeddings import EmbeddingConfig, embed_texts, make_embedder

if TYPE_CHECKING:  # torch is imported only by the steps that train or apply adapters
    from judgelab.uda.elo import EloConfig
    from judgelab.uda.training import TrainConfig, TrainResult

log = logging.getLogger(__name__)

EMBEDDING_COLUMNS = ["dataset", "kind", "prompt_id", "name", "embedder", "embedding"]


def embed_tournament(tournament: pd.DataFrame, answers: pd.DataFrame, cfg: EmbeddingConfig) -> pd.DataFrame:
    """One embedding per model answer (kind = model) and per judge's own answer (kind = judge)."""
    embedder = make_embedder(cfg)
    rows = [("model", r.prompt_id, r.model, r.answer) for r in table_tuples(tournament, index=False)]
    rows += [("judge", r.prompt_id, r.judge, r.answer) for r in table_tuples(answers, index=False)]
    E = embed_texts(embedder, [str(t) for *_, t in rows])
    dataset = str(tournament["dataset"].iloc[0])
    return pd.DataFrame({
        "dataset": dataset, "kind": [r[0] for r in rows], "prompt_id": [str(r[1]) for r in rows],
        "name": [r[2] for r in rows], "embedder": embedder.name, "embedding": list(E.astype(np.float32)),
    }, columns=EMBEDDING_COLUMNS)


def load_data(dataset: str, tournament: pd.DataFrame, verdicts: pd.DataFrame, embeddings: pd.DataFrame,
              judges: Sequence[str]) -> TournamentData:
    return from_tables(dataset, tournament, verdicts, embeddings, judges=list(judges))


def train_variants(data: TournamentData, variants: Sequence[str], cfg: TrainConfig, elo: EloConfig,
                   order_seed: int) -> dict[str, TrainResult]:
    from judgelab.uda.training import train_adapter

    return {v: train_adapter(data, v, cfg, elo, order_seed=order_seed) for v in variants}


def _long(dataset: str, method: str, trained_on: str, R: np.ndarray, data: TournamentData,
          split: str = "all") -> pd.DataFrame:
    M, N = R.shape
    return pd.DataFrame({
        "dataset": dataset, "method": method, "trained_on": trained_on, "split": split,
        "judge": np.repeat(data.judges, N), "model": np.tile(data.models, M), "score": R.reshape(-1),
    })


def _traj(dataset: str, method: str, trained_on: str, T: np.ndarray, data: TournamentData) -> pd.DataFrame:
    M, steps, N = T.shape
    return pd.DataFrame({
        "dataset": dataset, "method": method, "trained_on": trained_on,
        "judge": np.repeat(data.judges, steps * N), "step": np.tile(np.repeat(np.arange(steps), N), M),
        "model": np.tile(data.models, M * steps), "score": T.reshape(-1),
    })


def prompt_splits(data: TournamentData, metas: Sequence[dict[str, Any]]) -> dict[str, np.ndarray | None]:
    """Prompt subsets scored: ``all`` (the paper's protocol) and, when an adapter was trained on this
    tournament, its ``train`` and held-out validation (``heldout``) prompts."""
    splits: dict[str, np.ndarray | None] = {"all": None}
    for meta in metas:
        if meta.get("dataset") != data.dataset:
            continue
        pos = {p: n for n, p in enumerate(data.prompt_ids)}
        for name, key in (("train", "train_prompts"), ("heldout", "val_prompts")):
            ids = [pos[p] for p in meta.get(key) or [] if p in pos]
            if ids and name not in splits:
                splits[name] = np.asarray(sorted(ids))
    return splits


def score_tournament(data: TournamentData, adapters: Sequence[tuple[str, str]], elo: EloConfig, *,
                     order_seed: int, chunk: int = 65536) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Baseline Elo, every adapter in ``adapters`` ((checkpoint path, trained_on) pairs) and the controls
    beside each full adapter -- the same network untrained (``uda_untrained``) and the label-smoothing
    Elo fitted on its training prompts (``label_smoothing``) -- on ``data``.

    Scores are computed on every prompt (``split`` = all) and, where an adapter was trained on this
    tournament, on its training and held-out prompts separately (each split its own Elo run).
    Trajectories are those of the ``all`` split.
    """
    from judgelab.config import ConfigError
    from judgelab.uda.training import apply_adapter, baseline_scores, load_adapter, smoothing_elo

    loaded = []
    for path, trained_on in adapters:
        adapter, standardizer, meta = load_adapter(path)
        if meta.get("embedder") and data.embedder and meta["embedder"] != data.embedder:
            raise ConfigError(f"uda: adapter {path} was trained on {meta['embedder']} embeddings, tournament "
                              f"{data.dataset!r} has {data.embedder}")
        loaded.append((path, trained_on, adapter, standardizer, meta))
    splits = prompt_splits(data, [x[4] for x in loaded])
    scores, trajs = [], []
    for split, idx in splits.items():
        every = np.arange(data.n_prompts) if idx is None else idx

        def add(method: str, trained_on: str, R: np.ndarray, T: np.ndarray, split: str = split) -> None:
            scores.append(_long(data.dataset, method, trained_on, R, data, split))
            if split == "all":
                trajs.append(_traj(data.dataset, method, trained_on, T, data))

        add("baseline", "", *baseline_scores(data, elo, order_seed=order_seed, prompt_idx=idx))
        for path, trained_on, adapter, standardizer, meta in loaded:
            full = adapter.variant.self_features
            add("uda" if full else "uda_ablated", trained_on,
                *apply_adapter(adapter, standardizer, data, elo, order_seed=order_seed, chunk=chunk, prompt_idx=idx))
            if not full:
                continue
            untrained, std0, _ = load_adapter(path, initial=True)
            add("uda_untrained", trained_on,
                *apply_adapter(untrained, std0, data, elo, order_seed=order_seed, chunk=chunk, prompt_idx=idx))
            ls = meta.get("label_smoothing")
            if ls:
                add("label_smoothing", trained_on,
                    *smoothing_elo(data, every, ls["k"], ls["label"], elo, order_seed=order_seed))
    return pd.concat(scores, ignore_index=True), pd.concat(trajs, ignore_index=True)


def reference_scores(spec: dict[str, Any], tournament: pd.DataFrame, human: pd.DataFrame | None,
                     elo: EloConfig) -> tuple[pd.Series | None, str]:
    """The external reference of a tournament on the Elo scale: human BT scores or the latent quality."""
    kind = str(spec.get("reference", "none"))
    models = list(dict.fromkeys(tournament["model"]))
    if kind == "human_bt":
        if human is None:
            raise ValueError("reference human_bt needs the human Bradley-Terry table")
        # imported here: the human votes' module loads scipy.stats, which the embedding and
        # training jobs (which import this module) do not need
        from judgelab.uda.human import human_reference

        return human_reference(human, models, spec.get("human_aliases")), "human_bt"
    if kind == "model_quality":
        q = tournament.drop_duplicates("model").set_index("model")["model_quality"].reindex(models)
        if q.isna().all():
            return None, "none"
        return elo.initial + (q - q.mean()) / elo.c, str(spec.get("reference_name", "model_quality"))
    if kind == "none":
        return None, "none"
    raise ValueError(f"unknown reference {kind!r} (human_bt, model_quality, none)")


def _usable(verdicts: pd.DataFrame) -> pd.Series:
    """Presentations whose verdict an Elo update uses (A, B or tie)."""
    return verdicts["verdict"].isin(["A", "B", "tie"])


def judge_reasons(verdicts: pd.DataFrame, judges: Sequence[str] = ()) -> dict[str, str]:
    """Judge -> why it has no score (no usable verdict: its Elo never moved from the initial rating),
    for the judges of ``verdicts`` and ``judges`` that have none; scored judges are absent."""
    out = {}
    groups = dict(tuple(verdicts.groupby("judge", sort=True)))
    for judge in dict.fromkeys([*groups, *judges]):
        g = groups.get(judge, verdicts.iloc[0:0])
        why = no_value_reason(g["status"], usable=_usable(g).to_numpy())
        if why:
            out[str(judge)] = why
    return out


def judges_table(verdicts: pd.DataFrame, answers: pd.DataFrame, own: dict[str, str]) -> pd.DataFrame:
    rows = []
    for judge, g in verdicts.groupby("judge", sort=True):
        counts = g["status"].value_counts()
        has = _usable(g)
        a = answers[answers["judge"] == judge]
        rows.append(blank({
            "judge": judge, "family": g["family"].iloc[0], "own_model": own.get(cast("str", judge), ""),
            "simulated": any_true(g), "answers": len(a),
            "answers_ok": int(a["status"].isin([CallStatus.OK.value, CallStatus.FALLBACK.value]).sum()),
            "presentations": len(g), **{f"n_{s.value}": int(counts.get(s.value, 0)) for s in CallStatus},
            "usable_share": float(has.mean()), "tie_rate": float((g["verdict"] == "tie").mean()),
            "first_slot_win_rate": float((g["verdict"] == "A").sum() / max(1, (g["verdict"].isin(["A", "B"])).sum())),
            "tokens_in": int(g["tokens_in"].sum() + a["tokens_in"].sum()),
            "tokens_out": int(g["tokens_out"].sum() + a["tokens_out"].sum()),
            "cost_usd": float(g["cost_usd"].sum() + a["cost_usd"].sum()),
        }, ("tie_rate", "first_slot_win_rate"), no_value_reason(g["status"], usable=has.to_numpy())))
    return pd.DataFrame(rows)


def study_tables(scores: pd.DataFrame, dataset: str, models: list[str], judges: list[str],
                 reference: pd.Series | None, reference_name: str, own: dict[str, str],
                 reasons: dict[str, str] | None = None) -> dict[str, pd.DataFrame]:
    """The paper's tables for one tournament (see :mod:`judgelab.uda.metrics`); ``reasons``
    (:func:`judge_reasons`) names the judges with no usable verdict, whose rows are blanked."""
    out = {
        "std": metrics.std_table(scores, dataset, models, judges, reasons),
        "methods": metrics.methods_table(scores, dataset, models, judges, reference, reference_name, reasons),
        "alignment": metrics.alignment_table(scores, dataset, models, judges, reasons),
        "self_preference": metrics.self_preference_table(scores, dataset, models, judges, own, reasons),
        "matrix": metrics.matrix_table(scores, dataset, models, judges, reference, reference_name, reasons),
        "controls": metrics.controls_table(scores, dataset, models, judges, reasons),
    }
    if reference is not None:
        out["reference"] = metrics.reference_table(scores, dataset, models, judges, reference, reasons)
    else:
        out["reference"] = pd.DataFrame(columns=["judge", "method", "pearson_reference", "reason"])
    return out


def summary_row(dataset: str, methods: pd.DataFrame, self_pref: pd.DataFrame,
                controls: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Summary rows of one tournament; where the tournament has held-out prompts (an adapter was trained
    on it), every method also gets its raw and relative inter-judge std there, beside the baseline's."""
    held: dict[str, pd.Series] = {}
    base_held = None
    if controls is not None and len(controls):
        h = controls[controls["split"] == "heldout"]
        held = {str(r["method"]): r for _, r in h.iterrows()}
        base_held = held.get("baseline")
    rows = []
    for r in table_tuples(methods, index=False):
        sp = self_pref[self_pref["method"] == r.method]["deviation_pct"] if len(self_pref) else pd.Series(dtype=float)
        hr = held.get(r.method)
        rows.append({
            "dataset": dataset, "method": r.method,
            "n_judges": int(r.n_judges) if hasattr(r, "n_judges") else math.nan,
            "mean_inter_judge_std": r.mean_inter_judge_std,
            "std_reduction_pct": r.std_reduction_pct, "relative_inter_judge_std": r.relative_inter_judge_std,
            "reference": r.reference,
            "mean_pearson_reference": r.mean_pearson_reference,
            "consensus_pearson_reference": r.consensus_pearson_reference,
            "self_preference_min_pct": float(sp.min()) if len(sp) else math.nan,
            "self_preference_max_pct": float(sp.max()) if len(sp) else math.nan,
            "heldout_baseline_std": float(base_held["mean_inter_judge_std"]) if base_held is not None else math.nan,
            "heldout_std": float(hr["mean_inter_judge_std"]) if hr is not None else math.nan,
            "heldout_baseline_relative_std": float(base_held["relative_inter_judge_std"]) if base_held is not None
            else math.nan,
            "heldout_relative_std": float(hr["relative_inter_judge_std"]) if hr is not None else math.nan,
        })
    return rows
