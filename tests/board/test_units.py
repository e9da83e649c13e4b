"""Fast unit tests of judgelab.board, each against an independent computation (the mutation map's
tests for these modules: small inputs, sharp assertions)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit, logit
from scipy.stats import norm

from judgelab.board import length_controlled as L
from judgelab.board import style_control as S
from judgelab.board.battles import battles_from_table, read_answer_metadata, style_of_text
from judgelab.board.bias_aware import bias_aware, comparison_covariates, connected_to
from judgelab.board.table import rank_flips, weights_key
from judgelab.board.winrate import clustered_mean, win_rates
from judgelab.io import InputError
from judgelab.verdict_import.importer import RECORDED_COLUMNS


# ---- winrate ------------------------------------------------------------------------------------------
def _cluster_se(y, c):
    p = y.mean()
    s = pd.Series(y - p).groupby(c).sum()
    g = len(s)
    return np.sqrt(g / (g - 1) * (s**2).sum()) / len(y)


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_clustered_mean_by_hand(alpha):
    y = np.array([1, 0, 1, 1, 0.5, 0, 1, 0.25])
    c = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    r = clustered_mean(y, c, alpha)
    z = norm.ppf(1 - alpha / 2)
    se = _cluster_se(y, c)
    assert (r.n, r.status) == (8, "ok")
    assert r.win_rate == pytest.approx(100 * y.mean())
    assert r.ci_low == pytest.approx(100 * (y.mean() - z * se))
    assert r.ci_high == pytest.approx(100 * (y.mean() + z * se))


def test_clustered_mean_clips_to_the_percent_scale():
    r = clustered_mean(np.array([1, 1, 1, 0.9]), np.array([0, 1, 2, 3]))
    assert r.ci_high == 100.0 and r.ci_low < 100
    r = clustered_mean(np.array([0, 0, 0, 0.1]), np.array([0, 1, 2, 3]))
    assert r.ci_low == 0.0 and r.ci_high > 0


def test_win_rates_split_by_model_code():
    model = np.array([2, 0, 2, 0, 2, 0])
    y = np.array([1, 0, 1, 1, 0, 0.0])
    item = np.array([0, 0, 1, 1, 2, 2])
    out = win_rates(model, y, item, 3)
    assert out[0].win_rate == pytest.approx(100 / 3) and out[2].win_rate == pytest.approx(200 / 3)
    assert out[1].n == 0 and out[1].status.startswith("not estimable")
    assert out[0].n == 3 and out[2].n == 3


# ---- length_controlled ------------------------------------------------------------------------------------
def test_std_delta_len_baseline_minus_model_over_sample_std():
    d = L.std_delta_len(np.array([10.0, 30, 20]), np.array([0.0, 0, 40]))
    raw = np.array([10.0, 30, -20])
    np.testing.assert_allclose(d, raw / raw.std(ddof=1))
    assert (L.std_delta_len(np.array([5.0]), np.array([1.0])) == 0).all()


def test_design_columns_are_the_formulas():
    X = L._design(np.array([0.5, -2.0]), np.array([0.3, 0.1]), np.array([True, False]))
    np.testing.assert_allclose(X, [[np.tanh(0.5), 0.3, 1.0], [np.tanh(-2.0), 0.1, 0.0]])


def _mle(X, p, sw):
    def f(w):
        eta = X @ w
        return float(np.sum(sw * (np.logaddexp(0, eta) - p * eta))), X.T @ (sw * (expit(eta) - p))

    return minimize(f, np.zeros(X.shape[1]), jac=True, method="BFGS").x


def test_the_probability_fit_is_the_weighted_cross_entropy_minimum():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.tanh(rng.normal(size=300)), rng.normal(size=300), np.ones(300)])
    p = expit(X @ np.array([-1.0, 0.7, 0.4]) + rng.normal(0, 0.3, 300))
    sw = rng.uniform(0.2, 1.0, 300)
    w = L._fit_proba(X, p, sw, C=1e6)
    np.testing.assert_allclose(w, _mle(X, p, sw), atol=2e-3)
    # the L1 penalty shrinks: a small C zeroes everything
    assert np.allclose(L._fit_proba(X, p, sw, C=1e-4), 0)


def test_the_cv_picks_a_c_of_the_grid_and_a_large_one_for_a_strong_signal():
    rng = np.random.default_rng(1)
    X = np.column_stack([np.tanh(rng.normal(size=400)), np.zeros(400), np.ones(400)])
    p = expit(X @ np.array([-2.0, 0.0, 0.5]))
    w, C = L.fit_lc(X, p, np.ones(400))
    assert C in L.CS and C >= 1.0
    assert w[0] == pytest.approx(-2.0, abs=0.1) and w[2] == pytest.approx(0.5, abs=0.1)
    _w_small, C_small = L.fit_lc(X[:6], p[:6], np.ones(6))
    assert C_small == 1.0  # too few rows for 5 folds: one fit at C = 1


def test_the_lc_interval_of_an_intercept_only_glm_is_the_clustered_mean_interval():
    rng = np.random.default_rng(2)
    cluster = np.repeat(np.arange(50), 2)
    p = rng.uniform(0, 1, 100)
    X = np.ones((100, 1))
    w = np.array([logit(p.mean())])
    lc, lo, hi = L.lc_interval(w, X, p, np.ones(100), cluster, X, cluster, 0.05)
    want = clustered_mean(p, cluster)
    assert lc == pytest.approx(want.win_rate)
    assert lo == pytest.approx(want.ci_low, rel=1e-6) and hi == pytest.approx(want.ci_high, rel=1e-6)


def test_length_controlled_removes_a_planted_length_effect():
    rng = np.random.default_rng(3)
    n = 600
    lb = rng.lognormal(6, 0.5, n)
    lm = rng.lognormal(6.5, 0.5, n)  # the model writes longer
    sdl = L.std_delta_len(lb, lm)
    diff = rng.normal(0, 1, n)
    y = expit(0.0 - 1.5 * np.tanh(sdl) + 0.5 * diff)
    fit = L.length_controlled(lb, lm, y, diff, np.arange(n))
    assert 100 * y.mean() > 60  # the raw preference rewards length
    assert fit.lc == pytest.approx(100 * np.mean(expit(0.5 * diff)), abs=2.0)
    assert fit.ci_low < fit.lc < fit.ci_high and fit.ci_high - fit.ci_low < 10
    assert fit.weights[0] < -1.0


def test_gamed_rows_enter_with_the_baseline_regularisation_weight(monkeypatch):
    rng = np.random.default_rng(4)
    n = 200
    idx = np.arange(n)
    gamed = L.Gamed(index=np.r_[idx, idx], preference=np.r_[np.full(n, 0.9), np.full(n, 0.1)],
                    std_delta_len=np.r_[np.full(n, -1.0), np.full(n, 1.0)], not_gamed=np.zeros(2 * n, bool),
                    difficulty=pd.Series(rng.normal(size=n), index=idx))
    lb, lm = rng.lognormal(6, 0.3, n), rng.lognormal(6, 0.3, n)
    y = np.full(n, 0.5)
    d = gamed.difficulty.to_numpy()
    plain = L.length_controlled(lb, lm, y, d, idx)
    reg = L.length_controlled(lb, lm, y, d, idx, gamed=gamed)
    assert plain.lc == pytest.approx(50, abs=1)
    # the gamed rows teach a length weight shared with the model's rows, in proportion to lambda
    assert reg.weights[0] < -0.3 and abs(plain.weights[0]) < 0.1
    monkeypatch.setattr(L, "REGULARIZE_TO_BASELINE_LAMBDA", 2.0)
    strong = L.length_controlled(lb, lm, y, d, idx, gamed=gamed)
    assert strong.weights[0] < reg.weights[0] - 0.3


def test_difficulty_is_recovered_jointly_and_given_weights():
    rng = np.random.default_rng(5)
    M, n_items = 8, 120
    d_true = rng.normal(0, 1, n_items)
    model = np.repeat(np.arange(M), n_items)
    item = np.tile(np.arange(n_items), M)
    sdl = rng.normal(0, 1, M * n_items)
    a = rng.normal(0, 1, M)
    y = expit(a[model] - 0.8 * np.tanh(sdl) + d_true[item])
    d = L.estimate_difficulty(model, item, sdl, y, M, n_items)
    assert np.corrcoef(d, d_true)[0, 1] > 0.95
    w = np.column_stack([np.full(M * n_items, -0.8), np.ones(M * n_items), a[model]])
    d2 = L.difficulty_given_weights(w, item, sdl, y, n_items)
    assert np.corrcoef(d2, d_true)[0, 1] > 0.97 and np.abs(d2 - d_true).mean() < 0.15
    assert L.lc_from_weights(np.array([-0.8, 1.0, a[0]]), d_true) == pytest.approx(
        100 * np.mean(expit(d_true + a[0])))


def test_weights_and_gamed_files_name_the_missing_key(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text(",np.tanh(std_delta_len),instruction_difficulty\nm,1,2\n")
    with pytest.raises(InputError, match="not_gamed_baseline"):
        L.read_lc_weights(p)
    p.write_text(",np.tanh(std_delta_len),instruction_difficulty,not_gamed_baseline.astype(float),x\nm,1,2,3,9\n")
    assert list(L.read_lc_weights(p).loc["m"]) == [1, 2, 3]
    g = tmp_path / "g.csv"
    g.write_text("index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline\n0,1.5,0,0,maybe\n")
    with pytest.raises(InputError, match="row 2: key 'not_gamed_baseline'"):
        L.read_gamed_csv(g)


# ---- style_control -------------------------------------------------------------------------------------
def test_style_features_by_hand():
    f = S.style_features(np.array([[300, 3, 6, 0]]), np.array([[100, 0, 1, 1]]))
    dm = np.array([3, 6, 0]) / 300
    db = np.array([0, 1, 1]) / 100
    np.testing.assert_allclose(f[0], [(300 - 100) / 400, *((dm - db) / (dm + db + 1))], rtol=1e-6)
    assert np.all(S.style_features(np.zeros((1, 4)), np.zeros((1, 4))) == 0)


def test_explode_and_standardize():
    m, _o, y, f = S.explode(np.array([1, 2]), np.array([0, 0]), np.array([1.0, 0.5]), np.array([3, 1]),
                           np.array([[1.0, 5], [2.0, 5]]))
    assert list(m) == [1, 1, 1, 2] and list(y) == [1, 1, 1, 0.5] and f.shape == (4, 2)
    z, _mean, std = S.standardize(f)
    np.testing.assert_allclose(z[:, 0], (f[:, 0] - f[:, 0].mean()) / f[:, 0].std(ddof=1), rtol=1e-6)
    assert (z[:, 1] == 0).all() and std[1] == 0


def test_the_bt_fit_recovers_a_known_strength():
    n = 400
    model = np.array([1] * n + [2] * n)
    opp = np.zeros(2 * n, int)
    y = np.r_[np.ones(300), np.zeros(100), np.ones(100), np.zeros(300)].astype(np.float32)
    c = S.fit_style_bt(model, opp, y, np.zeros((2 * n, 1), np.float32), 3)
    assert c[1] - c[0] == pytest.approx(logit(0.75), abs=1e-3)
    assert c[2] - c[0] == pytest.approx(logit(0.25), abs=1e-3)


def test_style_controlled_scores_median_and_quantiles():
    rng = np.random.default_rng(6)
    n = 300
    model = np.repeat([1, 2], n)
    opp = np.zeros(2 * n, int)
    y = (rng.random(2 * n) < np.repeat([0.7, 0.4], n)).astype(float)
    st = np.column_stack([rng.integers(50, 150, 2 * n), np.zeros((2 * n, 3))])
    sb = np.column_stack([rng.integers(50, 150, 2 * n), np.zeros((2 * n, 3))])
    r = S.style_controlled(model, opp, y, np.ones(2 * n), st, sb, 3, 0, rounds=30, alpha=0.1, seed=1)
    assert r.score[0] == pytest.approx(50)
    assert r.score[1] == pytest.approx(100 * y[:n].mean(), abs=3)
    assert r.score[2] == pytest.approx(100 * y[n:].mean(), abs=3)
    assert all(r.ci_low[k] < r.score[k] < r.ci_high[k] for k in (1, 2))
    wide = S.style_controlled(model, opp, y, np.ones(2 * n), st, sb, 3, 0, rounds=30, alpha=0.01, seed=1)
    assert wide.ci_high[1] - wide.ci_low[1] > r.ci_high[1] - r.ci_low[1]
    ref = S.reference_dict(r, "texts")
    fr = S.style_controlled_frozen(model, y, np.ones(2 * n), st, sb, ["b", "m1", "m2"], 0, ref, rounds=20)
    assert fr.frozen and fr.score[0] == 50 and fr.score[1] == pytest.approx(r.score[1], abs=3)


def test_read_reference_names_the_key(tmp_path):
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"coefs": {"length": 1}, "mean": [0] * 4, "std": [1] * 4}))
    with pytest.raises(InputError, match="lacks header_density"):
        S.read_reference(p)
    p.write_text(json.dumps({"coefs": dict.fromkeys(S.FEATURES, 0.0), "mean": [0] * 3, "std": [1] * 4}))
    with pytest.raises(InputError, match="key 'mean' needs 4"):
        S.read_reference(p)
    p.write_text(json.dumps({"mean": [0] * 4}))
    with pytest.raises(InputError, match="missing key 'coefs'"):
        S.read_reference(p)


# ---- battles and bias_aware ------------------------------------------------------------------------------
def _rows(spec):
    rows = []
    for k, (item, a, b, p, order, label, ra, rb) in enumerate(spec):
        rows.append({"judge": "j", "backend": "recorded", "model": "j", "family": "u", "pair_id": f"{item}{a}{b}",
                     "item_id": item, "order": order, "instruction": item, "response_a": ra, "response_b": rb,
                     "model_a": a, "model_b": b, "family_a": "u", "family_b": "u", "verdict_shown": "",
                     "verdict": "", "preference": p, "label": label, "expected_verdict": pd.NA, "correct": pd.NA,
                     "status": "ok", "parse_method": "x", "raw_text": "", "simulated": False, "category": "",
                     "source_file": "f", "source_row": k})
    return pd.DataFrame(rows, columns=RECORDED_COLUMNS)


def test_battles_orientation_weights_and_styles():
    t = _rows([("q1", "base", "m", 1.0, "AB", "B>>A", "short", "# H\n- a\n**b** long long"),
               ("q1", "base", "m", 1.0, "BA", "A>B", "short", "# H\n- a\n**b** long long"),
               ("q2", "base", "n", 0.0, "AB", "A=B", "x y", "z")])
    b = battles_from_table(t)
    assert b.baseline == "base" and b.reference == "base" and b.models == ["base", "m", "n"]
    assert list(b.weight) == [3, 1, 1] and list(b.b_first) == [False, True, False]
    assert b.style_b[0].tolist() == [7, 1, 1, 1] and b.len_a[0] == 5
    model, y, is_b = b.evaluated()
    assert list(model) == [1, 1, 2] and list(y) == [1.0, 1.0, 0.0] and is_b.all()
    with pytest.raises(InputError, match="row 0: no model_b"):
        battles_from_table(t.assign(model_b=None))


def test_answer_metadata_sums_dicts_and_names_bad_records(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({"uid": "u1", "model": "m", "metadata": {
        "token_len": 10, "header_count": {"h1": 1, "h2": 2}, "list_count": {"o": 3}, "bold_count": {"**": 4}}})
        + "\n" + json.dumps({"uid": "u2", "model": "m"}) + "\n")
    assert read_answer_metadata([str(tmp_path)]) == {("u1", "m"): (10, 3, 3, 4)}
    f.write_text(json.dumps({"uid": "u1", "model": "m", "metadata": {"token_len": 1}}) + "\n")
    with pytest.raises(InputError, match="line 1"):
        read_answer_metadata([str(f)])


def test_style_of_text_counts():
    assert style_of_text("a b\n### h\n10. x\n  * y\n__u__ **v**") == (10, 1, 2, 2)


def test_comparison_covariates_and_connectivity():
    w = comparison_covariates(np.array([[30.0, 3, 0, 0], [0, 0, 0, 0]]), np.array([[10.0, 0, 1, 0], [0, 0, 0, 0]]))
    np.testing.assert_allclose(w[0], [0.5, (0.1 - 0.1) / 1.2])
    np.testing.assert_allclose(w[1], [0, 0])
    assert connected_to(np.array([0, 2]), np.array([1, 3]), 4, 0).tolist() == [True, True, False, False]


def test_bias_aware_with_both_orders_keeps_the_position_term():
    rng = np.random.default_rng(7)
    spec = []
    for i in range(150):
        for m, q in (("m1", 0.8), ("m2", -0.5)):
            order = "AB" if i % 2 else "BA"
            p_first = expit((0.0 - q if order == "AB" else q) + 0.6)  # first slot favoured
            first_wins = rng.random() < p_first
            pref_b = float(not first_wins) if order == "AB" else float(first_wins)
            spec.append((f"q{i}", "base", m, pref_b, order, "", "a " * rng.integers(5, 30),
                         "b " * rng.integers(5, 30)))
    b = battles_from_table(_rows(spec))
    r = bias_aware(b)
    assert "kappa" in r.terms and r.terms["kappa"][0] == pytest.approx(0.6, abs=0.25)
    assert r.score[b.models.index("m1")] == pytest.approx(100 * expit(0.8), abs=8)
    assert r.score[b.models.index("m2")] == pytest.approx(100 * expit(-0.5), abs=8)
    assert "markdown: no variation" in r.note


# ---- table ----------------------------------------------------------------------------------------------
def test_rank_flips_and_overlap():
    t = pd.DataFrame({"model": ["a", "b", "c"], "win_rate": [60.0, 50, 40], "win_rate_ci_low": [55, 45, 35],
                      "win_rate_ci_high": [65, 55, 45], "lc_win_rate": [40.0, 50, 60], "lc_ci_low": [38, 48, 58],
                      "lc_ci_high": [42, 52, 62], "style_controlled": [60.0, 50, 40], "style_ci_low": [59, 49, 39],
                      "style_ci_high": [61, 51, 41], "bias_aware": [np.nan, 50, 40],
                      "bias_aware_ci_low": [np.nan, 45, 35], "bias_aware_ci_high": [np.nan, 55, 45]})
    f = rank_flips(t)
    assert set(f["correction"]) == {"lc_win_rate"} and len(f) == 3
    ab = f[(f["model_1"] == "a") & (f["model_2"] == "b")].iloc[0]
    assert bool(ab["raw_ci_overlap"]) is True and bool(ab["corrected_ci_overlap"]) is False
    assert rank_flips(t.assign(lc_win_rate=t["win_rate"])).empty


def test_weights_key_prefers_the_results_folder():
    idx = pd.Index(["NullModel", "example", "m"])
    assert weights_key("example", "r/NullModel/ann/annotations.json", idx) == "NullModel"
    assert weights_key("example", "NullModel/ann/annotations.json", idx) == "NullModel"  # a relative results path
    assert weights_key("m", "x/y.json", idx) == "m"
    assert weights_key("z", "r/zz/ann/annotations.json", idx) is None


def test_clustered_mean_edges_exactly():
    empty = clustered_mean(np.array([]), np.array([]))
    assert empty.n == 0 and empty.status == "not estimable: no usable verdict"
    assert np.isnan(empty.win_rate) and np.isnan(empty.ci_low) and np.isnan(empty.ci_high)
    one = clustered_mean(np.array([1.0, 0.5, 0.0, 1.0]), np.array([7, 7, 7, 7]))
    assert one.n == 4 and one.win_rate == pytest.approx(62.5)
    assert one.status == "no interval: all verdicts on one item"
    assert np.isnan(one.ci_low) and np.isnan(one.ci_high)
    y2, c2 = np.array([1, 1, 1, 0, 0.5, 1, 1, 0]), np.repeat([1, 2], 4)  # two items: an interval
    two = clustered_mean(y2, c2)
    se = _cluster_se(y2, c2)
    assert two.status == "ok" and two.ci_high == pytest.approx(100 * (y2.mean() + norm.ppf(0.975) * se))
    assert two.ci_low == pytest.approx(100 * (y2.mean() - norm.ppf(0.975) * se))


def test_win_rates_intervals_are_each_models_clustered_interval():
    model = np.array([1, 0, 1, 0, 1, 0, 1])
    y = np.array([1, 0, 0, 1, 1, 0.5, 0.0])
    item = np.array([0, 0, 1, 1, 2, 2, 3])
    out = win_rates(model, y, item, 2)
    for m in (0, 1):
        want = clustered_mean(y[model == m], item[model == m])
        assert out[m].ci_low == pytest.approx(want.ci_low) and out[m].ci_high == pytest.approx(want.ci_high)
        assert out[m].status == "ok" and out[m].ci_low < out[m].win_rate < out[m].ci_high
    narrow = win_rates(model, y, item, 2, alpha=0.5)
    assert narrow[0].ci_low == pytest.approx(clustered_mean(y[model == 0], item[model == 0], 0.5).ci_low)
    assert narrow[0].ci_low > out[0].ci_low


def test_comparison_covariates_edges_by_hand():
    first = np.array([[1.0, 0, 0, 0], [20, 1, 1, 2], [10, 0, 2, 0], [1, 1, 0, 0]])
    second = np.array([[0.0, 0, 0, 0], [10, 0, 1, 0], [1, 1, 0, 0], [4, 0, 0, 1]])
    w = comparison_covariates(first, second)
    np.testing.assert_allclose(w[:, 0], [1.0, 10 / 30, 9 / 11, -3 / 5])
    df = np.array([0.0, 4 / 20, 2 / 10, 1.0])
    ds = np.array([0.0, 1 / 10, 1 / 1, 1 / 4])
    np.testing.assert_allclose(w[:, 1], (df - ds) / (df + ds + 1))
    with np.errstate(all="raise"):  # the zero-token guard divides by zero only inside its errstate
        comparison_covariates(np.zeros((1, 4)), np.zeros((1, 4)))
        comparison_covariates(np.array([[0.0, 2, 0, 0]]), np.array([[0.0, 1, 0, 0]]))


def _games(rng, orders=("AB", "BA"), md=True, extra=()):
    spec = []
    for i in range(120):
        for m, q in (("m1", 0.6), ("m2", -0.4)):
            order = orders[i % len(orders)]
            body = "- x\n" * int(rng.integers(0, 4)) if md else ""
            ra, rb = "a " * int(rng.integers(5, 40)), body + "b " * int(rng.integers(5, 40))
            spec.append((f"q{i}", "base", m, float(rng.random() < expit(q)), order, "", ra, rb))
    return spec + list(extra)


def _direct(b, alpha, lam=1.0, lam_b=0.1):
    """The expected bias-aware scores, from ranking.bias_aware directly."""
    from judgelab.ranking.bias_aware import Comparisons, FitOptions, fit_bias_aware

    first = np.where(b.b_first, b.b, b.a)
    second = np.where(b.b_first, b.a, b.b)
    y = np.where(b.b_first, b.pref_b, 1 - b.pref_b)
    sf = np.where(b.b_first[:, None], b.style_b, b.style_a)
    ss = np.where(b.b_first[:, None], b.style_a, b.style_b)
    W = comparison_covariates(sf, ss)
    W = W / W.std(axis=0)
    fit = fit_bias_aware(Comparisons(first, second, y), b.n_models, None,
                         options=FitOptions(lam=lam, lam_b=lam_b, covariates=True, position=True), pair_X=W,
                         pair_names=["length", "markdown"], warn=False)
    ref = b.models.index(b.reference)
    d = fit.theta - fit.theta[ref]
    cov = fit.sigma
    se = np.sqrt(np.maximum(np.diag(cov) + cov[ref, ref] - 2 * cov[:, ref], 0))
    z = norm.ppf(1 - alpha / 2)
    return fit, 100 * expit(d), 100 * expit(d - z * se), 100 * expit(d + z * se)


def test_bias_aware_is_the_direct_fit_with_its_laplace_interval():
    from judgelab.ranking.bias_aware import FitOptions

    rng = np.random.default_rng(8)
    b = battles_from_table(_rows(_games(rng)))
    r = bias_aware(b, alpha=0.1, options=FitOptions(lam=3.0, lam_b=0.5))
    fit, score, lo, hi = _direct(b, 0.1, lam=3.0, lam_b=0.5)
    np.testing.assert_allclose(r.score, score, rtol=1e-6)
    np.testing.assert_allclose(r.ci_low, lo, rtol=1e-6)
    np.testing.assert_allclose(r.ci_high, hi, rtol=1e-6)
    assert r.status == ["ok"] * 3 and r.note == ""
    assert set(r.terms) == {"c[length]", "c[markdown]", "kappa"}
    for name, (est, sd, ident) in r.terms.items():
        assert est == pytest.approx(fit.estimate(name)) and sd == pytest.approx(fit.se(name))
        assert ident == fit.identifiability[name]
    assert all(lo_ < hi_ for lo_, hi_ in zip(r.ci_low, r.ci_high, strict=True) if lo_ != hi_)


def test_bias_aware_one_order_no_markdown_and_unreachable_models():
    rng = np.random.default_rng(9)
    extra = [(f"z{i}", "x", "w", float(i % 2), "AB", "", "x " * (3 + i), "w " * (5 + i % 3)) for i in range(10)]
    b = battles_from_table(_rows(_games(rng, orders=("AB",), md=False, extra=extra)), baseline="base")
    r = bias_aware(b)
    assert "kappa" not in r.terms and "c[markdown]" not in r.terms and "c[length]" in r.terms
    assert r.note == ("markdown: no variation between the answers, left out; "
                      "position: one presentation order in the log, not identified, left out")
    for m in ("x", "w"):
        k = b.models.index(m)
        assert np.isnan(r.score[k]) and np.isnan(r.ci_low[k]) and np.isnan(r.ci_high[k])
        assert r.status[k] == "not estimable: no chain of games to the reference 'base'"
    k = b.models.index("m1")
    assert r.status[k] == "ok" and r.ci_low[k] < r.score[k] < r.ci_high[k]
    # no style variation at all: a plain Bradley-Terry with neither bias term
    flat = [(f"q{i}", "base", "m1", float(i % 3 == 0), "AB", "", "same text", "same text") for i in range(30)]
    r0 = bias_aware(battles_from_table(_rows(flat)))
    assert r0.terms == {} and r0.note.startswith("length: no variation")
    assert r0.score[1] == pytest.approx(100 * expit(np.log(10 / 20)), abs=3)


def test_bias_aware_keeps_identifiability_warnings_to_itself():
    import warnings

    from judgelab.ranking.bias_aware import IdentifiabilityWarning

    rng = np.random.default_rng(10)
    # m1 always writes longer than the baseline and m2 always shorter: length is nearly a model label
    spec = [(f"q{i}", "base", m, float(rng.random() < 0.5), "AB", "", "a " * 15, "b " * (n + i % 2))
            for i in range(60) for m, n in (("m1", 30), ("m2", 5))]
    b = battles_from_table(_rows(spec))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = bias_aware(b)
    assert r.terms["c[length]"][2] != "identified"  # the design does warn inside
    assert not [w for w in seen if issubclass(w.category, IdentifiabilityWarning)]


def test_a_log_shown_only_swapped_has_one_order_too():
    rng = np.random.default_rng(11)
    r = bias_aware(battles_from_table(_rows(_games(rng, orders=("BA",)))))
    assert "kappa" not in r.terms and "position: one presentation order" in r.note


# ---- the fast paths equal the published forms -------------------------------------------------------------
def test_direct_liblinear_fit_is_the_estimators_fit_bit_for_bit():
    from sklearn.linear_model import LogisticRegression

    assert L._direct_matches_public()  # this scikit-learn takes the direct path
    rng = np.random.default_rng(3)
    for n in (12, 90):
        X, p = rng.normal(size=(n, 3)), rng.random(n)
        sw = np.where(rng.random(n) < 0.3, L.REGULARIZE_TO_BASELINE_LAMBDA / 2, 1.0)
        for C in L.CS[::3]:
            est = LogisticRegression(**L._L1, solver="liblinear", C=C, fit_intercept=False, random_state=123)
            est.fit(np.vstack([X, X]), np.r_[np.ones(n), np.zeros(n)], sample_weight=np.r_[p * sw, (1 - p) * sw])
            np.testing.assert_array_equal(L._fit_proba(X, p, sw, C), est.coef_[0])


def test_a_failing_direct_fit_falls_back_to_the_estimator(monkeypatch):
    rng = np.random.default_rng(4)
    X, p, sw = rng.normal(size=(40, 3)), rng.random(40), np.ones(40)
    want = L._fit_proba(X, p, sw, 1.0)

    def broken(*a, **k):
        raise TypeError("train_wrap() takes 11 positional arguments")

    monkeypatch.setattr(L, "_direct_fit", broken)
    L._direct_matches_public.cache_clear()
    try:
        assert not L._direct_matches_public()
        np.testing.assert_array_equal(L._fit_proba(X, p, sw, 1.0), want)
    finally:
        L._direct_matches_public.cache_clear()


def _exploded_autograd_fit(m, b, o, f, n_models, idx):
    """show_result.py's fit as published: every drawn row once, the loss taped by autograd."""
    import torch

    m, b = torch.as_tensor(m[idx]), torch.as_tensor(b[idx])
    o, f = torch.as_tensor(o[idx], dtype=torch.float32), torch.as_tensor(f[idx], dtype=torch.float32)
    with S._one_thread():
        return S._lbfgs(n_models + f.shape[1], lambda c: S._bt_loss(c[m] - c[b] + f @ c[n_models:], o)).numpy()


def test_the_counted_fit_is_the_exploded_autograd_fit():
    rng = np.random.default_rng(5)
    n = 240
    model = rng.integers(1, 4, n)
    opp = np.where(rng.random(n) < 0.7, 0, (model % 3) + 1)
    y = (rng.random(n) < 0.3 + 0.15 * model).astype(np.float32)
    f = rng.normal(size=(n, 2)).astype(np.float32)
    idx = rng.integers(0, n, n)
    want = _exploded_autograd_fit(model, opp, y, f, 4, idx)
    np.testing.assert_allclose(S.fit_style_bt(model, opp, y, f, 4, idx), want, atol=2e-4)
    np.testing.assert_allclose(S.fit_style_bt(model, opp, y, f, 4), _exploded_autograd_fit(
        model, opp, y, f, 4, np.arange(n)), atol=2e-4)


def test_style_controlled_with_strong_verdicts_is_the_exploded_bootstrap():
    rng = np.random.default_rng(8)
    n = 150
    model = rng.integers(1, 3, n)
    opp = np.zeros(n, int)
    y = rng.choice([0.0, 0.5, 1.0], n)
    weight = np.where(y != 0.5, rng.choice([1, 3], n), 1)
    st = np.column_stack([rng.integers(20, 90, n), rng.integers(0, 4, (n, 3))])
    sb = np.column_stack([rng.integers(20, 90, n), rng.integers(0, 4, (n, 3))])
    rounds = 6
    res = S.style_controlled(model, opp, y, weight, st, sb, 3, 0, rounds=rounds, alpha=0.2, seed=2)
    mdl, o, out, feats = S.explode(model, opp, y, weight, S.style_features(st, sb))
    fz, _, _ = S.standardize(feats)
    boot = np.random.RandomState(2).randint(0, len(out), size=(rounds, len(out)))
    coefs = np.stack([_exploded_autograd_fit(mdl, o, out, fz, 3, boot[r]) for r in range(rounds)])
    probs = expit(coefs[:, :3] - coefs[:, [0]])
    np.testing.assert_allclose(res.score / 100, np.quantile(probs, 0.5, axis=0), atol=1e-4)
    np.testing.assert_allclose(res.ci_low / 100, np.quantile(probs, 0.1, axis=0), atol=1e-4)
    np.testing.assert_allclose(res.ci_high / 100, np.quantile(probs, 0.9, axis=0), atol=1e-4)
    assert list(res.coefs.values()) == pytest.approx(list(np.quantile(coefs[:, 3:], 0.5, axis=0)), abs=1e-3)


# ---- length_controlled: the pieces against independent computations ------------------------------------------
def test_df_gamed_is_read_row_by_row(tmp_path):
    p = tmp_path / "df_gamed.csv"
    p.write_text("model,index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline\n"
                 "v,3.0,1.0,1,0.5,True\n"  # an index spelled as a float is still the row number
                 "c,1,0,-2,-0.25,False\n"  # AlpacaEval's [0, 1] scale: 0 is a loss, read as is
                 "v,3,0.25,0,0.9,False\n"  # index 3 again: its first difficulty is kept
                 "c,2,,1,0.1,False\n")  # null preference: the row leaves, its difficulty stays
    g = L.read_gamed_csv(p)
    assert g.index.tolist() == [3, 1, 3] and g.index.dtype == np.int64
    assert g.preference.tolist() == [1.0, 0.0, 0.25]
    assert g.std_delta_len.tolist() == [1.0, -2.0, 0.0] and g.std_delta_len.dtype == np.float64
    assert g.not_gamed.tolist() == [True, False, False] and g.not_gamed.dtype == bool
    assert g.difficulty.to_dict() == {3: 0.5, 1: -0.25, 2: 0.1} and g.difficulty.dtype == np.float64


@pytest.mark.parametrize("body,message", [
    ("index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline\n0,1,0,0,True\n1,2,x,0,False\n",
     "row 3: key 'std_delta_len' is not a number"),
    ("index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline\n0,1,,0,True\n",
     "row 2: key 'std_delta_len' is not a number"),  # only the preference may be null
    ("index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline\n0,1,0,0,True\n1,yes,0,0,True\n",
     "row 3: key 'preference' is not a number"),
    ("index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline\n0,1,0,,True\n",
     "row 2: key 'instruction_difficulty' is not a number"),
    ("index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline\n0,1,0,0,True\n1,1,0,0,False\n"
     "2,1,0,0,maybe\n", "row 4: key 'not_gamed_baseline' is not True/False"),
    ("index,preference,std_delta_len,instruction_difficulty\n0,1,0,0\n",
     "missing column(s) not_gamed_baseline (df_gamed.csv has index, preference, std_delta_len, "
     "instruction_difficulty, not_gamed_baseline)"),
    ("index,preference,instruction_difficulty\n0,1,0\n", "missing column(s) std_delta_len, not_gamed_baseline ("),
])
def test_df_gamed_errors_name_the_file_row_and_key(tmp_path, body, message):
    p = tmp_path / "df_gamed.csv"
    p.write_text(body)
    with pytest.raises(InputError) as e:
        L.read_gamed_csv(p)
    assert str(e.value).startswith(f"{p}: ") and message in str(e.value)


def test_unreadable_csv_files_say_so(tmp_path):
    for read in (L.read_gamed_csv, L.read_lc_weights):
        with pytest.raises(InputError) as e:
            read(tmp_path / "absent.csv")
        assert str(e.value).startswith(f"{tmp_path / 'absent.csv'}: not a readable CSV (")
    w = tmp_path / "w.csv"
    w.write_text(",instruction_difficulty\nm,1\n")
    with pytest.raises(InputError) as e:
        L.read_lc_weights(w)
    assert str(e.value) == (f"{w}: missing column(s) np.tanh(std_delta_len), not_gamed_baseline.astype(float) "
                            "(a length_controlled_v1 weights file)")


def test_std_delta_len_edges():
    np.testing.assert_allclose(L.std_delta_len(np.array([20.0, 0]), np.array([10.0, 10])), [1 / np.sqrt(2), -1 / np.sqrt(2)])
    d = np.array([1.0, 1, 2])  # a spread under one character still standardises
    np.testing.assert_allclose(L.std_delta_len(d, np.zeros(3)), d / d.std(ddof=1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one game: no spread, and no degrees-of-freedom warning either
        one = L.std_delta_len(np.array([5.0]), np.array([1.0]))
    assert one.shape == (1,) and one.dtype == np.float64 and one[0] == 0


def test_the_cv_score_is_the_continuous_log_loss():
    p, q, sw = np.array([1.0, 0.0, 0.3, 0.6]), np.array([0.0, 1.0, 0.2, 0.9]), np.array([1.0, 0.1, 2.0, 0.5])
    qc = np.clip(q, 1e-15, 1 - 1e-15)  # glm_winrate.logloss clips at 1e-15: a certain miss costs 34.5 nats
    want = -np.mean((p * np.log(qc) + (1 - p) * np.log(1 - qc)) * sw)
    assert L._logloss(p, q, sw) == pytest.approx(want, rel=1e-12)
    assert np.isfinite(L._logloss(np.array([1.0]), np.array([0.0]), np.ones(1)))
    assert L._logloss(np.array([0.0]), np.array([1.0]), np.ones(1)) == pytest.approx(-np.log(1 - (1 - 1e-15)), rel=1e-12)


def _cv_by_hand(X, p, sw):
    """glm_winrate.fit_LogisticRegressionCV: duplicated rows, GroupKFold(5) over the original row, the
    continuous log loss of each held-out fold, the C of the best mean score refitted on all rows."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    n = len(p)
    Xd, yd, wd = np.vstack([X, X]), np.r_[np.ones(n), np.zeros(n)], np.r_[p * sw, (1 - p) * sw]
    groups = np.r_[np.arange(n), np.arange(n)]
    mean_loss = []
    for C in np.logspace(-4, 4, 10):
        losses = []
        for train, test in GroupKFold(n_splits=5).split(Xd, yd, groups):
            est = LogisticRegression(**L._L1, solver="liblinear", C=C, fit_intercept=False, random_state=123)
            est.fit(Xd[train], yd[train], sample_weight=wd[train])
            q = est.predict_proba(Xd[test])[:, 1]
            pt, st = np.r_[p, p][test], np.r_[sw, sw][test]
            qc = np.clip(q, 1e-15, 1 - 1e-15)
            losses.append(-np.mean((pt * np.log(qc) + (1 - pt) * np.log(1 - qc)) * st))
        mean_loss.append(np.mean(losses))
    return float(np.logspace(-4, 4, 10)[int(np.argmin(mean_loss))])


@pytest.mark.parametrize("n,seed", [(10, 0), (14, 1), (60, 2)])
def test_the_chosen_c_is_the_published_cross_validation(n, seed):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.tanh(rng.normal(size=n)), rng.normal(size=n), np.ones(n)])
    p = expit(X @ np.array([-0.3, 0.2, 0.1]) + rng.normal(0, 1.5, n)).round(1)
    sw = rng.uniform(0.5, 1, n)
    w, C = L.fit_lc(X, p, sw)
    assert C == _cv_by_hand(X, p, sw) and C != 1.0  # 10 rows are enough for the five folds
    np.testing.assert_array_equal(w, L._fit_proba(X, p, sw, C))


def test_too_few_rows_for_the_folds_fit_once_at_c_one():
    rng = np.random.default_rng(3)
    X, p = rng.normal(size=(9, 3)), rng.random(9)
    w, C = L.fit_lc(X, p, np.ones(9))
    assert C == 1.0
    np.testing.assert_array_equal(w, L._fit_proba(X, p, np.ones(9), 1.0))
    assert not np.array_equal(w, L._fit_proba(X, p, np.ones(9), 2.0))


def test_the_public_fit_is_the_estimator_with_its_seed_and_silences_only_convergence(monkeypatch):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X, p = rng.normal(size=(12, 3)), rng.random(12)  # a problem whose coefficients depend on the seed
    Xd, yd, wd = L._duplicated(X, p, np.ones(12))
    np.random.seed(1)
    for C in L.CS[5:]:
        est = LogisticRegression(**L._L1, solver="liblinear", C=C, fit_intercept=False, random_state=123)
        np.testing.assert_array_equal(L._public_fit(Xd, yd, wd, C), est.fit(Xd, yd, sample_weight=wd).coef_[0])

    class Noisy(LogisticRegression):
        def fit(self, *a, **k):
            warnings.warn("liblinear failed to converge", ConvergenceWarning, stacklevel=2)
            warnings.warn("something else", UserWarning, stacklevel=2)
            return super().fit(*a, **k)

    monkeypatch.setattr(L, "LogisticRegression", Noisy)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        L._public_fit(Xd, yd, wd, 1.0)
    assert [w.category for w in seen] == [UserWarning]


def test_the_direct_fit_prints_nothing(capfd):
    rng = np.random.default_rng(1)
    L._direct_fit(*L._duplicated(rng.normal(size=(30, 3)), rng.random(30), np.ones(30)), 1.0)
    assert capfd.readouterr().out == ""


def _sandwich_by_hand(w, X, p, sw, cluster, X_test, test_cluster, alpha):
    """The clustered delta-method interval from numerical derivatives: LC(w) = mean sigma(X_test w), the
    influence of a cluster its share of the LC mean plus dLC/dw' H^-1 (its score), G/(G-1) sum of squares."""
    def lc_of(v):
        return np.mean(expit(X_test @ v))

    def score_of(v):
        return X.T @ (sw * (p - expit(X @ v)))

    h = 1e-6
    grad = np.array([(lc_of(w + h * e) - lc_of(w - h * e)) / (2 * h) for e in np.eye(len(w))])
    H = -np.column_stack([(score_of(w + h * e) - score_of(w - h * e)) / (2 * h) for e in np.eye(len(w))])
    lc = lc_of(w)
    a = pd.Series(expit(X_test @ w) - lc).groupby(test_cluster).sum() / len(X_test)
    u = pd.Series(sw * (p - expit(X @ w)) * (X @ np.linalg.solve(H, grad))).groupby(cluster).sum()
    infl = a.add(u, fill_value=0.0)
    g = len(infl)
    se = np.sqrt(g / (g - 1) * np.sum(infl**2))
    z = norm.ppf(1 - alpha / 2)
    return 100 * lc, 100 * max(0, lc - z * se), 100 * min(1, lc + z * se)


def test_the_lc_interval_is_the_clustered_sandwich_by_numerical_derivatives():
    rng = np.random.default_rng(7)
    n = 80
    X = np.column_stack([np.tanh(rng.normal(size=n)), rng.normal(size=n), (rng.random(n) < 0.8).astype(float)])
    p = rng.random(n)
    sw = np.where(X[:, 2] == 1, 1.0, 0.1)
    w = np.array([-0.6, 0.4, 0.2])
    cluster = rng.integers(0, 30, n)
    cluster[0] = 40  # the largest key in the training rows only
    X_test = X[X[:, 2] == 1].copy()
    X_test[:, 0] = 0
    test_cluster = cluster[X[:, 2] == 1].copy()
    test_cluster[-1] = 55  # and a key of the test rows only
    for alpha, tc in ((0.05, test_cluster), (0.3, cluster[X[:, 2] == 1])):  # the largest key: test only, train only
        got = L.lc_interval(w, X, p, sw, cluster, X_test, tc, alpha)
        np.testing.assert_allclose(got, _sandwich_by_hand(w, X, p, sw, cluster, X_test, tc, alpha), rtol=1e-6)
    # two clusters: the small-sample factor is 2
    two = np.arange(n) % 2
    got = L.lc_interval(w, X, p, sw, two, X, two, 0.05)
    np.testing.assert_allclose(got, _sandwich_by_hand(w, X, p, sw, two, X, two, 0.05), rtol=1e-6)


def test_the_lc_interval_stays_on_the_percent_scale():
    X = np.ones((6, 1))
    p = np.array([1.0, 1, 1, 1, 1, 0.3])
    lc, lo, hi = L.lc_interval(np.array([3.0]), X, p, np.ones(6), np.arange(6), X, np.arange(6), 0.05)
    assert hi == 100.0 and 0 < lo < lc < 100
    lc, lo, hi = L.lc_interval(np.array([-3.0]), X, 1 - p, np.ones(6), np.arange(6), X, np.arange(6), 0.05)
    assert lo == 0.0 and 0 < lc < hi < 100


def test_gamed_rows_and_not_gamed_rows_enter_with_their_published_weights():
    rng = np.random.default_rng(9)
    n = 40
    idx = np.arange(n)
    ng = np.r_[np.zeros(n, bool), np.ones(10, bool)]  # df_gamed also holds not-gamed baseline rows
    sdl_g, d = rng.normal(size=n + 10), rng.normal(size=n)
    pref_g = expit(-1.2 * np.tanh(sdl_g) + 0.8 * d[np.r_[idx, idx[:10]]] + 0.5 * ng)  # a signal: a C above zero
    gamed = L.Gamed(index=np.r_[idx, idx[:10]], preference=pref_g, std_delta_len=sdl_g, not_gamed=ng,
                    difficulty=pd.Series(d, index=idx))
    lb, lm = rng.lognormal(6, 0.3, n), rng.lognormal(6, 0.3, n)
    y = expit(-0.5 * np.tanh(L.std_delta_len(lb, lm)) + 0.8 * d + 0.3)
    fit = L.length_controlled(lb, lm, y, d, idx, gamed=gamed)
    sdl = L.std_delta_len(lb, lm)
    X = np.r_[np.column_stack([np.tanh(gamed.std_delta_len), d[gamed.index], ng]),
              np.column_stack([np.tanh(sdl), d, np.ones(n)])]
    sw = np.r_[np.where(ng, 1.0, 0.2 / 2), np.ones(n)]  # lambda / 2 for a gamed row, 1 otherwise
    assert fit.C in L.CS and np.abs(fit.weights).min() > 0.05
    np.testing.assert_array_equal(fit.weights, L._fit_proba(X, np.r_[gamed.preference, y], sw, fit.C))


def _map_by_hand(A, y, pen):
    def f(b):
        eta = A @ b
        return np.sum(np.logaddexp(0, eta) - y * eta) + 0.5 * np.sum(pen * b * b), A.T @ (expit(eta) - y) + pen * b

    return minimize(f, np.zeros(A.shape[1]), jac=True, method="BFGS", options={"gtol": 1e-11, "maxiter": 10**5}).x


def test_difficulty_is_the_map_of_its_stated_model():
    rng = np.random.default_rng(12)
    M, n_items = 4, 30
    # model code 3 never plays (the baseline's code) and the last two items nobody judged
    model, item = np.repeat([0, 1, 2], n_items - 2), np.tile(np.arange(n_items - 2), 3)
    sdl, y = rng.normal(0, 1, len(model)), rng.random(len(model))
    rows = np.arange(len(model))
    A = np.zeros((len(model), 2 * M + n_items))
    A[rows, model], A[rows, M + model], A[rows, 2 * M + item] = 1, np.tanh(sdl), 1
    want = _map_by_hand(A, y, np.r_[np.full(2 * M, 1e-6), np.full(n_items, 0.1)])[2 * M:]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no unknown solver option
        got = L.estimate_difficulty(model, item, sdl, y, M, n_items)
    assert got.shape == (n_items,) and (got[-2:] == 0).all()
    np.testing.assert_allclose(got, want, atol=1e-3)
    # given the three weights of each game
    w = np.column_stack([rng.normal(-0.5, 0.2, len(model)), rng.uniform(0.5, 1.5, len(model)),
                         rng.normal(0, 0.5, len(model))])
    B = np.zeros((len(model), n_items))
    B[rows, item] = w[:, 1]
    off = w[:, 0] * np.tanh(sdl) + w[:, 2]
    want2 = minimize(lambda d: (np.sum(np.logaddexp(0, off + B @ d) - y * (off + B @ d)) + 0.05 * d @ d,
                                B.T @ (expit(off + B @ d) - y) + 0.1 * d),
                     np.zeros(n_items), jac=True, method="BFGS", options={"gtol": 1e-11}).x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got2 = L.difficulty_given_weights(w, item, sdl, y, n_items)
    assert got2.shape == (n_items,) and (got2[-2:] == 0).all()
    np.testing.assert_allclose(got2, want2, atol=1e-3)


# ---- style_control: the frozen fit and the reference file --------------------------------------------------------
def _frozen_by_hand(model, y, weight, st_m, st_b, models, base, ref, rounds, alpha, seed):
    """The frozen procedure of the module doc, transcribed: features standardised with the reference's mean
    and std (a zero std divides by one), the style term a fixed offset, each model's rows (strong verdicts
    three times) bootstrapped with a generator seeded by sha256("seed:name")'s first four bytes read
    little-endian, each round's coefficient the 1-D maximum-likelihood fit (Newton, float64 here)."""
    import hashlib

    mean, std = np.asarray(ref["mean"]), np.asarray(ref["std"])
    beta = np.asarray([ref["coefs"][k] for k in S.FEATURES])
    off_game = np.nan_to_num((S.style_features(st_m, st_b) - mean) / np.where(std > 0, std, 1)) @ beta
    out = np.full((len(models), 3), np.nan)
    out[base] = 50
    for m, name in enumerate(models):
        rows = np.repeat(np.flatnonzero(model == m), weight[model == m])
        if m == base or len(rows) == 0:
            continue
        s = int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:4], "little")
        boots = np.random.RandomState(s).randint(0, len(rows), size=(rounds, len(rows)))
        vals = []
        for r in range(rounds):
            off, o = off_game[rows[boots[r]]], y[rows[boots[r]]]
            c = 0.5
            for _ in range(60):
                q = expit(c + off)
                step = np.sum(o - q) / max(np.sum(q * (1 - q)), 1e-12)
                c += step
                if abs(step) < 1e-10:
                    break
            vals.append(expit(c))
        out[m] = [100 * np.quantile(vals, q) for q in (0.5, alpha / 2, 1 - alpha / 2)]
    return out


def _frozen_case(rng, n=40):
    models = ["base", "m1", "m2", "m3", "solo"]
    model = np.r_[rng.choice([1, 2], n), [4]]  # interleaved codes; "solo" plays a single game; m3 none
    y = rng.choice([0.0, 0.5, 1.0], n + 1)
    y[-1] = 1.0
    weight = np.where(rng.random(n + 1) < 0.3, 3, 1)
    st_m = np.column_stack([rng.integers(20, 90, n + 1), rng.integers(0, 4, (n + 1, 3))])
    st_b = np.column_stack([rng.integers(20, 90, n + 1), rng.integers(0, 4, (n + 1, 3))])
    ref = {"coefs": {"length": 0.8, "header_density": -0.5, "list_density": 0.6, "bold_density": 0.3},
           "mean": [0.05, -0.1, 0.02, 0.1], "std": [0.5, 2.0, 0.0, 1.5]}
    return model, y, weight, st_m, st_b, models, ref


def test_the_frozen_fit_is_the_transcribed_procedure():
    rng = np.random.default_rng(21)
    model, y, weight, st_m, st_b, models, ref = _frozen_case(rng)
    got = S.style_controlled_frozen(model, y, weight, st_m, st_b, models, 0, ref, rounds=12, alpha=0.05, seed=0)
    want = _frozen_by_hand(model, y, weight, st_m, st_b, models, 0, ref, 12, 0.05, 0)
    np.testing.assert_allclose(np.column_stack([got.score, got.ci_low, got.ci_high]), want, atol=2e-3)
    assert got.score.dtype == np.float64 and np.isnan(got.score[3]) and np.isfinite(got.score[4])
    assert got.frozen and got.coefs == pytest.approx(ref["coefs"])
    np.testing.assert_array_equal(got.mean, np.float32(ref["mean"]))
    np.testing.assert_array_equal(got.std, np.float32(ref["std"]))
    other = S.style_controlled_frozen(model, y, weight, st_m, st_b, models, 0, ref, rounds=7, alpha=0.3, seed=5)
    want = _frozen_by_hand(model, y, weight, st_m, st_b, models, 0, ref, 7, 0.3, 5)
    np.testing.assert_allclose(np.column_stack([other.score, other.ci_low, other.ci_high]), want, atol=2e-3)


def test_a_frozen_model_is_scored_from_its_own_games_alone():
    rng = np.random.default_rng(22)
    model, y, weight, st_m, st_b, models, ref = _frozen_case(rng)
    full = S.style_controlled_frozen(model, y, weight, st_m, st_b, models, 0, ref, rounds=10)
    keep = model == 2
    alone = S.style_controlled_frozen(np.full(keep.sum(), 1), y[keep], weight[keep], st_m[keep], st_b[keep],
                                      ["base", "m2"], 0, ref, rounds=10)
    assert alone.score[1] == full.score[2] and alone.ci_low[1] == full.ci_low[2]


def test_a_style_reference_file_is_read_whole(tmp_path):
    p = tmp_path / "style_coefficients.json"
    good = {"coefs": dict.fromkeys(S.FEATURES, 0.5), "mean": [0.0] * 4, "std": [1.0] * 4, "style_source": "texts é"}
    p.write_text(json.dumps(good, ensure_ascii=False), encoding="utf-8")
    assert S.read_reference(p) == good
    p.write_text(json.dumps({**good, "std": [1.0] * 3}))
    with pytest.raises(InputError) as e:
        S.read_reference(p)
    assert str(e.value) == f"{p}: key 'std' needs 4 values"
    p.write_text(json.dumps({**good, "coefs": {"length": 1.0, "list_density": 0.0}}))
    with pytest.raises(InputError) as e:
        S.read_reference(p)
    assert str(e.value) == f"{p}: key 'coefs' lacks header_density, bold_density"
    with pytest.raises(InputError) as e:
        S.read_reference(tmp_path / "absent.json")
    assert str(e.value).startswith(f"{tmp_path / 'absent.json'}: not a readable JSON file (")


def test_style_features_are_float32_arithmetic_as_show_result():
    rng = np.random.default_rng(23)
    st_m = np.column_stack([rng.integers(1, 900, 50), rng.integers(0, 7, (50, 3))]).astype(float)  # Battles: float64
    st_b = np.column_stack([rng.integers(1, 900, 50), rng.integers(0, 7, (50, 3))]).astype(float)
    m, b = st_m.astype(np.float32), st_b.astype(np.float32)
    want = np.zeros_like(m)
    want[:, 0] = (m[:, 0] - b[:, 0]) / (m[:, 0] + b[:, 0])
    md, bd = m[:, 1:] / m[:, :1], b[:, 1:] / b[:, :1]
    want[:, 1:] = (md - bd) / (md + bd + np.float32(1))
    got = S.style_features(st_m, st_b)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    z, mean, std = S.standardize(got.astype(np.float64))
    assert z.dtype == mean.dtype == std.dtype == np.float32


def test_the_optimizer_takes_show_results_fifty_steps():
    import torch

    a, t = torch.logspace(-2, 1, 30), torch.linspace(-1, 1, 30)

    def loss(c):  # an ill-conditioned quadratic that L-BFGS needs more than torch's default 20 steps for
        return (a * (c - t) ** 2).sum() + 0.5 * ((c[1:] - c[:-1]) ** 2).sum()

    x = S._lbfgs(30, loss).numpy()
    exact = minimize(lambda v: float(loss(torch.tensor(v))), np.full(30, 0.5), method="BFGS",
                     options={"gtol": 1e-12}).x
    np.testing.assert_allclose(x, exact, atol=1e-4)


def test_a_game_of_weight_zero_is_never_drawn():
    model, opp = np.array([1, 2, 1]), np.zeros(3, int)
    st = np.array([[50.0, 1, 0, 0], [60, 0, 2, 0], [40, 0, 0, 1]])
    sb = np.array([[45.0, 0, 0, 0], [30, 1, 0, 0], [55, 0, 1, 0]])
    y = np.array([1.0, 0.0, 0.0])
    got = S.style_controlled(model, opp, y, np.array([1, 3, 0]), st, sb, 3, 0, rounds=4, seed=1)
    want = S.style_controlled(model[:2], opp[:2], y[:2], np.array([1, 3]), st[:2], sb[:2], 3, 0, rounds=4, seed=1)
    np.testing.assert_array_equal(got.score, want.score)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch: the std of one row has no degrees of freedom
        one = S.style_controlled(model[:2], opp[:2], y[:2], np.array([1, 0]), st[:2], sb[:2], 3, 0, rounds=2)
    assert one.score[0] == 50 and np.isfinite(one.score[1])


def test_style_results_and_the_reference_they_write():
    rng = np.random.default_rng(24)
    model, opp = rng.integers(1, 3, 60), np.zeros(60, int)
    st = np.column_stack([rng.integers(20, 90, 60), rng.integers(0, 4, (60, 3))])
    sb = np.column_stack([rng.integers(20, 90, 60), rng.integers(0, 4, (60, 3))])
    res = S.style_controlled(model, opp, rng.choice([0.0, 1.0], 60), np.ones(60), st, sb, 3, 0, rounds=3)
    assert res.frozen is False
    ref = S.reference_dict(res, "texts")
    assert ref == {"features": list(S.FEATURES), "coefs": res.coefs, "mean": [float(x) for x in res.mean],
                   "std": [float(x) for x in res.std], "style_source": "texts", "frozen": False}


def test_the_counted_fit_reaches_the_maximum_likelihood_of_a_larger_design():
    rng = np.random.default_rng(30)
    n, M = 600, 20
    model = rng.integers(1, M, n)
    opp = np.where(rng.random(n) < 0.5, 0, rng.integers(1, M, n))
    opp = np.where(opp == model, 0, opp)
    f = rng.normal(size=(n, 4)).astype(np.float32)
    f[:, 1] = 0.9 * f[:, 0] + 0.1 * f[:, 1]  # correlated features: L-BFGS needs more than 20 steps
    q = np.linspace(-2, 2, M)
    y = (rng.random(n) < expit(q[model] - q[opp] + f @ np.array([0.5, -0.3, 0.2, 0.1]))).astype(np.float32)

    def nll(b):
        eta = b[model] - b[opp] + f @ b[M:]
        r = expit(eta) - y
        g = np.zeros(M + 4)
        np.add.at(g, model, r)
        np.add.at(g, opp, -r)
        g[M:] = f.T @ r
        return np.sum(np.logaddexp(0, eta) - y * eta), g

    exact = minimize(nll, np.full(M + 4, 0.5), jac=True, method="BFGS", options={"gtol": 1e-10}).x
    c = S.fit_style_bt(model, opp, y, f, M)

    def contrasts(b):  # Bradley-Terry fixes differences only
        return np.r_[b[:M] - b[0], b[M:]]

    np.testing.assert_allclose(contrasts(c), contrasts(exact), atol=2e-3)
    # float64 inputs are read as show_result's float32 tensors: the same fit bit for bit
    np.testing.assert_array_equal(S.fit_style_bt(model, opp, y.astype(float), f.astype(float), M), c)


def test_the_fits_run_on_one_torch_thread_and_restore_it():
    import torch

    before = torch.get_num_threads()
    with S._one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_the_defaults_are_show_results_hundred_rounds_and_95_percent():
    rng = np.random.default_rng(31)
    n = 40
    model, opp = rng.integers(1, 3, n), np.zeros(n, int)
    y = rng.choice([0.0, 0.5, 1.0], n)  # ties keep the bootstrap draws from separating (quick fits)
    st = np.column_stack([rng.integers(20, 90, n), rng.integers(0, 4, (n, 3))])
    sb = np.column_stack([rng.integers(20, 90, n), rng.integers(0, 4, (n, 3))])
    got = S.style_controlled(model, opp, y, np.ones(n), st, sb, 3, 0)
    want = S.style_controlled(model, opp, y, np.ones(n), st, sb, 3, 0, rounds=100, alpha=0.05, seed=0)
    np.testing.assert_array_equal(np.c_[got.score, got.ci_low, got.ci_high], np.c_[want.score, want.ci_low, want.ci_high])
    ref = {"coefs": dict.fromkeys(S.FEATURES, 0.2), "mean": [0.0] * 4, "std": [1.0] * 4}
    fg = S.style_controlled_frozen(model, y, np.ones(n), st, sb, ["b", "m1", "m2"], 0, ref)
    fw = S.style_controlled_frozen(model, y, np.ones(n), st, sb, ["b", "m1", "m2"], 0, ref, rounds=100, alpha=0.05,
                                   seed=0)
    np.testing.assert_array_equal(np.c_[fg.score, fg.ci_low, fg.ci_high], np.c_[fw.score, fw.ci_low, fw.ci_high])


def test_length_extrapolation_is_the_uncentred_collinearity_with_the_level_column():
    """``1 + z**2`` is the variance inflation factor ``1 / (1 - R**2)`` of the length column regressed
    on the constant ``not_gamed`` column, with the uncentred ``R**2`` of a GLM without intercept
    (statsmodels' OLS told the design has no constant)."""
    import statsmodels.api as sm

    rng = np.random.default_rng(8)
    for centre, spread in [(-1.5, 0.2), (0.3, 1.0), (2.0, 0.5)]:
        sdl = rng.normal(centre, spread, 300)
        z = L.length_extrapolation(sdl)
        r2 = sm.OLS(np.tanh(sdl), np.ones(300), hasconst=False).fit().rsquared
        assert 1 + z**2 == pytest.approx(1 / (1 - r2), rel=1e-9)
        t = np.tanh(sdl)
        assert z == pytest.approx(abs(t.mean()) / t.std(), rel=1e-12)
    assert L.length_extrapolation(np.zeros(10)) == 0.0  # equal lengths: the LC is the fitted level itself
    assert L.length_extrapolation(np.full(4, 2.0)) == np.inf  # no spread at all
    assert L.length_extrapolation(np.zeros(0)) == 0.0


def test_lengths_that_barely_vary_make_the_lc_not_estimable_unless_gamed_rows_fit_the_slope():
    """A model always about four times longer than the baseline, judged by a length-loving judge: the
    length weight and the model's level trade off along a direction its games hardly constrain.  The
    same games with lengths on both sides of the baseline's stay estimable, and so do the degenerate
    ones when the gamed baselines fit the length weight."""
    rng = np.random.default_rng(9)
    n = 200
    lb = rng.lognormal(6.0, 0.05, n)
    long_lm = lb * rng.lognormal(np.log(4.0), 0.05, n)
    y = (rng.random(n) < 0.85).astype(float)
    d = rng.normal(size=n)
    sdl = L.std_delta_len(lb, long_lm)
    assert L.length_extrapolation(sdl) > L.MAX_LENGTH_EXTRAPOLATION
    with pytest.raises(L.NotEstimable, match=r"degenerate design: .*barely vary .*limit 5\)"):
        L.length_controlled(lb, long_lm, y, d, np.arange(n))
    # just inside the limit: fitted
    varied = lb * rng.lognormal(0.0, 0.6, n)
    assert L.length_extrapolation(L.std_delta_len(lb, varied)) < L.MAX_LENGTH_EXTRAPOLATION
    assert np.isfinite(L.length_controlled(lb, varied, y, d, np.arange(n)).lc)
    idx = np.arange(n)
    gamed = L.Gamed(index=np.r_[idx, idx], preference=np.r_[np.full(n, 0.9), np.full(n, 0.1)],
                    std_delta_len=np.r_[np.full(n, -1.0), np.full(n, 1.0)], not_gamed=np.zeros(2 * n, bool),
                    difficulty=pd.Series(d, index=idx))
    assert np.isfinite(L.length_controlled(lb, long_lm, y, d, idx, gamed=gamed).lc)


def test_the_limit_is_a_boundary_not_a_band(monkeypatch):
    """At exactly the limit the fit stands; just below it the same games are refused."""
    rng = np.random.default_rng(10)
    n = 100
    lb = rng.lognormal(6.0, 0.05, n)
    lm = lb * rng.lognormal(np.log(2.0), 0.3, n)
    y = (rng.random(n) < 0.7).astype(float)
    z = L.length_extrapolation(L.std_delta_len(lb, lm))
    monkeypatch.setattr(L, "MAX_LENGTH_EXTRAPOLATION", z)
    assert np.isfinite(L.length_controlled(lb, lm, y, np.zeros(n), np.arange(n)).lc)
    monkeypatch.setattr(L, "MAX_LENGTH_EXTRAPOLATION", z * (1 - 1e-9))
    with pytest.raises(L.NotEstimable, match="degenerate design"):
        L.length_controlled(lb, lm, y, np.zeros(n), np.arange(n))
