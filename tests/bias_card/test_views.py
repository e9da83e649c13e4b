"""Strict and lenient views of the card, and the benchmarks' own pair metrics (JudgeBench, Arena-Hard)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from judgelab.bias_card import CardSettings, bias_card
from judgelab.bias_card.card import card_view
from judgelab.bias_card.report import card_markdown
from judgelab.bias_card.rows_benchmark import arena_hard_pair_scores, judgebench_pair_correct
from judgelab.verdict_import import import_verdicts, preset_mapping
from tests.helpers.bias_card_logs import Call, both_orders, table

FAST = CardSettings(n_resamples=200)
FIXTURES = Path(__file__).parents[1] / "fixtures" / "verdict_logs" / "judgebench"


def _pct(s: str) -> float:
    m = re.match(r"\s*(\d+) / (\d+)", s)
    assert m, s
    return int(m.group(1)) / int(m.group(2))


# --------------------------------------------------------------------------------------------- strict / lenient


def test_strict_view_counts_fallback_verdicts_as_unparsed():
    calls = []
    for i in range(30):
        fb = i < 6
        calls += both_orders(f"q{i}", f"p{i}", "A", "B", status_ab="fallback" if fb else "ok")
    card = bias_card(table(calls), FAST)
    strict, lenient = card_view(card, "strict"), card_view(card, "lenient")
    assert lenient.loc["parse_failures", "estimate"] == 0.0
    assert strict.loc["parse_failures", "estimate"] == pytest.approx(6 / 60)
    assert strict.loc["accuracy_AB", "estimate"] == pytest.approx(24 / 30)  # a missing verdict counts wrong
    assert lenient.loc["accuracy_AB", "estimate"] == 1.0
    assert strict.loc["positional_agreement", "n"] == 24 and lenient.loc["positional_agreement", "n"] == 30
    assert (strict["n_parsed"] == 54).all() and (lenient["n_parsed"] == 60).all()
    md = card_markdown(card, title="t", settings=FAST, n_verdicts={}, simulated=False)
    assert "Strict view (6 fewer parsed verdicts; fallback verdicts and texts the source's own rule reads no " \
           "verdict in count as unparsed):" in md
    assert "| strict | accuracy_AB |" in md and "| lenient | accuracy_AB |" in md


def test_views_setting_selects_the_views():
    card = bias_card(table(both_orders("q", "p", "A", "B")), CardSettings(n_resamples=50, views=("strict",)))
    assert set(card["view"]) == {"strict"}
    with pytest.raises(ValueError, match="unknown card view 'loose'"):
        bias_card(table(both_orders("q", "p", "A", "B")), CardSettings(views=("loose",)))


@pytest.mark.shared_data
def test_strict_view_reproduces_published_counts_of_a_first_match_extraction(data_root, tmp_path):
    """LLMBar's PaLM2 (Natural) result.json, read from its raw completions with LLMBar's own
    'Output (a)/(b)' rule.  The authors found no verdict in 4 empty completions (winner null); we
    write into them answers that only a fallback rule reads ('Therefore, Assistant B is better').
    The strict view still equals the authors' statistics.json; the lenient one counts the fallbacks."""
    src = data_root / "llmbar_judge_outputs/Natural/evaluators/PaLM2/Vanilla"
    dst = tmp_path / "Natural/evaluators/PaLM2/Vanilla"
    dst.mkdir(parents=True)
    shutil.copy(src / "statistics.json", dst)
    records = json.loads((src / "result.json").read_text())
    unparsed = [i for i, r in enumerate(records) for g in r["results"][0].values() if g["winner"] is None]
    assert sorted(set(unparsed)) == [54, 57] and {records[i]["label"] for i in unparsed} == {2}
    for i in (54, 57):  # gold is output 2: shown second as stored, shown first when swapped
        records[i]["results"][0]["swap = False"]["completion"] = ["The second one is more helpful. "
                                                                  "Therefore, Assistant B is better.", ""]
        records[i]["results"][0]["swap = True"]["completion"] = ["Therefore, Assistant A is better.", ""]
    (dst / "result.json").write_text(json.dumps(records))

    def game(flag: str, order: str) -> dict:
        return {"order": order, "verdict": {"text": ["results", 0, flag, "completion", 0], "parse": "output_ab",
                                            "frame": "shown"}}

    mapping = preset_mapping("llmbar", {"games": [game("swap = False", "AB"), game("swap = True", "BA")]})
    log = import_verdicts([dst / "result.json"], mapping)
    assert (log["status"] == "fallback").sum() == 4
    card = bias_card(log, FAST)
    stats = json.loads((dst / "statistics.json").read_text())
    strict, lenient = card_view(card, "strict"), card_view(card, "lenient")
    for metric, key in (("accuracy_AB", "correct_False"), ("accuracy_BA", "correct_True"),
                        ("correct_both", "correct_both"), ("positional_agreement_all", "equal")):
        assert strict.loc[metric, "estimate"] == pytest.approx(_pct(stats[key]), abs=1e-12), metric
    assert lenient.loc["accuracy_AB", "estimate"] == pytest.approx(_pct(stats["correct_False"]) + 0.02)
    assert lenient.loc["correct_both", "estimate"] == pytest.approx(_pct(stats["correct_both"]) + 0.02)


# --------------------------------------------------------------------------------------------- JudgeBench


def _judgebench_published(path: Path) -> float:
    """compute_final_metrics(pairs, reverse_order=True) of ScalerLab/JudgeBench utils/metrics.py, transcribed."""
    def flip(d):
        return {"A>B": "B>A", "B>A": "A>B"}.get(d, d)

    n_correct = n = 0
    for line in path.read_text().splitlines():
        pair = json.loads(line)
        j1, j2 = pair["judgments"]
        d1 = j1["decision"] if j1 is not None else None
        d2 = flip(j2["decision"] if j2 is not None else None)
        counter = sum(1 if d == pair["label"] else -1 if d == flip(pair["label"]) else 0 for d in (d1, d2))
        n_correct += counter > 0
        n += 1
    return n_correct / n


def test_judgebench_pair_score_equals_the_published_scoring_on_real_records():
    files = sorted(FIXTURES.glob("*judge_name=arena_hard*.jsonl"))
    assert len(files) == 2
    card = card_view(bias_card(import_verdicts(files, preset_mapping("judgebench")), FAST))
    for f in files:
        judge = "arena_hard/" + f.stem.split("judge_model=")[1]
        row = card.loc[(judge, "judgebench_accuracy")]
        assert row["estimate"] == pytest.approx(_judgebench_published(f)), judge
        assert row["status"] == "descriptive" and row["ci_low"] < row["ci_high"]
    # o1-mini's three pairs: consistent & right, consistent & wrong, inconsistent -> 1/3,
    # where the per-game accuracy says 3/6
    o1 = "arena_hard/o1-mini-2024-09-12"
    assert card.loc[(o1, "judgebench_accuracy"), "estimate"] == pytest.approx(1 / 3)
    assert card.loc[(o1, "accuracy_average"), "estimate"] == pytest.approx(3 / 6)


def test_judgebench_rule_by_hand():
    ab = np.array(["A", "A", "A", "tie", "", "B", "", "B"], dtype=object)
    ba = np.array(["A", "tie", "B", "tie", "A", "B", "", "tie"], dtype=object)
    gold = np.array(["A"] * 8, dtype=object)
    assert judgebench_pair_correct(ab, ba, gold).tolist() == [True, True, False, False, True, False, False, False]
    assert judgebench_pair_correct(np.array(["B"]), np.array(["tie"]), np.array(["B"])).tolist() == [True]


# --------------------------------------------------------------------------------------------- Arena-Hard


LABEL_TO_SCORE = {"A>B": [1], "A>>B": [1] * 3, "A=B": [0.5], "B>A": [0], "B>>A": [0] * 3}


def _arena_published(games: list[tuple[str, str]]) -> float:
    """load_judgments of lmarena/arena-hard-auto show_result.py, transcribed: game 1 shows the
    baseline first; the model's battles are label_to_score[game2] + [1 - s for game1]."""
    battles = []
    for g1, g2 in games:
        battles += LABEL_TO_SCORE[g2] + [1 - s for s in LABEL_TO_SCORE[g1]]
    return float(np.mean(battles))


def test_arena_hard_score_equals_the_published_aggregation():
    games = [("A>>B", "A>B"), ("B>A", "A>>B"), ("A=B", "B>A"), ("B>>A", "A>>B"), ("A>B", "A=B")] * 4
    calls = []
    for i, (g1, g2) in enumerate(games):
        # AB = game 1 (stored A = baseline first), BA = game 2 (the model first); labels as shown
        calls.append(Call(f"q{i}", f"p{i}", "AB", {"A>>B": "A", "A>B": "A", "A=B": "tie", "B>A": "B",
                                                     "B>>A": "B"}[g1], label=g1, gold=""))
        calls.append(Call(f"q{i}", f"p{i}", "BA", {"A>>B": "A", "A>B": "A", "A=B": "tie", "B>A": "B",
                                                     "B>>A": "B"}[g2], label=g2, gold=""))
    calls.append(Call("q99", "p99", "AB", "A", label="A>B", gold=""))  # a pair with a null game is dropped
    calls.append(Call("q99", "p99", "BA", "", "unparsed", gold=""))
    row = card_view(bias_card(table(calls), FAST)).loc["arena_hard_score"]
    assert row["estimate"] == pytest.approx(_arena_published(games))
    assert row["n"] == len(games) and row["ci_low"] < row["estimate"] < row["ci_high"]
    num, den = arena_hard_pair_scores(np.array(["A"]), np.array(["B"]), np.array([True]), np.array([False]))
    assert (num[0], den[0]) == (1.0, 4.0)


# --------------------------------------------------------------------------------------------- scale


def test_cluster_bootstrap_memory_is_bounded_by_chunks():
    """200 resamples of 200k items: a full resamples x items index matrix is 160 MB (int32) or
    320 MB (int64); the chunked bootstrap stays within a few chunks of 2M cells."""
    import tracemalloc

    from judgelab.stats.clustered import _bootstrap_totals, cluster_ratio_ci, ratio_cluster_variance

    rng = np.random.default_rng(0)
    k = 200_000
    cn, cd = rng.random(k), np.ones(k)
    tracemalloc.start()
    tot = _bootstrap_totals(np.column_stack([cn, cd]), 200, 0, CardSettings().chunk_cells)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert tot.shape == (200, 2) and (tot[:, 1] > 0).all()
    assert peak < 60e6
    # and it is the cluster bootstrap: its variance matches the cluster-robust one
    est, lo, hi, var = cluster_ratio_ci(cn[:2000], cd[:2000], np.arange(2000), alpha=0.05,
                                        n_resamples=2000, seed=0, chunk_cells=CardSettings().chunk_cells)
    assert var == pytest.approx(ratio_cluster_variance(cn[:2000], cd[:2000]), rel=0.15)
    assert lo < est < hi
