"""The style-controlled score equals Arena-Hard's ``show_result.py`` on its real v2.0 records.

The reference below is an independent transcription of lmarena/arena-hard-auto ``show_result.py``
(``load_judgments``, ``get_model_style_metadata``, ``print_leaderboard_with_style_features``) and
``utils/math_utils.py`` (``one_hot_encode``, ``fit_pairwise_model`` with the ``bt`` loss,
``to_winrate_probabilities``) at commit 005ac120, pandas and torch as published, run on the real
records of ``tests/fixtures/verdict_logs/arena_hard_v2`` (README there).  Both sides get the same
bootstrap rows (show_result draws them with ``np.random.randint``; the judgelab side numbers its
battles in another order, so the indices are mapped battle by battle)."""

from __future__ import annotations

import os
from glob import glob
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from judgelab.board.battles import battles_from_table, read_answer_metadata
from judgelab.board.style_control import explode, style_controlled, style_features
from judgelab.board.table import _oriented
from judgelab.verdict_import.importer import import_verdicts
from judgelab.verdict_import.presets import preset_mapping

V2 = Path(__file__).parents[1] / "fixtures" / "verdict_logs" / "arena_hard_v2"
BASELINE = "o3-mini-2025-01-31"  # JUDGE_SETTINGS["hard_prompt"]["baseline"]


@pytest.fixture(autouse=True)
def _one_torch_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# ---- the transcription of show_result.py (pandas + torch, as published) ---------------------------
def _load_judgments(folder: Path, weight: int = 3) -> pd.DataFrame:
    data = pd.concat([pd.read_json(f, lines=True) for f in glob(os.path.join(folder, "*.jsonl"))]).reset_index(
        drop=True)
    null = data.games.map(lambda x: x[0] is None or x[1] is None or x[0]["score"] is None or x[1]["score"] is None)
    _data = data[~null].reset_index(drop=True)
    label_to_score = {"A>B": [1], "A>>B": [1] * weight, "A=B": [0.5], "A<<B": [0] * weight, "A<B": [0],
                      "B>A": [0], "B>>A": [0] * weight, "B=A": [0.5], "B<<A": [1] * weight, "B<A": [1]}
    _data["scores"] = _data.games.map(
        lambda x: label_to_score[x[1]["score"]] + [1 - s for s in label_to_score[x[0]["score"]]])
    return _data[["uid", "model", "category", "scores"]].explode("scores").reset_index(drop=True)


def _style_metadata(folder: Path) -> dict:
    out = {}
    for file in glob(os.path.join(folder, "*.jsonl")):
        df = pd.read_json(file, lines=True)
        out[df.iloc[0]["model"]] = df.set_index("uid")["metadata"].to_dict()
    return out


def _one_hot_encode(items, baseline):
    unique_items = sorted(set([*items, baseline]))
    item_to_index = {item: idx for idx, item in enumerate(unique_items)}
    mat = []
    for item in items:
        v = [0] * len(unique_items)
        v[item_to_index[item]] = 1
        v[item_to_index[baseline]] = -1
        mat.append(v)
    return torch.tensor(mat, dtype=torch.float32), unique_items


def _bt_loss(logits, outcomes, stable):
    if stable:  # the same function, finite where float32 rounds sigmoid to 0 or 1
        return -(torch.nn.functional.logsigmoid(logits) * outcomes
                 + torch.nn.functional.logsigmoid(-logits) * (1.0 - outcomes)).sum()
    probs = torch.sigmoid(logits)  # math_utils.bt_loss as published
    return -(torch.log(probs) * outcomes + torch.log(1.0 - probs) * (1.0 - outcomes)).sum()


def _fit_pairwise_model(features, outcomes, indices, stable=True):
    features, outcomes = features[indices], outcomes[indices]
    logits = torch.nn.Parameter(torch.nn.init.constant_(torch.empty(features.shape[1]), 0.5))
    opt = torch.optim.LBFGS([logits], lr=1.0, max_iter=50, tolerance_grad=1e-9, tolerance_change=1e-9)

    def closure():
        opt.zero_grad()
        loss = _bt_loss(features @ logits, outcomes, stable)
        loss.backward()
        return loss

    opt.step(closure)
    return logits.detach()


def _show_result_style(boot_idxs: np.ndarray, stable: bool = True):
    battles = _load_judgments(V2 / "model_judgment" / "gemini-2.5-flash")
    meta = _style_metadata(V2 / "model_answer")
    model_features = battles.apply(lambda row: meta[row["model"]][row["uid"]], axis=1).tolist()
    baseline_features = battles.apply(lambda row: meta[BASELINE][row["uid"]], axis=1).tolist()
    mt = torch.tensor([[v if isinstance(v, int) else sum(v.values()) for k, v in m.items()] for m in model_features],
                      dtype=torch.float32)
    bt = torch.tensor([[v if isinstance(v, int) else sum(v.values()) for k, v in m.items()]
                       for m in baseline_features], dtype=torch.float32)
    final = torch.zeros_like(mt)
    final[:, 0] = (mt[:, 0] - bt[:, 0]) / (mt[:, 0] + bt[:, 0])
    md, bd = mt[:, 1:] / mt[:, :1], bt[:, 1:] / bt[:, :1]
    final[:, 1:] = (md - bd) / (md + bd + 1)
    norm = (final - torch.mean(final, axis=0)) / torch.std(final, axis=0)
    outcomes = torch.tensor(battles.scores.tolist())
    onehot, models = _one_hot_encode(battles.model.tolist(), baseline=BASELINE)
    feats = torch.cat([onehot, norm], dim=1)
    coefs = torch.stack([_fit_pairwise_model(feats, outcomes, boot_idxs[i], stable) for i in range(len(boot_idxs))])
    c = coefs[:, :-4]
    e = torch.exp(c)
    b = models.index(BASELINE)
    probs = torch.stack([e[:, i] / (e[:, i] + e[:, b]) for i in range(len(models))], dim=1)
    table = pd.DataFrame(columns=models, data=probs.tolist())
    return battles, final, table, torch.quantile(coefs[:, -4:], 0.5, axis=0).numpy(), feats, outcomes


# ---- judgelab ---------------------------------------------------------------------------------------
def _judgelab_battles():
    t = import_verdicts([V2 / "model_judgment"], preset_mapping("arena_hard_v2"),
                        tables={"answers": [str(V2 / "model_answer")], "questions": [str(V2 / "question.jsonl")]})
    return battles_from_table(t, metadata=read_answer_metadata([str(V2 / "model_answer")]))


def _mapping(b, battles: pd.DataFrame) -> np.ndarray:
    """For each show_result battle row, the judgelab exploded row holding the same (uid, game, copy)."""
    _model, _opp, _y, item, weight, *_ = _oriented(b)
    game = np.where(b.b_first, 2, 1)
    keys = []
    for it, g, w in zip(item, game, weight, strict=False):
        keys += [(b.items[it], int(g), k) for k in range(int(w))]
    mine = {k: i for i, k in enumerate(keys)}
    out = np.empty(len(battles), dtype=np.int64)
    item_names = np.array(b.items)[item]
    for uid, grp in battles.groupby("uid", sort=False):
        # load_judgments: game 2's scores first, then game 1's; a game is 1 or 3 rows
        g2w = int(weight[(item_names == uid) & b.b_first][0])
        for pos, r in enumerate(grp.index.tolist()):
            g, k = (2, pos) if pos < g2w else (1, pos - g2w)
            out[r] = mine[(uid, g, k)]
    return out


def test_the_style_features_are_show_results():
    battles, final, *_ = _show_result_style(np.arange(8)[None, :])
    b = _judgelab_battles()
    assert b.style_source == "answer metadata"
    model, opp, y, _item, weight, sm, so, _ = _oriented(b)
    mapping = _mapping(b, battles)
    _, _, out, f = explode(model, opp, y, weight, style_features(sm, so))
    np.testing.assert_allclose(f[mapping], final.numpy(), rtol=1e-6)
    np.testing.assert_allclose(out[mapping], battles.scores.astype(float).to_numpy())
    assert len(out) == 8 and out.mean() == pytest.approx(0.25)  # 2 battles of 1 over 8 (README)


@pytest.mark.parametrize("rounds", [1, 12])
def test_the_style_controlled_score_is_show_results(rounds):
    rng = np.random.RandomState(7)
    boot = np.arange(8)[None, :] if rounds == 1 else rng.randint(0, 8, size=(rounds, 8))
    battles, _, table, *_ = _show_result_style(boot)
    b = _judgelab_battles()
    mapping = _mapping(b, battles)
    model, opp, y, _item, weight, sm, so, _ = _oriented(b)
    ref = b.models.index(BASELINE)
    res = style_controlled(model, opp, y, weight, sm, so, b.n_models, ref, alpha=0.10, boot_idx=mapping[boot])
    m = b.models.index("mistral-small-2503")
    assert res.score[m] / 100 == pytest.approx(table["mistral-small-2503"].quantile(0.5), abs=1e-4)
    assert res.ci_low[m] / 100 == pytest.approx(table["mistral-small-2503"].quantile(0.05), abs=1e-4)
    assert res.ci_high[m] / 100 == pytest.approx(table["mistral-small-2503"].quantile(0.95), abs=1e-4)
    assert res.score[ref] == pytest.approx(50.0)


def test_the_published_loss_is_the_stable_one_where_it_is_finite_and_nan_on_these_records():
    """show_result's own fit of these two records is NaN: the style features separate them (the
    model wins both games of one question and loses both of the other), the coefficients run off
    and float32 ``log(1 - sigmoid)`` becomes ``log 0``.  judgelab's loss is the same function
    written with ``logsigmoid``: equal wherever the published one is finite, finite everywhere."""
    *_, feats, outcomes = _show_result_style(np.arange(8)[None, :])
    gen = torch.Generator().manual_seed(0)
    for scale in (0.1, 1.0, 5.0):
        c = torch.randn(feats.shape[1], generator=gen) * scale
        eta = feats @ c
        assert float(_bt_loss(eta, outcomes, stable=False)) == pytest.approx(float(_bt_loss(eta, outcomes, True)),
                                                                            rel=1e-5)
    _, _, published, *_ = _show_result_style(np.arange(8)[None, :], stable=False)
    assert published["mistral-small-2503"].isna().all()
    _, _, stable, *_ = _show_result_style(np.arange(8)[None, :], stable=True)
    assert np.isfinite(stable["mistral-small-2503"]).all()
