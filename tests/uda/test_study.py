"""Study uda end to end in the library: a simulated tournament with planted, heterogeneous self-preference.

Five simulated judges answer every prompt (the paper's answer prompt) and judge every ordered
pair (its A/B/C prompt) through the call cache; four of them have their own model in the
tournament, with planted self-preference from -0.5 to +0.7 (bias score b), the fifth none.
Checked: the baseline Elo shows each planted sign as a self-preference deviation; UDA lowers
the mean inter-judge standard deviation; the methods table reports the correlation with the
planted true quality for baseline, UDA and the ablation; training and scoring are
deterministic for a seed.  Public-data tests (skipped without the data): the MT-Bench
tournament, the human Bradley-Terry fit and the offline MiniLM embedder.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from judgelab.cache import CallCache
from judgelab.config import ConfigError, JudgeSpec
from judgelab.io import InputError
from judgelab.judges import make_judge
from judgelab.plots.uda import heatmap_figure, pearson_figure, trajectories_figure
from judgelab.uda import metrics
from judgelab.uda.elo import EloConfig
from judgelab.uda.embeddings import EmbeddingConfig
from judgelab.uda.study import (
    embed_tournament,
    judges_table,
    load_data,
    reference_scores,
    score_tournament,
    study_tables,
    train_variants,
)
from judgelab.uda.tournament import build_tournament, judge_tournament, own_model_of
from judgelab.uda.training import TrainConfig, save_adapter

torch.set_num_threads(1)

PLANTED = {"self-plus": ("openai", 0.6), "self-minus": ("anthropic", -0.5), "self-strong": ("google", 0.7),
           "self-mild": ("meta", 0.3), "neutral": ("none", 0.0)}
SPEC = {
    "loader": "simulated", "n_prompts": 16, "quality": {"source": "planted", "answer_noise": 0.4},
    "reference": "model_quality", "reference_name": "planted_quality",
    "own_models": {"openai": "m-openai", "anthropic": "m-anthropic", "google": "m-google", "meta": "m-meta"},
    "models": [
        {"name": "m-openai", "family": "openai", "quality": 0.5, "sentences": 5, "markdown": True},
        {"name": "m-anthropic", "family": "anthropic", "quality": 0.8, "sentences": 6, "markdown": False},
        {"name": "m-google", "family": "google", "quality": 0.1, "sentences": 7, "markdown": True},
        {"name": "m-meta", "family": "meta", "quality": -0.3, "sentences": 4, "markdown": False},
        {"name": "m-qwen", "family": "qwen", "quality": 0.4, "sentences": 5, "markdown": False},
        {"name": "m-mistral", "family": "mistral", "quality": -0.6, "sentences": 3, "markdown": False},
    ],
}
ELO = EloConfig()
TRAIN = TrainConfig(epochs=30, hidden=(32, 8), warmup=3, val_fraction=0.25)


def panel() -> list[JudgeSpec]:
    return [JudgeSpec.from_dict({
        "name": name, "backend": "simulated", "model": f"sim/{name}", "family": fam,
        "sampling": {"temperature": 0.0, "seed": n},
        "options": {"profile": {"competence": 2.0, "biases": {"self_preference": b, "verbosity": 0.1 * (n - 2)},
                                "malformed_rate": 0.01}},
    }) for n, (name, (fam, b)) in enumerate(PLANTED.items())]


@pytest.fixture(scope="module")
def tournament(tmp_path_factory):
    tab = build_tournament("sim", SPEC, seed=11)
    cache_path = tmp_path_factory.mktemp("uda") / "calls.sqlite"
    answers, verdicts = [], []
    with CallCache(cache_path) as cache:
        for spec in panel():
            judge = make_judge(spec)
            a, v = judge_tournament(judge, tab, cache, own_model=own_model_of(spec.name, spec.family, SPEC, tab))
            answers.append(a)
            verdicts.append(v)
    answers, verdicts = pd.concat(answers, ignore_index=True), pd.concat(verdicts, ignore_index=True)
    emb = embed_tournament(tab, answers, EmbeddingConfig(backend="hashing", dim=256))
    data = load_data("sim", tab, verdicts, emb, list(PLANTED))
    return {"table": tab, "answers": answers, "verdicts": verdicts, "emb": emb, "data": data, "cache": cache_path}


def run_study(tournament, tmp_path):
    data = tournament["data"]
    results = train_variants(data, ["full", "ablated"], TRAIN, ELO, order_seed=3)
    paths = []
    for v, r in results.items():
        save_adapter(tmp_path / f"{v}.pt", r)
        paths.append((str(tmp_path / f"{v}.pt"), "sim"))
    scores, traj = score_tournament(data, paths, ELO, order_seed=3)
    return results, scores, traj


def test_every_judge_answers_and_judges_every_ordered_pair(tournament):
    tab, answers, verdicts = tournament["table"], tournament["answers"], tournament["verdicts"]
    P, N = tab["prompt_id"].nunique(), tab["model"].nunique()
    assert len(answers) == P * len(PLANTED) and answers["status"].eq("ok").all()
    assert len(verdicts) == P * N * (N - 1) * len(PLANTED)
    assert verdicts.groupby("judge")["pair_id"].nunique().eq(P * N * (N - 1)).all()
    # own answers: a near copy of the own model's answer, or a family-signed text when there is none
    own = answers[answers["judge"] == "self-plus"].iloc[0]
    theirs = tab[(tab["prompt_id"] == own["prompt_id"]) & (tab["model"] == "m-openai")]["answer"].item()
    assert own["own_model"] == "m-openai" and set(own["answer"].split()) <= set(theirs.split()) | {"[simulated", "text]"}
    assert answers[answers["judge"] == "neutral"]["own_model"].eq("").all()
    # planted malformed answers are counted, never dropped, and give no verdict
    bad = verdicts[~verdicts["status"].isin(["ok", "fallback"])]
    assert len(bad) > 0 and bad["verdict"].eq("").all() and bad["score_a"].isna().all()
    assert tournament["data"].n_judgments == int(verdicts["verdict"].isin(["A", "B", "tie"]).sum())
    jt = judges_table(verdicts, answers, {"self-plus": "m-openai"}).set_index("judge")
    assert jt.loc["self-plus", "presentations"] == P * N * (N - 1)
    assert jt["n_unparsed"].sum() + jt["n_ok"].sum() + jt["n_fallback"].sum() + jt["n_refusal"].sum() == len(verdicts)
    # a rerun is answered from the cache
    with CallCache(tournament["cache"]) as cache:
        judge = make_judge(panel()[0])
        _, again = judge_tournament(judge, tab, cache, own_model="m-openai")
    pd.testing.assert_frame_equal(again, verdicts[verdicts["judge"] == "self-plus"].reset_index(drop=True))


def test_uda_lowers_inter_judge_std_and_reports_planted_quality(tournament, tmp_path):
    _, scores, traj = run_study(tournament, tmp_path)
    data, tab = tournament["data"], tournament["table"]
    models, judges = data.models, data.judges
    own = {j: m for j in judges if (m := own_model_of(j, PLANTED[j][0], SPEC, tab))}
    ref, ref_name = reference_scores(SPEC, tab, None, ELO)
    tables = study_tables(scores, "sim", models, judges, ref, ref_name, own)
    methods = tables["methods"].set_index("method")
    base_std = methods.loc["baseline", "mean_inter_judge_std"]
    # the planted self-preference shows in the baseline, with its sign
    sp = tables["self_preference"]
    dev = sp[sp["method"] == "baseline"].set_index("judge")["deviation_pct"]
    assert dev["self-plus"] > 0 and dev["self-strong"] > 0 and dev["self-minus"] < 0
    # UDA pulls the judges together
    assert methods.loc["uda", "mean_inter_judge_std"] < 0.9 * base_std
    # correlations with the planted quality are reported for baseline, UDA and the ablation
    assert {"baseline", "label_smoothing", "uda_untrained", "uda", "uda_ablated"} == set(methods.index)
    # the controls stand beside UDA, on every prompt and on the held-out ones
    ctl = tables["controls"].set_index(["split", "method"])
    assert set(ctl.index.get_level_values("split")) == {"all", "train", "heldout"}
    for split in ("all", "train", "heldout"):
        assert ctl.loc[(split, "uda_untrained"), "mean_inter_judge_std"] == pytest.approx(
            ctl.loc[(split, "baseline"), "mean_inter_judge_std"])  # untrained = plain Elo
    assert methods["reference"].eq("planted_quality").all()
    assert methods["mean_pearson_reference"].between(-1, 1).all()
    assert methods.loc["baseline", "mean_pearson_reference"] > 0.5  # competent judges track quality
    assert methods["consensus_pearson_reference"].notna().all()
    ref_t = tables["reference"]
    assert set(ref_t["judge"]) == {*judges, "consensus"}
    # trajectories end at the final scores
    last = traj[traj["step"] == traj["step"].max()].merge(scores[scores["split"] == "all"],
                                                          on=["method", "trained_on", "judge", "model"])
    np.testing.assert_allclose(last["score_x"], last["score_y"])
    # figures render (and are stamped: the judges are simulated)
    for fn, out in ((trajectories_figure, "traj.png"), (heatmap_figure, "heat.png"), (pearson_figure, "pearson.png")):
        if fn is trajectories_figure:
            fn(traj, tmp_path / out, title="t", simulated=True, config_hash="x", methods=metrics.method_keys(traj))
        elif fn is heatmap_figure:
            fn(tables["matrix"], tmp_path / out, title="t", simulated=True, config_hash="x", reference_name=ref_name)
        else:
            fn(ref_t, tmp_path / out, title="t", reference_name=ref_name, simulated=True, config_hash="x")
        assert (tmp_path / out).stat().st_size > 10_000


def test_training_and_scores_are_deterministic_for_a_seed(tournament, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, s1, t1 = run_study(tournament, tmp_path / "a")
    _, s2, t2 = run_study(tournament, tmp_path / "b")
    pd.testing.assert_frame_equal(s1, s2, check_exact=True)
    pd.testing.assert_frame_equal(t1, t2, check_exact=True)


def test_bad_inputs_name_the_key(tournament):
    with pytest.raises(ConfigError, match=r"uda\.datasets\.x\.models"):
        build_tournament("x", {"loader": "simulated", "models": [{"name": "a", "family": "f"}]}, seed=0)
    with pytest.raises(Exception, match="unknown UDA tournament loader 'nope'"):
        build_tournament("x", {"loader": "nope", "models": []}, seed=0)
    with pytest.raises(ConfigError, match="no planted quality"):
        build_tournament("x", {**SPEC, "models": [{"name": "a", "family": "f"}, {"name": "b", "family": "g"}]}, seed=0)
    emb = tournament["emb"]
    with pytest.raises(InputError, match=r"no judge embedding for prompt .* judge 'ghost'"):
        load_data("sim", tournament["table"], tournament["verdicts"], emb, [*PLANTED, "ghost"])
    v = tournament["verdicts"].copy()
    v.loc[0, "model_b"] = "m-unknown"
    with pytest.raises(InputError, match="'m-unknown' is not in the tournament table"):
        load_data("sim", tournament["table"], v, emb, list(PLANTED))


# ---------------------------------------------------------------------------------
# public data


@pytest.mark.shared_data
def test_mt_bench_human_bradley_terry_and_tournament(data_root):
    from judgelab.datasets.sources import source_path
    from judgelab.uda.human import bradley_terry_scores, human_reference, load_votes

    votes = load_votes(source_path("mt_bench/human_judgments_turn1", download=False))
    assert len(votes) == 1689
    bt = bradley_terry_scores(votes, ELO, n_boot=40, seed=0).set_index("model")
    assert bt["elo"].idxmax() == "gpt-4" and bt["elo"].idxmin() == "llama-13b"
    assert bt["elo"].mean() == pytest.approx(1200.0)
    assert (bt["elo_ci_low"] <= bt["elo"]).all() and (bt["elo"] <= bt["elo_ci_high"]).all()
    assert bt["n_votes"].sum() == 2 * len(votes) and (bt["wins"] + bt["losses"] + bt["ties"] == bt["n_votes"]).all()
    again = bradley_terry_scores(votes, ELO, n_boot=40, seed=0).set_index("model")
    pd.testing.assert_frame_equal(bt, again)
    spec = {"loader": "mt_bench", "models": ["gpt-4", "llama-13b", "vicuna-13b-v1.3"], "n_prompts": 5,
            "families": {"gpt-4": "openai"}, "human_aliases": {"vicuna-13b-v1.3": "vicuna-13b-v1.2"},
            "quality": {"source": "human_bt", "answer_noise": 0.0}}
    tab = build_tournament("mt", spec, seed=1, context={"human": bt.reset_index()})
    assert len(tab) == 15 and tab["prompt_id"].nunique() == 5
    q = tab.drop_duplicates("model").set_index("model")["model_quality"]
    assert q["gpt-4"] == pytest.approx(bt.loc["gpt-4", "theta"]) and q["vicuna-13b-v1.3"] == pytest.approx(bt.loc["vicuna-13b-v1.2", "theta"])
    ref = human_reference(bt.reset_index(), ["gpt-4", "vicuna-13b-v1.3", "palm"], spec["human_aliases"])
    assert ref["vicuna-13b-v1.3"] == pytest.approx(bt.loc["vicuna-13b-v1.2", "elo"]) and np.isnan(ref["palm"])
    with pytest.raises(ConfigError, match=r"no human votes for \['vicuna-13b-v1\.3'\]"):
        build_tournament("mt", {**spec, "human_aliases": {}}, seed=1, context={"human": bt.reset_index()})


@pytest.mark.shared_data
def test_offline_minilm_embedder_keeps_norms(data_root):
    from judgelab.uda.embeddings import embed_texts, make_embedder

    emb = make_embedder(EmbeddingConfig(max_seq_length=32))
    E = embed_texts(emb, ["The cat sat on the mat.", "A dog barked.", "The cat sat on the mat."])
    assert E.shape == (3, 384) and emb.dim == 384
    assert np.array_equal(E[0], E[2])
    norms = np.linalg.norm(E, axis=1)
    assert not np.allclose(norms, 1.0)  # the pooled vector before Normalize: Algorithm 1's norms carry information
    unit = make_embedder(EmbeddingConfig(max_seq_length=32, drop_normalize=False))
    assert np.allclose(np.linalg.norm(unit.encode(["The cat sat on the mat."]), axis=1), 1.0, atol=1e-5)
    cos = E[0] @ unit.encode(["The cat sat on the mat."])[0] / norms[0]
    assert cos == pytest.approx(1.0, abs=1e-5)  # same direction, only the length differs
