"""Items files of a user's own pool (judgelab.topk.userpool), pinned exactly (issue 18).

Each rule of the items-file format (module docstring of judgelab.topk.userpool) is tested on
a small hand-written file: what is read (ids, prompts, shared prompts, anchors, planted
truth, the covariate matrix by hand), and every error with its full message -- file, line or
CSV row, id and key.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from judgelab.io import InputError
from judgelab.topk.userpool import ITEM_KEYS, RESPONSE_KEYS, TEXT_COVARIATES, load_user_pool


def _jsonl(tmp_path: Path, rows, name="items.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return p


def _t(i, text, **kw):
    return {"id": i, "question": "Q?", "text": text, **kw}


def _m(i, answers, **kw):
    return {"id": i, "responses": [{"prompt": p, "text": t, **({"covariates": c} if c else {})}
                                   for p, t, c in answers], **kw}


def test_texts_shape_reads_ids_prompts_and_standardised_length(tmp_path):
    p = _jsonl(tmp_path, [_t("a", "one"), _t("b", "one two three"), _t("c", "one two three four five six seven")])
    pool = load_user_pool(p)  # the default covariate: length_std
    assert pool.path == str(p) and pool.shape == "texts" and pool.n_items == 3 and pool.ids == ["a", "b", "c"]
    assert pool.prompts == ["Q?"] and pool.shared_prompts(0, 2) == ["Q?"] and pool.covariate_names == ["length_std"]
    words = np.array([1.0, 3.0, 7.0])
    np.testing.assert_allclose(pool.X[:, 0], (words - words.mean()) / words.std())
    assert pool.anchors is None and pool.truth is None
    assert [it.shape for it in pool.items] == ["texts"] * 3 and pool.items[1].responses == {"Q?": "one two three"}
    # the other text covariates, by hand: log2(words + 1) and the markdown score
    both = load_user_pool(p, ["log2_length", "markdown"])
    np.testing.assert_allclose(both.X[:, 0], np.log2(words + 1))
    from judgelab.datasets.features import markdown_score

    np.testing.assert_allclose(both.X[:, 1], [markdown_score(t) for t in ("one", "one two three",
                                                                          "one two three four five six seven")])
    assert set(TEXT_COVARIATES) == {"length_std", "log2_length", "markdown"}
    assert load_user_pool(p, []).X.shape == (3, 0)


def test_equal_lengths_standardise_to_zero_not_nan(tmp_path):
    pool = load_user_pool(_jsonl(tmp_path, [_t("a", "x y"), _t("b", "u v"), _t("c", "p q")]))
    assert pool.X[:, 0].tolist() == [0.0, 0.0, 0.0]
    # a small spread (sd < 1 word) is still standardised
    pool = load_user_pool(_jsonl(tmp_path, [_t("a", "x"), _t("b", "u"), _t("c", "p q")]))
    words = np.array([1.0, 1.0, 2.0])
    np.testing.assert_allclose(pool.X[:, 0], (words - words.mean()) / words.std())


def test_csv_ids_stay_text_and_a_covariate_column_with_a_bad_cell(tmp_path):
    p = tmp_path / "items.csv"
    p.write_text("id,question,text\n001,Q?,x\n002,Q?,y\n010,Q?,z\n")
    assert load_user_pool(p, []).ids == ["001", "002", "010"]
    # one bad cell makes pandas read the whole column as text: the good cells still count as numbers,
    # and the error names the bad one
    p.write_text("id,question,text,cov_len\na,Q?,x,1\nb,Q?,y,2\nc,Q?,z,oops\n")
    with pytest.raises(InputError) as e:
        load_user_pool(p, ["len"])
    assert str(e.value) == f"{p} row 4 (id 'c') covariates.len: must be a finite number, got 'oops'"


def test_default_question_and_own_questions(tmp_path):
    p = _jsonl(tmp_path, [{"id": "a", "text": "x"}, {"id": "b", "text": "y"},
                          {"id": "c", "text": "z", "question": "Q?"}, {"id": "d", "text": "w", "question": ""}])
    pool = load_user_pool(p, [], question="Q?")  # an empty question falls back to the config's
    assert pool.prompts == ["Q?"] and pool.items[0].responses == {"Q?": "x"}
    with pytest.raises(InputError, match=re.escape(f"{p}:1 (id 'a'): no 'question' for this text and no topk.rank "
                                                   "question in the config")):
        load_user_pool(p, [])


def test_models_shape_shares_prompts_and_averages_covariates(tmp_path):
    rows = [_m("m0", [("P1", "a b", {"fluff": 1.0}), ("P2", "a b c d", {"fluff": 3.0})], anchor=2.5,
               true_quality=1.0),
            _m("m1", [("P2", "a", {"fluff": 5.0}), ("P3", "a b c", {"fluff": 7.0})], true_quality=0.0),
            _m("m2", [("P3", "a b c d e f", None)], covariates={"fluff": 4.0}, anchor=1, true_quality=-1.5)]
    pool = load_user_pool(_jsonl(tmp_path, rows), ["fluff", "length_std", "log2_length"])
    assert pool.shape == "models" and pool.prompts == ["P1", "P2", "P3"]
    assert pool.shared_prompts(0, 1) == ["P2"] and pool.shared_prompts(1, 2) == ["P3"]
    assert pool.shared_prompts(0, 2) == []
    np.testing.assert_allclose(pool.X[:, 0], [2.0, 6.0, 4.0])  # per-response values: their mean per item
    words = np.array([3.0, 2.0, 6.0])
    np.testing.assert_allclose(pool.X[:, 1], (words - words.mean()) / words.std())
    np.testing.assert_allclose(pool.X[:, 2], [(math.log2(3) + math.log2(5)) / 2, (1 + 2) / 2, math.log2(7)])
    np.testing.assert_array_equal(pool.anchors, [2.5, np.nan, 1.0])
    np.testing.assert_array_equal(pool.truth, [1.0, 0.0, -1.5])
    assert pool.items[0].response_covariates == {"P1": {"fluff": 1.0}, "P2": {"fluff": 3.0}}
    assert pool.items[2].covariates == {"fluff": 4.0} and pool.items[0].anchor == 2.5


def test_csv_items_with_user_covariates_anchors_and_truth(tmp_path):
    p = tmp_path / "items.csv"
    p.write_text("id,question,text,cov_len,anchor,true_quality\n"
                 "007,Q?,x,1,3,0.5\nb,Q?,y y,2,,1.5\nc,Q?,z z z,4.5,1,2.5\n")
    pool = load_user_pool(p, ["len", "length_std"])
    assert pool.ids == ["007", "b", "c"]  # ids stay text
    np.testing.assert_allclose(pool.X[:, 0], [1, 2, 4.5])
    np.testing.assert_array_equal(pool.anchors, [3.0, np.nan, 1.0])
    np.testing.assert_array_equal(pool.truth, [0.5, 1.5, 2.5])
    p.write_text("id,question,text,anchor\na,Q?,x,3\nb,Q?,y,high\nc,Q?,z,1\n")
    with pytest.raises(InputError, match=re.escape(f"{p} row 3 (id 'b') anchor: must be a finite number, "
                                                   "got 'high'")):
        load_user_pool(p, [])
    p.write_text("id,question,text,true_quality\na,Q?,x,3\nb,Q?,y,2\nc,Q?,z,n/a?\n")
    with pytest.raises(InputError, match=re.escape(f"{p} row 4 (id 'c') true_quality: must be a finite number")):
        load_user_pool(p, [])
    p.write_bytes(b"id,text\n\xff\xfe,x\n")
    with pytest.raises(InputError, match=re.escape(f"{p}: not a readable CSV")):
        load_user_pool(p, [])


ERRORS = [
    # (rows, covariates, message after "<file>")
    ([_t("a", "x"), {"question": "Q?", "text": "y"}], [], ":2: missing 'id'"),
    ([_t("a", "x"), {"id": " ", "question": "Q?", "text": "y"}], [], ":2: missing 'id'"),
    ([_t("a", "x"), {"id": None, "question": "Q?", "text": "y"}], [], ":2: missing 'id'"),
    ([_t("a", "x"), {"id": "b", "question": "Q?", "txt": "y", "z": 1}], [],
     ":2: unknown key(s) ['txt', 'z']; allowed: " + str(sorted(ITEM_KEYS))),
    ([_t("a", "x"), {"id": "b", "question": "Q?"}], [],
     ":2 (id 'b'): give exactly one of 'text' (one response) or 'responses' (per prompt)"),
    ([_t("a", "x"), _t("b", "  ")], [], ":2 (id 'b') text: must be a non-empty text"),
    ([_t("a", "x"), {"id": "b", "question": 5, "text": "y"}], [], ":2 (id 'b') question: must be a non-empty text"),
    ([_t("a", "x"), {"id": "b", "responses": [{"prompt": "L" * 70, "text": "t"}, {"prompt": "L" * 70, "text": "u"}]}],
     [], ":2 (id 'b') responses[1]: prompt '" + "L" * 60 + "' answered twice by this item"),
    ([_t("a", "x"), _t("b", 5)], [], ":2 (id 'b') text: must be a non-empty text"),
    ([_t("a", "x"), {"id": "b", "question": "Q?", "responses": [{"prompt": "Q?", "text": "t"}]}], [],
     ":2 (id 'b'): 'question' goes inside each response as 'prompt'"),
    ([_t("a", "x"), {"id": "b", "responses": []}], [],
     ":2 (id 'b'): 'responses' must be a non-empty list of {prompt, text} objects"),
    ([_t("a", "x"), {"id": "b", "responses": {"prompt": "Q?"}}], [],
     ":2 (id 'b'): 'responses' must be a non-empty list of {prompt, text} objects"),
    ([_t("a", "x"), {"id": "b", "responses": ["Q?"]}], [],
     ":2 (id 'b') responses[0]: must be an object with 'prompt' and 'text'"),
    ([_t("a", "x"), {"id": "b", "responses": [{"prompt": "Q?", "text": "t", "score": 1}]}], [],
     ":2 (id 'b') responses[0]: unknown key(s) ['score']; allowed: " + str(sorted(RESPONSE_KEYS))),
    ([_t("a", "x"), {"id": "b", "responses": [{"prompt": "Q?", "text": "t"}, {"prompt": "", "text": "u"}]}], [],
     ":2 (id 'b') responses[1] prompt: must be a non-empty text"),
    ([_t("a", "x"), {"id": "b", "responses": [{"prompt": "Q?", "text": "t"}, {"prompt": "Q?", "text": "u"}]}], [],
     ":2 (id 'b') responses[1]: prompt 'Q?' answered twice by this item"),
    ([_t("a", "x"), {"id": "b", "responses": [{"prompt": "Q?", "text": ""}]}], [],
     ":2 (id 'b') responses[0] text: must be a non-empty text"),
    ([_t("a", "x"), {"id": "b", "responses": [{"prompt": "Q?", "text": "t", "covariates": [1]}]}], [],
     ":2 (id 'b') responses[0] covariates: must be an object {name: number}, got list"),
    ([_t("a", "x"), {"id": "b", "responses": [{"prompt": "Q?", "text": "t", "covariates": {"f": True}}]}], [],
     ":2 (id 'b') responses[0] covariates.f: must be a finite number, got True"),
    ([_t("a", "x"), _t("b", "y", covariates={"len": float("inf")})], [],
     ":2 (id 'b') covariates.len: must be a finite number, got inf"),
    ([_t("a", "x"), _t("b", "y", anchor="5")], [], ":2 (id 'b') anchor: must be a finite number, got '5'"),
    ([_t("a", "x"), _t("b", "y", true_quality=[1])], [], ":2 (id 'b') true_quality: must be a finite number"),
    ([_t("a", "x"), _t("b", "y"), _t("a", "z")], [], ":3: duplicate id 'a' (first at {p}:1)"),
    ([_t("a", "x"), _t("b", "y")], [], ": 2 item(s); ranking needs at least 3"),
    ([_t("a", "x"), _t("b", "y"), _m("c", [("Q?", "z", None)])], [],
     ": mixes items with 'text' and items with 'responses'; use one shape per file"),
    ([_t("a", "x", true_quality=1), _t("b", "y"), _t("c", "z", true_quality=0)], [],
     ": 'true_quality' is given for some items but not for 'b'; a planted truth must cover the whole pool"),
    ([_t("a", "x"), {"id": "b", "question": "Other?", "text": "y"}, _t("c", "z")], [],
     ": the items do not all share prompts: ['b'] can never be compared with 'a' (directly or through "
     "other items)"),
    ([_t("a", "x"), _t("b", "y"), _t("c", "z")], ["helpfulness"],
     ": item 'a' has no covariate 'helpfulness' (configured in topk.rank.covariates; computed ones: "
     "['length_std', 'log2_length', 'markdown'])"),
    ([_m("a", [("P", "x", {"f": 1.0})], covariates={"f": 2.0}), _m("b", [("P", "y", {"f": 1.0})]),
      _m("c", [("P", "z", {"f": 1.0})])], ["f"], ": item 'a' gives covariate 'f' both per item and per response"),
    ([_m("a", [("P", "x", {"f": 1.0}), ("R", "x", None), ("S", "x", None)]), _m("b", [("P", "y", {"f": 1.0})]),
      _m("c", [("P", "z", {"f": 1.0})])], ["f"], ": item 'a': covariate 'f' is missing on 2 of its responses"),
]


@pytest.mark.parametrize("rows, covs, message", ERRORS, ids=[f"e{i}" for i in range(len(ERRORS))])
def test_each_error_names_the_file_line_id_and_key(tmp_path, rows, covs, message):
    p = _jsonl(tmp_path, rows)
    with pytest.raises(InputError) as e:
        load_user_pool(p, covs)
    expected = f"{p}{message.replace('{p}', str(p))}"
    if message.endswith("finite number"):  # the rest is the offending value's repr
        assert str(e.value).startswith(expected + ", got ")
    else:
        assert str(e.value) == expected


def test_linked_through_other_items_is_comparable(tmp_path):
    # a-b share P, b-c share R, c-d share S: a and d never meet but are linked through b and c
    rows = [_m("a", [("P", "x", None)]), _m("b", [("P", "y", None), ("R", "y", None)]),
            _m("c", [("R", "z", None), ("S", "z", None)]), _m("d", [("S", "w", None)])]
    pool = load_user_pool(_jsonl(tmp_path, rows), [])
    assert pool.n_items == 4 and pool.shared_prompts(0, 3) == []
    # two separate groups: the lonely ones are listed (those not linked with the first item)
    rows = [_m("a", [("P", "x", None)]), _m("b", [("P", "y", None)]), _m("c", [("R", "z", None)]),
            _m("d", [("R", "w", None)]), _m("e", [("P", "v", None)])]
    with pytest.raises(InputError, match=re.escape("do not all share prompts: ['c', 'd'] can never be compared "
                                                   "with 'a'")):
        load_user_pool(_jsonl(tmp_path, rows), [])
    # at most five of the unlinked items are named
    rows = [_m("a", [("P", "x", None)]), _m("b", [("P", "y", None)])]
    rows += [_m(f"z{n}", [("R", "w", None)]) for n in range(7)]
    with pytest.raises(InputError, match=re.escape("share prompts: ['z0', 'z1', 'z2', 'z3', 'z4'] can never")):
        load_user_pool(_jsonl(tmp_path, rows), [])
    # a chain that is only linked through its last member (path compression must follow every link)
    rows = [_m(f"i{n}", [(f"P{n}", "x", None), (f"P{n + 1}", "y", None)]) for n in range(6)]
    rows.append(_m("end", [("P0", "z", None)]))
    assert load_user_pool(_jsonl(tmp_path, rows), []).n_items == 7


def test_file_level_errors(tmp_path):
    with pytest.raises(InputError, match=re.escape(f"{tmp_path / 'none.jsonl'}: items file not found")):
        load_user_pool(tmp_path / "none.jsonl")
    txt = tmp_path / "items.txt"
    txt.write_text("a\n")
    with pytest.raises(InputError, match=re.escape(f"{txt}: items file must be .jsonl or .csv")):
        load_user_pool(txt)
    nd = _jsonl(tmp_path, [_t("a", "x"), _t("b", "y"), _t("c", "z")], name="items.ndjson")
    assert load_user_pool(nd, []).ids == ["a", "b", "c"]
