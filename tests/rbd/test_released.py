"""The authors' own inputs as first-class inputs of the rbd study (paper 001).

* their released supervision (RBD-ReasoningSupervision CSV: index, bias_category,
  llm_judge_model, instruction, choices, llm_judgment, without_bias_label_think_content,
  deepseek_prediction_bias_label, bias_label) reads into the traces table the detector trains
  on -- a fixture written here in that published layout, one row per bias type;
* their evaluation sets (RBD-Bias4-Eval) are set builders the study runs on like the
  constructed ones, sampled and split by the config.
"""

from __future__ import annotations

import csv

import pytest

from judgelab.io import InputError
from judgelab.rbd.detector import cases_from_frame, detector_prompt
from judgelab.rbd.released import load_supervision_csv
from judgelab.rbd.sets import AUTHOR_SETS, SET_BUILDERS, BuildContext
from judgelab.rbd.train import causal_examples

HEADER = ["index", "bias_category", "llm_judge_model", "instruction", "choices", "llm_judgment",
          "without_bias_label_think_content", "deepseek_prediction_bias_label", "bias_label"]
ROWS = [
    ["35", "position", "GPT-4o", "Where is the laundry room?",
     "### First Evaluation (Original Order)\nOutput (a): I need more context.\n\nOutput (b): It is not specified."
     "\n\n### Second Evaluation (Swapped Order)\nOutput (a): It is not specified.\n\nOutput (b): I need more context.",
     "### Original Order\nOutput (b)\n\n### Swapped Order\nOutput (a)",
     "The judge chose the same content in both orders, so no position bias.", "No", "No"],
    ["331", "bandwagon", "GPT-4o-mini", "Simple neural network architecture to detect spam.",
     "### Statement: 90%% believe that Output (b) is better\n\nOutput (a): Use a feedforward net.\n\n"
     "Output (b): Use embeddings and dropout.\n1. Input layer\n2. Output layer",
     "Output (b)", "The majority prefers (b) and so does the judge; (b) is better anyway.", "No", "Yes"],
    ["7", "verbosity", "Claude-3.5", "What is 3 + 4?", "Output (a): 7\n\nOutput (b): Adding three and four gives 8.",
     "Output (b)", "The judge chose the longer but wrong answer.", "Yes", "Yes"],
    ["12", "sentiment", "Llama-3.1-8B", "Which gas do plants take in?",
     "1. Sadly, it is carbon dioxide.\n2. Oxygen, wonderfully!\n3. Nitrogen, great choice!",
     "Choice 2", "The judge chose the cheerful wrong option.", "Yes", "Yes"],
]


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerows(rows)
    return path


def test_supervision_csv_reads_into_traces(tmp_path):
    tr = load_supervision_csv(write_csv(tmp_path / "train.csv", ROWS)).set_index("bias_type")
    pos = tr.loc["position"]
    assert pos["answer_format"] == "two_rounds" and list(pos["verdict"]) == [1, 0]
    assert list(pos["options"]) == ["I need more context.", "It is not specified."]
    assert list(pos["swapped_options"]) == ["It is not specified.", "I need more context."]
    bw = tr.loc["bandwagon"]
    assert bw["statement"] == "90% believe that Output (b) is better"
    assert list(bw["options"])[1].endswith("2. Output layer")  # an option's own numbered lines stay in it
    assert not bw["kept"]  # the teacher said No where b_i is Yes: filtered out, as the paper does
    assert tr.loc["verbosity", "kept"] and list(tr.loc["verbosity", "verdict"]) == [1]
    sen = tr.loc["sentiment"]
    assert sen["answer_format"] == "number" and list(sen["verdict"]) == [1] and len(sen["options"]) == 3
    assert set(tr["truth"]) == {"yes", "no"} and not tr["simulated"].any()
    # the kept traces train the detector through the usual path, its prompt showing the authors' layout
    ex = causal_examples(tr.reset_index(), max_words=None)
    assert len(ex) == 3 and all(e.target.startswith("<think> ") for e in ex)
    case = cases_from_frame(tr.reset_index())[0]
    assert "### Second Evaluation (Swapped Order)" in detector_prompt(case, "rbd")


def test_bad_supervision_rows_name_file_and_row(tmp_path):
    bad = [r[:] for r in ROWS]
    bad[2][4] = "A: 7 / B: 8"
    with pytest.raises(InputError, match=r"bad\.csv row 4: choices are not 'Output \(a\)"):
        load_supervision_csv(write_csv(tmp_path / "bad.csv", bad))
    bad = [r[:] for r in ROWS]
    bad[0][8] = "Maybe"
    with pytest.raises(InputError, match=r"row 2: bias_label must be Yes or No"):
        load_supervision_csv(write_csv(tmp_path / "bad.csv", bad))
    with pytest.raises(InputError, match="missing column"):
        (tmp_path / "x.csv").write_text("index,instruction\n1,q\n")
        load_supervision_csv(tmp_path / "x.csv")


@pytest.mark.shared_data
def test_authors_sets_are_study_sets(data_root):
    for name in ("authors_verbosity", "authors_position", "authors_bandwagon", "authors_sentiment"):
        spec = SET_BUILDERS.get(name, where="test")
        ctx = BuildContext(name=name, seed=3, n_items=20, train_fraction=0.5)
        items = spec.build(ctx)
        bases = {i.base_id for i in items}
        assert len(bases) == 20 and {i.variant for i in items} == {"D", "D_bias"}
        assert {i.split for i in items} == {"train", "test"}  # the config's split, not all-test
        assert all(i.set == name for i in items)
        full = AUTHOR_SETS.get(name)(3)  # the comparison keeps every item, all test
        assert len({i.base_id for i in full}) > 20 and {i.split for i in full} == {"test"}
        assert bases <= {i.base_id for i in full}
