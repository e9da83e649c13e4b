"""Consensus-driven training of the UDA adapter (paper 000, Eq. 3), and applying a trained one.

**Objective.**  For judge-homogeneous batches b (all comparisons of one judge), with R^(b)
the judge's final adaptive-Elo scores, G the mean over judges of the *baseline* Elo scores
(K = 32, same update order) and R_bar the mean of the R^(b):

    L = alpha sum_b ||R^(b) - G||^2 + sigma ||R_bar - G||^2 + beta sum_b (1 - rho(R^(b), G)),

rho the Pearson correlation over models.  Scores are in Elo points, so alpha and sigma are
per squared point (defaults alpha = sigma = 1e-4, beta = 1; the paper publishes none of them).
The terms are **not** of the same order.  Measured at the start of the default run (simulated
panel of 6 judges, training prompts, the adapter = plain Elo): MT-Bench alpha-term 8.06,
sigma-term 0 (2e-12), beta-term 0.065; Arena-Hard 4.36, 0, 0.043.  The sigma-term is exactly
zero at a plain-Elo start, because then R_bar *is* G; the alpha-term dominates the beta-term
about a hundredfold, so the objective is in effect the squared distance to G.  (With the old
soft-label start, 0.88, the three were 26.3, 3.9 and 0.085 on MT-Bench.)
All judges run in one batched recursion (:mod:`judgelab.uda.elo`), so one optimiser step
sees every judge's whole trajectory, as the paper's loss requires.

**Procedure.**  Prompts are split (seeded) into training and validation prompts; each part
has its own update schedule and its own consensus anchor G.  One epoch is one full-batch
AdamW step on the training prompts followed by the validation loss; the learning rate has
a linear warm-up and a cosine decay; the checkpoint with the lowest validation loss is kept
(the untrained adapter, "epoch 0", is a candidate too).

**Controls.**  :func:`fit_label_smoothing` fits the constant-(K, label) Elo by the same Eq. (3)
on the same training prompts; the untrained network is kept too (``initial_state``).  Both are
scored beside UDA (:func:`judgelab.uda.study.score_tournament`).  On the default run UDA does
not beat them on held-out prompts (docs/studies/uda.md); on a planted tournament whose bias the
features can see it does (tests/uda/test_core.py, tests/uda/test_training.py).  The checkpointed
step below is checked against plain autograd through the whole computation (tests/uda/test_training.py).

**Memory.**  Each step runs the adapter twice: once without a graph to get every K and s,
then the Elo recursion and Eq. (3) give dL/dK and dL/ds, and the adapter is re-run chunk
by chunk with a graph, back-propagating those gradients (gradient checkpointing).  Peak
memory is one chunk of hidden activations plus the per-prompt feature tables, whatever the
number of comparisons.
"""

from __future__ import annotations

import copy
import logging
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from judgelab.config import ConfigError
from judgelab.io import atomic_path
from judgelab.uda.adapter import UDAAdapter
from judgelab.uda.autograd import elo_final
from judgelab.uda.data import TournamentData
from judgelab.uda.elo import EloConfig, Schedule, baseline_elo, gather_outcomes, make_schedule, run_elo
from judgelab.uda.features import FEATURE_VARIANTS, Standardizer, pair_table, self_table

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Training hyper-parameters (config ``uda.training``; the paper publishes none of them)."""

    epochs: int = 40
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup: int = 5
    min_lr_ratio: float = 0.05
    val_fraction: float = 0.2
    alpha: float = 1e-4
    sigma: float = 1e-4
    beta: float = 1.0
    hidden: tuple[int, int] = (128, 32)
    activation: str = "gelu"
    k0: float | None = None  # the adapter's K at the start; None = the baseline's K (uda.elo.k)
    init_label: float = 1.0  # the winner's soft label at the start: 1 = plain Elo (hard label)
    grad_clip: float | None = 1.0
    chunk: int = 65536
    seed: int = 0

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> TrainConfig:
        d = dict(d or {})
        known = set(cls.__dataclass_fields__)
        bad = set(d) - known
        if bad:
            raise ConfigError(f"uda.training: unknown key(s) {sorted(bad)}; known: {sorted(known)}")
        if "hidden" in d:
            d["hidden"] = tuple(int(h) for h in d["hidden"])
        return cls(**d)


# ---------------------------------------------------------------------------------
# comparisons as rows of "winner-first" presentations


@dataclass
class Presentations:
    """The adapter's inputs for the comparisons of one schedule (see adapter module docstring).

    Every comparison with a verdict becomes one row per presentation it needs: i first with
    weight r (i's score), j first with weight 1 - r; a tie needs both.  ``pair`` indexes the
    pair table at (prompt, first, second); ``self_w`` / ``self_l`` the self table at (prompt,
    first/second model, judge); ``match`` the comparison; ``weight`` and ``flip`` combine the
    rows into s_i = sum weight * (flip ? 1 - g : g) and K = sum weight * K_row.
    """

    sched: Schedule
    mask: np.ndarray  # (S, M, H) bool: comparisons with a verdict
    n_matches: int
    pair: torch.Tensor
    self_w: torch.Tensor
    self_l: torch.Tensor
    match: torch.Tensor
    weight: torch.Tensor
    flip: torch.Tensor

    @property
    def n_rows(self) -> int:
        return int(self.pair.shape[0])


def pair_row(p: np.ndarray, i: np.ndarray, j: np.ndarray, n_models: int) -> np.ndarray:
    """Row of the off-diagonal pair table for (local prompt p, first i, second j != i)."""
    return (p * n_models + i) * (n_models - 1) + j - (j > i)


def presentations(data: TournamentData, sched: Schedule, prompt_idx: np.ndarray) -> Presentations:
    """Presentation rows of ``sched`` indexing tables built over ``prompt_idx`` (see :func:`prepare_tables`)."""
    outcomes = gather_outcomes(data.scores, sched)  # (S, M, H)
    mask = ~np.isnan(outcomes)
    s_idx, k_idx, h_idx = np.nonzero(mask)
    local = np.full(data.n_prompts, -1)
    local[prompt_idx] = np.arange(len(prompt_idx))
    p = local[sched.prompts[s_idx]]
    if (p < 0).any():
        raise ValueError("the schedule visits prompts outside the prepared tables")
    i = sched.first[s_idx, h_idx]
    j = sched.second[s_idx, h_idx]
    r = outcomes[s_idx, k_idx, h_idx]
    N, M = len(data.models), len(data.judges)
    match = np.arange(len(r))
    fw, bw = r > 0, r < 1
    win = np.concatenate([i[fw], j[bw]])
    lose = np.concatenate([j[fw], i[bw]])
    pp = np.concatenate([p[fw], p[bw]])
    kk = np.concatenate([k_idx[fw], k_idx[bw]])

    def t(x: np.ndarray, dtype: torch.dtype = torch.long) -> torch.Tensor:
        return torch.as_tensor(np.ascontiguousarray(x), dtype=dtype)

    return Presentations(
        sched=sched, mask=mask, n_matches=len(r),
        pair=t(pair_row(pp, win, lose, N)), self_w=t((pp * N + win) * M + kk), self_l=t((pp * N + lose) * M + kk),
        match=t(np.concatenate([match[fw], match[bw]])),
        weight=t(np.concatenate([r[fw], 1.0 - r[bw]]), torch.float32),
        flip=t(np.concatenate([np.zeros(fw.sum(), bool), np.ones(bw.sum(), bool)]), torch.bool),
    )


def _rows_out(adapter: UDAAdapter, blocks: dict[str, torch.Tensor], pres: Presentations,
              sl: slice) -> tuple[torch.Tensor, torch.Tensor]:
    z = torch.index_select(blocks["pair"], 0, pres.pair[sl])
    if "ik" in blocks:
        z = z + torch.index_select(blocks["ik"], 0, pres.self_w[sl])
        z = z + torch.index_select(blocks["jk"], 0, pres.self_l[sl])
    return adapter.head_from_preact(z)


def match_parameters(adapter: UDAAdapter, blocks: dict[str, torch.Tensor], pres: Presentations,
                     chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    """K and s per comparison with a verdict (no graph), combined from the presentation rows."""
    K = torch.zeros(pres.n_matches)
    s = torch.zeros(pres.n_matches)
    with torch.no_grad():
        for a in range(0, pres.n_rows, chunk):
            sl = slice(a, a + chunk)
            Kr, g = _rows_out(adapter, blocks, pres, sl)
            w = pres.weight[sl]
            K.index_add_(0, pres.match[sl], w * Kr)
            s.index_add_(0, pres.match[sl], w * torch.where(pres.flip[sl], 1.0 - g, g))
    return K, s


def _scatter(pres: Presentations, K: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(S, M, H) arrays for the recursion: K = 0 and s = 0.5 where there is no comparison."""
    shape = pres.mask.shape
    mask = torch.as_tensor(pres.mask)
    K_full = torch.zeros(shape)
    s_full = torch.full(shape, 0.5)
    K_full[mask] = K
    s_full[mask] = s
    return K_full, s_full


def _backprop_rows(adapter: UDAAdapter, leaves: dict[str, torch.Tensor], pres: Presentations, gK: torch.Tensor,
                   gs: torch.Tensor, chunk: int) -> None:
    """Re-run the adapter chunk by chunk with a graph and push dL/dK, dL/ds through it."""
    for a in range(0, pres.n_rows, chunk):
        sl = slice(a, a + chunk)
        Kr, g = _rows_out(adapter, leaves, pres, sl)
        w = pres.weight[sl]
        m = pres.match[sl]
        sign = torch.where(pres.flip[sl], -1.0, 1.0)
        torch.autograd.backward([Kr, g], [w * gK[m], w * sign * gs[m]])


# ---------------------------------------------------------------------------------
# Eq. (3)


def _pearson_rows(R: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    Rc = R - R.mean(dim=1, keepdim=True)
    Gc = G - G.mean()
    return (Rc * Gc).sum(1) / (Rc.norm(dim=1) * Gc.norm() + 1e-12)


def consensus_loss(R: torch.Tensor, G: torch.Tensor, cfg: TrainConfig) -> tuple[torch.Tensor, dict[str, float]]:
    """Eq. (3) for final scores R (M judges x N models) and consensus anchor G (N)."""
    mse = ((R - G) ** 2).sum(dim=1)
    R_bar = R.mean(dim=0)
    rho = _pearson_rows(R, G)
    parts = {
        "anchor": cfg.alpha * mse.sum(),
        "consensus": cfg.sigma * ((R_bar - G) ** 2).sum(),
        "pearson": cfg.beta * (1.0 - rho).sum(),
    }
    loss = parts["anchor"] + parts["consensus"] + parts["pearson"]
    info = {k: float(v.detach()) for k, v in parts.items()}
    info["mean_judge_std"] = float(R.detach().std(dim=0, unbiased=True).mean()) if R.shape[0] > 1 else 0.0
    return loss, info


# ---------------------------------------------------------------------------------


@dataclass
class PreparedTables:
    """Standardised feature tables of some prompts of a tournament as flat torch tensors."""

    X_pair: torch.Tensor  # (P' * N * (N-1), F): off-diagonal ordered pairs
    X_self: torch.Tensor | None  # (P' * N * M, F)


def prepare_tables(data: TournamentData, standardizer: Standardizer, self_features: bool,
                   prompt_idx: np.ndarray | None = None) -> PreparedTables:
    """Pair and self tables of the prompts ``prompt_idx`` (all by default), standardised."""
    idx = np.arange(data.n_prompts) if prompt_idx is None else np.asarray(prompt_idx)
    E, Ej = data.E_models[idx], data.E_judges[idx]
    N = E.shape[1]
    Xp = pair_table(E)[:, ~np.eye(N, dtype=bool), :]
    Xs = self_table(E, Ej) if self_features else np.zeros((1, 1, 1, Xp.shape[-1]), np.float32)
    Xp, Xs = standardizer.apply(Xp, Xs)
    F = Xp.shape[-1]
    return PreparedTables(
        X_pair=torch.from_numpy(np.ascontiguousarray(Xp.reshape(-1, F), dtype=np.float32)),
        X_self=torch.from_numpy(np.ascontiguousarray(Xs.reshape(-1, F), dtype=np.float32)) if self_features else None,
    )


def split_prompts(n_prompts: int, val_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded split of prompt indices into (train, validation)."""
    order = np.random.default_rng(seed).permutation(n_prompts)
    n_val = math.ceil(val_fraction * n_prompts) if val_fraction > 0 and n_prompts > 1 else 0
    n_val = min(n_val, n_prompts - 1)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


@dataclass
class TrainResult:
    adapter: UDAAdapter
    standardizer: Standardizer
    history: pd.DataFrame
    best_epoch: int
    train_prompts: list[str]
    val_prompts: list[str]
    meta: dict[str, Any] = field(default_factory=dict)
    initial_state: dict[str, torch.Tensor] | None = None  # the untrained adapter (a control)


def _lr_lambda(cfg: TrainConfig):
    def f(step: int) -> float:  # step = number of optimiser steps taken so far
        if cfg.warmup > 0 and step < cfg.warmup:
            return (step + 1) / cfg.warmup
        span = max(1, cfg.epochs - cfg.warmup)
        prog = min(1.0, (step - cfg.warmup) / span)
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * prog))

    return f


def train_adapter(data: TournamentData, variant: str, cfg: TrainConfig, elo: EloConfig, *,
                  order_seed: int) -> TrainResult:
    """Train the adapter on ``data`` (all judges at once) and return the best checkpoint."""
    fv = FEATURE_VARIANTS.get(variant, where="uda.variants")
    torch.manual_seed(cfg.seed)
    tr_idx, va_idx = split_prompts(data.n_prompts, cfg.val_fraction, cfg.seed)
    # standardisation statistics from the training prompts only
    standardizer = Standardizer.fit(pair_table(data.E_models[tr_idx]), self_table(data.E_models[tr_idx], data.E_judges[tr_idx]))
    adapter = UDAAdapter(data.dim, fv, hidden=cfg.hidden, k0=elo.k if cfg.k0 is None else cfg.k0,
                         activation=cfg.activation, init_label=cfg.init_label)
    initial_state = copy.deepcopy(adapter.state_dict())
    M = len(data.judges)

    @dataclass
    class Part:
        pres: Presentations
        tables: PreparedTables
        G: torch.Tensor
        baseline_std: float  # mean inter-judge std of the baseline Elo on these prompts

    def part(idx: np.ndarray) -> Part | None:
        if len(idx) == 0:
            return None
        sched = make_schedule(idx, len(data.models), order_seed)
        R_base, _ = baseline_elo(gather_outcomes(data.scores, sched), sched, elo)
        return Part(presentations(data, sched, idx), prepare_tables(data, standardizer, fv.self_features, idx),
                    torch.as_tensor(R_base.mean(axis=0), dtype=torch.float32),
                    float(R_base.std(axis=0, ddof=1).mean()) if M > 1 else 0.0)

    train = part(tr_idx)
    val = part(va_idx)
    if train is None or train.pres.n_matches == 0:
        raise ConfigError(f"uda: tournament {data.dataset!r} has no usable verdicts on its training prompts")

    opt = torch.optim.AdamW(adapter.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched_lr = torch.optim.lr_scheduler.LambdaLR(opt, _lr_lambda(cfg))

    def evaluate(pt: Part) -> tuple[float, dict[str, float]]:
        adapter.eval()
        with torch.no_grad():
            blocks = adapter.first_blocks(pt.tables.X_pair, pt.tables.X_self)
            K, s = match_parameters(adapter, blocks, pt.pres, cfg.chunk)
            K_full, s_full = _scatter(pt.pres, K, s)
            R = elo_final(K_full, s_full, pt.pres.sched, elo)
            loss, info = consensus_loss(R, pt.G, cfg)
        return float(loss), info

    # the label-smoothing control: constant (K, winner's label), fitted by Eq. (3) on the same prompts
    smoothing = fit_label_smoothing(data, tr_idx, elo, cfg, order_seed=order_seed) if fv.self_features else None

    history = []
    tr_loss, tr_info = evaluate(train)
    va_loss, va_info = evaluate(val) if val else (tr_loss, tr_info)
    history.append(_hist_row(0, 0.0, tr_loss, tr_info, va_loss, va_info))
    best = (va_loss, 0, copy.deepcopy(adapter.state_dict()))
    pres, G = train.pres, train.G
    for epoch in range(1, cfg.epochs + 1):
        adapter.train()
        opt.zero_grad(set_to_none=True)
        blocks = adapter.first_blocks(train.tables.X_pair, train.tables.X_self)
        leaves = {k: v.detach().requires_grad_(True) for k, v in blocks.items()}
        K, s = match_parameters(adapter, leaves, pres, cfg.chunk)
        K_full, s_full = _scatter(pres, K, s)
        K_full.requires_grad_(True)
        s_full.requires_grad_(True)
        R = elo_final(K_full, s_full, pres.sched, elo)
        loss, info = consensus_loss(R, G, cfg)
        loss.backward()
        mask = torch.as_tensor(pres.mask)
        assert K_full.grad is not None and s_full.grad is not None  # both require grad
        _backprop_rows(adapter, leaves, pres, K_full.grad[mask], s_full.grad[mask], cfg.chunk)
        torch.autograd.backward(list(blocks.values()), [leaves[k].grad for k in blocks])
        if cfg.grad_clip:
            torch.nn.utils.clip_grad_norm_(adapter.parameters(), cfg.grad_clip)
        lr = opt.param_groups[0]["lr"]
        opt.step()
        sched_lr.step()
        # the training loss is the one of this step (before its update); validation after it
        va_loss, va_info = evaluate(val) if val else evaluate(train)
        history.append(_hist_row(epoch, lr, float(loss.detach()), info, va_loss, va_info))
        if va_loss < best[0]:
            best = (va_loss, epoch, copy.deepcopy(adapter.state_dict()))
    adapter.load_state_dict(best[2])
    adapter.eval()
    hist = pd.DataFrame(history)
    hist["best"] = hist["epoch"] == best[1]
    # the baseline's dispersion on the same prompts: the held-out yardstick of val_mean_judge_std
    hist["train_baseline_judge_std"] = train.baseline_std
    hist["val_baseline_judge_std"] = val.baseline_std if val else train.baseline_std
    # pragma: no mutate start
    log.info("%s/%s: best epoch %d of %d (validation loss %.4f -> %.4f)", data.dataset, variant, best[1],
             cfg.epochs, history[0]["val_loss"], best[0])
    # pragma: no mutate end
    return TrainResult(
        adapter=adapter, standardizer=standardizer, history=hist, best_epoch=best[1],
        train_prompts=[data.prompt_ids[i] for i in tr_idx], val_prompts=[data.prompt_ids[i] for i in va_idx],
        meta={"dataset": data.dataset, "variant": variant, "embedder": data.embedder, "dim": data.dim,
              "n_judgments": data.n_judgments, "train": asdict(cfg), "elo": asdict(elo), "order_seed": order_seed,
              "label_smoothing": smoothing},
        initial_state=initial_state,
    )


def _hist_row(epoch: int, lr: float, tr_loss: float, tr: dict[str, float], va_loss: float,
              va: dict[str, float]) -> dict[str, float]:
    row: dict[str, float] = {"epoch": epoch, "lr": lr, "train_loss": tr_loss, "val_loss": va_loss}
    row.update({f"train_{k}": v for k, v in tr.items()})
    row.update({f"val_{k}": v for k, v in va.items()})
    return row


# ---------------------------------------------------------------------------------
# the label-smoothing control

#: grid of the label-smoothing control: the winner's label and K (within the adapter's (0, 2 K0) range)
SMOOTHING_LABELS = tuple(np.round(np.arange(0.55, 1.0001, 0.025), 4))
SMOOTHING_K_FACTORS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)


def smoothed_outcomes(outcomes: np.ndarray, label: float) -> np.ndarray:
    """Label-smoothed Elo targets: a win scores ``label``, a loss 1 - label, a tie 0.5 (NaN stays NaN)."""
    return 0.5 + (2.0 * label - 1.0) * (outcomes - 0.5)


def smoothing_elo(data: TournamentData, prompt_idx: np.ndarray, k: float, label: float, elo: EloConfig, *,
                  order_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Elo with a constant K and a constant soft label on the prompts ``prompt_idx``: final and trajectories."""
    sched = make_schedule(np.asarray(prompt_idx), len(data.models), order_seed)
    out = smoothed_outcomes(gather_outcomes(data.scores, sched), label)
    return baseline_elo(out, sched, EloConfig(k=float(k), initial=elo.initial, scale=elo.scale))


def fit_label_smoothing(data: TournamentData, prompt_idx: np.ndarray, elo: EloConfig, cfg: TrainConfig, *,
                        order_seed: int) -> dict[str, float]:
    """The control beside UDA: the constant (K, label) pair that minimises Eq. (3) on ``prompt_idx``.

    An adapter whose output does not depend on its input is exactly this model, so UDA's
    learned, per-comparison K and s must beat it to show that the features carry anything.
    A grid search (labels 0.55..1 by 0.025, K = 0.25..2 x the baseline's K): Eq. (3) is not
    smooth in (K, label) through Elo's order dependence, and the grid is cheap (one batched
    Elo run per point).
    """
    sched = make_schedule(np.asarray(prompt_idx), len(data.models), order_seed)
    outcomes = gather_outcomes(data.scores, sched)
    R_base, _ = baseline_elo(outcomes, sched, elo)
    G = torch.as_tensor(R_base.mean(axis=0))
    best: dict[str, float] | None = None
    for label in SMOOTHING_LABELS:
        out = smoothed_outcomes(outcomes, float(label))
        for f in SMOOTHING_K_FACTORS:
            k = f * elo.k
            R, _ = baseline_elo(out, sched, EloConfig(k=k, initial=elo.initial, scale=elo.scale))
            loss, _ = consensus_loss(torch.as_tensor(R), G, cfg)
            if best is None or float(loss) < best["loss"]:
                best = {"k": float(k), "label": float(label), "loss": float(loss)}
    assert best is not None
    return best


# ---------------------------------------------------------------------------------
# applying an adapter; checkpoints


def apply_adapter(adapter: UDAAdapter, standardizer: Standardizer, data: TournamentData, elo: EloConfig, *,
                  order_seed: int, chunk: int = 65536,
                  prompt_idx: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """UDA scores of every judge on the prompts ``prompt_idx`` of ``data`` (default all): final (M, N) and
    trajectories (M, P'+1, N)."""
    if adapter.dim != data.dim:
        raise ConfigError(f"uda: adapter expects {adapter.dim}-dimensional embeddings, tournament "
                          f"{data.dataset!r} has {data.dim}")
    adapter.eval()
    idx = np.arange(data.n_prompts) if prompt_idx is None else np.asarray(prompt_idx)
    sched = make_schedule(idx, len(data.models), order_seed)
    pres = presentations(data, sched, idx)
    tables = prepare_tables(data, standardizer, adapter.variant.self_features, idx)
    with torch.no_grad():
        blocks = adapter.first_blocks(tables.X_pair, tables.X_self)
    K, s = match_parameters(adapter, blocks, pres, chunk)
    K_full, s_full = _scatter(pres, K, s)
    return run_elo(K_full.double().numpy(), s_full.double().numpy(), sched, elo)


def baseline_scores(data: TournamentData, elo: EloConfig, *, order_seed: int,
                    prompt_idx: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Baseline Elo (K constant) of every judge on the prompts ``prompt_idx`` (default all): final (M, N)
    and trajectories."""
    idx = np.arange(data.n_prompts) if prompt_idx is None else np.asarray(prompt_idx)
    sched = make_schedule(idx, len(data.models), order_seed)
    return baseline_elo(gather_outcomes(data.scores, sched), sched, elo)


def save_adapter(path: str | Path, result: TrainResult) -> None:
    """Checkpoint: weights, architecture, standardiser and training metadata (atomic write)."""
    payload = {
        "state_dict": result.adapter.state_dict(),
        "adapter": result.adapter.config(),
        "standardizer": result.standardizer.to_dict(),
        "meta": {**result.meta, "best_epoch": result.best_epoch, "train_prompts": result.train_prompts,
                 "val_prompts": result.val_prompts},
        "initial_state_dict": result.initial_state,
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load_adapter(path: str | Path, *, initial: bool = False) -> tuple[UDAAdapter, Standardizer, dict[str, Any]]:
    """A checkpoint's adapter: the trained one, or with ``initial`` the same network before training."""
    payload = torch.load(path, map_location="cpu", weights_only=False)
    cfg = payload["adapter"]
    adapter = UDAAdapter(cfg["dim"], cfg["variant"], hidden=cfg["hidden"], k0=cfg["k0"], activation=cfg["activation"],
                         init_label=cfg.get("init_label", 1.0))
    state = payload.get("initial_state_dict") if initial else payload["state_dict"]
    if state is None:
        raise ConfigError(f"uda: checkpoint {path} holds no untrained state (written by an older version)")
    adapter.load_state_dict(state)
    adapter.eval()
    return adapter, Standardizer.from_dict(payload["standardizer"]), payload["meta"]
