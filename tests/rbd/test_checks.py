"""Checks of the rbd study's filters and classifiers that would be false if the code were wrong.

* the teacher filter keeps exactly the traces whose label matches b_i and that have reasoning;
* the detector test set is balanced: half Yes, half No, equal per bias type within a label,
  whatever the imbalance of the pool (paper 001, Sec. 4.1);
* the label-only classifier learns a separable label (both labels, above chance), so a
  classifier that always answers "no" fails.
"""

from __future__ import annotations

from collections import Counter

import pytest

from judgelab.cache import CallCache
from judgelab.rbd.detector import DetectorCase, balanced_test_set
from judgelab.rbd.supervision import collect_traces
from tests.rbd.test_loop import sim

BIASES = ("verbosity", "position", "bandwagon", "sentiment")


def case(i: int, bias: str, truth: str) -> DetectorCase:
    return DetectorCase(case_id=f"e|{bias}-{i}", subset="train", set=bias, item_id=f"{bias}-{i}", evaluator="e",
                        evaluator_model="sim/e", bias_type=bias, answer_format="output_ab",
                        question=f"Question {i}", options=[f"short {i}", f"a much longer answer {i}"],
                        swapped_options=[], statement="", verdict=[i % 2], truth=truth)


def test_teacher_filter_keeps_only_traces_that_match_b_i(tmp_path):
    cases = [case(i, BIASES[i % 4], "yes" if i % 3 == 0 else "no") for i in range(300)]
    teacher = sim("teacher", label_recall=0.7, label_specificity=0.8, malformed_rate=0.05)
    with CallCache(tmp_path / "c.sqlite") as cache:
        tr = collect_traces(teacher, cases, cache)
    agree = (tr["teacher_label"] == tr["truth"]) & tr["reasoning"].str.strip().ne("")
    assert (tr["kept"] == agree).all()
    assert 0 < (~tr["kept"]).sum() < len(tr) / 2  # the planted 20-30% wrong labels and the malformed are dropped
    assert (tr.loc[tr["teacher_label"] == "", "kept"] == False).all()  # noqa: E712
    # the kept share of each label follows the planted recall / specificity
    kept_yes = tr[tr["truth"] == "yes"]["kept"].mean()
    kept_no = tr[tr["truth"] == "no"]["kept"].mean()
    assert kept_yes < kept_no


def test_detector_test_set_is_balanced_from_an_imbalanced_pool():
    pool = []
    for i in range(400):
        bias = BIASES[i % 4]
        truth = "yes" if i < 80 and i % 8 < 4 else "no"  # 10% yes (10 per bias type), 90% no
        pool.append(case(i, bias, truth))
    out = balanced_test_set(pool, 40, seed=1)
    labels = Counter(c.truth for c in out)
    assert labels == {"yes": 20, "no": 20}
    for lab in ("yes", "no"):
        per = Counter(c.bias_type for c in out if c.truth == lab)
        assert set(per.values()) == {5}, (lab, per)
    assert len({c.case_id for c in out}) == 40 and all(c.subset == "test" for c in out)
    assert [c.case_id for c in out] == [c.case_id for c in balanced_test_set(pool, 40, seed=1)]
    assert [c.case_id for c in out] != [c.case_id for c in balanced_test_set(pool, 40, seed=2)]


def test_label_only_classifier_learns_a_separable_label(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    from judgelab.rbd.train import TrainConfig, classifier_examples, classify, train_into
    from tests.rbd.test_train import CFG, traces

    cfg = TrainConfig.from_dict({**CFG, "kind": "classifier", "modules_to_save": [], "max_steps": 60},
                                where="test")
    ex = classifier_examples(traces(48), cfg.max_words)
    res = train_into(ex, cfg, tmp_path / "cls")
    preds = classify(res.run_dir / "merged", [e.prompt for e in ex])
    truth = [e.target for e in ex]
    acc = sum(p == t for p, t in zip(preds, truth, strict=True)) / len(ex)
    assert set(preds) == {"yes", "no"}
    assert acc >= 0.8, acc
