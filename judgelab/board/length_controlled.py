"""AlpacaEval's length-controlled win rate, ``length_controlled_v1``.

Source: ``tatsu-lab/alpaca_eval`` ``src/alpaca_eval/metrics/glm_winrate.py``
(``get_length_controlled_winrate``, ``_get_featurized_data``, ``fit_LogisticRegressionCV``,
``logloss_continuous``), and Dubois et al. 2024, "Length-Controlled AlpacaEval".  Per evaluated
model, against the baseline (AlpacaEval's ``output_1``), a logistic GLM with the formula

    np.tanh(std_delta_len) + instruction_difficulty + not_gamed_baseline.astype(float) - 1

where ``std_delta_len = (len(output_1) - len(output_2)) / std`` (characters; the std over the
model's annotations), the target is ``preference - 1`` in [0, 1] (``0`` read as the tie) fitted
as a probability (each row twice, labels 1 and 0, weighted ``p`` and ``1 - p``), L1 penalty,
no intercept, liblinear, ``random_state=123``, its ``C`` chosen by 5-fold ``GroupKFold`` over
``LogisticRegressionCV``'s default grid ``logspace(-4, 4, 10)`` scored by the weighted
continuous log loss, then refitted on all rows.  The LC win rate is the mean predicted
preference with the length difference set to zero: ``100 * mean_i sigma(w_diff * d_i + w_ng)``.

``regularize_to_baseline_lambda = 0.2``: the annotations of the *gamed baselines* (the
baseline's own verbose and concise answers against it, not_gamed_baseline = False, AlpacaEval's
``df_gamed.csv``) join the training rows with sample weight ``0.2 / 2``; they pull the length
and difficulty weights towards the baseline's.  ``df_gamed.csv`` also carries the instruction
difficulty ``d_i`` (column ``instruction_difficulty``, one value per AlpacaEval ``index``: the
row of the instruction in ``annotations.json``).  AlpacaEval hosts that file outside git; when
the user gives it (``--gamed-csv``) it is used exactly so.  Without it there are no gamed rows
(AlpacaEval's ``regularize_to_baseline_lambda=None`` branch) and the difficulty is estimated
from all the logs at hand jointly: the MAP of ``logit P(model wins on i) = a_m + f_m *
tanh(std_delta_len) + d_i`` over every model's games with a ``N(0, 10)`` prior on ``d_i``
(:func:`estimate_difficulty`).  The output says which (``lc_difficulty``).

Why the fit is written out rather than called: AlpacaEval's ``LogisticRegressionCV`` route needs
scikit-learn's metadata routing and downloads ``df_gamed.csv`` from the Hub at run time; the
same estimator (scikit-learn's ``LogisticRegression`` per ``C`` and fold, ``GroupKFold``) runs
here on local data.  AlpacaEval gives no interval; :func:`lc_interval` adds an item-clustered
sandwich (delta-method) interval at the chosen ``C``, conditional on the difficulty.

:func:`lc_from_weights` predicts from AlpacaEval's published per-model weights
(``weights/.../length_controlled_v1/baseline_gpt4_1106_preview.csv``: the three fitted
coefficients of every leaderboard model, as ``predict_winrate`` reads them) with the difficulty
re-estimated from the logs given those weights.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from scipy.optimize import minimize
from scipy.special import expit
from scipy.stats import norm
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
from threadpoolctl import threadpool_limits

from judgelab.board.separation import NotEstimable, reason, separated_rows
from judgelab.io import InputError
from judgelab.stats.intervals import DEFAULT_ALPHA

#: GLM_INFO["length_controlled_v1"] of glm_winrate.py
REGULARIZE_TO_BASELINE_LAMBDA = 0.2
N_SPLITS = 5
CS = np.logspace(-4, 4, 10)
RANDOM_STATE = 123
#: the L1 penalty: scikit-learn 1.8 deprecates ``penalty="l1"`` for ``l1_ratio=1``; before 1.8
#: ``l1_ratio`` alone is ignored (an L2 fit), so the spelling follows the installed version
_L1 = {"l1_ratio": 1.0} if tuple(int(x) for x in sklearn.__version__.split(".")[:2]) >= (1, 8) else {"penalty": "l1"}
#: the farthest the length-neutral point may lie from a model's own length differences, in standard
#: deviations of its ``tanh(std_delta_len)`` (see :func:`length_extrapolation`); public AlpacaEval 2.0
#: logs stay below 3 (docs/benchmarks.md)
MAX_LENGTH_EXTRAPOLATION = 5.0
#: prior precision of the estimated instruction difficulty (variance 10)
DIFFICULTY_PRIOR = 0.1
WEIGHT_COLUMNS = ("np.tanh(std_delta_len)", "instruction_difficulty", "not_gamed_baseline.astype(float)")
GAMED_COLUMNS = ("index", "preference", "std_delta_len", "instruction_difficulty", "not_gamed_baseline")


@dataclass(frozen=True)
class Gamed:
    """``df_gamed.csv``: the gamed-baseline training rows and the difficulty per AlpacaEval index."""

    index: np.ndarray
    preference: np.ndarray
    std_delta_len: np.ndarray
    not_gamed: np.ndarray
    difficulty: pd.Series  # by AlpacaEval index (the instruction's row in annotations.json)


def read_gamed_csv(path: str | Path) -> Gamed:
    """Read AlpacaEval's ``df_gamed.csv`` (errors name the file, row and key).

    The scale is AlpacaEval's own (``tatsu-lab/alpaca_eval`` at ``cd543a14``):
    ``src/alpaca_eval/metrics/glm_winrate.py`` lines 227-228 read the file and take the
    difficulty of each ``index`` from its first row, lines 237-238 move *the annotations'*
    preference from [1, 2] to [0, 1] (``replace({0.0: 1.5}) - 1``) and look their difficulty up,
    and lines 246-252 concatenate ``df_gamed`` with those rows *unchanged*, so its
    ``preference`` is already on [0, 1] (``notebooks/notebook_helpers.py`` lines 86-108,
    ``load_annotations``, builds it so: ``index`` the row of each ``annotations.json``,
    nulls and negatives dropped, then ``replace({0.0: 1.5}) - 1``).  It is read as is; a null
    preference is dropped (``glm_winrate.py`` line 100), and a value outside [0, 1] (the raw
    annotation scale) is refused with its row."""
    p = Path(path)
    try:
        df = pd.read_csv(p)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise InputError(f"{p}: not a readable CSV ({exc})") from None
    missing = [c for c in GAMED_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"{p}: missing column(s) {', '.join(missing)} (df_gamed.csv has {', '.join(GAMED_COLUMNS)})")
    for col in ("index", "preference", "std_delta_len", "instruction_difficulty"):
        vals = pd.to_numeric(df[col], errors="coerce")
        bad = vals.isna() & df[col].notna() if col == "preference" else vals.isna()
        if bad.any():
            raise InputError(f"{p}: row {int(np.flatnonzero(bad.to_numpy())[0]) + 2}: key {col!r} is not a number")
        df[col] = vals
    ng = df["not_gamed_baseline"].map({True: True, False: False, "True": True, "False": False})
    if ng.isna().any():
        raise InputError(f"{p}: row {int(np.flatnonzero(ng.isna().to_numpy())[0]) + 2}: key 'not_gamed_baseline' "
                         "is not True/False")
    pref = df["preference"].astype(float)
    off = pref.notna() & ~pref.between(0.0, 1.0)
    if off.any():
        i = int(np.flatnonzero(off.to_numpy())[0])
        raise InputError(f"{p}: row {i + 2}: key 'preference' is {pref.iloc[i]!r}; df_gamed.csv holds AlpacaEval's "
                         "[0, 1] scale (the raw annotations' [1, 2] minus 1)")
    diff = df.drop_duplicates("index").set_index("index")["instruction_difficulty"]
    keep = pref.notna().to_numpy()
    return Gamed(index=df["index"].to_numpy(np.int64)[keep], preference=pref.to_numpy(float)[keep],
                 std_delta_len=df["std_delta_len"].to_numpy(float)[keep], not_gamed=ng.to_numpy(bool)[keep],
                 difficulty=diff.astype(float))


def std_delta_len(len_baseline: np.ndarray, len_model: np.ndarray) -> np.ndarray:
    """``(len_1 - len_2) / std`` of glm_winrate (pandas' std, ddof 1); zero where the std is zero."""
    d = np.asarray(len_baseline, float) - np.asarray(len_model, float)
    sd = float(np.std(d, ddof=1)) if len(d) > 1 else 0.0
    return d / sd if sd > 0 else np.zeros_like(d)


def estimate_difficulty(model: np.ndarray, item: np.ndarray, sdl: np.ndarray, y: np.ndarray, n_models: int,
                        n_items: int, prior: float = DIFFICULTY_PRIOR) -> np.ndarray:
    """Instruction difficulty ``d_i`` from every model's games at once (MAP; see the module doc).

    ``d_i`` enters as ``+d_i`` on the model's side (AlpacaEval's sign: a harder instruction for
    the baseline); items nobody judged get 0, the prior mean."""
    t = np.tanh(sdl)

    def f(beta: np.ndarray) -> tuple[float, np.ndarray]:
        a, s, d = beta[:n_models], beta[n_models:2 * n_models], beta[2 * n_models:]
        eta = a[model] + s[model] * t + d[item]
        r = expit(eta) - y
        nll = float(np.sum(np.logaddexp(0.0, eta) - y * eta) + 0.5 * prior * d @ d + 0.5e-6 * (a @ a + s @ s))
        grad = np.concatenate([np.bincount(model, r, n_models) + 1e-6 * a,
                               np.bincount(model, r * t, n_models) + 1e-6 * s,
                               np.bincount(item, r, n_items) + prior * d])
        return nll, grad

    # one BLAS thread: L-BFGS-B's steps are small vector operations, and a thread pool on a shared
    # machine makes them several times slower (measured at 2,000 models: 14 s against 3 s), same result
    with threadpool_limits(limits=1, user_api="blas"):
        res = minimize(f, np.zeros(2 * n_models + n_items), jac=True, method="L-BFGS-B",
                       options={"maxiter": 5000, "gtol": 1e-8})
    return res.x[2 * n_models:]


def length_extrapolation(sdl: np.ndarray) -> float:
    """How far the length-neutral point ``tanh(std_delta_len) = 0``, where the LC is read, lies from a
    model's own games: ``|mean t| / sd t`` of ``t = tanh(std_delta_len)`` (0 when every length
    difference is zero: the LC is then the fitted win rate itself).

    Without gamed rows the GLM has no intercept but the ``not_gamed`` column, a constant on the
    model's games, so the length column's collinearity with it is ``1 + z**2`` (the uncentred
    variance inflation factor) with ``z`` this value.  A model whose answers are always far longer
    (or shorter) than the baseline's has ``t`` nearly constant: the length weight and the model's
    own level then trade off against each other along a direction the games hardly constrain, the L1
    penalty picks the split, and the LC (the level at ``t = 0``) is an extrapolation the games do not
    support, however narrow its delta-method interval (the Fisher information is nearly singular
    along that direction and the pseudo-inverse drops it)."""
    t = np.tanh(np.asarray(sdl, float))
    centre = abs(float(np.mean(t))) if len(t) else 0.0
    if centre == 0.0:
        return 0.0
    spread = float(np.std(t))
    return centre / spread if spread > 0 else float("inf")


@dataclass(frozen=True)
class LCFit:
    weights: np.ndarray  # (tanh, difficulty, not_gamed)
    C: float
    lc: float  # percent
    ci_low: float
    ci_high: float


def _design(sdl: np.ndarray, diff: np.ndarray, not_gamed: np.ndarray) -> np.ndarray:
    return np.column_stack([np.tanh(sdl), diff, not_gamed.astype(float)])


def _public_fit(Xd: np.ndarray, yd: np.ndarray, wd: np.ndarray, C: float) -> np.ndarray:
    model = LogisticRegression(**_L1, solver="liblinear", C=C, fit_intercept=False, random_state=RANDOM_STATE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(Xd, yd, sample_weight=wd)
    return model.coef_[0].copy()


def _direct_fit(Xd: np.ndarray, yd: np.ndarray, wd: np.ndarray, C: float) -> np.ndarray:
    """liblinear's L1-penalised logistic regression called as ``LogisticRegression(penalty="l1",
    solver="liblinear", fit_intercept=False, random_state=123).fit`` calls it (``_fit_liblinear``:
    labels 0/1, unit class weights, no bias term, ``tol=1e-4``, ``max_iter=100``, the seed that
    ``random_state=123`` draws), without the estimator's input validation."""
    from sklearn.svm import _liblinear
    from sklearn.svm._base import _get_liblinear_solver_type

    _liblinear.set_verbosity_wrap(0)
    solver = _get_liblinear_solver_type("ovr", "l1", "logistic_regression", False)
    coef, _ = _liblinear.train_wrap(Xd, yd, False, solver, 1e-4, -1.0, C, np.ones(2), 100, _LIBLINEAR_SEED, 0.1, wd)
    return np.asarray(coef[0], dtype=np.float64).copy()


#: the seed ``_fit_liblinear`` draws from ``random_state=123`` (its ``rnd.randint(iinfo("i").max)``)
_LIBLINEAR_SEED = int(np.random.RandomState(RANDOM_STATE).randint(np.iinfo("i").max))


@functools.cache
def _direct_matches_public() -> bool:
    """Whether :func:`_direct_fit` gives the public estimator's coefficients bit for bit here (checked
    once per process on a small fixed problem, at a weak and a strong penalty); a scikit-learn whose
    private liblinear entry point moved or changed falls back to the public estimator."""
    rng = np.random.default_rng(RANDOM_STATE)
    X, p = rng.normal(size=(60, 3)), rng.random(60)
    Xd, yd, wd = _duplicated(X, p, np.ones(60))
    try:
        return all(np.array_equal(_direct_fit(Xd, yd, wd, C), _public_fit(Xd, yd, wd, C)) for C in (CS[3], CS[7]))
    except Exception:  # any failure of the private call means: use the public one
        return False


def _duplicated(X: np.ndarray, p: np.ndarray, sw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(p)
    Xd = np.ascontiguousarray(np.vstack([X, X]), dtype=np.float64)
    yd = np.r_[np.ones(n), np.zeros(n)]
    wd = np.ascontiguousarray(np.r_[p * sw, (1 - p) * sw], dtype=np.float64)
    return Xd, yd, wd


def _fit_proba(X: np.ndarray, p: np.ndarray, sw: np.ndarray, C: float) -> np.ndarray:
    """fit_LogisticRegressionCV's duplication: each row as label 1 (weight p*sw) and 0 ((1-p)*sw).

    Fitted by liblinear called directly (:func:`_direct_fit`) where that gives the estimator's
    coefficients exactly (:func:`_direct_matches_public`): the same solver on the same arrays,
    without the estimator's validation, which is most of the time of these small fits (51 per
    model: 200 models take 10,200)."""
    Xd, yd, wd = _duplicated(X, p, sw)
    return (_direct_fit if _direct_matches_public() else _public_fit)(Xd, yd, wd, C)


def _logloss(p: np.ndarray, q: np.ndarray, sw: np.ndarray) -> float:
    """glm_winrate.logloss on the duplicated rows (each original row twice with the same term)."""
    q = np.clip(q, 1e-15, 1 - 1e-15)
    return float(-np.mean((p * np.log(q) + (1 - p) * np.log(1 - q)) * sw))


def fit_lc(X: np.ndarray, p: np.ndarray, sw: np.ndarray, n_splits: int = N_SPLITS) -> tuple[np.ndarray, float]:
    """The cross-validated L1 fit: (weights, chosen C)."""
    n = len(p)
    if n < 2 * n_splits:
        return _fit_proba(X, p, sw, 1.0), 1.0
    Xd = np.vstack([X, X])
    groups = np.r_[np.arange(n), np.arange(n)]
    folds = list(GroupKFold(n_splits=n_splits).split(Xd, groups=groups))
    scores = np.zeros(len(CS))
    for train, test in folds:
        tr = np.unique(groups[train])
        te = test  # both copies of each held-out row, as the duplicated scorer sees them
        for k, C in enumerate(CS):
            w = _fit_proba(X[tr], p[tr], sw[tr], C)
            q = expit(Xd[te] @ w)
            pt = np.r_[p, p][te]
            scores[k] -= _logloss(pt, q, np.r_[sw, sw][te])
    best = float(CS[int(np.argmax(scores / len(folds)))])
    return _fit_proba(X, p, sw, best), best


def lc_interval(w: np.ndarray, X: np.ndarray, p: np.ndarray, sw: np.ndarray, cluster: np.ndarray,
                X_test: np.ndarray, test_cluster: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """LC in percent and its delta-method interval, clustered by instruction.

    Influence of cluster g: ``(sum_{i in g} f_i - n_g LC) / n + grad' B^-1 U_g`` with ``B`` the
    weighted Fisher information and ``U_g`` the cluster's score (the L1 penalty ignored); the
    variance is ``G/(G-1)`` times the summed squares, so an intercept-only GLM gives exactly the
    clustered interval of the raw win rate."""
    f = expit(X_test @ w)
    lc = float(np.mean(f))
    q = expit(X @ w)
    B = (X * (sw * q * (1 - q))[:, None]).T @ X
    grad = (X_test * (f * (1 - f))[:, None]).mean(axis=0)
    h = np.linalg.pinv(B) @ grad
    keys, inv = np.unique(np.r_[cluster, test_cluster], return_inverse=True)
    ci, ti = inv[:len(cluster)], inv[len(cluster):]
    score = sw * (p - q) * (X @ h)
    infl = np.bincount(ti, f - lc, len(keys)) / len(f) + np.bincount(ci, score, len(keys))
    g = len(keys)
    # the small-sample factor G / (G - 1) of the clustered win-rate interval (winrate.py)
    se = float(np.sqrt(g / max(g - 1, 1) * np.sum(infl**2)))
    z = float(norm.ppf(1 - alpha / 2))
    return 100 * lc, 100 * max(0.0, lc - z * se), 100 * min(1.0, lc + z * se)


def length_controlled(len_base: np.ndarray, len_model: np.ndarray, y: np.ndarray, difficulty: np.ndarray,
                      cluster: np.ndarray, *, gamed: Gamed | None = None, alpha: float = DEFAULT_ALPHA) -> LCFit:
    """``length_controlled_v1`` of one model against the baseline (its games as arrays).

    ``difficulty`` is each game's instruction difficulty; ``cluster`` its instruction key (with
    ``gamed``: the AlpacaEval index, so the gamed rows of the same instruction share it).

    Raises :class:`~judgelab.board.separation.NotEstimable` (a ``ValueError``) with the reason
    when the model has no game (liblinear is never called on an empty design: it crashes the
    process), a preference outside [0, 1], length differences too uniform to separate the length
    weight from the model's level without gamed rows (a degenerate design,
    :func:`length_extrapolation` above :data:`MAX_LENGTH_EXTRAPOLATION`), or games that a direction of the three weights
    predicts exactly (separation, :mod:`judgelab.board.separation`) *and* a cross-validation
    that chose the weakest penalty of the grid: the L1 penalty keeps every fit finite, but at
    ``C = 1e4`` on separated games the weights are the solver's stopping point, not an estimate.
    Separated games under a stronger chosen penalty keep the penalised (finite) fit.  One model
    with the difficulty estimated from its own games is the typical case: each instruction's
    estimated difficulty then carries that game's outcome."""
    y = np.asarray(y, float)
    if len(y) == 0:
        raise NotEstimable("not estimable: no games of this model (the GLM needs at least one)")
    if not np.all((y >= 0.0) & (y <= 1.0)):
        raise NotEstimable("not estimable: a preference outside [0, 1] (or not a number)")
    sdl = std_delta_len(len_base, len_model)
    z = length_extrapolation(sdl)
    if gamed is None and z > MAX_LENGTH_EXTRAPOLATION:
        t = np.tanh(sdl)
        raise NotEstimable(
            f"not estimable: degenerate design: its length differences barely vary (tanh(std_delta_len) mean "
            f"{float(np.mean(t)):+.2f}, sd {float(np.std(t)):.2f}), so the length-neutral point lies {z:.1f} sd "
            f"outside its games (limit {MAX_LENGTH_EXTRAPOLATION:g}) and the LC would be an extrapolation; "
            f"AlpacaEval's df_gamed.csv (--gamed-csv) fits the length weight on the gamed baselines too")
    X_m = _design(sdl, difficulty, np.ones(len(y), bool))
    if gamed is not None:
        X_g = _design(gamed.std_delta_len, gamed.difficulty.reindex(gamed.index).to_numpy(float), gamed.not_gamed)
        X = np.vstack([X_g, X_m])
        p = np.r_[gamed.preference, y]
        sw = np.r_[gamed.not_gamed.astype(float) + REGULARIZE_TO_BASELINE_LAMBDA * (~gamed.not_gamed) / 2,
                   np.ones(len(y))]
        cl = np.r_[gamed.index, cluster]
    else:
        X, p, sw, cl = X_m, np.asarray(y, float), np.ones(len(y)), np.asarray(cluster)
    if np.all(p >= 1.0) or np.all(p <= 0.0):  # one label only: liblinear has no second class to fit
        raise NotEstimable(f"not estimable: separation: every one of its {len(y)} games (and every training row) "
                           f"has the same outcome, so the fit has no finite maximum")
    w, C = fit_lc(X, p, sw)
    sep = separated_rows(X, p)
    if sep.any and C >= CS[-1]:
        terms = [WEIGHT_COLUMNS[c] for c in sep.columns()]
        raise NotEstimable(reason(int(sep.rows[len(p) - len(y):].sum()), len(y), terms))
    X_test = _design(np.zeros(len(y)), difficulty, np.ones(len(y), bool))
    lc, lo, hi = lc_interval(w, X, p, sw, cl, X_test, np.asarray(cluster), alpha)
    return LCFit(weights=w, C=C, lc=lc, ci_low=lo, ci_high=hi)


def read_lc_weights(path: str | Path) -> pd.DataFrame:
    """AlpacaEval's published GLM weights: one row per model, the three formula columns."""
    p = Path(path)
    try:
        df = pd.read_csv(p, index_col=0)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise InputError(f"{p}: not a readable CSV ({exc})") from None
    missing = [c for c in WEIGHT_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"{p}: missing column(s) {', '.join(missing)} (a length_controlled_v1 weights file)")
    return df[list(WEIGHT_COLUMNS)].astype(float)


def difficulty_given_weights(w: np.ndarray, item: np.ndarray, sdl: np.ndarray, y: np.ndarray, n_items: int,
                             prior: float = DIFFICULTY_PRIOR) -> np.ndarray:
    """MAP of ``d_i`` with every game's three weights fixed (``w``: one row per game)."""
    off = w[:, 0] * np.tanh(sdl) + w[:, 2]

    def f(d: np.ndarray) -> tuple[float, np.ndarray]:
        eta = off + w[:, 1] * d[item]
        nll = float(np.sum(np.logaddexp(0.0, eta) - y * eta) + 0.5 * prior * d @ d)
        return nll, np.bincount(item, (expit(eta) - y) * w[:, 1], n_items) + prior * d

    return minimize(f, np.zeros(n_items), jac=True, method="L-BFGS-B", options={"maxiter": 5000}).x


def lc_from_weights(weights: np.ndarray, difficulty: np.ndarray) -> float:
    """``predict_winrate`` against the weights' own baseline (all zero): ``100 mean sigma(w_d d + w_ng)``."""
    return float(100 * np.mean(expit(weights[1] * difficulty + weights[2])))
