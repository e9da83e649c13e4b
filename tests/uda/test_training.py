"""Study uda, the training loop (:mod:`judgelab.uda.training`): fast checks against hand computations.

Tiny tournaments (a few prompts, 3-4 models, 2-3 judges, 4-8 dimensional embeddings, hidden widths
of a few units, a few epochs): each test runs in well under a second, so that mutation testing
(scripts/mutation.sh), which runs every test that reaches a mutated function, finishes.

What is checked against an independent computation:
- the presentation rows of the verdict order, built by hand from the adapter docstring's formula;
- Eq. (3)'s three terms on a 2-judge x 3-model case computed on paper;
- the checkpointed training step (no-graph forward, Elo adjoint, chunked re-run of the adapter)
  equals plain torch autograd through the whole computation, epoch by epoch, for the documented
  warm-up + cosine learning-rate schedule, and the kept checkpoint is the epoch of least
  validation loss;
- on a planted tournament (judge-specific self-preference that the features can see) training
  lowers the held-out inter-judge std beyond the untrained adapter and the fitted label-smoothing
  Elo; with training disabled it does not;
- the label-smoothing control is the grid minimum of Eq. (3); baseline / smoothing / adapter Elo
  equal a plain one-comparison-at-a-time Elo; checkpoints round-trip.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch._dynamo  # (the first optimiser imports it, ~5 s: pay it at collection, once per process)

from judgelab.config import ConfigError
from judgelab.uda.adapter import UDAAdapter
from judgelab.uda.autograd import EloRecursion
from judgelab.uda.data import TournamentData
from judgelab.uda.elo import EloConfig, baseline_elo, gather_outcomes, make_schedule
from judgelab.uda.features import Standardizer, algorithm1, algorithm1_ablated, pair_table, self_table
from judgelab.uda.training import (
    SMOOTHING_K_FACTORS,
    SMOOTHING_LABELS,
    TrainConfig,
    _backprop_rows,
    _lr_lambda,
    _scatter,
    apply_adapter,
    baseline_scores,
    consensus_loss,
    fit_label_smoothing,
    load_adapter,
    match_parameters,
    pair_row,
    prepare_tables,
    presentations,
    save_adapter,
    smoothed_outcomes,
    smoothing_elo,
    split_prompts,
    train_adapter,
)
from tests.helpers.uda_planted import planted_tournament

torch.set_num_threads(1)


def tiny_data(seed=0, P=6, N=3, M=2, D=4, missing=0.15, name="tiny"):
    """Random embeddings and verdicts (wins, losses, ties, missing)."""
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(P, N, D)).astype(np.float32)
    Ej = rng.normal(size=(P, M, D)).astype(np.float32)
    s = rng.choice([0.0, 0.5, 1.0], size=(P, N, N, M), p=[0.4, 0.2, 0.4])
    s[rng.random(s.shape) < missing] = np.nan
    for i in range(N):
        s[:, i, i, :] = np.nan
    return TournamentData(name, [f"p{p}" for p in range(P)], [f"m{i}" for i in range(N)],
                          [f"j{k}" for k in range(M)], E, Ej, s, embedder="toy")


def planted_data(seed=0, P=12, N=4, M=3, D=8):
    """Quality plus a strong judge-specific preference for the judge's own model, whose embedding the judge's
    own answer shares: a per-comparison correction can see and undo it, a constant one cannot."""
    return planted_tournament(seed, P, N, M, D, style_scale=2.0, slope=1.5, bias=[2.5, -2.0, 2.0], tie=0.5)


def identity_standardizer(D):
    z, o = np.zeros(2 * D + 3, np.float32), np.ones(2 * D + 3, np.float32)
    return Standardizer(z, o, z.copy(), o.copy())


def random_adapter(D, variant="full", seed=0, gate=0.6, k0=32.0):
    """An adapter whose output depends on its input (the untrained one is constant)."""
    torch.manual_seed(seed)
    a = UDAAdapter(D, variant, hidden=(6, 4), k0=k0)
    with torch.no_grad():
        torch.nn.init.normal_(a.out.weight, std=0.8)
        torch.nn.init.normal_(a.out.bias, std=0.5)
        a.gate.fill_(gate)
    return a


def naive_elo(scores, sched, K, s_of, initial=1200.0, scale=400.0):
    """Plain Elo, one comparison at a time in schedule order; K(t, k, i, j), s_of(t, k, i, j, r)."""
    _, N, _, M = scores.shape
    R = np.full((M, N), initial)
    for t in range(sched.n_rounds):
        for a, b, ok in zip(sched.first[t], sched.second[t], sched.valid[t], strict=True):
            if not ok:
                continue
            for k in range(M):
                r = scores[sched.prompts[t], a, b, k]
                if np.isnan(r):
                    continue
                e = 1.0 / (1.0 + 10 ** ((R[k, b] - R[k, a]) / scale))
                d = K(t, k, a, b) * (s_of(t, k, a, b, r) - e)
                R[k, a] += d
                R[k, b] -= d
    return R


# ---------------------------------------------------------------------------------
# configuration, split, schedule of the learning rate


def test_train_config_from_dict_defaults_hidden_and_unknown_keys():
    assert TrainConfig.from_dict(None) == TrainConfig() == TrainConfig.from_dict({})
    d = TrainConfig()
    assert (d.epochs, d.alpha, d.sigma, d.beta, d.init_label, d.k0, d.hidden) == (40, 1e-4, 1e-4, 1.0, 1.0, None, (128, 32))
    cfg = TrainConfig.from_dict({"hidden": [8.0, "4"], "epochs": 3})
    assert cfg.hidden == (8, 4) and isinstance(cfg.hidden, tuple) and all(type(h) is int for h in cfg.hidden)
    assert cfg.epochs == 3 and cfg.lr == TrainConfig().lr
    with pytest.raises(ConfigError, match=r"^uda\.training: unknown key\(s\) \['bogus', 'lr_x'\]; known: \[.*'alpha'"):
        TrainConfig.from_dict({"bogus": 1, "lr_x": 2, "lr": 0.1})


def test_split_prompts_sizes_seeds_and_the_permutation():
    for n, vf, n_val in ((10, 0.2, 2), (10, 0.25, 3), (10, 0.0, 0), (1, 0.5, 0), (4, 1.0, 3), (5, 0.01, 1), (2, 0.5, 1)):
        tr, va = split_prompts(n, vf, seed=3)
        assert len(va) == n_val and len(tr) == n - n_val, (n, vf)
        assert sorted(np.concatenate([tr, va]).tolist()) == list(range(n))
        assert list(tr) == sorted(tr) and list(va) == sorted(va)
    tr, va = split_prompts(10, 0.3, seed=7)
    order = np.random.default_rng(7).permutation(10)
    assert va.tolist() == sorted(order[:3].tolist()) and tr.tolist() == sorted(order[3:].tolist())
    assert split_prompts(10, 0.3, seed=7)[1].tolist() == va.tolist()
    assert any(split_prompts(10, 0.3, seed=s)[1].tolist() != va.tolist() for s in range(8, 12))


def test_learning_rate_warm_up_then_cosine_decay_to_the_floor():
    f = _lr_lambda(TrainConfig(epochs=25, warmup=5, min_lr_ratio=0.05))
    assert [f(s) for s in range(5)] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])  # linear warm-up
    assert f(5) == pytest.approx(1.0)  # the peak at the end of the warm-up
    assert f(15) == pytest.approx(0.05 + 0.95 * 0.5)  # half way through the cosine: the mid-point
    assert f(10) == pytest.approx(0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * 0.25)))
    assert f(25) == pytest.approx(0.05) and f(60) == pytest.approx(0.05)  # the floor, and it stays there
    g = _lr_lambda(TrainConfig(epochs=4, warmup=0, min_lr_ratio=0.2))  # no warm-up: cosine from step 0
    assert g(0) == pytest.approx(1.0) and g(2) == pytest.approx(0.6) and g(4) == pytest.approx(0.2)
    h = _lr_lambda(TrainConfig(epochs=3, warmup=3, min_lr_ratio=0.1))  # the whole run is warm-up
    assert h(2) == pytest.approx(1.0) and h(3) == pytest.approx(1.0) and h(4) == pytest.approx(0.1)
    one = _lr_lambda(TrainConfig(epochs=5, warmup=1, min_lr_ratio=0.0))  # a one-step warm-up starts at the peak
    assert one(0) == pytest.approx(1.0) and one(1) == pytest.approx(1.0) and one(3) == pytest.approx(0.5)


# ---------------------------------------------------------------------------------
# Eq. (3)


def test_equation_3_terms_on_a_case_computed_by_hand():
    # G = (1, 2, 3); judge 0 agrees exactly, judge 1 reverses the order
    G = torch.tensor([1.0, 2.0, 3.0])
    R = torch.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    loss, info = consensus_loss(R, G, TrainConfig(alpha=1.0, sigma=10.0, beta=100.0))
    # anchor: ||R0 - G||^2 + ||R1 - G||^2 = 0 + (4 + 0 + 4) = 8
    # consensus: R_bar = (2, 2, 2), ||R_bar - G||^2 = 1 + 0 + 1 = 2
    # pearson: (1 - 1) + (1 - (-1)) = 2
    assert info["anchor"] == pytest.approx(8.0) and info["consensus"] == pytest.approx(20.0)
    assert info["pearson"] == pytest.approx(200.0, rel=1e-6)
    assert float(loss) == pytest.approx(228.0, rel=1e-6)
    # per-model std over the two judges (n - 1 in the denominator): sqrt(2), 0, sqrt(2)
    assert info["mean_judge_std"] == pytest.approx(2 * math.sqrt(2) / 3, rel=1e-6)
    assert set(info) == {"anchor", "consensus", "pearson", "mean_judge_std"}
    # Pearson is scale- and shift-free: a judge that stretches G is perfectly correlated
    _, info2 = consensus_loss(torch.stack([2 * G + 5, G - 1]), G, TrainConfig(alpha=0.0, sigma=0.0, beta=1.0))
    assert info2["pearson"] == pytest.approx(0.0, abs=1e-6)
    assert info2["anchor"] == 0.0 and info2["consensus"] == 0.0
    # a constant judge has no correlation (0, not NaN); a single judge has no inter-judge std
    loss1, info1 = consensus_loss(torch.tensor([[5.0, 5.0, 5.0]]), G, TrainConfig(alpha=0.5, sigma=0.25, beta=2.0))
    assert info1["pearson"] == pytest.approx(2.0) and info1["mean_judge_std"] == 0.0
    assert info1["anchor"] == pytest.approx(0.5 * (16 + 9 + 4)) and info1["consensus"] == pytest.approx(0.25 * 29)
    assert float(loss1) == pytest.approx(2.0 + 14.5 + 7.25)
    # the loss is differentiable and its gradient points away from the consensus
    Rg = R.clone().requires_grad_(True)
    consensus_loss(Rg, G, TrainConfig(alpha=1.0, sigma=0.0, beta=0.0))[0].backward()
    torch.testing.assert_close(Rg.grad, 2 * (R - G))


# ---------------------------------------------------------------------------------
# presentations, adapter parameters per comparison


def test_pair_row_enumerates_the_off_diagonal_pair_table():
    P, N, D = 2, 4, 3
    E = np.random.default_rng(0).normal(size=(P, N, D)).astype(np.float32)
    rows = pair_table(E)[:, ~np.eye(N, dtype=bool), :].reshape(-1, 2 * D + 3)
    seen = []
    for p in range(P):
        for i in range(N):
            for j in range(N):
                if i != j:
                    r = int(pair_row(np.array(p), np.array(i), np.array(j), N))
                    np.testing.assert_array_equal(rows[r], pair_table(E)[p, i, j])
                    seen.append(r)
    assert sorted(seen) == list(range(P * N * (N - 1)))


def test_presentation_rows_of_wins_losses_ties_and_missing_verdicts_by_hand():
    P, N, M = 2, 3, 2
    scores = np.full((P, N, N, M), np.nan)
    scores[1, 0, 1, 0] = 1.0  # judge 0: model 0 shown first wins
    scores[1, 2, 0, 1] = 0.0  # judge 1: model 0 shown second wins
    scores[1, 1, 2, 1] = 0.5  # judge 1: tie
    scores[0, 0, 2, 0] = 1.0  # prompt 0 is not in the schedule: never read
    data = TournamentData("t", ["a", "b"], list("xyz"), ["j0", "j1"], np.zeros((P, N, 2), np.float32),
                          np.zeros((P, M, 2), np.float32), scores)
    sched = make_schedule([1], N, seed=4)
    pres = presentations(data, sched, np.array([1]))  # tables over prompt 1 only: local prompt 0
    assert pres.n_matches == 3 and pres.n_rows == 4 and pres.sched is sched
    out = gather_outcomes(scores, sched)
    np.testing.assert_array_equal(pres.mask, ~np.isnan(out))
    # expected rows: every verdict, in the order of np.nonzero over (round, judge, slot); winner first
    expected = []
    for n, (t, k, h) in enumerate(zip(*np.nonzero(~np.isnan(out)), strict=True)):
        i, j, r = sched.first[t, h], sched.second[t, h], out[t, k, h]
        if r > 0:
            expected.append((0, n, i, j, k, r, False))
        if r < 1:
            expected.append((1, n, j, i, k, 1.0 - r, True))
    expected.sort(key=lambda e: e[0])  # all first-winner rows, then all second-winner rows
    assert len(expected) == 4
    for row, (_, n, w, lo, k, wt, fl) in enumerate(expected):
        assert int(pres.match[row]) == n
        assert int(pres.pair[row]) == int(pair_row(np.array(0), np.array(w), np.array(lo), N))
        assert int(pres.self_w[row]) == w * M + k and int(pres.self_l[row]) == lo * M + k
        assert float(pres.weight[row]) == wt and bool(pres.flip[row]) == fl
    assert pres.weight.dtype == torch.float32 and pres.flip.dtype == torch.bool and pres.pair.dtype == torch.long
    # per comparison the weights sum to one (a tie is half of each presentation)
    assert torch.equal(torch.zeros(3).index_add_(0, pres.match, pres.weight), torch.ones(3))
    with pytest.raises(ValueError, match=r"^the schedule visits prompts outside the prepared tables$"):
        presentations(data, make_schedule([0, 1], N, seed=4), np.array([1]))


def test_prepare_tables_standardises_the_chosen_prompts():
    data = tiny_data(P=4, N=3, M=2, D=3)
    std = Standardizer.fit(pair_table(data.E_models), self_table(data.E_models, data.E_judges))
    idx = np.array([3, 1])
    t = prepare_tables(data, std, True, idx)
    Xp, Xs = std.apply(pair_table(data.E_models[idx]), self_table(data.E_models[idx], data.E_judges[idx]))
    N = 3
    F = 2 * 3 + 3
    assert t.X_pair.shape == (2 * N * (N - 1), F) and t.X_self.shape == (2 * N * 2, F)
    assert t.X_pair.dtype == torch.float32 and t.X_self.dtype == torch.float32
    np.testing.assert_allclose(t.X_pair.numpy(), Xp[:, ~np.eye(N, dtype=bool), :].reshape(-1, F), rtol=1e-6)
    np.testing.assert_allclose(t.X_self.numpy(), Xs.reshape(-1, F), rtol=1e-6)
    every = prepare_tables(data, std, False)  # all prompts by default; no self table when not asked
    assert every.X_self is None and every.X_pair.shape == (4 * N * (N - 1), F)
    np.testing.assert_allclose(every.X_pair.numpy()[3 * 6 : 4 * 6], t.X_pair.numpy()[:6], rtol=1e-6)


@pytest.mark.parametrize("variant", ["full", "ablated"])
def test_match_parameters_equal_the_adapter_on_algorithm1_vectors_for_any_chunk(variant):
    data = tiny_data(seed=1, P=3, N=3, M=2, D=4)
    adapter = random_adapter(4, variant)
    sched = make_schedule(range(3), 3, seed=2)
    pres = presentations(data, sched, np.arange(3))
    tables = prepare_tables(data, identity_standardizer(4), adapter.variant.self_features)
    blocks = adapter.first_blocks(tables.X_pair, tables.X_self)
    out = gather_outcomes(data.scores, sched)
    ref_K, ref_s = [], []
    with torch.no_grad():
        for t, k, h in zip(*np.nonzero(~np.isnan(out)), strict=True):
            p, i, j, r = sched.prompts[t], sched.first[t, h], sched.second[t, h], out[t, k, h]

            def g(a, b, p=p, k=k):  # the network on the explicit feature vector, a presented first
                e = data.E_models[p]
                phi = (algorithm1(e[a][None], e[b][None], data.E_judges[p, k][None]) if variant == "full"
                       else algorithm1_ablated(e[a][None], e[b][None]))
                K, s = adapter(torch.from_numpy(phi))
                return float(K[0]), float(s[0])

            (K_ij, g_ij), (K_ji, g_ji) = g(i, j), g(j, i)
            ref_K.append(r * K_ij + (1 - r) * K_ji)
            ref_s.append(r * g_ij + (1 - r) * (1 - g_ji))
    assert pres.n_rows > pres.n_matches  # ties present
    for chunk in (1, 5, 10_000):
        K, s = match_parameters(adapter, blocks, pres, chunk)
        np.testing.assert_allclose(K.numpy(), ref_K, rtol=1e-4)
        np.testing.assert_allclose(s.numpy(), ref_s, rtol=1e-4, atol=1e-5)
        assert not K.requires_grad and not s.requires_grad
    assert np.ptp(ref_K) > 1.0 and np.ptp(ref_s) > 0.05  # the check is not vacuous
    K_full, s_full = _scatter(pres, K, s)
    mask = torch.as_tensor(pres.mask)
    assert K_full.shape == s_full.shape == pres.mask.shape
    assert torch.equal(K_full[mask], K) and torch.equal(s_full[mask], s)
    assert torch.all(K_full[~mask] == 0.0) and torch.all(s_full[~mask] == 0.5)  # no comparison: no update


def test_backprop_rows_equals_autograd_through_the_per_comparison_parameters():
    data = tiny_data(seed=2, P=3, N=3, M=2, D=4)
    adapter = random_adapter(4, "full", seed=1)
    sched = make_schedule(range(3), 3, seed=0)
    pres = presentations(data, sched, np.arange(3))
    tables = prepare_tables(data, identity_standardizer(4), True)
    gen = torch.Generator().manual_seed(0)
    gK, gs = torch.randn(pres.n_matches, generator=gen), torch.randn(pres.n_matches, generator=gen)
    # reference: the per-comparison K and s with a graph, and autograd of <gK, K> + <gs, s>
    blocks = adapter.first_blocks(tables.X_pair, tables.X_self)
    z = blocks["pair"][pres.pair] + blocks["ik"][pres.self_w] + blocks["jk"][pres.self_l]
    Kr, g = adapter.head_from_preact(z)
    K = torch.zeros(pres.n_matches).index_add(0, pres.match, pres.weight * Kr)
    s = torch.zeros(pres.n_matches).index_add(0, pres.match, pres.weight * torch.where(pres.flip, 1.0 - g, g))
    ((gK * K).sum() + (gs * s).sum()).backward()
    ref = {n: p.grad.clone() for n, p in adapter.named_parameters()}
    assert all(float(v.abs().sum()) > 0 for v in ref.values())
    for chunk in (3, 10_000):
        adapter.zero_grad(set_to_none=True)
        blocks = adapter.first_blocks(tables.X_pair, tables.X_self)
        leaves = {k: v.detach().requires_grad_(True) for k, v in blocks.items()}
        _backprop_rows(adapter, leaves, pres, gK, gs, chunk)
        torch.autograd.backward(list(blocks.values()), [leaves[k].grad for k in blocks])
        for n, p in adapter.named_parameters():
            torch.testing.assert_close(p.grad, ref[n], rtol=1e-4, atol=1e-6, msg=f"{n}, chunk {chunk}")


# ---------------------------------------------------------------------------------
# the training loop against plain autograd


def _reference_training(data, variant, cfg, elo, order_seed):
    """Algorithm of the module docstring written plainly: the whole computation in one autograd graph,
    the learning-rate factor from the docstring (linear warm-up, cosine decay to ``min_lr_ratio``), the
    checkpoint of least validation loss."""
    torch.manual_seed(cfg.seed)
    tr, va = split_prompts(data.n_prompts, cfg.val_fraction, cfg.seed)
    std = Standardizer.fit(pair_table(data.E_models[tr]), self_table(data.E_models[tr], data.E_judges[tr]))
    adapter = UDAAdapter(data.dim, variant, hidden=cfg.hidden, k0=elo.k if cfg.k0 is None else cfg.k0,
                         activation=cfg.activation, init_label=cfg.init_label)
    full = adapter.variant.self_features

    def part(idx):
        sched = make_schedule(idx, len(data.models), order_seed)
        R_base, _ = baseline_elo(gather_outcomes(data.scores, sched), sched, elo)
        return sched, presentations(data, sched, idx), prepare_tables(data, std, full, idx), torch.tensor(
            R_base.mean(0), dtype=torch.float32)

    def loss_of(pt):
        sched, pres, tables, G = pt
        blocks = adapter.first_blocks(tables.X_pair, tables.X_self)
        z = blocks["pair"][pres.pair]
        if full:
            z = z + blocks["ik"][pres.self_w] + blocks["jk"][pres.self_l]
        Kr, g = adapter.head_from_preact(z)
        K = torch.zeros(pres.n_matches).index_add(0, pres.match, pres.weight * Kr)
        s = torch.zeros(pres.n_matches).index_add(0, pres.match, pres.weight * torch.where(pres.flip, 1.0 - g, g))
        idx = tuple(torch.as_tensor(np.nonzero(pres.mask)[d]) for d in range(3))
        K_full = torch.zeros(pres.mask.shape).index_put(idx, K)
        s_full = torch.full(pres.mask.shape, 0.5).index_put(idx, s)
        return consensus_loss(EloRecursion.apply(K_full, s_full, sched, elo), G, cfg)[0]

    train, val = part(tr), (part(va) if len(va) else None)

    def factor(step):
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        prog = min(1.0, (step - cfg.warmup) / max(1, cfg.epochs - cfg.warmup))
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * (1 + math.cos(math.pi * prog)) / 2

    opt = torch.optim.AdamW(adapter.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    lrs = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    with torch.no_grad():
        val_losses = [float(loss_of(val or train))]
    train_losses, states = [], [{k: v.clone() for k, v in adapter.state_dict().items()}]
    for _ in range(cfg.epochs):
        opt.zero_grad()
        loss = loss_of(train)
        loss.backward()
        if cfg.grad_clip:
            torch.nn.utils.clip_grad_norm_(adapter.parameters(), cfg.grad_clip)
        opt.step()
        lrs.step()
        train_losses.append(float(loss.detach()))
        with torch.no_grad():
            val_losses.append(float(loss_of(val or train)))
        states.append({k: v.clone() for k, v in adapter.state_dict().items()})
    return train_losses, val_losses, states


@pytest.mark.parametrize(("variant", "cfg"), [
    ("full", TrainConfig(epochs=4, lr=0.05, warmup=2, val_fraction=0.34, hidden=(6, 4), init_label=0.8, chunk=7,
                         grad_clip=0.05, weight_decay=0.3, min_lr_ratio=0.3, alpha=1e-3, sigma=5e-3, beta=2.0, seed=3)),
    ("ablated", TrainConfig(epochs=3, lr=0.02, warmup=0, val_fraction=0.0, hidden=(5, 3), grad_clip=None,
                            k0=20.0, activation="tanh", seed=1)),
])
def test_training_steps_equal_plain_autograd_and_keep_the_least_validation_loss(variant, cfg):
    """The memory-saving step (adapter without a graph, Elo adjoint, chunked re-run) is an exact gradient."""
    data = tiny_data(seed=4, P=6, N=3, M=2, D=4)
    elo = EloConfig(k=24.0, initial=1000.0, scale=300.0)
    res = train_adapter(data, variant, cfg, elo, order_seed=2)
    ref_train, ref_val, ref_states = _reference_training(data, variant, cfg, elo, 2)
    h = res.history
    assert h["epoch"].tolist() == list(range(cfg.epochs + 1))
    np.testing.assert_allclose(h["train_loss"].iloc[1:], ref_train, rtol=2e-4)
    np.testing.assert_allclose(h["val_loss"], ref_val, rtol=2e-4)
    assert len(set(np.round(ref_val, 6))) == len(ref_val)  # every step changes the loss: no silent no-op
    best = int(np.argmin(ref_val))
    assert res.best_epoch == best and h["best"].tolist() == [e == best for e in range(cfg.epochs + 1)]
    for k, v in res.adapter.state_dict().items():
        torch.testing.assert_close(v, ref_states[best][k], rtol=1e-3, atol=1e-5, msg=k)
    for k, v in res.initial_state.items():
        torch.testing.assert_close(v, ref_states[0][k], rtol=0, atol=0, msg=k)
    lr_factor = _lr_lambda(cfg)
    np.testing.assert_allclose(h["lr"], [0.0] + [cfg.lr * lr_factor(e) for e in range(cfg.epochs)], rtol=1e-6)
    assert not res.adapter.training  # returned ready for scoring
    tr, va = split_prompts(6, cfg.val_fraction, cfg.seed)
    for split, idx in (("train", tr), ("val", va if len(va) else tr)):  # the baseline's std on the same prompts
        R, _ = baseline_scores(data, elo, order_seed=2, prompt_idx=idx)
        np.testing.assert_allclose(h[f"{split}_baseline_judge_std"], float(R.std(0, ddof=1).mean()), rtol=1e-9)
    # the epoch-0 row is the untrained adapter: its train and validation losses are those of plain Elo's K, label
    assert h["train_loss"].iloc[0] == pytest.approx(h["train_anchor"].iloc[0] + h["train_consensus"].iloc[0]
                                                    + h["train_pearson"].iloc[0], rel=1e-5)
    for split in ("train", "val"):
        assert h[f"{split}_loss"].tolist() == pytest.approx(
            (h[f"{split}_anchor"] + h[f"{split}_consensus"] + h[f"{split}_pearson"]).tolist(), rel=1e-5)


def test_training_result_split_baselines_metadata_and_determinism():
    data = tiny_data(seed=5, P=6, N=3, M=3, D=4)
    cfg = TrainConfig(epochs=2, hidden=(4, 3), val_fraction=0.34, warmup=1, seed=2)
    elo = EloConfig()
    a = train_adapter(data, "full", cfg, elo, order_seed=1)
    b = train_adapter(data, "full", cfg, elo, order_seed=1)
    for (k, v), (k2, v2) in zip(a.adapter.state_dict().items(), b.adapter.state_dict().items(), strict=True):
        assert k == k2 and torch.equal(v, v2)
    assert a.history.equals(b.history) and a.meta == b.meta
    tr, va = split_prompts(6, 0.34, 2)
    assert a.train_prompts == [f"p{i}" for i in tr] and a.val_prompts == [f"p{i}" for i in va] and len(va) == 3
    # the baseline's inter-judge std on each part, from an independent baseline run
    for name, idx in (("train", tr), ("val", va)):
        R, _ = baseline_scores(data, elo, order_seed=1, prompt_idx=idx)
        np.testing.assert_allclose(a.history[f"{name}_baseline_judge_std"], float(R.std(0, ddof=1).mean()), rtol=1e-9)
    assert a.history["train_baseline_judge_std"].iloc[0] != a.history["val_baseline_judge_std"].iloc[0]
    # the untrained adapter is plain Elo: its recorded std on each part is the baseline's
    row0 = a.history.iloc[0]
    assert row0["train_mean_judge_std"] == pytest.approx(row0["train_baseline_judge_std"], rel=1e-5)
    assert row0["val_mean_judge_std"] == pytest.approx(row0["val_baseline_judge_std"], rel=1e-5)
    assert row0["train_consensus"] == pytest.approx(0.0, abs=1e-6)  # R_bar is G at a plain-Elo start
    m = a.meta
    assert (m["dataset"], m["variant"], m["embedder"], m["dim"], m["n_judgments"], m["order_seed"]) == (
        "tiny", "full", "toy", 4, data.n_judgments, 1)
    assert m["train"]["hidden"] == (4, 3) and m["elo"] == {"k": 32.0, "initial": 1200.0, "scale": 400.0}
    assert m["label_smoothing"] == fit_label_smoothing(data, tr, elo, cfg, order_seed=1)
    c = train_adapter(data, "full", cfg, elo, order_seed=2)  # another update order: other results
    assert not c.history["train_loss"].equals(a.history["train_loss"])
    # the ablated adapter has no label-smoothing control; without validation prompts the training ones are used
    d = train_adapter(data, "ablated", TrainConfig(epochs=1, hidden=(4, 3), val_fraction=0.0), elo, order_seed=1)
    assert d.meta["label_smoothing"] is None and d.val_prompts == [] and len(d.train_prompts) == 6
    hd = d.history
    assert (hd["val_baseline_judge_std"] == hd["train_baseline_judge_std"]).all()
    assert hd["val_loss"].iloc[0] == hd["train_loss"].iloc[0]
    assert d.adapter.config()["variant"] == "ablated" and d.adapter.config()["k0"] == 32.0
    # k0 and init_label reach the adapter
    e = train_adapter(data, "ablated", TrainConfig(epochs=0, hidden=(4, 3), k0=12.0, init_label=0.75), elo,
                      order_seed=1)
    assert e.adapter.k0 == 12.0 and e.adapter.init_label == 0.75 and e.best_epoch == 0 and len(e.history) == 1
    # one judge: no inter-judge std
    one = TournamentData("one", data.prompt_ids, data.models, ["j0"], data.E_models, data.E_judges[:, :1],
                         data.scores[..., :1])
    o = train_adapter(one, "ablated", TrainConfig(epochs=1, hidden=(4, 3)), elo, order_seed=1)
    assert (o.history["train_baseline_judge_std"] == 0.0).all() and (o.history["val_mean_judge_std"] == 0.0).all()


def test_training_without_verdicts_on_its_prompts_is_a_clear_error():
    data = tiny_data(seed=6, P=4)
    data.scores[:] = np.nan
    with pytest.raises(ConfigError, match=r"^uda: tournament 'tiny' has no usable verdicts on its training prompts$"):
        train_adapter(data, "full", TrainConfig(epochs=1, hidden=(4, 3)), EloConfig(), order_seed=0)


def test_training_learns_a_reduction_beyond_its_controls_on_a_planted_tournament(tmp_path):
    """Judge-specific self-preference planted on models whose embeddings identify them: after training, the
    held-out inter-judge std is clearly below the untrained adapter's (plain Elo) and below the best constant
    (K, label) Elo fitted by Eq. (3).  With training disabled (epochs = 0) or the gradient's sign flipped,
    this fails."""
    data = planted_data()
    cfg = TrainConfig(epochs=15, lr=0.02, hidden=(16, 8), val_fraction=0.34, warmup=2)
    elo = EloConfig()
    res = train_adapter(data, "full", cfg, elo, order_seed=3)
    h = res.history
    assert res.best_epoch > 0 and h["val_loss"].min() < 0.8 * h["val_loss"].iloc[0]
    va = np.array([data.prompt_ids.index(p) for p in res.val_prompts])
    tr = np.array([data.prompt_ids.index(p) for p in res.train_prompts])

    def std(R):
        return float(R.std(0, ddof=1).mean())

    base = std(baseline_scores(data, elo, order_seed=3, prompt_idx=va)[0])
    path = tmp_path / "a.pt"
    save_adapter(path, res)
    trained, st, _ = load_adapter(path)
    untrained, st0, _ = load_adapter(path, initial=True)
    uda = std(apply_adapter(trained, st, data, elo, order_seed=3, prompt_idx=va)[0])
    zero = std(apply_adapter(untrained, st0, data, elo, order_seed=3, prompt_idx=va)[0])
    ls = res.meta["label_smoothing"]
    smooth = std(smoothing_elo(data, va, ls["k"], ls["label"], elo, order_seed=3)[0])
    assert zero == pytest.approx(base, rel=1e-9)  # the untrained adapter is plain Elo
    assert uda < 0.5 * min(base, smooth), (uda, base, smooth)
    assert h.loc[h["best"], "val_mean_judge_std"].item() == pytest.approx(uda, rel=1e-4)
    # on the training prompts too; and the fitted control really is below plain Elo in-sample
    assert std(apply_adapter(trained, st, data, elo, order_seed=3, prompt_idx=tr)[0]) < 0.7 * std(
        baseline_scores(data, elo, order_seed=3, prompt_idx=tr)[0])
    assert ls["loss"] <= h["train_loss"].iloc[0] + 1e-9


# ---------------------------------------------------------------------------------
# the controls and applying an adapter


def test_smoothed_outcomes_and_the_grid_of_the_control():
    out = np.array([1.0, 0.0, 0.5, np.nan])
    np.testing.assert_allclose(smoothed_outcomes(out, 0.8), [0.8, 0.2, 0.5, np.nan], rtol=1e-12)
    np.testing.assert_array_equal(smoothed_outcomes(out, 1.0), out)
    assert len(SMOOTHING_LABELS) == 19 and SMOOTHING_LABELS[0] == 0.55 and SMOOTHING_LABELS[-1] == 1.0
    assert np.allclose(np.diff(SMOOTHING_LABELS), 0.025)
    assert SMOOTHING_K_FACTORS == (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)


def test_baseline_smoothing_and_adapter_elo_equal_a_plain_sequential_elo():
    data = tiny_data(seed=7, P=4, N=3, M=2, D=4)
    elo = EloConfig(k=20.0, initial=1000.0, scale=250.0)
    idx = np.array([2, 0, 3])
    sched = make_schedule(idx, 3, seed=9)
    # baseline: K constant, s = the verdict
    R, traj = baseline_scores(data, elo, order_seed=9, prompt_idx=idx)
    ref = naive_elo(data.scores, sched, lambda *a: 20.0, lambda t, k, i, j, r: r, 1000.0, 250.0)
    np.testing.assert_allclose(R, ref, atol=1e-9)
    assert traj.shape == (2, 4, 3) and np.allclose(traj[:, 0], 1000.0) and np.allclose(traj[:, -1], R)
    R_all, _ = baseline_scores(data, elo, order_seed=9)  # default: every prompt
    ref_all = naive_elo(data.scores, make_schedule(range(4), 3, seed=9), lambda *a: 20.0,
                        lambda t, k, i, j, r: r, 1000.0, 250.0)
    np.testing.assert_allclose(R_all, ref_all, atol=1e-9)
    # label smoothing: K = k, s = 0.5 + (2 label - 1)(r - 0.5); initial and scale from the config
    Rs, trs = smoothing_elo(data, idx, 13.0, 0.7, elo, order_seed=9)
    ref_s = naive_elo(data.scores, sched, lambda *a: 13.0, lambda t, k, i, j, r: 0.5 + 0.4 * (r - 0.5), 1000.0, 250.0)
    np.testing.assert_allclose(Rs, ref_s, atol=1e-9)
    assert trs.shape == (2, 4, 3)
    # an adapter: K and s per comparison from the network on Algorithm 1's vector of that comparison
    adapter = random_adapter(4, "full", seed=3, k0=20.0)
    std = identity_standardizer(4)

    def adapter_elo(sch):
        def net(t, k, a, b):
            p = sch.prompts[t]
            phi = torch.from_numpy(algorithm1(data.E_models[p, a][None], data.E_models[p, b][None],
                                              data.E_judges[p, k][None]))
            with torch.no_grad():
                K, s = adapter(phi)
            return float(K[0]), float(s[0])

        def K_of(t, k, i, j):
            r = data.scores[sch.prompts[t], i, j, k]
            return r * net(t, k, i, j)[0] + (1 - r) * net(t, k, j, i)[0]

        def s_of(t, k, i, j, r):
            return r * net(t, k, i, j)[1] + (1 - r) * (1 - net(t, k, j, i)[1])

        return naive_elo(data.scores, sch, K_of, s_of, 1000.0, 250.0)

    Ra, tra = apply_adapter(adapter, std, data, elo, order_seed=9, chunk=4, prompt_idx=idx)
    np.testing.assert_allclose(Ra, adapter_elo(sched), atol=1e-3)
    assert tra.shape == (2, 4, 3) and not adapter.training
    assert np.abs(Ra - R).max() > 1.0  # not the baseline
    Rb, _ = apply_adapter(adapter, std, data, elo, order_seed=9)  # every prompt, default chunk
    np.testing.assert_allclose(Rb, adapter_elo(make_schedule(range(4), 3, seed=9)), atol=1e-3)
    with pytest.raises(ConfigError, match=r"^uda: adapter expects 5-dimensional embeddings, tournament 'tiny' has 4$"):
        apply_adapter(UDAAdapter(5, "full", hidden=(4, 3)), std, data, elo, order_seed=9)


def test_label_smoothing_control_is_the_grid_minimum_of_equation_3():
    data = tiny_data(seed=8, P=5, N=3, M=3, D=4)
    idx = np.array([0, 2, 3, 4])
    elo = EloConfig(k=16.0, initial=1000.0, scale=300.0)
    cfg = TrainConfig(alpha=1e-3, sigma=1e-2, beta=3.0)
    best = fit_label_smoothing(data, idx, elo, cfg, order_seed=4)
    G = torch.as_tensor(baseline_scores(data, elo, order_seed=4, prompt_idx=idx)[0].mean(0))
    grid = {(f * 16.0, float(lab)): float(consensus_loss(torch.as_tensor(
        smoothing_elo(data, idx, f * 16.0, float(lab), elo, order_seed=4)[0]), G, cfg)[0])
        for lab in SMOOTHING_LABELS for f in SMOOTHING_K_FACTORS}
    (k, lab), loss = min(grid.items(), key=lambda kv: kv[1])
    assert best == {"k": k, "label": lab, "loss": pytest.approx(loss, rel=1e-12)}
    assert sorted(grid.values())[1] > loss  # a unique minimum: the check is not a tie-break
    assert (k, lab) != (16.0, 1.0) and best["loss"] < grid[(16.0, 1.0)]  # better than plain Elo here
    # a strict `<`: the first of equal grid points is kept (here all points have the same loss)
    flat = fit_label_smoothing(data, idx, elo, TrainConfig(alpha=0.0, sigma=0.0, beta=0.0), order_seed=4)
    assert flat == {"k": 0.25 * 16.0, "label": 0.55, "loss": 0.0}


def test_checkpoint_round_trip_initial_state_and_old_checkpoints(tmp_path):
    data = tiny_data(seed=9, P=5, N=3, M=2, D=4)
    res = train_adapter(data, "full", TrainConfig(epochs=2, lr=0.05, hidden=(4, 3), k0=20.0, init_label=0.9,
                                                  activation="relu", val_fraction=0.2), EloConfig(), order_seed=0)
    assert len(res.val_prompts) == 1 and res.history["val_loss"].iloc[0] != res.history["train_loss"].iloc[0]
    path = tmp_path / "sub" / "a.pt"
    save_adapter(path, res)
    assert [p.name for p in path.parent.iterdir()] == ["a.pt"]  # written in place, no temporary left
    a, st, meta = load_adapter(path)
    assert not a.training and a.config() == res.adapter.config()
    assert a.config() == {"dim": 4, "variant": "full", "hidden": [4, 3], "k0": 20.0, "activation": "relu",
                          "init_label": 0.9}
    for k, v in res.adapter.state_dict().items():
        assert torch.equal(a.state_dict()[k], v)
    for k in ("pair_mean", "pair_std", "self_mean", "self_std"):
        assert np.array_equal(getattr(st, k), getattr(res.standardizer, k))
    assert meta["best_epoch"] == res.best_epoch and meta["train_prompts"] == res.train_prompts
    assert meta["val_prompts"] == res.val_prompts and meta["label_smoothing"] == res.meta["label_smoothing"]
    assert meta["dataset"] == "tiny" and meta["order_seed"] == 0
    u, st0, meta0 = load_adapter(path, initial=True)
    assert np.array_equal(st0.pair_std, st.pair_std)  # the same standardiser
    assert not u.training and meta0 == meta
    for k, v in res.initial_state.items():
        assert torch.equal(u.state_dict()[k], v)
    assert any(not torch.equal(res.initial_state[k], v) for k, v in res.adapter.state_dict().items())
    # an older checkpoint: no untrained state, no init_label (then the hard label, 1.0)
    payload = torch.load(path, weights_only=False)
    payload["initial_state_dict"] = None
    del payload["adapter"]["init_label"]
    old = tmp_path / "old.pt"
    torch.save(payload, old)
    o, _, _ = load_adapter(old)
    assert o.init_label == 1.0 and o.config()["k0"] == 20.0
    with pytest.raises(ConfigError, match=r"^uda: checkpoint .*old\.pt holds no untrained state \(written by an older"):
        load_adapter(old, initial=True)


def test_a_tie_in_validation_loss_keeps_the_earlier_checkpoint():
    """lr = 0: every epoch leaves the adapter as it was, so every validation loss equals epoch 0's and the
    first (the untrained adapter) is kept -- the selection is a strict minimum."""
    data = tiny_data(seed=10, P=5)
    res = train_adapter(data, "ablated", TrainConfig(epochs=3, lr=0.0, hidden=(4, 3), val_fraction=0.4), EloConfig(),
                        order_seed=1)
    assert res.history["val_loss"].nunique() == 1 and res.best_epoch == 0
    assert res.history["best"].tolist() == [True, False, False, False]


def test_a_worse_trained_adapter_is_discarded_for_the_untrained_one():
    """A step size so large that every epoch is worse on the validation prompts: the untrained adapter
    (epoch 0) is returned -- as it was, although the training moved the weights away from it."""
    data = tiny_data(seed=10, P=5)
    res = train_adapter(data, "ablated", TrainConfig(epochs=2, lr=1.0, hidden=(4, 3), val_fraction=0.4, warmup=0,
                                                     init_label=0.8), EloConfig(), order_seed=1)
    h = res.history
    assert res.best_epoch == 0 and (h["val_loss"].iloc[1:] > h["val_loss"].iloc[0]).all()
    for k, v in res.adapter.state_dict().items():
        assert torch.equal(v, res.initial_state[k]), k


def test_unknown_variant_names_the_config_key():
    with pytest.raises(Exception, match=r"^unknown UDA feature variant 'nope' \(uda\.variants\); known: ablated, full$"):
        train_adapter(tiny_data(P=3), "nope", TrainConfig(epochs=1, hidden=(4, 3)), EloConfig(), order_seed=0)


def test_an_ablated_checkpoint_loads_as_ablated(tmp_path):
    data = tiny_data(seed=11, P=4)
    res = train_adapter(data, "ablated", TrainConfig(epochs=1, hidden=(4, 3), activation="tanh"), EloConfig(),
                        order_seed=0)
    save_adapter(tmp_path / "abl.pt", res)
    a, _, meta = load_adapter(tmp_path / "abl.pt")
    assert a.variant.name == "ablated" and a.config() == res.adapter.config() and meta["variant"] == "ablated"
    R1, _ = apply_adapter(a, res.standardizer, data, EloConfig(), order_seed=0)
    R2, _ = apply_adapter(res.adapter, res.standardizer, data, EloConfig(), order_seed=0)
    np.testing.assert_array_equal(R1, R2)
