"""Study `scoring` (paper 004): prompt parts, score parsing, planted effects, metrics, data.

What is checked, and against what:

* the Figure 3 prompt built from parts reproduces the Prometheus absolute-grading
  prompt of every row of the public MT-Bench / Vicuna-Bench files, and each
  perturbation changes only its own part;
* every score in every score-ID scheme survives the study's path from raw answer to
  the score table (property test); anything out of range or missing is -1;
* a simulated judge with planted reference anchoring pulls its score distribution
  toward the reference score (Figure 6) and the tables show it; a judge with no
  planted effect has fluctuations whose simultaneous CIs cover 0, while planted
  effects are detected;
* Spearman/Pearson over masked resamples equal scipy's; ordinal Krippendorff's alpha
  reproduces Krippendorff (2011)'s worked example; averaging scores over prompt
  variants raises rho when variant noise is independent (the aggregation study);
* the generation-review pipeline accepts more on-target texts than the writer hits,
  alternates roles, and asks nothing twice.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from judgelab.cache import CallCache
from judgelab.config import ConfigError, JudgeSpec
from judgelab.io import InputError
from judgelab.judges import make_judge
from judgelab.judges.base import Judge
from judgelab.judges.runner import run_requests
from judgelab.parsing import SCORE_IDS, score_id
from judgelab.records import JudgeRequest, Message, OutputKind, RawAnswer
from judgelab.scoring.generation import (
    acceptance_summary,
    reference_levels_needed,
    run_generation_review,
    tasks_for,
)
from judgelab.scoring.items import ScoringItem, apply_synthesised, items_frame, load_items, majority_score
from judgelab.scoring.metrics import (
    aggregation_table,
    correlation,
    correlation_tables,
    distributions,
    gold_frame,
    krippendorff_alpha_ordinal,
    rank_rows,
    stability,
)
from judgelab.scoring.prompt import (
    GOLD_VARIANT,
    VARIANTS,
    Rubric,
    build_prompt,
    get_variant,
    parse_prometheus_prompt,
    rubric_sequence,
)
from judgelab.scoring.query import judge_scores, reference_coverage, scores_frame, with_scoring_profile
from tests.conftest import REPO

ALL_VARIANTS = ["baseline", "descending", "random", "letter", "roman", "ref1", "ref2", "ref3", "ref4", "ref5"]
RUBRIC = Rubric("Is the answer good?", ("awful", "weak", "fair", "good", "excellent"))


def sim_judge(name: str, seed: int = 0, **profile) -> Judge:
    return make_judge(JudgeSpec.from_dict({
        "name": name, "backend": "simulated", "model": "sim", "family": "none",
        "sampling": {"temperature": 0.0, "seed": seed}, "options": {"profile": profile},
    }))


def synthetic_items(n: int, *, dataset: str = "synth", seed: int = 0) -> list[ScoringItem]:
    """Items with a spread of designed scores; the design score is the simulated truth."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        lv = int(rng.integers(1, 6))
        out.append(ScoringItem(
            dataset=dataset, item_id=f"i{i}", group_id=f"g{i}", instruction=f"Question {i}: explain topic {i}.",
            response=f"Answer {i} written at level {lv}.", criterion=RUBRIC.criterion,
            **{f"rubric_{k}": RUBRIC.description(k) for k in range(1, 6)}, reference_5=f"Perfect answer {i}.",
            design_score=float(lv), truth_score=float(lv), truth_source="design",
        ))
    return out


def references_for(items: list[ScoringItem]) -> pd.DataFrame:
    return pd.DataFrame([{"dataset": it.dataset, "group_id": it.group_id, "level": k, "text": f"Level-{k} answer."}
                         for it in items for k in (1, 2, 3, 4)])


def score_all(judge: Judge, items, tmp_path, variants=ALL_VARIANTS) -> pd.DataFrame:
    with CallCache(tmp_path / f"{judge.name}.sqlite") as cache:
        return judge_scores(judge, items, [get_variant(v) for v in variants], cache,
                            references=references_for(items), seed=7, max_error_rate=None)


def design_golds(items) -> pd.DataFrame:
    return gold_frame(items_frame(items), None)


# ---------------------------------------------------------------------------------
# prompt


def test_prometheus_prompts_are_rebuilt_from_their_parts(data_root):
    n = 0
    for name in ("mt_bench_eval", "vicuna_eval"):
        rows = json.loads((data_root / "prometheus_eval" / f"{name}.json").read_text(encoding="utf-8"))
        for i, row in enumerate(rows):
            parts = parse_prometheus_prompt(row["instruction"], where=f"{name} {i}")
            rebuilt = build_prompt(GOLD_VARIANT, instruction=parts.instruction, response=parts.response,
                                   rubric=parts.rubric, references={5: parts.reference})
            assert rebuilt == row["instruction"], f"{name} row {i}"
            n += 1
    assert n == 640


def _sections(prompt: str) -> dict[str, str]:
    """Split a built prompt into T, C*, R, S by their headers."""
    t, rest = prompt.split("\n\n###The instruction to evaluate:\n", 1)
    c, rest = rest.split("\n\n###Re", 1)  # Response to evaluate / Reference Answer
    return {"T": t, "C": c, "rest": "###Re" + rest}


def test_each_perturbation_changes_only_its_parts():
    kw = dict(instruction="Explain X.", response="X is Y.", rubric=RUBRIC,
              references={k: f"ref at {k}" for k in range(1, 6)}, seed=3, item_key="a")
    base = build_prompt(get_variant("baseline"), **kw)
    base_s = _sections(base)
    for name in ALL_VARIANTS:
        v = get_variant(name)
        p = build_prompt(v, **kw)
        s = _sections(p)
        assert s["C"] == base_s["C"]  # the target instance is never perturbed
        rubric_lines = [ln for ln in p.splitlines() if ln.startswith("Score ")]
        ids = [ln.split(":")[0].removeprefix("Score ") for ln in rubric_lines]
        # the order written out by hand, not read back from rubric_sequence (which it would then only echo)
        listed = [1 + SCORE_IDS[v.score_ids].index(i) for i in ids]
        if v.rubric_order == "ascending":
            assert listed == [1, 2, 3, 4, 5]
        elif v.rubric_order == "descending":
            assert listed == [5, 4, 3, 2, 1]
        else:
            assert sorted(listed) == [1, 2, 3, 4, 5] and listed not in ([1, 2, 3, 4, 5], [5, 4, 3, 2, 1])
            assert listed == rubric_sequence("random", seed=3, item_key="a")  # seeded: the item's own draw
        for k in range(1, 6):  # every description stays attached to its own score
            assert f"Score {score_id(k, v.score_ids)}: {RUBRIC.description(k)}" in p
        if v.reference_score is None:
            assert "Reference Answer" not in p and "reference answer" not in s["T"]
        else:
            ref_id = score_id(v.reference_score, v.score_ids)
            assert f"###Reference Answer (Score {ref_id}):\nref at {v.reference_score}" in p
            assert f"a reference answer that gets a score of {ref_id}" in s["T"]
        if v.family in ("baseline", "rubric_order"):
            assert s["T"] == base_s["T"]  # order needs no rewording
        if v.family == "score_ids":
            ids_text = ", ".join(SCORE_IDS[v.score_ids][:4])
            assert ids_text in s["T"] and "integer" not in s["T"]
    with pytest.raises(InputError, match="no reference answer with score 3"):
        build_prompt(get_variant("ref3"), **{**kw, "references": {5: "r"}})


def test_random_rubric_order_is_a_seeded_real_perturbation():
    orders = [tuple(rubric_sequence("random", seed=1, item_key=f"item{i}")) for i in range(300)]
    assert all(o not in ((1, 2, 3, 4, 5), (5, 4, 3, 2, 1)) for o in orders)
    assert all(sorted(o) == [1, 2, 3, 4, 5] for o in orders)
    assert len(set(orders)) > 60  # items get different orders
    assert orders == [tuple(rubric_sequence("random", seed=1, item_key=f"item{i}")) for i in range(300)]
    assert orders != [tuple(rubric_sequence("random", seed=2, item_key=f"item{i}")) for i in range(300)]


# ---------------------------------------------------------------------------------
# parsing on the study's path: raw answer -> run_requests -> score table


class EchoJudge(Judge):
    """Answers each request with the text in ``truth['text']`` (a real judge's raw answer)."""

    reads_truth = True

    def answer(self, requests):
        return [RawAnswer(text=r.truth["text"]) for r in requests]


def _echo_scores(texts: list[str], scheme: str, tmp_path) -> list[int]:
    judge = EchoJudge(JudgeSpec.from_dict({"name": "echo", "backend": "echo", "model": "echo"}))
    reqs = [JudgeRequest(messages=[Message("user", f"q{i}")], kind=OutputKind.SCORE, fmt="result", score_ids=scheme,
                         truth={"text": t}, meta={"dataset": "d", "item_id": str(i), "group_id": "g",
                                                  "variant": "baseline", "perturbation": "baseline",
                                                  "rubric_order": "ascending", "score_ids": scheme,
                                                  "reference_score": None, "repeat": 0, "truth_score": None})
            for i, t in enumerate(texts)]
    with CallCache(tmp_path / "echo.sqlite") as cache:
        frame = scores_frame(judge, reqs, run_requests(judge, reqs, cache, max_error_rate=None))
    return frame["score"].tolist()


_feedback = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ.,;!?-\n", max_size=80).filter(
    lambda t: not any(w in t.lower() for w in ("score", "rating", "grade", "result", "sorry")))


@settings(max_examples=60, deadline=None)
@given(score=st.integers(1, 5), scheme=st.sampled_from(sorted(SCORE_IDS)),
       case=st.sampled_from(["as_is", "lower", "upper"]), feedback=_feedback)
def test_every_score_in_every_scheme_round_trips_to_the_score_table(score, scheme, case, feedback, tmp_path_factory):
    sid = score_id(score, scheme)
    sid = {"as_is": sid, "lower": sid.lower(), "upper": sid.upper()}[case]
    texts = [f"[RESULT] {sid}", f"Feedback: {feedback} [RESULT] {sid}", f"Score: {sid}", f"Feedback: {feedback}\nScore: {sid}"]
    assert _echo_scores(texts, scheme, tmp_path_factory.mktemp("echo")) == [score] * len(texts)


@settings(max_examples=40, deadline=None)
@given(scheme=st.sampled_from(sorted(SCORE_IDS)), feedback=_feedback,
       bad=st.sampled_from(["0", "6", "9", "4.5", "vi", "vii", "F", "Z", "iiv", ""]))
def test_out_of_range_or_missing_scores_are_minus_one(scheme, feedback, bad, tmp_path_factory):
    texts = [f"[RESULT] {bad}", f"Feedback: {feedback} [RESULT] {bad}", f"Feedback: {feedback}"]
    if bad:
        texts.append(f"Score: {bad}")
    assert _echo_scores(texts, scheme, tmp_path_factory.mktemp("echo")) == [-1] * len(texts)


def test_examples_from_the_issue(tmp_path):
    assert _echo_scores(["Feedback: fine. [RESULT] iv", "[RESULT] IV"], "roman", tmp_path) == [4, 4]
    assert _echo_scores(["Score: B", "score: b", "[RESULT] a"], "letter", tmp_path) == [4, 4, 5]
    assert _echo_scores(["[RESULT] 4", "[RESULT] B"], "roman", tmp_path) == [-1, -1]  # other schemes' IDs


# ---------------------------------------------------------------------------------
# planted effects through the study's own tables


def test_reference_anchoring_pulls_scores_toward_the_reference_figure6(tmp_path):
    items = synthetic_items(300)
    anchored = score_all(sim_judge("anchored", reference_anchor=0.7, score_noise=0.5), items, tmp_path)
    control = score_all(sim_judge("control", score_noise=0.5), items, tmp_path)
    dist = distributions(pd.concat([anchored, control]), design_golds(items))

    def share(judge, variant, k):
        d = dist[(dist["judge"] == judge) & (dist["variant"] == variant)].set_index("score")["share"]
        return d.get(k, 0.0)

    mean = anchored[anchored["score"] > 0].groupby("variant")["score"].mean()
    assert list(mean[["ref1", "ref2", "ref3", "ref4", "ref5"]]) == sorted(mean[["ref1", "ref2", "ref3", "ref4", "ref5"]])
    for k in range(1, 6):
        # mass moves to the reference's score: more of it than without a reference, the mode of that row
        assert share("anchored", f"ref{k}", k) > share("anchored", "baseline", k) + 0.1
        row = dist[(dist["judge"] == "anchored") & (dist["variant"] == f"ref{k}") & (dist["score"] > 0)]
        assert abs(int(row.loc[row["count"].idxmax(), "score"]) - k) <= 1
        # scores sit closer to the reference's score than without a reference
        dist_k = {v: (anchored[(anchored["variant"] == v) & (anchored["score"] > 0)]["score"] - k).abs().mean()
                  for v in ("baseline", f"ref{k}")}
        assert dist_k[f"ref{k}"] < dist_k["baseline"] - 0.3
        # the control judge ignores the reference score
        assert abs(share("control", f"ref{k}", k) - share("control", "baseline", k)) < 0.08
    gold_row = dist[dist["judge"] == "[gold:design]"]
    assert gold_row["count"].sum() == len(items)


@pytest.mark.parametrize("seed", range(4))
def test_no_planted_effect_means_fluctuation_cis_cover_zero(seed, tmp_path):
    items = synthetic_items(120, seed=seed)
    scores = score_all(sim_judge("control", seed=seed, score_noise=0.8), items, tmp_path)
    _, fl = correlation_tables(scores, design_golds(items), n_boot=400, seed=seed)
    fams = fl[fl["family"] != "all"]
    assert len(fams) == 3
    # simultaneous 95% bands per family: at most one family of three may exclude 0 by chance
    assert fams["significant"].sum() <= 1, fams
    assert (fl["sim_halfwidth"] > 0).all()


def test_planted_effects_are_detected(tmp_path):
    items = synthetic_items(150, seed=11)
    judge = sim_judge("planted", score_noise=0.5, reference_anchor=0.7,
                      rubric_order={"random": {"noise": 1.5}}, score_id_effects={"roman": {"noise": 1.5}})
    t3, fl = correlation_tables(score_all(judge, items, tmp_path), design_golds(items), n_boot=400)
    sig = fl.set_index("family")["significant"]
    assert sig["rubric_order"] and sig["score_ids"] and sig["reference"] and sig["all"]
    row = t3.set_index("variant")
    assert row.loc["random", "delta_ci_high"] < 0 and row.loc["roman", "delta_ci_high"] < 0
    # the unplanted variants stay put
    assert row.loc["descending", "delta_ci_low"] <= 0 <= row.loc["descending", "delta_ci_high"]
    assert row.loc["letter", "delta_ci_low"] <= 0 <= row.loc["letter", "delta_ci_high"]
    assert fl.set_index("family").loc["rubric_order", "argmax_variant"] == "random"


def test_unparsed_answers_are_counted_not_correlated(tmp_path):
    items = synthetic_items(200, seed=3)
    scores = score_all(sim_judge("sloppy", malformed_rate=0.15, score_noise=0.5), items, tmp_path,
                       variants=["baseline", "letter"])
    t3, _ = correlation_tables(scores, design_golds(items), n_boot=200)
    for v, g in scores.groupby("variant"):
        row = t3[t3["variant"] == v].iloc[0]
        assert row["n_unparsed"] == (g["score"] == -1).sum() > 10
        ok = g[g["score"] > 0].set_index("item_id")
        gold = {it.item_id: it.design_score for it in items}
        expected = stats.spearmanr([gold[i] for i in ok.index], ok["score"]).statistic
        assert row["rho"] == pytest.approx(expected, abs=1e-12)
    assert set(scores.loc[scores["score"] == -1, "status"]) <= {"unparsed", "refusal", "error"}


def test_aggregating_over_variants_improves_rho_when_variant_noise_is_independent(tmp_path):
    items = synthetic_items(200, seed=5)
    scores = score_all(sim_judge("noisy", score_noise=1.0), items, tmp_path,
                       variants=["baseline", "descending", "random", "letter", "roman"])
    agg = aggregation_table(scores, design_golds(items), {"format": ["baseline", "descending", "random", "letter", "roman"]},
                            ["mean", "majority"], n_boot=400)
    mean = agg.set_index("aggregator").loc["mean"]
    assert mean["improves"] and mean["delta_ci_low"] > 0
    assert agg.set_index("aggregator").loc["majority", "delta_rho"] > 0


# ---------------------------------------------------------------------------------
# statistics against references


def test_masked_bootstrap_correlations_match_scipy():
    rng = np.random.default_rng(0)
    a = rng.integers(1, 6, (40, 30)).astype(float)
    a[rng.random(a.shape) < 0.15] = np.nan
    assert np.allclose(rank_rows(a), stats.rankdata(a, axis=-1, nan_policy="omit"), equal_nan=True)
    for _ in range(20):
        x = rng.integers(1, 6, 50).astype(float)
        y = np.clip(x + rng.normal(0, 1.2, 50), 1, 5).round()
        y[rng.random(50) < 0.1] = np.nan
        ok = ~np.isnan(y)
        assert correlation(x, y, "rho") == pytest.approx(stats.spearmanr(x[ok], y[ok]).statistic, abs=1e-12)
        assert correlation(x, y, "r") == pytest.approx(stats.pearsonr(x[ok], y[ok]).statistic, abs=1e-12)


def test_krippendorff_alpha_reproduces_the_textbook_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example with 4 observers,
    # 12 units and missing values: alpha = 0.743 nominal, 0.815 ordinal, 0.849 interval.
    n = np.nan
    data = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n], [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
                     [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n], [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n]])
    assert krippendorff_alpha_ordinal(data) == pytest.approx(0.815, abs=5e-4)


def test_stability_of_identical_and_independent_runs():
    rng = np.random.default_rng(1)
    same = np.repeat(rng.integers(1, 6, (200, 1)), 3, axis=1).astype(float)
    s = stability(same, n_boot=200)
    assert s["exact_agreement"] == 1.0 and s["alpha_ordinal"] == pytest.approx(1.0)
    indep = rng.integers(1, 6, (400, 3)).astype(float)
    s = stability(indep, n_boot=200)
    assert s["alpha_ci_low"] < 0 < s["alpha_ci_high"]
    assert s["exact_ci_low"] < 1 / 25 < s["exact_ci_high"]  # P(three equal) = 5 / 125
    assert sum(s[f"n_score_{k}"] for k in range(1, 6)) == 1200


def test_gpt4_recorded_stability_is_computed_from_the_file(data_root):
    items = load_items("mt_bench", {"loader": "prometheus", "source": "prometheus_eval/mt_bench"})
    rows = json.loads((data_root / "prometheus_eval" / "mt_bench_eval.json").read_text(encoding="utf-8"))
    runs = np.array([r["gpt4_score"] for r in rows], float)
    s = stability(np.array([[it.gpt4_1, it.gpt4_2, it.gpt4_3] for it in items], float), n_boot=200)
    assert s["n_items"] == 320 and s["exact_agreement"] == pytest.approx(np.mean((runs == runs[:, :1]).all(axis=1)))
    assert 0.5 < s["alpha_ordinal"] < 1 and s["alpha_ci_low"] < s["alpha_ordinal"] < s["alpha_ci_high"]
    assert [s[f"n_score_{k}"] for k in range(1, 6)] == [int((runs == k).sum()) for k in range(1, 6)]
    assert all(it.gold_gpt4 == majority_score([it.gpt4_1, it.gpt4_2, it.gpt4_3]) for it in items)


def test_majority_score():
    assert majority_score([3, 2, 3]) == 3
    assert majority_score([1, 2, 5]) == 2  # no majority: the median
    assert majority_score([4, -1, None]) == 4  # failed scorings do not vote
    assert majority_score([-1, None]) is None
    assert majority_score([2, 4]) == 3


# ---------------------------------------------------------------------------------
# generation-review pipeline


def test_generation_review_accepts_on_target_texts_and_alternates_roles(tmp_path):
    items = synthetic_items(120, seed=2)
    tasks = tasks_for(items, "reference", {(it.dataset, it.group_id): [1, 2, 3, 4] for it in items})
    models = [sim_judge("writer-a", seed=1, label_accuracy=0.9), sim_judge("writer-b", seed=2, label_accuracy=0.9)]
    with CallCache(tmp_path / "gen.sqlite") as cache:
        res, calls = run_generation_review(tasks, models, cache, max_attempts=4, sim_hit_rate=0.6)
        summary = acceptance_summary(res, calls)
        again, _ = run_generation_review(tasks, models, cache, max_attempts=4, sim_hit_rate=0.6)
        asked = sum(r["new_calls"] for r in cache.stats())
    overall = summary[(summary["level"] == 0) & (summary["generator"] == "all")].iloc[0]
    per_writer = summary[summary["generator"] != "all"]
    assert set(per_writer["generator"]) == {"writer-a", "writer-b"}
    assert per_writer["n_reviews"].sum() == overall["n_reviews"]
    # reviewing raises the share of texts really written at the target above the writer's hit rate
    assert overall["sim_accepted_match_rate"] > 0.75 and overall["accept_rate_final"] > 0.9
    assert res["attempts"].between(1, 4).all()
    gen = calls[calls["role"] == "generator"]
    first = gen[gen["attempt"] == 0].set_index(["group_id", "level"])["judge"]
    second = gen[gen["attempt"] == 1].set_index(["group_id", "level"])["judge"]
    both = first.index.intersection(second.index)
    assert len(both) > 10 and (first[both] != second[both]).all()  # roles swap between attempts
    rev = calls[calls["role"] == "reviewer"].set_index(["group_id", "level", "attempt"])["judge"]
    g = gen.set_index(["group_id", "level", "attempt"])["judge"]
    assert (g.loc[rev.index] != rev).all()  # nobody reviews their own text
    assert set(first) == {"writer-a", "writer-b"}
    pd.testing.assert_frame_equal(res, again)
    assert asked == len(calls)  # the second run asked nothing


def test_reference_levels_follow_the_perturbations():
    assert reference_levels_needed(ALL_VARIANTS, [1, 2, 3, 4]) == [1, 2, 3, 4]
    assert reference_levels_needed(["baseline", "ref2", "ref5"], [1, 2, 3, 4]) == [2]
    with pytest.raises(ConfigError, match="reference_levels"):
        reference_levels_needed(["ref3"], [1, 2])


# ---------------------------------------------------------------------------------
# data and config errors


def test_rubric_set_ships_with_the_project():
    items = load_items("rubric_set", {"loader": "rubric_set", "source": "data/scoring/rubric_set.jsonl"})
    assert len(items) == 40 and {it.design_score for it in items} == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert all(it.truth_source == "design" for it in items)


def test_malformed_rows_name_file_and_row(tmp_path):
    good = {"group_id": "g", "instruction": "i", "criterion": "c", "rubric": {str(k): "d" for k in range(1, 6)},
            "reference_answer": "r", "responses": [{"text": "t", "design_score": 3}]}
    bad = dict(good, group_id="h", responses=[{"text": "t", "design_score": 7}])
    p = tmp_path / "set.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=r"set.jsonl:2 responses\[0\]: design_score 7 is outside 1-5"):
        load_items("mine", {"loader": "rubric_set", "source": str(p)})
    with pytest.raises(InputError, match="not a Prometheus absolute-grading prompt"):
        parse_prometheus_prompt("###Task Description:\nno sections", where="x.json element 3")


def test_scoring_profile_overlay_touches_only_scoring_fields():
    entry = {"name": "s", "backend": "simulated", "model": "m", "options": {"profile": {"biases": {"markdown": 0.3}}}}
    out = with_scoring_profile(entry, {"reference_anchor": 0.4})
    assert out["options"]["profile"] == {"biases": {"markdown": 0.3}, "reference_anchor": 0.4}
    assert entry["options"]["profile"] == {"biases": {"markdown": 0.3}}  # the panel entry is not mutated
    with pytest.raises(ConfigError, match="not scoring field"):
        with_scoring_profile(entry, {"biases": {"markdown": 0.9}})


def test_every_registered_variant_builds():
    for name in VARIANTS.names():
        v = get_variant(name)
        p = build_prompt(v, instruction="q", response="a", rubric=RUBRIC, references={k: "r" for k in range(1, 6)})
        assert p.endswith("###Feedback: ")


def _biggen_rows() -> list[dict]:
    """Rows in the layout of BiGGen-Bench-Results' human_eval split (the shipped own-data example)."""
    return [json.loads(line) for line in (REPO / "data/scoring/own_data_example.jsonl").read_text().splitlines()]


def test_biggen_loader_reads_the_published_human_eval_layout(tmp_path):
    rows = _biggen_rows()
    # the published split is parquet with score_rubric as a struct: write it so
    p = tmp_path / "human_eval-00000-of-00001.parquet"
    pd.DataFrame(rows).to_parquet(p)
    for source in (p, REPO / "data/scoring/own_data_example.jsonl"):
        big = load_items("bgb", {"loader": "biggen", "source": str(source)})
        assert len(big) == 8  # the multilingual row is left out
        assert {it.category for it in big} == {"reasoning", "planning"}
        by = {it.item_id: it for it in big}
        it = by["reasoning_unit_conversion_0-model-c"]
        assert it.human_score == 5.0 and it.gpt4_1 == 5.0 and it.gold_gpt4 == 5.0 and it.truth_source == "human"
        assert it.group_id == "reasoning_unit_conversion_0" and it.response_source == "model-c"
        assert it.rubric_3 == "Right value but no explanation of the factor."
        assert it.reference_5.startswith("750 ml is 0.75 litres")
        assert by["planning_packing_list_1-model-b"].human_score == 2.0
    golds = gold_frame(items_frame(big), None)
    assert set(golds["gold_source"]) == {"human", "gpt4"}
    assert len(load_items("bgb", {"loader": "biggen", "source": str(p), "multilingual": True})) == 9
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{**rows[0], "human_score": 9}]))
    with pytest.raises(InputError, match=r"bad.json element 0: human_score 9 is outside 1-5"):
        load_items("bgb", {"loader": "biggen", "source": str(bad)})
    nomodel = tmp_path / "nomodel.json"
    nomodel.write_text(json.dumps([{k: v for k, v in rows[0].items() if k != "model_name"}]))
    with pytest.raises(InputError, match=r"nomodel.json element 0: missing field 'id' or 'model_name'"):
        load_items("bgb", {"loader": "biggen", "source": str(nomodel)})


def test_prometheus_loader_reads_flask_eval_human_scores():
    """Prometheus' flask_eval.json (full FLASK with human scores): criteria and human_score are read."""
    src = REPO / "data/scoring/fixtures/flask_eval.json"
    rows = json.loads(src.read_text())
    fl = load_items("flask_full", {"loader": "prometheus", "source": str(src)})
    assert len(fl) == len(rows) == 7
    for row, it in zip(rows, fl, strict=True):
        assert it.human_score == pytest.approx(np.mean(row["human_score"]))  # the annotators' mean
        assert it.gold_gpt4 == majority_score(row["gpt4_score"]) and it.truth_source == "human"
        assert it.category == row["criteria"] and it.response_source == row["response_source"]
    # one question graded on two skills: two rubric groups, each with its own rubric
    groups = {it.group_id: it.criterion for it in fl}
    assert set(groups) == {"3-Factuality", "3-Conciseness", "17-Logical_Correctness"}
    assert groups["3-Factuality"] != groups["3-Conciseness"]
    golds = gold_frame(items_frame(fl), None)
    assert (golds["gold_source"] == "human").sum() == 7
    # the MT-Bench file has no human scores: none appear
    assert all(it.human_score is None for it in load_items("mt", {"loader": "prometheus", "source": "prometheus_eval/mt_bench"}))


def test_flask_loader_rejects_the_old_invented_responses_format(tmp_path):
    with pytest.raises(InputError, match=r"flask_eval\.json -- use loader: prometheus"):
        load_items("flask", {"loader": "flask", "source": "flask/hard", "responses": str(tmp_path / "x.jsonl")})


# ---------------------------------------------------------------------------------
# on_reject: drop -- paper 004's "accept only matched references"


def test_drop_policy_leaves_unmatched_items_out_of_their_variant_counted(tmp_path):
    items = synthetic_items(40, seed=8)
    tasks = tasks_for(items, "reference", {(it.dataset, it.group_id): [1, 2, 3, 4] for it in items})
    models = [sim_judge("writer-a", seed=1, label_accuracy=0.95), sim_judge("writer-b", seed=2, label_accuracy=0.95)]
    variants = [get_variant(v) for v in ALL_VARIANTS]
    with CallCache(tmp_path / "gen.sqlite") as cache:
        # a weak writer and one attempt: many references are never accepted, and under drop have no text
        refs, _ = run_generation_review(tasks, models, cache, max_attempts=1, sim_hit_rate=0.3, on_reject="drop")
        rejected = refs[~refs["accepted"]]
        assert len(rejected) > 20 and rejected["text"].isna().all()
        judge = sim_judge("control", score_noise=0.6)
        with pytest.raises(InputError, match=r"no reference answer with score 1 .*generation\.on_reject: drop"):
            judge_scores(judge, items, variants, cache, references=refs, max_error_rate=None)
        scores = judge_scores(judge, items, variants, cache, references=refs, max_error_rate=None,
                              missing_reference="drop")
    cov = reference_coverage(items, variants, refs).set_index("variant")
    for k in (1, 2, 3, 4):
        lost = set(rejected.loc[rejected["level"] == k, "group_id"])
        got = set(scores.loc[scores["variant"] == f"ref{k}", "group_id"])
        assert got == {it.group_id for it in items} - lost  # exactly the unmatched items left the variant
        assert cov.loc[f"ref{k}", "n_dropped"] == len(lost) and cov.loc[f"ref{k}", "n_items"] == 40
        assert cov.loc[f"ref{k}", "n_with_reference"] == 40 - len(lost)
    assert cov.loc["ref5", "n_dropped"] == 0  # the full-mark reference comes with the data
    for v in ("baseline", "descending", "letter", "ref5"):
        assert (scores["variant"] == v).sum() == 40  # every other variant keeps every item
    t3, _ = correlation_tables(scores, design_golds(items), n_boot=100)
    t = t3.set_index("variant")
    for k in (1, 2, 3, 4):  # Table 3 counts each variant on its own items; delta rho is paired on the common ones
        assert t.loc[f"ref{k}", "n"] == t.loc[f"ref{k}", "n_common"] == 40 - cov.loc[f"ref{k}", "n_dropped"]


def test_rejected_synthesised_responses_take_their_item_out_with_a_warning():
    items = synthetic_items(3)
    for it in items:
        it.response = ""
    res = pd.DataFrame([{"dataset": "synth", "group_id": it.group_id, "level": 3,
                         "text": None if i == 1 else "A text.", "generator": "w", "simulated_level": np.nan}
                        for i, it in enumerate(items)])
    with pytest.warns(UserWarning, match=r"1 item\(s\) left out.*synth/i1"):
        kept = apply_synthesised(items, res)
    assert [it.item_id for it in kept] == ["i0", "i2"] and all(it.response == "A text." for it in kept)


# ---------------------------------------------------------------------------------
# an informative reference (paper 004, Fig. 5): planted, recovered, and visible in Table 3


def _continuous_items(n: int, seed: int) -> list[ScoringItem]:
    """Items whose latent truth is continuous over the scale (the ordered model takes the clipping at 1 and 5)."""
    items = synthetic_items(n, seed=seed)
    truth = np.random.default_rng(seed).uniform(1.0, 5.0, n)
    for it, t in zip(items, truth, strict=True):
        it.truth_score, it.design_score = float(t), float(t)
    return items


def _noise_sd(scores: pd.DataFrame, items, variant: str) -> float:
    """The judge's noise sd under one variant, from an ordered-probit fit of score on truth.

    The simulated score is round(truth + mean shift + sd * z) on 1..5: an ordered probit with
    slope 1/sd on the truth (statsmodels' OrderedModel, cut points free).
    """
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    truth = {it.item_id: it.truth_score for it in items}
    s = scores[(scores["variant"] == variant) & (scores["score"] > 0)]
    y = pd.Series(pd.Categorical(s["score"], categories=sorted(s["score"].unique()), ordered=True))
    x = pd.DataFrame({"truth": s["item_id"].map(truth).to_numpy(float)})
    fit = OrderedModel(y, x, distr="probit").fit(method="bfgs", disp=False)
    return 1.0 / float(fit.params["truth"])


def test_planted_reference_information_is_recovered(tmp_path):
    """reference_information[k] = 1 - (sd under a score-k reference / sd without one)^2, recovered
    from the scores alone; the baseline sd (the planted score_noise) is recovered first."""
    planted = {1: 0.0, 3: 0.45, 5: 0.75}
    items = _continuous_items(3000, seed=21)
    informed = score_all(sim_judge("informed", score_noise=0.7, reference_information={**planted, 2: 0.2}), items,
                         tmp_path, variants=["baseline", "ref1", "ref3", "ref5"])
    assert _noise_sd(informed, items, "baseline") == pytest.approx(0.7, rel=0.05)
    for k, w in planted.items():
        est = 1.0 - (_noise_sd(informed, items, f"ref{k}") / 0.7) ** 2
        assert est == pytest.approx(w, abs=0.1), (k, est)
    control = score_all(sim_judge("control", score_noise=0.7), items, tmp_path, variants=["ref5"])
    assert 1.0 - (_noise_sd(control, items, "ref5") / 0.7) ** 2 == pytest.approx(0.0, abs=0.1)  # none planted


def test_informative_full_mark_reference_raises_rho_as_in_figure5(tmp_path):
    """With information rising in the reference's score, rho rises with it (the paper's Fig. 5),
    even for a judge that is also pulled toward the reference's score; without it, a reference only hurts."""
    items = synthetic_items(300, seed=4)
    spread = np.random.default_rng(4).uniform(-0.4, 0.4, len(items))
    for it, u in zip(items, spread, strict=True):  # a continuous truth: the designed levels plus within-level spread
        it.truth_score = float(it.design_score) + float(u)
    variants = ["baseline", "ref1", "ref2", "ref3", "ref4", "ref5"]
    info = {1: 0.1, 2: 0.25, 3: 0.4, 4: 0.55, 5: 0.7}
    informed = score_all(sim_judge("informed", score_noise=0.9, reference_anchor=0.15, reference_information=info),
                         items, tmp_path, variants=variants)
    anchored = score_all(sim_judge("anchored", score_noise=0.9, reference_anchor=0.15), items, tmp_path,
                         variants=variants)
    t3, _ = correlation_tables(pd.concat([informed, anchored]), design_golds(items), n_boot=300)
    rho = t3.set_index(["judge", "variant"])["rho"]
    ladder = [rho[("informed", v)] for v in ["ref1", "ref2", "ref3", "ref4", "ref5"]]
    assert stats.spearmanr(range(5), ladder).statistic > 0.85  # rises with the reference's score
    assert ladder[4] > ladder[0] + 0.05
    row = t3.set_index(["judge", "variant"]).loc[("informed", "ref5")]
    assert row["delta_ci_low"] > 0  # the full-mark reference beats no reference
    assert t3.set_index(["judge", "variant"]).loc[("anchored", "ref5"), "delta_rho"] < 0.01


def test_reference_information_is_validated():
    with pytest.raises(ConfigError, match=r"reference_information 6: 0.5; scores are 1..5"):
        sim_judge("bad", reference_information={6: 0.5})
    with pytest.raises(ConfigError, match=r"reference_information 5: 1.0; scores are 1..5, shares in \[0, 1\)"):
        sim_judge("bad", reference_information={5: 1.0})
    assert sim_judge("ok", reference_information={"5": 0.4}).profile.reference_information == {5: 0.4}
    out = with_scoring_profile({"name": "s", "backend": "simulated", "model": "m"},
                               {"reference_information": {5: 0.4}})
    assert out["options"]["profile"] == {"reference_information": {5: 0.4}}


# ---------------------------------------------------------------------------------
# Table 2: gold candidates against human scores


def test_table2_ranks_gold_candidates_against_human_scores(tmp_path):
    from judgelab.scoring.gold_candidates import RECORDED_GPT4, table2

    items = synthetic_items(200, seed=13)
    rng = np.random.default_rng(13)
    for it in items:  # humans score the truth; the recorded GPT-4 scores it with more noise
        it.human_score = float(np.clip(round(it.truth_score + rng.normal(0, 0.4)), 1, 5))
        it.gold_gpt4 = float(np.clip(round(it.truth_score + rng.normal(0, 1.2)), 1, 5))
    frame = items_frame(items)
    gold = get_variant("gold")
    cands = {}
    with CallCache(tmp_path / "gold.sqlite") as cache:
        for name, noise in (("sharp", 0.3), ("blurry", 1.3)):
            cands[name] = judge_scores(sim_judge(name, score_noise=noise, malformed_rate=0.05), items, [gold], cache,
                                       references=None, repeats=3, temperature=0.7, max_error_rate=None)
    t2 = table2(frame, cands, against=["human", "design"], n_boot=200, seed=1)
    h = t2[t2["reference_source"] == "human"].set_index("candidate")
    assert list(h.index) == ["sharp", "blurry", RECORDED_GPT4]
    assert h.loc["sharp", "rho"] > h.loc[RECORDED_GPT4, "rho"] and h.loc["sharp", "rho"] > h.loc["blurry", "rho"] + 0.1
    assert h.loc[RECORDED_GPT4, "source"] == "recorded" and not h.loc[RECORDED_GPT4, "simulated"]
    assert h.loc["sharp", "simulated"] and h.loc["sharp", "source"] == "gold_protocol"
    # the candidate's gold is the majority of its three scorings; unparsed ones counted, never scored
    s = cands["blurry"]
    assert h.loc["blurry", "n_unparsed"] == (s["score"] == -1).sum() > 0
    maj = s.groupby("item_id")["score"].agg(lambda v: majority_score([x for x in v if x > 0]))
    human = {it.item_id: it.human_score for it in items}
    ok = maj.dropna()
    assert h.loc["blurry", "n"] == len(ok)
    assert h.loc["blurry", "rho"] == pytest.approx(stats.spearmanr([human[i] for i in ok.index], ok).statistic,
                                                   abs=1e-12)
    assert h.loc["blurry", "r"] == pytest.approx(stats.pearsonr([human[i] for i in ok.index], ok).statistic, abs=1e-12)
    assert (h["rho_ci_low"] < h["rho"]).all() and (h["rho"] < h["rho_ci_high"]).all()
    assert set(t2["reference_source"]) == {"human", "design"}
    assert table2(frame.assign(human_score=None, design_score=None), cands, against=["human", "design"]).empty
