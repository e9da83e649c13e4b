"""The bias detector's inputs, test set, prompts and scores (paper 001, Sec. 4-5.1).

* a detector case is the tuple (x_bias, y_bias, I_MJ, t) with its truth b_i: the item as the
  evaluator saw it (for position both presentation orders and both verdicts, footnote 4), the
  evaluator's verdict and model name; unlabelled items (a missing verdict) make no case;
* cases survive a parquet round trip (lists come back as arrays);
* the test set is 50:50 Yes/No with about equal numbers per bias type, topped up from the other
  types when one runs short, restricted to the listed bias types;
* the few-shot baselines (Fig. 5) show two kept Yes and two kept No traces of different bias types;
* a detector request asks a yes/no label after a think block and tells the detector who judged;
  the prediction table records the parsed label (unparsed: ""), the reasoning and the call;
* the metrics table scores each detector and subset (and each bias type of the test set) by
  the Yes-class formulas, hand-computed here.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import asdict

import pandas as pd
import pytest

from judgelab.cache import CallCache
from judgelab.config import ConfigError
from judgelab.rbd.detector import (
    CASE_COLUMNS,
    METRIC_COLUMNS,
    PREDICTION_COLUMNS,
    DetectorCase,
    DetectorSpec,
    balanced_test_set,
    build_cases,
    case_for,
    case_info,
    case_record,
    cases_frame,
    cases_from_frame,
    classifier_texts,
    detector_metrics,
    detector_prompt,
    detector_request,
    few_shot_examples,
    run_detector,
    statement_option,
)
from judgelab.rbd.prompts import DETECTOR_PROMPTS
from judgelab.rbd.sets import RbdItem
from judgelab.records import OutputKind
from tests.rbd.test_supervision_traces import ScriptedTeacher

BIASES = ("verbosity", "position", "bandwagon", "sentiment")


def item(set_: str, iid: str, variant: str, options: list[str], gold: int, *, bias: str | None = None,
         fmt: str = "output_ab", statement: str = "", split: str = "train") -> RbdItem:
    return RbdItem(set=set_, item_id=iid, base_id=iid, variant=variant, bias_type=bias or set_, answer_format=fmt,
                   question=f"Question of {iid}: which answer is right?", options=options, gold=gold,
                   statement=statement, split=split)


def sample_items() -> list[RbdItem]:
    return [
        item("verbosity", "v1", "D", ["Four.", "It is five."], 0),
        item("verbosity", "v1", "D_bias", ["Four.", "It is five, as a long derivation shows."], 0),
        item("position", "p1", "D", ["Paris.", "Lyon."], 0, split="test"),
        item("position", "p1", "D_bias", ["Lyon.", "Paris."], 1, split="test"),
        item("bandwagon", "b1", "D", ["Red.", "Blue."], 1),
        item("bandwagon", "b1", "D_bias", ["Red.", "Blue."], 1, statement="90% believe that Output (a) is better"),
        item("sentiment", "s1", "D_bias", ["Sadly, 3.", "Wonderfully, 4!", "Great, 5!"], 0, fmt="number"),
        item("verbosity", "v2", "D", ["One.", "Two."], 0),  # D only: no D_bias item, no case
    ]


LABELS = pd.DataFrame([
    {"item_id": "v2", "judge": "ev", "verdict_D": 0, "verdict_bias": 0, "b": "no", "split": "train"},  # no D_bias
    {"item_id": "v1", "judge": "ev", "verdict_D": 0, "verdict_bias": 1, "b": "yes", "split": "train"},
    {"item_id": "p1", "judge": "ev", "verdict_D": 0, "verdict_bias": 0, "b": "yes", "split": "test"},
    {"item_id": "b1", "judge": "ev2", "verdict_D": 1, "verdict_bias": 1, "b": "no", "split": "train"},
    {"item_id": "s1", "judge": "ev", "verdict_D": 0, "verdict_bias": -1, "b": "", "split": "train"},  # missing
])


def test_cases_are_the_labelled_items_as_the_evaluator_saw_them():
    cases = build_cases(sample_items(), LABELS, {"ev": "Evaluator-Model-7B"})
    assert [c.case_id for c in cases] == ["ev|v1", "ev|p1", "ev2|b1"]  # s1 unlabelled, v2 without D_bias
    v, p, b = cases
    # a pairwise case: the D_bias options and the D_bias verdict, the evaluator's model name (I_MJ)
    assert (v.options, v.swapped_options, v.verdict, v.answer_format) == (
        ["Four.", "It is five, as a long derivation shows."], [], [1], "output_ab")
    assert (v.truth, v.subset, v.set, v.item_id, v.evaluator, v.evaluator_model, v.bias_type) == (
        "yes", "train", "verbosity", "v1", "ev", "Evaluator-Model-7B", "verbosity")
    assert v.question == "Question of v1: which answer is right?"
    # position (footnote 4): both orders and both verdicts, the stored order first
    assert (p.options, p.swapped_options, p.verdict, p.answer_format) == (
        ["Paris.", "Lyon."], ["Lyon.", "Paris."], [0, 0], "two_rounds")
    assert p.subset == "test" and p.evaluator_model == "Evaluator-Model-7B"
    assert "### Second Evaluation (Swapped Order)\nOutput (a): Lyon." in p.choices()
    assert p.judgement() == "### Original Order\nOutput (a)\n\n### Swapped Order\nOutput (a)"
    # an evaluator without a listed model is named by its judge name; the statement travels with the case
    assert b.evaluator_model == "ev2" and b.statement == "90% believe that Output (a) is better"
    assert b.choices().startswith("### Statement: 90% believe") and b.truth == "no"
    with pytest.raises(ValueError, match="p1: a position case needs both orders"):
        case_for(None, sample_items()[3], evaluator="ev", evaluator_model="m", verdict_d=0, verdict_bias=0,
                 truth="yes")
    # a non-position case needs no D item
    alone = case_for(None, sample_items()[6], evaluator="ev", evaluator_model="m", verdict_d=-1, verdict_bias=2,
                     truth="no")
    assert alone.verdict == [2] and alone.answer_format == "number" and alone.judgement() == "Choice 3"
    assert alone.subset == ""  # no split given: no subset


def test_cases_survive_a_parquet_round_trip(tmp_path):
    cases = build_cases(sample_items(), LABELS, {"ev": "m"})
    path = tmp_path / "cases.parquet"
    frame = cases_frame(cases)
    assert list(frame.columns) == CASE_COLUMNS
    frame.to_parquet(path)
    back = cases_from_frame(pd.read_parquet(path))
    assert back == cases
    assert all(type(o) is str for c in back for o in c.options + c.swapped_options)
    assert all(type(v) is int for c in back for v in c.verdict)
    assert list(cases_frame([]).columns) == CASE_COLUMNS


def test_case_record_is_asdict_with_its_own_lists():
    """``case_record`` (what the cases and traces tables are written from) is ``asdict``: every field
    in order, the lists copies a later change to the case does not reach."""
    cases = build_cases(sample_items(), LABELS, {"ev": "m"})
    cases += [c.with_verdict([-1] * len(c.verdict), "no") for c in cases]
    for c in cases:
        rec = case_record(c)
        assert rec == asdict(c) and list(rec) == CASE_COLUMNS
        for k in ("options", "swapped_options", "verdict"):
            assert rec[k] is not getattr(c, k)
    # cases_frame and the balanced test set are unchanged by it
    assert cases_frame(cases).to_dict("records") == [asdict(c) for c in cases]


def test_case_text_is_truncated_and_a_new_verdict_makes_a_new_case():
    c = DetectorCase(case_id="c", subset="test", set="verbosity", item_id="i", evaluator="e", evaluator_model="m",
                     bias_type="verbosity", answer_format="output_ab",
                     question="one two three four five six seven eight", options=["a b c d e", "f g"],
                     swapped_options=[], statement="", verdict=[0], truth="no")
    assert c.instruction() == c.question
    assert c.instruction(3) == "one two three four five six [...]"  # the instruction keeps 2x the words
    assert c.choices(3) == "Output (a): a b c [...]\n\nOutput (b): f g"
    d = c.with_verdict([1], "yes")
    assert (d.verdict, d.truth, c.verdict, c.truth) == ([1], "yes", [0], "no")
    assert {k: v for k, v in asdict(d).items() if k not in ("verdict", "truth")} == \
        {k: v for k, v in asdict(c).items() if k not in ("verdict", "truth")}
    assert type(c.with_verdict([True], "no").verdict[0]) is int


def case(i: int, bias: str, truth: str, **kw) -> DetectorCase:
    d = dict(case_id=f"e|{bias}-{i}", subset="train", set=bias, item_id=f"{bias}-{i}", evaluator="e",
             evaluator_model="sim/e", bias_type=bias, answer_format="output_ab", question=f"Question {i}",
             options=[f"short {i}", f"a much longer answer {i}"], swapped_options=[], statement="", verdict=[i % 2],
             truth=truth)
    return DetectorCase(**{**d, **kw})


def test_test_set_tops_up_a_short_bias_type_and_keeps_the_listed_types():
    # Yes cases: 2 verbosity, 20 of each other type; No: 30 per type
    pool = ([case(i, "verbosity", "yes") for i in range(2)]
            + [case(i, b, "yes") for b in BIASES[1:] for i in range(100, 120)]
            + [case(i, b, "no") for b in BIASES for i in range(200, 230)])
    out = balanced_test_set(pool, 40, seed=4)
    assert Counter(c.truth for c in out) == {"yes": 20, "no": 20}
    yes = Counter(c.bias_type for c in out if c.truth == "yes")
    assert yes["verbosity"] == 2 and all(yes[b] >= 5 for b in BIASES[1:]) and sum(yes.values()) == 20
    assert set(Counter(c.bias_type for c in out if c.truth == "no").values()) == {5}
    assert len({c.case_id for c in out}) == 40 and all(c.subset == "test" for c in out)
    assert all(c.subset == "train" for c in pool)  # the pool itself is not relabelled
    # only the listed bias types; an odd size gives floor(size / 2) per label
    two = balanced_test_set(pool, 13, seed=4, bias_types=("position", "sentiment"))
    assert {c.bias_type for c in two} == {"position", "sentiment"}
    assert Counter(c.truth for c in two) == {"yes": 6, "no": 6}
    assert set(Counter((c.truth, c.bias_type) for c in two).values()) == {3}
    # a pool too small for the size gives what it has, still without duplicates
    small = balanced_test_set(pool[:2] + pool[-3:], 40, seed=4)
    assert sorted(c.case_id for c in small) == sorted(c.case_id for c in pool[:2] + pool[-3:])
    assert balanced_test_set(pool, 40, seed=4, bias_types=()) == []


def test_detector_spec_from_entry():
    s = DetectorSpec.from_entry({"judge": {"name": "gpt", "backend": "simulated"}}, where="rbd.detectors[0]")
    assert (s.name, s.prompting, s.trained, s.max_words, s.example_max_words, s.options, s.max_tokens) == (
        "gpt", "rbd", None, None, 80, {}, None)
    assert s.judge == {"name": "gpt", "backend": "simulated"}
    t = DetectorSpec.from_entry({"trained": "rbd-tiny", "prompting": "classifier", "max_words": 12,
                                 "example_max_words": 20, "options": {"device": "cpu"}, "max_tokens": 64}, where="w")
    assert (t.name, t.prompting, t.judge, t.trained, t.max_words, t.example_max_words, t.options, t.max_tokens) == (
        "rbd-tiny", "classifier", None, "rbd-tiny", 12, 20, {"device": "cpu"}, 64)
    with pytest.raises(ConfigError, match=r"rbd.detectors\[1\]: give exactly one of 'judge'"):
        DetectorSpec.from_entry({"judge": {"name": "a"}, "trained": "b"}, where="rbd.detectors[1]")
    with pytest.raises(ConfigError, match="w: give exactly one of"):
        DetectorSpec.from_entry({"prompting": "rbd"}, where="w")
    known = ", ".join(DETECTOR_PROMPTS.names())  # each prompting a user may name, comma separated
    assert "few_shot_labels" in known and "rbd" in known
    with pytest.raises(ConfigError, match=re.escape(f"w: unknown prompting 'two_shot'; known: {known}, classifier")):
        DetectorSpec.from_entry({"trained": "b", "prompting": "two_shot"}, where="w")


def traces_table(rows: list[tuple[str, str, bool]]) -> pd.DataFrame:
    cases = [case(i, bias, truth, question=f"Q {i} " + "word " * 30, options=[f"opt a {i} " + "x " * 30, f"b {i}"])
             for i, (bias, truth, _k) in enumerate(rows)]
    df = cases_frame(cases)
    df["kept"] = [k for *_r, k in rows]
    df["reasoning"] = [f"reasoning {i}" for i in range(len(rows))]
    return df


def test_few_shot_examples_are_two_kept_yes_and_two_kept_no_of_different_types():
    rows = [(b, t, True) for b in BIASES for t in ("yes", "no") for _ in range(3)]
    rows += [("verbosity", "yes", False)] * 5
    tr = traces_table(rows)
    for seed in range(6):
        ex = few_shot_examples(tr, seed, max_words=5)
        assert [e.label for e in ex] == ["Yes", "Yes", "No", "No"]
        assert ex[0].bias_type != ex[1].bias_type and ex[2].bias_type != ex[3].bias_type
        by_reasoning = tr.set_index("reasoning")
        for e in ex:
            r = by_reasoning.loc[e.reasoning]
            assert r["kept"] and r["truth"].capitalize() == e.label and r["bias_type"] == e.bias_type
            assert e.instruction == " ".join(r["question"].split()[:10]) + " [...]"
            assert "x x x x [...]" not in e.choices and "[...]" in e.choices  # options cut at 5 words
            assert e.judgement == f"Output ({'ab'[r['verdict'][0]]})"
    picks = {tuple(e.reasoning for e in few_shot_examples(tr, s)) for s in range(6)}
    assert len(picks) > 1  # the seed chooses
    assert few_shot_examples(tr, 3) == few_shot_examples(tr, 3)
    assert "[...]" not in few_shot_examples(tr, 3, max_words=None)[0].choices
    # by default the examples' options are cut at 80 words (DetectorSpec.example_max_words)
    long = tr.copy()
    long["options"] = [[" ".join(["w"] * 81), " ".join(["v"] * 80)]] * len(long)
    ex = few_shot_examples(long, 3)[0]
    assert " ".join(["w"] * 80) + " [...]" in ex.choices and " ".join(["v"] * 80) + "\n" not in ex.choices
    assert ex.choices.endswith(" ".join(["v"] * 80))
    # only unkept traces of a second Yes type: not enough examples
    short = traces_table([("verbosity", "yes", True), ("position", "yes", False), ("sentiment", "yes", False),
                          ("verbosity", "no", True), ("position", "no", True)])
    with pytest.raises(ConfigError, match=r"need 4 kept teacher traces .*only 3 are available"):
        few_shot_examples(short, 0)


def test_statement_option_and_case_info():
    assert statement_option(case(0, "bandwagon", "yes", statement="90% believe that Output (a) is better")) == 0
    assert statement_option(case(0, "bandwagon", "yes", statement="90% believe that Output (b) is better")) == 1
    assert statement_option(case(0, "verbosity", "yes")) == -1
    c = case(1, "bandwagon", "yes", statement="Most say Output (b) is better", verdict=[1],
             evaluator_model="Evaluator-X")
    assert case_info(c) == {"bias_type": "bandwagon", "evaluator": "Evaluator-X", "chosen": [1],
                            "statement_option": 1}


def test_detector_request_and_prompts():
    c = case(3, "verbosity", "yes", evaluator_model="Evaluator-X", verdict=[1],
             question="Question 3: how much is one plus two?")
    spec = DetectorSpec(name="det", judge={})
    req = detector_request(c, spec)
    assert [m.role for m in req.messages] == ["user"]
    assert req.kind is OutputKind.LABEL and req.fmt == "think" and req.task == "reasoning"
    assert req.slots == {"0": "short 3", "1": "a much longer answer 3"} and req.meta == {"case_id": c.case_id}
    assert req.truth == {"label": "yes", "gen": {"task": "rbd_detect"}, "rbd": case_info(c)}
    text = req.prompt_text()
    assert text == detector_prompt(c, "rbd") and "**Evaluator-X**" in text  # I_MJ
    assert "### Instruction:\nQuestion 3: how much is one plus two?\n" in text
    assert "Output (b): a much longer answer 3" in text and "Evaluation by LLM-as-a-Judge:\nOutput (b)" in text
    # the ablated prompt does not say who judged; max_words cuts the options
    assert "Evaluator-X" not in detector_prompt(c, "ablated")
    cut = detector_request(c, DetectorSpec(name="det", judge={}, max_words=2)).prompt_text()
    assert "Output (b): a much [...]" in cut
    assert "### Instruction:\nQuestion 3: how much [...]\n" in cut  # the instruction keeps 2 x max_words
    # few-shot prompts carry their examples
    tr = traces_table([(b, t, True) for b in BIASES for t in ("yes", "no")])
    ex = few_shot_examples(tr, 0)
    shots = detector_request(c, DetectorSpec(name="det", prompting="few_shot_reasoning", judge={}), ex).prompt_text()
    assert all(f"<think> {e.reasoning} </think>\n{e.label}" in shots for e in ex)
    with pytest.raises(ValueError, match="needs 4 examples"):
        detector_request(c, DetectorSpec(name="det", prompting="few_shot_labels", judge={}))
    c = case(3, "verbosity", "yes", evaluator_model="Evaluator-X", verdict=[1])
    texts = classifier_texts([c, case(4, "verbosity", "no", question="one two three four five")], max_words=2)
    assert texts[0] == "Instruction: Question 3\nChoices: Output (a): short 3\n\nOutput (b): a much [...]\n" \
                       "LLM Judgment: Output (b)"
    assert texts[1].startswith("Instruction: one two three four [...]\n")


def test_run_detector_records_label_reasoning_and_call(tmp_path):
    cases = [case(i, b, t) for i, (b, t) in enumerate([("verbosity", "yes"), ("position", "no"),
                                                        ("bandwagon", "yes"), ("sentiment", "no")])]
    cases[1] = DetectorCase(**{**asdict(cases[1]), "subset": "test"})
    script = {cases[0].case_id: "<think>The longer answer won.</think>\nYes",
              cases[1].case_id: "<think>Same content both times.</think> No",
              cases[2].case_id: "<think>Maybe, maybe not.</think> Perhaps",
              cases[3].case_id: "error: HTTP 500"}
    det = ScriptedTeacher(script, name="det")
    spec = DetectorSpec(name="rbd-8b", prompting="zero_shot", judge={})
    with CallCache(tmp_path / "c.sqlite") as cache:
        pred = run_detector(det, spec, cases, cache, max_error_rate=None)
    assert list(pred.columns) == PREDICTION_COLUMNS and "latency_s" not in pred.columns
    assert list(pred["pred"]) == ["yes", "no", "", ""]
    assert list(pred["reasoning"]) == ["The longer answer won.", "Same content both times.", "Maybe, maybe not.", ""]
    assert list(pred["status"]) == ["ok", "ok", "unparsed", "error"]
    assert list(pred["truth"]) == ["yes", "no", "yes", "no"] and list(pred["subset"]) == ["train", "test", "train",
                                                                                          "train"]
    assert (pred["detector"] == "rbd-8b").all() and (pred["prompting"] == "zero_shot").all()
    assert (pred["judge"] == "det").all() and list(pred["case_id"]) == [c.case_id for c in cases]
    for col in ("set", "item_id", "evaluator", "bias_type"):
        assert list(pred[col]) == [getattr(c, col) for c in cases]
    assert pred["parse_method"].iloc[0] == "after_think"
    with CallCache(tmp_path / "c2.sqlite") as cache:
        assert list(run_detector(det, spec, [], cache).columns) == PREDICTION_COLUMNS


def test_run_detector_fails_on_errors_by_default_logs_its_label_and_shows_the_shots(tmp_path):
    from judgelab.judges.runner import TooManyErrors

    cases = [case(i, b, t) for i, (b, t) in enumerate([("verbosity", "yes"), ("position", "no")])]
    det = ScriptedTeacher({cases[0].case_id: "<think>Longer won.</think> Yes", cases[1].case_id: "error: HTTP 500"},
                          name="det")
    spec = DetectorSpec(name="det", prompting="few_shot_reasoning", judge={})
    ex = few_shot_examples(traces_table([(b, t, True) for b in BIASES for t in ("yes", "no")]), 0)
    with CallCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(TooManyErrors):
            run_detector(det, spec, cases, cache, examples=ex, label="rbd detect")
    assert len(det.prompts) == 2 and all(f"<think> {e.reasoning} </think>" in p for p in det.prompts for e in ex)
    with sqlite3.connect(tmp_path / "c.sqlite") as con:
        assert con.execute("SELECT label, requested, failures FROM runs").fetchall() == [("rbd detect", 2, 1)]


def test_detector_metrics_hand_computed():
    def rows(det, subset, bias, truth, pred, simulated=False):
        return [{"detector": det, "prompting": "rbd", "subset": subset, "bias_type": bias, "truth": t, "pred": p,
                 "simulated": simulated} for t, p in zip(truth, pred, strict=True)]

    pred = pd.DataFrame(
        rows("a", "test", "verbosity", ["yes", "yes", "no", "no"], ["yes", "no", "no", "yes"])
        + rows("a", "test", "position", ["yes", "no"], ["yes", ""])
        + rows("a", "diag", "verbosity", ["no", "no", "no"], ["no", "yes", "no"])
        + rows("b", "test", "sentiment", ["yes", "no"], ["no", "no"], simulated=True)
        + rows("c", "diag", "position", ["no"], ["yes"]))
    m = detector_metrics(pred)
    assert list(m.columns) == METRIC_COLUMNS
    key = [tuple(r) for r in m[["detector", "subset", "bias_type"]].itertuples(index=False)]
    # per bias type only on the test set; detectors and subsets in name order
    assert key == [("a", "diag", "all"), ("a", "test", "all"), ("a", "test", "position"),
                   ("a", "test", "verbosity"), ("b", "test", "all"), ("b", "test", "sentiment"), ("c", "diag", "all")]
    m = m.set_index(["detector", "subset", "bias_type"])
    all_a = m.loc[("a", "test", "all")]
    # tp = 2 (v, p), fp = 1, tn = 1, fn = 1, the position "no" unanswered: wrong, not tn
    assert (all_a["n"], all_a["tp"], all_a["fp"], all_a["tn"], all_a["fn"], all_a["n_missing"]) == (6, 2, 1, 1, 1, 1)
    assert all_a["accuracy"] == pytest.approx(3 / 6) and all_a["precision"] == pytest.approx(2 / 3)
    assert all_a["recall"] == pytest.approx(2 / 3) and all_a["f1"] == pytest.approx(2 / 3)
    assert m.loc[("a", "test", "verbosity"), "accuracy"] == pytest.approx(2 / 4)
    assert m.loc[("a", "test", "position"), "n_missing"] == 1
    assert m.loc[("a", "diag", "all"), "accuracy"] == pytest.approx(2 / 3)
    assert m.loc[("b", "test", "all"), "recall"] == 0.0
    assert list(m["simulated"]) == [False, False, False, False, True, True, False]
    assert (m["prompting"] == "rbd").all()
    assert m.loc[("c", "diag", "all"), "fp"] == 1 and m.loc[("c", "diag", "all"), "accuracy"] == 0.0
    empty = detector_metrics(pd.DataFrame(columns=[*PREDICTION_COLUMNS, "simulated"]))
    assert empty.empty and list(empty.columns) == METRIC_COLUMNS
