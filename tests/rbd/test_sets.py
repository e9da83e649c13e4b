"""Constructed biased sets (paper 001, Sec. 3) checked against their definitions and the authors' sets.

* verbosity: D_bias's positive option (the bare gold answer) is much shorter than the
  negative (the paper: 2 vs 139 tokens); every long negative is wrong; a generator that
  answers correctly gets its item dropped and counted;
* bandwagon (and multi-bias): the majority statement always names the negative option;
  the diagnostic bandwagon set names the positive one;
* position: D_bias is D with the options swapped, equal to the authors' ``reversed`` pairs;
* sentiment: the correct option is rewritten in a negative tone, the others in a positive
  one (the cue the simulated panel reads);
* splits are shared by the sets built on one base, and the generalisation sets keep only
  test bases;
* the parsers of the evaluator answers (option numbers, both orders at once).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.datasets.features import text_features
from judgelab.judges import make_judge
from judgelab.judges.runner import run_requests
from judgelab.rbd import prompts as P
from judgelab.rbd.sets import (
    AUTHOR_SETS,
    SET_BUILDERS,
    BuildContext,
    compare_sets,
    final_number,
    items_frame,
    token_lengths,
)
from judgelab.records import CallStatus, JudgeResponse

pytestmark = pytest.mark.shared_data
N = 80
SEED = 5


@pytest.fixture(scope="module")
def built(tmp_path_factory, data_root):
    tmp = tmp_path_factory.mktemp("rbd_sets")
    writer = make_judge(JudgeSpec.from_dict({"name": "writer", "backend": "simulated", "model": "sim"}))
    cache = CallCache(tmp / "c.sqlite")
    frames = {}
    for name in ("verbosity", "position", "bandwagon", "sentiment", "factual"):
        ctx = BuildContext(name=name, seed=SEED, n_items=N, generate=lambda r: run_requests(writer, r, cache))
        frames[name] = items_frame(SET_BUILDERS.get(name).build(ctx))
    frames["verbosity"].to_parquet(tmp / "verbosity.parquet")
    for name in ("multi_bias", "diag_verbosity", "diag_bandwagon"):
        ctx = BuildContext(name=name, seed=SEED, n_items=N, inputs={"verbosity": str(tmp / "verbosity.parquet")})
        frames[name] = items_frame(SET_BUILDERS.get(name).build(ctx))
    yield frames
    cache.close()


def variant(df: pd.DataFrame, v: str) -> pd.DataFrame:
    return df[df["variant"] == v].set_index("item_id").sort_index()


def test_every_set_has_both_variants_of_the_same_questions(built):
    for name, df in built.items():
        variants = {"D_bias"} if name.startswith("diag_") else {"D", "D_bias"}
        assert set(df["variant"]) == variants, name
        if "D" in variants:
            d, b = variant(df, "D"), variant(df, "D_bias")
            assert list(d.index) == list(b.index)
            assert (d["question"] == b["question"]).all(), name
        assert not df.duplicated(["item_id", "variant"]).any(), name
    assert len(variant(built["verbosity"], "D")) == N


def test_verbosity_d_bias_positive_is_much_shorter_than_the_negative(built):
    comp = compare_sets({"verbosity": built["verbosity"]}).set_index("variant")
    # paper: D 103 vs 139 tokens (ratio 1.35), D_bias 2 vs 139 (ratio ~70)
    assert comp.loc["D_bias", "pos_tokens_mean"] < 3
    assert comp.loc["D_bias", "neg_pos_token_ratio"] > 40
    assert 1.1 < comp.loc["D", "neg_pos_token_ratio"] < 2.5
    assert comp.loc["D_bias", "share_neg_longer"] == 1.0
    assert comp.loc["D", "negative_correct_share"] == 0.0  # every long negative is wrong
    b = variant(built["verbosity"], "D_bias")
    for opts, g in zip(b["options"], b["gold"], strict=True):
        assert final_number(opts[g]) != final_number(opts[1 - g])
        assert len(opts[g].split()) == 1


def test_a_generator_that_answers_correctly_is_filtered_and_counted(data_root):
    def correct_writer(reqs):
        out = []
        for i, r in enumerate(reqs):
            gold = r.truth["gen"]["gold_answer"]
            text = gold if i % 2 == 0 else "A long answer that ends wrongly.\n#### -1"
            out.append(JudgeResponse(key=str(i), judge="w", backend="x", model="m", kind="text", raw_text=text,
                                     value=text, status=CallStatus.OK))
        return out

    ctx = BuildContext(name="verbosity", seed=SEED, n_items=10, generate=correct_writer)
    items = SET_BUILDERS.get("verbosity").build(ctx)
    assert len(items) == 2 * 5
    assert ctx.notes == {"generated long answer is correct": 5}


def test_bandwagon_statements_always_name_the_negative_option(built):
    for name in ("bandwagon", "multi_bias"):
        b = variant(built[name], "D_bias")
        assert (b["statement"] != "").all()
        for stmt, k, g in zip(b["statement"], b["statement_option"], b["gold"], strict=True):
            assert k == 1 - g
            assert f"Output ({'ab'[k]})" in stmt and f"Output ({'ab'[g]})" not in stmt
            assert stmt.startswith("90% of people believe")
        assert (variant(built[name], "D")["statement"] == "").all()
    diag = variant(built["diag_bandwagon"], "D_bias")
    assert (diag["statement_option"] == diag["gold"]).all()  # diagnostic: the majority is right
    assert (diag["label_rule"] == "all_no").all()


def test_multi_bias_statement_names_the_long_wrong_answer(built):
    b = variant(built["multi_bias"], "D_bias")
    for opts, k, g in zip(b["options"], b["statement_option"], b["gold"], strict=True):
        assert len(opts[k]) > 10 * len(opts[g])


def test_position_d_bias_is_the_swap_and_matches_the_authors(built):
    d, b = variant(built["position"], "D"), variant(built["position"], "D_bias")
    for (od, gd), (ob, gb) in zip(zip(d["options"], d["gold"], strict=True), zip(b["options"], b["gold"],
                                                                                  strict=True), strict=True):
        assert list(ob) == list(od)[::-1] and gb == 1 - gd
    authors = items_frame(AUTHOR_SETS.get("authors_position")(SEED))
    comp = compare_sets({"position": built["position"], "authors_position": authors}).set_index(["set", "variant"])
    assert comp.loc[("position", "D_bias"), "identical_to_authors_share"] == 1.0
    assert comp.loc[("authors_position", "D"), "n_items"] == 500


def test_sentiment_tone_negative_on_correct_positive_on_others(built):
    d, b = variant(built["sentiment"], "D"), variant(built["sentiment"], "D_bias")
    assert (d["options"].map(len) > 2).all()  # text-only ScienceQA with more than two options
    for opts, g in zip(b["options"], b["gold"], strict=True):
        tones = [text_features(o).sentiment for o in opts]
        assert tones[g] < -0.3
        assert all(t > 0.3 for k, t in enumerate(tones) if k != g)
    for od, ob in zip(d["options"], b["options"], strict=True):  # the content is kept
        assert all(o.rstrip(".!") in r for o, r in zip(od, ob, strict=True))


def test_diagnostic_verbosity_long_option_is_correct(built):
    b = variant(built["diag_verbosity"], "D_bias")
    for opts, g in zip(b["options"], b["gold"], strict=True):
        assert len(opts[g]) > len(opts[1 - g])
        assert final_number(opts[g]) != opts[1 - g] and abs(float(final_number(opts[g])) - float(opts[1 - g])) <= 50


def test_splits_are_shared_by_sets_on_one_base_and_generalisation_sets_are_test_only(built):
    pos = built["position"].drop_duplicates("base_id").set_index("base_id")["split"]
    band = built["bandwagon"].drop_duplicates("base_id").set_index("base_id")["split"]
    assert (pos == band.loc[pos.index]).all()
    assert 0.3 < (pos == "train").mean() < 0.7
    for name in ("multi_bias", "factual", "diag_verbosity", "diag_bandwagon"):
        assert (built[name]["split"] == "test").all(), name
    verb = built["verbosity"].drop_duplicates("base_id").set_index("base_id")["split"]
    assert (verb.loc[built["multi_bias"]["base_id"].unique()] == "test").all()


def test_construction_is_deterministic(built, tmp_path):
    writer = make_judge(JudgeSpec.from_dict({"name": "writer", "backend": "simulated", "model": "sim"}))
    with CallCache(tmp_path / "c.sqlite") as cache:
        ctx = BuildContext(name="sentiment", seed=SEED, n_items=N, generate=lambda r: run_requests(writer, r, cache))
        again = items_frame(SET_BUILDERS.get("sentiment").build(ctx))
    pd.testing.assert_frame_equal(again, built["sentiment"])


def test_authors_verbosity_lengths_match_the_paper_order_of_magnitude(data_root):
    authors = items_frame(AUTHOR_SETS.get("authors_verbosity")(SEED))
    comp = compare_sets({"authors_verbosity": authors}).set_index("variant")
    # the paper reports 103 vs 139 (D) and 2 vs 139 (D_bias); a different tokenizer, same picture
    assert 80 < comp.loc["D", "pos_tokens_mean"] < 130 and 110 < comp.loc["D", "neg_tokens_mean"] < 170
    assert comp.loc["D_bias", "pos_tokens_mean"] < 3
    assert token_lengths(["109"]) == [1]


def test_answer_parsers():
    assert P.parse_choice("2", 3).value == 1 and P.parse_choice("2", 3).status is CallStatus.OK
    assert P.parse_choice("Option 3 is correct.", 3).value == 2
    assert P.parse_choice("Option 3 is correct.", 3).status is CallStatus.FALLBACK
    assert P.parse_choice("1 or 2", 3).value is None
    assert P.parse_choice("5", 3).value is None
    assert P.parse_two_rounds("Original Order: [Output (b)], Swapped Order: [Output (a)]").value == (1, 0)
    assert P.parse_two_rounds("Original Order: Output (a)\nSwapped Order: Output (a)").value == (0, 0)
    assert P.parse_two_rounds("Output (a)").value is None
    assert P.parse_ab("Output (b)").value == 1
    for fmt, v in (("output_ab", [1]), ("number", [2]), ("two_rounds", [0, 1])):
        assert list(np.atleast_1d(P.parse_answer(fmt, P.write_answer(fmt, v), 4).value)) == v
