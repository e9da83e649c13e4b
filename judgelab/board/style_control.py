"""Arena-Hard's Bradley-Terry score with style control.

Source: ``lmarena/arena-hard-auto`` ``show_result.py`` (``load_judgments``,
``print_leaderboard_with_style_features``) and ``utils/math_utils.py`` (``one_hot_encode``,
``fit_pairwise_model``, ``bootstrap_pairwise_model``, ``to_winrate_probabilities``), commit
``005ac120c11d3a1bbc35b0408a926dbc614de9c7``.  What it computes:

* battles: each game is one outcome for the evaluated model (1 win, 0.5 tie, 0 loss), a strong
  verdict (``A>>B``) counted three times (``weight=3``);
* style features per battle, model minus baseline: length ``(t_m - t_b) / (t_m + t_b)`` over
  tokens, and for headers, lists and bold the densities ``c / t`` as ``(d_m - d_b) / (d_m + d_b + 1)``;
  each column standardised over the battles (mean, ``torch.std`` with ddof 1);
* the design: one-hot model columns (+1 the model, -1 the baseline) and the four features; a
  Bradley-Terry loss (the summed Bernoulli log loss of ``sigmoid(features @ coefs)``), no
  penalty, fitted by ``torch.optim.LBFGS(lr=1, max_iter=50, tolerance_grad=1e-9,
  tolerance_change=1e-9)`` from 0.5 in float32;
* 100 bootstrap rounds resampling battles (rows); the score of a model is the median over
  rounds of ``sigmoid(coef_m - coef_baseline)`` and its interval the rounds' quantiles
  (``show_result.py`` prints the 5 % and 95 % ones: ``alpha=0.10`` here reproduces it).

Written with torch and the same optimizer so that the numbers are Arena-Hard's, not merely the
same model's; the only change is that the one-hot product is a gather (``coef[model] -
coef[baseline]``), the same function without a dense battles x models matrix, so 200 models fit.

Freezing (``reference``): adding a model changes the standardisation and the style
coefficients, hence every other model's score (arena-hard-auto#50).  With the feature means,
standard deviations and coefficients of a reference run (``style_coefficients.json`` of any
earlier ``judgelab leaderboard`` output) the style term becomes a fixed offset and each model's
coefficient is fitted from its own battles alone, bootstrapped within them with a generator
seeded by the model's name: a model's score and interval then do not depend on which other
models are in the log.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from scipy import sparse

from judgelab.board.separation import Separation, separated_rows
from judgelab.io import InputError
from judgelab.stats.intervals import DEFAULT_ALPHA

FEATURES = ("length", "header_density", "list_density", "bold_density")


def style_features(style_model: np.ndarray, style_base: np.ndarray) -> np.ndarray:
    """show_result.py's ``final_feature_tensor`` (n x 4, float32) from (tokens, headers, lists, bold)."""
    m = torch.tensor(np.asarray(style_model, dtype=np.float32))
    b = torch.tensor(np.asarray(style_base, dtype=np.float32))
    out = torch.zeros_like(m)
    out[:, 0] = (m[:, 0] - b[:, 0]) / (m[:, 0] + b[:, 0])
    md, bd = m[:, 1:] / m[:, :1], b[:, 1:] / b[:, :1]
    out[:, 1:] = (md - bd) / (md + bd + 1)
    # two empty answers (0 / 0) have no style difference: 0, where show_result.py would get NaN
    return torch.nan_to_num(out, nan=0.0).numpy()


def explode(model: np.ndarray, opp: np.ndarray, y: np.ndarray, weight: np.ndarray, feats: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One battle row per counted outcome (a strong verdict three rows), as load_judgments explodes."""
    rep = np.asarray(weight, dtype=np.int64)
    return (np.repeat(model, rep), np.repeat(opp, rep), np.repeat(np.asarray(y, np.float32), rep),
            np.repeat(feats, rep, axis=0))


class _one_thread:
    """Run torch on one thread: these fits are small sequential steps, and torch's thread pool
    on a shared machine costs twenty times the work (measured: 2.8 s against 0.15 s a fit)."""

    def __enter__(self) -> None:
        self.n = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc: object) -> None:
        torch.set_num_threads(self.n)


def _lbfgs(n_coef: int, loss_of) -> torch.Tensor:
    logits = torch.nn.Parameter(torch.nn.init.constant_(torch.empty(n_coef), 0.5))
    opt = torch.optim.LBFGS([logits], lr=1.0, max_iter=50, tolerance_grad=1e-9, tolerance_change=1e-9)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = loss_of(logits)
        loss.backward()
        return loss

    opt.step(closure)
    return logits.detach()


def _bt_loss(eta: torch.Tensor, outcomes: torch.Tensor) -> torch.Tensor:
    """math_utils.bt_loss, ``-(log(p) o + log(1 - p)(1 - o)).sum()``, written with ``logsigmoid``:
    the same function, but finite where float32 rounds ``sigmoid`` to 0 or 1 (the literal form
    then gives NaN coefficients)."""
    return -(torch.nn.functional.logsigmoid(eta) * outcomes
             + torch.nn.functional.logsigmoid(-eta) * (1.0 - outcomes)).sum()


def _fit_counted(m: torch.Tensor, b: torch.Tensor, o: torch.Tensor, f: torch.Tensor, w: torch.Tensor,
                 n_models: int) -> np.ndarray:
    """The Bradley-Terry fit of rows counted ``w`` times each: the loss of :func:`_bt_loss` over the
    rows repeated ``w`` times, summed as ``w`` times each row's term, and its gradient written out
    (the residual ``w (sigmoid(eta) - o)`` gathered per coefficient) instead of taped by autograd.
    The same function and the same L-BFGS steps as the exploded, autograd form (equal to float32
    rounding), at a fraction of the work: a bootstrap draw of ``n`` rows holds about ``0.63 n``
    distinct ones, and a strong verdict's three copies are one row of count three."""
    k = f.shape[1]
    n_coef = n_models + k
    logits = torch.nn.Parameter(torch.nn.init.constant_(torch.empty(n_coef), 0.5))
    opt = torch.optim.LBFGS([logits], lr=1.0, max_iter=50, tolerance_grad=1e-9, tolerance_change=1e-9)

    def closure() -> torch.Tensor:
        c = logits.detach()
        eta = c[m] - c[b] + f @ c[n_models:]
        loss = -(w * (torch.nn.functional.logsigmoid(eta) * o
                      + torch.nn.functional.logsigmoid(-eta) * (1.0 - o))).sum()
        r = w * (torch.sigmoid(eta) - o)
        grad = torch.zeros(n_coef)
        grad.index_add_(0, m, r)
        grad.index_add_(0, b, -r)
        grad[n_models:] = f.T @ r
        logits.grad = grad
        return loss

    opt.step(closure)
    return logits.detach().numpy()


def fit_style_bt(model: np.ndarray, opp: np.ndarray, outcomes: np.ndarray, feats: np.ndarray, n_models: int,
                 idx: np.ndarray | None = None) -> np.ndarray:
    """``fit_pairwise_model(..., loss_type="bt")`` on the rows ``idx``: coefs of the models then features.

    ``opp`` is each battle's other model (Arena-Hard: always the baseline, its one-hot -1)."""
    n = len(outcomes)
    count = np.ones(n) if idx is None else np.bincount(np.asarray(idx), minlength=n)
    keep = np.flatnonzero(count)
    with _one_thread():
        return _fit_counted(torch.as_tensor(np.asarray(model)[keep]), torch.as_tensor(np.asarray(opp)[keep]),
                            torch.as_tensor(np.asarray(outcomes, np.float32)[keep]),
                            torch.as_tensor(np.asarray(feats, np.float32)[keep]),
                            torch.as_tensor(count[keep].astype(np.float32)), n_models)


@dataclass
class StyleResult:
    score: np.ndarray  # percent, per model code (baseline 50)
    ci_low: np.ndarray
    ci_high: np.ndarray
    coefs: dict[str, float]
    mean: np.ndarray
    std: np.ndarray
    frozen: bool
    #: games (rows of the input arrays) that a direction of the coefficients predicts exactly
    #: (:mod:`judgelab.board.separation`); a model with such a game has no finite score
    separation: Separation | None = None


def standardize(feats: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = torch.tensor(feats, dtype=torch.float32)
    mean, std = torch.mean(t, dim=0), torch.std(t, dim=0)
    # a feature without variation (no markdown anywhere) is a zero column, not show_result's NaN
    z = torch.where(std > 0, (t - mean) / torch.where(std > 0, std, 1.0), 0.0)
    return z.numpy(), mean.numpy(), std.numpy()


def style_controlled(model: np.ndarray, opp: np.ndarray, y: np.ndarray, weight: np.ndarray,
                     style_model: np.ndarray, style_opp: np.ndarray, n_models: int, base: int, *, rounds: int = 100,
                     alpha: float = DEFAULT_ALPHA, seed: int = 0, boot_idx: np.ndarray | None = None) -> StyleResult:
    """Style-controlled scores of every model code against ``base`` (show_result.py's procedure).

    ``y`` is P(``model`` wins) per game against ``opp`` (the baseline, or any opponent in free
    battles, where the features are ``model`` minus ``opp`` as for the baseline)."""
    if len(y) == 0:
        raise ValueError("style control needs at least one game; got none")
    feats = style_features(style_model, style_opp)
    mdl, opp_, out, f = explode(model, opp, y, weight, feats)
    fz, mean, std = standardize(f)
    n = len(out)
    if boot_idx is None:
        boot_idx = np.random.RandomState(seed).randint(low=0, high=n, size=(rounds, n))
    # a round's draw of exploded rows as counts per game (a strong verdict's copies are one game)
    game = np.repeat(np.arange(len(y)), np.asarray(weight, dtype=np.int64))
    first = np.minimum(np.searchsorted(game, np.arange(len(y))), max(len(game) - 1, 0))  # weight 0: never drawn
    g_m, g_o = torch.as_tensor(mdl[first]), torch.as_tensor(opp_[first])
    g_y, g_f = torch.as_tensor(out[first]), torch.as_tensor(np.asarray(fz[first], np.float32))
    coefs = np.empty((len(boot_idx), n_models + g_f.shape[1]), np.float32)
    with _one_thread():
        for r in range(len(boot_idx)):
            count = np.bincount(game[boot_idx[r]], minlength=len(y))
            keep = torch.as_tensor(np.flatnonzero(count))
            coefs[r] = _fit_counted(g_m[keep], g_o[keep], g_y[keep], g_f[keep],
                                    torch.as_tensor(count[keep.numpy()].astype(np.float32)), n_models)
    probs = 1.0 / (1.0 + np.exp(-(coefs[:, :n_models] - coefs[:, [base]])))
    score = np.quantile(probs, 0.5, axis=0)
    lo = np.quantile(probs, alpha / 2, axis=0)
    hi = np.quantile(probs, 1 - alpha / 2, axis=0)
    beta = np.quantile(coefs[:, n_models:], 0.5, axis=0)
    # the design the fit maximises over (one row per game; the weight repeats a row, which moves
    # no recession direction): +1 model, -1 opponent, the standardised features
    rows = np.arange(len(y))
    onehot = sparse.csr_array((np.r_[np.ones(len(y)), -np.ones(len(y))], (np.r_[rows, rows], np.r_[model, opp])),
                              shape=(len(y), n_models))
    design = sparse.hstack([onehot, sparse.csr_array(np.asarray(fz[first], float))], format="csr")
    sep = separated_rows(design[np.asarray(weight) > 0], np.asarray(y, float)[np.asarray(weight) > 0])
    rows_sep = np.zeros(len(y), bool)
    rows_sep[np.asarray(weight) > 0] = sep.rows
    return StyleResult(score=100 * score.astype(float), ci_low=100 * lo.astype(float), ci_high=100 * hi.astype(float),
                       coefs=dict(zip(FEATURES, map(float, beta), strict=False)), mean=mean, std=std, frozen=False,
                       separation=Separation(rows=rows_sep, direction=sep.direction))


def _model_seed(seed: int, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:4], "little")


def style_controlled_frozen(model: np.ndarray, y: np.ndarray, weight: np.ndarray, style_model: np.ndarray,
                            style_base: np.ndarray, models: list[str], base: int, reference: dict, *,
                            rounds: int = 100, alpha: float = DEFAULT_ALPHA, seed: int = 0) -> StyleResult:
    """Scores with the standardisation and style coefficients of ``reference`` held fixed."""
    mean = np.asarray(reference["mean"], np.float32)
    std = np.asarray(reference["std"], np.float32)
    beta = np.asarray([reference["coefs"][k] for k in FEATURES], np.float32)
    feats = np.nan_to_num((style_features(style_model, style_base) - mean) / np.where(std > 0, std, 1))
    if len(y) == 0:
        raise ValueError("style control needs at least one game; got none")
    mdl, _, out, f = explode(model, model, y, weight, feats)
    offset = torch.as_tensor(f) @ torch.as_tensor(beta)
    n_models = len(models)
    # with the style term a fixed offset each model has one coefficient: it runs to infinity
    # exactly when the model won (or lost) every one of its games
    used = np.asarray(weight) > 0
    onehot = sparse.csr_array((np.ones(int(used.sum())), (np.arange(int(used.sum())), np.asarray(model)[used])),
                              shape=(int(used.sum()), n_models))
    sep = separated_rows(onehot, np.asarray(y, float)[used])
    rows_sep = np.zeros(len(y), bool)
    rows_sep[used] = sep.rows
    score, lo, hi = (np.full(n_models, np.nan) for _ in range(3))
    score[base] = lo[base] = hi[base] = 50.0
    order = np.argsort(mdl, kind="stable")
    bounds = np.searchsorted(mdl[order], np.arange(n_models + 1))
    for m in range(n_models):
        rows = order[bounds[m]:bounds[m + 1]]
        if m == base or len(rows) == 0:
            continue
        o = torch.as_tensor(out[rows])
        off = offset[torch.as_tensor(rows)]
        rng = np.random.RandomState(_model_seed(seed, models[m]))
        boots = rng.randint(0, len(rows), size=(rounds, len(rows)))
        vals = []
        with _one_thread():
            for r in range(rounds):
                ix = torch.as_tensor(boots[r])
                c = _lbfgs(1, lambda c, ix=ix, off=off, o=o: _bt_loss(c[0] + off[ix], o[ix]))
                vals.append(float(torch.sigmoid(c[0])))
        v = np.asarray(vals)
        score[m], lo[m], hi[m] = (100 * np.quantile(v, q) for q in (0.5, alpha / 2, 1 - alpha / 2))
    return StyleResult(score=score, ci_low=lo, ci_high=hi, coefs=dict(zip(FEATURES, map(float, beta), strict=False)),
                       mean=mean, std=std, frozen=True, separation=Separation(rows=rows_sep, direction=sep.direction))


def reference_dict(res: StyleResult, style_source: str) -> dict:
    return {"features": list(FEATURES), "coefs": res.coefs, "mean": [float(x) for x in res.mean],
            "std": [float(x) for x in res.std], "style_source": style_source, "frozen": res.frozen}


def read_reference(path: str | Path) -> dict:
    """A ``style_coefficients.json`` written by ``judgelab leaderboard`` (errors name file and key)."""
    p = Path(path)
    try:
        ref = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{p}: not a readable JSON file ({exc})") from None
    for key in ("coefs", "mean", "std"):
        if key not in ref:
            raise InputError(f"{p}: missing key {key!r} (a style_coefficients.json of judgelab leaderboard)")
    missing = [k for k in FEATURES if k not in ref["coefs"]]
    if missing:
        raise InputError(f"{p}: key 'coefs' lacks {', '.join(missing)}")
    for key in ("mean", "std"):
        if len(ref[key]) != len(FEATURES):
            raise InputError(f"{p}: key {key!r} needs {len(FEATURES)} values")
    return ref
