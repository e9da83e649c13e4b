"""Many models, the sparse path: above ``DENSE_MAX`` parameters the bias-aware fit keeps its Laplace
posterior implicit (:class:`SparsePosterior`) and checks identifiability on the sparse design; both give
the dense formulas' numbers (``np.linalg.inv`` of the Hessian, the dense Schur complement) on small random
designs, and a leaderboard read through either path is the same.  The peeled factor solves and inverts
like dense algebra, and a log whose bias-aware fit would exceed the memory limit is refused in one line
before anything of that size is allocated."""

from __future__ import annotations

import json
import time
import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from judgelab.board.battles import battles_from_table
from judgelab.board.table import BoardSettings, leaderboard, rank_flips
from judgelab.io import InputError
from judgelab.ranking import bias_aware as BA
from judgelab.ranking.bias_aware import (
    Comparisons,
    FitOptions,
    PeeledCholesky,
    SparsePosterior,
    _gram,
    elimination_order,
    fit_bias_aware,
    identifiability_dense,
    identifiability_sparse,
    param_names,
    posterior_memory,
    sparse_design_matrix,
)
from judgelab.verdict_import.importer import RECORDED_COLUMNS


def _design(kind: str, rng: np.random.Generator, n: int = 90, k: int = 14):
    """(first, second) of ``n`` comparisons among ``k`` items: random pairs, a star (every game against
    item 0, which is always shown first: kappa confounded), or two disconnected halves."""
    if kind == "random":
        first = rng.integers(0, k, n)
        second = (first + rng.integers(1, k, n)) % k
    elif kind == "star":
        first, second = np.zeros(n, np.int64), rng.integers(1, k, n)
    else:  # two components, items 0..k/2-1 and k/2..k-1
        h = k // 2
        first = rng.integers(0, h, n)
        second = (first + rng.integers(1, h, n)) % h
        first[n // 2:] += h
        second[n // 2:] += h
    return first, second


@pytest.mark.parametrize("kind", ["random", "star", "split"])
@pytest.mark.parametrize("n_bias", [0, 1, 3])
def test_the_implicit_posterior_is_the_inverse_hessian(kind: str, n_bias: int) -> None:
    rng = np.random.default_rng(len(kind) * 10 + n_bias)
    k = 14
    first, second = _design(kind, rng, k=k)
    comp = Comparisons(first, second, rng.random(len(first)))
    W = rng.normal(size=(len(first), 2)) if n_bias >= 2 else (rng.normal(size=(len(first), 1)) if n_bias else None)
    opts = FitOptions(covariates=W is not None, position=n_bias == 3)
    Z = sparse_design_matrix(comp, k, None, opts, W)
    assert Z.shape[1] == k + n_bias
    w = rng.random(len(first)) * 0.25
    prior = np.r_[np.full(k, 1.3), np.full(n_bias, 0.1)]
    inv = np.linalg.inv(_gram(Z, w) + np.diag(prior))
    post = SparsePosterior(Z, w, prior, k)
    np.testing.assert_allclose(post.diag(), np.diag(inv), rtol=1e-10, atol=1e-13)
    for j in range(k + n_bias):
        np.testing.assert_allclose(post.column(j), inv[:, j], rtol=1e-10, atol=1e-13)
        assert post.variance(j) == pytest.approx(inv[j, j], rel=1e-10)
    np.testing.assert_allclose(post.dense(), inv, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(post.Sinv, inv[k:, k:], rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("seed", range(6))
def test_sparse_identifiability_is_the_dense_schur_complement(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    kind = ("random", "star", "split")[seed % 3]
    first, second = _design(kind, rng)
    W = rng.normal(size=(len(first), 2))
    if seed == 4:
        W[:, 1] = 0.0  # a column with no information at all
    if seed == 5:
        W[:, 1] = W[:, 0] * 2.0 + 0.3 * rng.normal(size=len(first))  # nearly collinear: weak
    opts = FitOptions(position=True)
    k = 14
    Z = sparse_design_matrix(Comparisons(first, second, rng.random(len(first))), k, None, opts, W)
    names = param_names(k, ["len", "md"], opts)
    dense_status, dense_vif = identifiability_dense(Z, k, names)
    status, vif = identifiability_sparse(Z, k, names)
    assert status == dense_status
    assert vif.keys() == dense_vif.keys()
    for name, v in dense_vif.items():
        assert vif[name] == pytest.approx(v, rel=1e-8) if np.isfinite(v) else vif[name] == np.inf
    if kind == "star":  # item 0 always first: the position term is the item's own quality
        assert status["kappa"] == "not identified"
    if seed == 4:
        assert status["c[md]"] == "not identified"
    if seed == 5:
        assert status["c[len]"] == "weak" and status["c[md]"] == "weak"


def test_a_fit_above_dense_max_has_the_dense_fits_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    k, n = 25, 400
    first = rng.integers(0, k, n)
    second = (first + rng.integers(1, k, n)) % k
    swap = rng.random(n) < 0.5
    theta = rng.normal(size=k)
    W = rng.normal(size=(n, 2))
    eta = theta[first] - theta[second] + W @ [0.4, -0.2] + 0.3
    comp = Comparisons(np.where(swap, second, first), np.where(swap, first, second),
                       (rng.random(n) < 1 / (1 + np.exp(-np.where(swap, -eta, eta)))).astype(float))
    for hierarchical in (False, True):
        opts = FitOptions(hierarchical=hierarchical)
        dense = fit_bias_aware(comp, k, options=opts, pair_X=W, pair_names=["len", "md"], warn=False)
        monkeypatch.setattr(BA, "DENSE_MAX", 10)
        sparse_fit = fit_bias_aware(comp, k, options=opts, pair_X=W, pair_names=["len", "md"], warn=False)
        monkeypatch.undo()
        assert dense.cov is not None and sparse_fit.cov is None and sparse_fit.posterior is not None
        np.testing.assert_allclose(sparse_fit.beta, dense.beta, rtol=1e-8, atol=1e-10)
        assert sparse_fit.tau2 == pytest.approx(dense.tau2, rel=1e-8)
        np.testing.assert_allclose(sparse_fit.variances(), np.diag(dense.cov), rtol=1e-9)
        np.testing.assert_allclose(sparse_fit.cov_column(3), dense.cov[:, 3], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(sparse_fit.sigma, dense.sigma, rtol=1e-9, atol=1e-12)
        for name in ("theta[0]", "c[len]", "c[md]", "kappa"):
            assert sparse_fit.se(name) == pytest.approx(dense.se(name), rel=1e-9)
        assert sparse_fit.identifiability == dense.identifiability
        for name, v in dense.vif.items():
            assert sparse_fit.vif[name] == pytest.approx(v, rel=1e-8)


def _log(pairs: list[tuple[str, str]], prefs: np.ndarray, words_b: np.ndarray) -> pd.DataFrame:
    k = len(pairs)
    return pd.DataFrame({c: "" for c in RECORDED_COLUMNS}, index=range(k)).assign(
        judge="j", item_id=[f"q{i % 7}" for i in range(k)], pair_id=[f"p{i}" for i in range(k)],
        order=["AB" if i % 3 else "BA" for i in range(k)], response_a="a b c d e",
        response_b=["w " * int(x) + ("# h\n" if x % 2 else "") for x in words_b],
        model_a=[a for a, _ in pairs], model_b=[b for _, b in pairs], preference=prefs, status="ok",
        simulated=False, source_file="synthetic", source_row=np.arange(k), label="")


def test_a_leaderboard_through_the_sparse_path_is_the_dense_one(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(11)
    models = [f"m{i}" for i in range(12)]
    pairs = [("base", models[i % 12]) for i in range(240)] + [(models[i % 12], models[(i + 1) % 12])
                                                              for i in range(60)]
    prefs = rng.choice([0.0, 0.5, 1.0], len(pairs), p=[0.4, 0.2, 0.4])
    b = battles_from_table(_log(pairs, prefs, rng.integers(2, 30, len(pairs))))
    s = BoardSettings(style_rounds=2, corrections=("bias_aware",))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dense = leaderboard(b, s, judges=False)
        monkeypatch.setattr(BA, "DENSE_MAX", 5)
        sparse_board = leaderboard(b, s, judges=False)
    cols = ["bias_aware", "bias_aware_ci_low", "bias_aware_ci_high"]
    assert dense.table["bias_aware_status"].eq("ok").sum() == 12
    pd.testing.assert_frame_equal(sparse_board.table[cols], dense.table[cols], rtol=1e-9, atol=1e-9)
    assert list(sparse_board.table["bias_aware_status"]) == list(dense.table["bias_aware_status"])
    for name, (est, se, ident) in dense.meta["bias_aware_terms"].items():
        e2, s2, i2 = sparse_board.meta["bias_aware_terms"][name]
        assert (e2, s2, i2) == (pytest.approx(est, rel=1e-9), pytest.approx(se, rel=1e-9), ident)


def test_the_peeled_factor_solves_and_inverts_like_dense_algebra() -> None:
    rng = np.random.default_rng(5)
    n = 300
    star = (np.zeros(900, np.int64), rng.integers(1, n, 900))
    chain = (np.arange(n - 1), np.arange(1, n))
    ring = (np.arange(n), (np.arange(n) + 1) % n)
    rand = (rng.integers(0, n, 900), rng.integers(0, n, 900))
    rand = (rand[0][rand[0] != rand[1]], rand[1][rand[0] != rand[1]])
    # a core (a round robin of 20) with trees hanging off it, and isolated items
    hang = rng.integers(0, 20, 200)
    mixed = (np.r_[np.repeat(np.arange(20), 20), np.arange(20, 220)], np.r_[np.tile(np.arange(20), 20), hang])
    mixed = (mixed[0][mixed[0] != mixed[1]], mixed[1][mixed[0] != mixed[1]])
    cores = {}
    for name, (f, s) in {"star": star, "chain": chain, "ring": ring, "random": rand, "mixed": mixed}.items():
        order, core = elimination_order(f, s, n)
        assert sorted(order.tolist()) == list(range(n))
        cores[name] = core
        W = sparse.csr_array((rng.random(len(f)) + 0.1, (f, s)), shape=(n, n))
        W = W + W.T
        A = sparse.diags_array(np.asarray(W.sum(axis=1)).ravel() + 0.7) - W  # a weighted Laplacian plus a prior
        dense = A.toarray()
        factor = PeeledCholesky(A)
        assert len(factor.core) == core
        rhs = rng.normal(size=(n, 3))
        np.testing.assert_allclose(factor.solve(rhs), np.linalg.solve(dense, rhs), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(factor.solve(rhs[:, 0]), np.linalg.solve(dense, rhs[:, 0]), rtol=1e-9,
                                   atol=1e-12)
        np.testing.assert_allclose(factor.inv_diag(), np.diag(np.linalg.inv(dense)), rtol=1e-10)
    # a star, a chain and a ring's remainder peel away whole; every item of a ring has two neighbours
    assert cores["star"] == 0 and cores["chain"] == 0 and cores["ring"] == n
    assert cores["mixed"] == 20 and 0 < cores["random"] < n


def _ring_battles(n_models: int):
    names = [f"m{i}" for i in range(n_models)]
    pairs = [(names[i], names[(i + 1) % n_models]) for i in range(n_models)]
    prefs = np.tile([1.0, 0.0, 0.5], n_models)[:n_models]
    return battles_from_table(_log(pairs, prefs, np.arange(n_models) % 20 + 2))


def test_a_board_beyond_the_memory_limit_is_refused_before_it_allocates(monkeypatch: pytest.MonkeyPatch) -> None:
    b = _ring_battles(6000)  # free battles in a ring: every model has two opponents, the core is all 6,000
    need, core = posterior_memory(b.a, b.b, b.n_models, 3)
    assert core == 6000 and need > 0.5 * 2**30  # the core's dense block, twice: 16 x 6000^2 bytes
    monkeypatch.setenv("JUDGELAB_MEMORY_GIB", "0.3")

    def never(*a, **k):
        raise AssertionError("a correction ran after the memory check")

    from judgelab.board import table as T

    for name in ("_lc", "_style", "bias_aware", "win_rates"):
        monkeypatch.setattr(T, name, never)
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(InputError) as exc:
        leaderboard(b, BoardSettings(style_rounds=2), judges=False)
    took = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("6000 models: the bias-aware fit would need about ")
    assert f"{need / 2**30:.1f} GiB" in msg and "0.3 GiB allowed ($JUDGELAB_MEMORY_GIB)" in msg
    assert "--corrections lc,style" in msg
    assert peak < 64 * 2**20 and took < 10
    # the same log without the bias-aware fit is not refused (it reaches the corrections)
    with pytest.raises(AssertionError, match="after the memory check"):
        leaderboard(b, BoardSettings(style_rounds=2, corrections=("lc", "style")), judges=False)
    # the setting wins over the environment
    with pytest.raises(AssertionError, match="after the memory check"):
        leaderboard(b, BoardSettings(style_rounds=2, memory_gib=need / 2**30 + 0.01), judges=False)


@pytest.mark.parametrize("value", ["lots", "0", "-1"])
def test_a_malformed_memory_limit_is_one_line(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("JUDGELAB_MEMORY_GIB", value)
    with pytest.raises(InputError, match=r"^\$JUDGELAB_MEMORY_GIB=.* (is not a number|must be a positive)"):
        leaderboard(_ring_battles(20), BoardSettings(style_rounds=2), judges=False)


def _annotations(tmp_path, n_models: int):
    rows = [{"instruction": f"q{i % 9}", "output_1": "x " * (1 + i % 5), "generator_1": f"m{i}",
             "output_2": "y " * (1 + i % 7), "generator_2": f"m{(i + 1) % n_models}", "dataset": "d",
             "annotator": "ann", "preference": 1.0 + (i % 3) / 2, "raw_completion": None} for i in range(n_models)]
    p = tmp_path / "results" / "ring" / "ann" / "annotations.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(rows), encoding="utf-8")
    return tmp_path / "results"


def test_the_command_refuses_in_one_line_and_corrections_leave_a_fit_out(tmp_path, capsys, monkeypatch) -> None:
    from judgelab import cli

    logs = _annotations(tmp_path, 1600)
    monkeypatch.setenv("JUDGELAB_MEMORY_GIB", "0.01")
    out = tmp_path / "board"
    assert cli.main(["leaderboard", "--format", "alpaca_eval", str(logs), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("judgelab: error: 1600 models: the bias-aware fit would need about")
    assert "--corrections lc,style" in err[0] and not out.exists()
    assert cli.main(["leaderboard", "--format", "alpaca_eval", str(logs), "--out", str(out), "--corrections",
                     "lc", "--resamples", "1"]) == 0
    table = pd.read_csv(out / "leaderboard.csv")
    assert table["bias_aware"].isna().all() and table["style_controlled"].isna().all()
    assert table["bias_aware_status"].str.startswith("not computed: left out by --corrections").all()
    assert table["style_status"].str.startswith("not computed: left out by --corrections").all()
    capsys.readouterr()
    assert cli.main(["leaderboard", "--format", "alpaca_eval", str(logs), "--out", str(out), "--corrections",
                     "lc,bias"]) == 2
    assert capsys.readouterr().err.strip() == ("judgelab: error: --corrections: unknown correction 'bias' (a "
                                               "comma-separated list of lc, style, bias_aware)")


def test_rank_flips_in_blocks_are_the_pairwise_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    n = 40
    raw = rng.integers(0, 10, n).astype(float)
    t = pd.DataFrame({"model": [f"m{i}" for i in range(n)], "win_rate": raw, "win_rate_ci_low": raw - 1,
                      "win_rate_ci_high": raw + 1})
    for col, lo, hi, _ in __import__("judgelab.board.table", fromlist=["CORRECTIONS"]).CORRECTIONS:
        c = rng.integers(0, 10, n).astype(float)
        c[rng.random(n) < 0.2] = np.nan
        t[col], t[lo], t[hi] = c, c - 2, c + 2
    whole = rank_flips(t)
    from judgelab.board import table as T

    monkeypatch.setattr(T, "FLIP_BLOCK_CELLS", 3 * n + 5)  # blocks of three rows, the last one short
    blocks = rank_flips(t)
    assert len(whole) > 50
    pd.testing.assert_frame_equal(blocks, whole)
    i = j = None
    for _, r in whole.iterrows():  # every listed pair is a reversal, by hand
        i, j = int(r["model_1"][1:]), int(r["model_2"][1:])
        assert raw[i] > raw[j] and t.loc[i, r["correction"]] < t.loc[j, r["correction"]]
    expected = sum(int(((raw[:, None] > raw[None, :]) & (t[c].to_numpy()[:, None] < t[c].to_numpy()[None, :])).sum())
                   for c in ("lc_win_rate", "style_controlled", "bias_aware"))
    assert len(whole) == expected


@pytest.mark.parametrize("dense_max", [1500, 5])
def test_the_bias_aware_interval_is_the_wald_interval_of_the_contrast(monkeypatch: pytest.MonkeyPatch,
                                                                      dense_max: int) -> None:
    from scipy.special import expit, logit
    from scipy.stats import norm

    from judgelab.board import bias_aware as board_ba

    rng = np.random.default_rng(13)
    pairs = [("base", f"m{i % 8}") for i in range(200)]
    b = battles_from_table(_log(pairs, rng.choice([0.0, 0.5, 1.0], 200), rng.integers(2, 30, 200)))
    fits = []
    real = board_ba.fit_bias_aware

    def keep(*a, **k):
        fits.append(real(*a, **k))
        return fits[-1]

    monkeypatch.setattr(board_ba, "fit_bias_aware", keep)
    monkeypatch.setattr(BA, "DENSE_MAX", dense_max)
    res = board_ba.bias_aware(b, alpha=0.1)
    (fit,) = fits
    cov = fit.sigma  # the model block of H^-1 (dense, or read from the implicit posterior)
    ref = b.models.index(b.reference)
    z = norm.ppf(0.95)
    for m in range(b.n_models):
        if m == ref:
            continue
        c = np.zeros(b.n_models)
        c[m], c[ref] = 1.0, -1.0
        se = np.sqrt(c @ cov @ c)  # Var(theta_m - theta_ref), the contrast's quadratic form
        d = fit.theta[m] - fit.theta[ref]
        assert res.status[m] == "ok"
        assert res.score[m] == pytest.approx(100 * expit(d), rel=1e-12)
        assert res.ci_low[m] == pytest.approx(100 * expit(d - z * se), rel=1e-9)
        assert res.ci_high[m] == pytest.approx(100 * expit(d + z * se), rel=1e-9)
        assert logit(res.ci_high[m] / 100) - logit(res.ci_low[m] / 100) == pytest.approx(2 * z * se, rel=1e-7)


def test_corrections_left_out_are_not_computed_and_the_rest_unchanged() -> None:
    rng = np.random.default_rng(17)
    pairs = [("base", f"m{i % 4}") for i in range(160)]
    b = battles_from_table(_log(pairs, rng.choice([0.0, 0.5, 1.0], 160), rng.integers(2, 30, 160)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = leaderboard(b, BoardSettings(style_rounds=3), judges=False).table
        only_style = leaderboard(b, BoardSettings(style_rounds=3, corrections=("style",)), judges=False).table
    assert full["lc_status"].eq("ok").all() and full["bias_aware_status"].eq("ok").all()
    for col, status in (("lc_win_rate", "lc_status"), ("bias_aware", "bias_aware_status")):
        assert only_style[col].isna().all()
        assert only_style[status].str.startswith("not computed: left out by --corrections").all()
    pd.testing.assert_series_equal(only_style["style_controlled"], full["style_controlled"])
    pd.testing.assert_series_equal(only_style["win_rate"], full["win_rate"])
    with pytest.raises(InputError, match="unknown correction 'nope'"):
        leaderboard(b, BoardSettings(corrections=("lc", "nope")), judges=False)
