"""The column route of the text features (Arrow's RE2 kernels) equals the per-text Python route."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.datasets.features import markdown_score, text_feature_arrays, text_features, word_count

# the characters where RE2 and Python's re disagree unless the classes are spelled out
_ALPHABET = st.sampled_from([*"ab1 #-*+>|_`.)\n\t\r\f\v\x1c\x1d\x1e\x1f", "\u00a0", "\u2003", "é", "\x85"])
TEXTS = st.lists(st.one_of(st.none(), st.text(_ALPHABET, max_size=40)), max_size=12)


@settings(max_examples=1000, deadline=None)
@given(TEXTS)
def test_arrays_equal_the_python_features_text_by_text(texts):
    words, md = text_feature_arrays(texts)
    assert words.tolist() == [float(word_count(t or "")) for t in texts]
    assert md.tolist() == [markdown_score(t or "") for t in texts]


def test_known_texts_and_every_input_form():
    texts = ["# Title\n- one\n- two **bold**", "plain words here", None, "", "x\vy\x1cz", "1. a\n2) b\n> q\n| c |"]
    expect_w = [7.0, 3.0, 0.0, 0.0, 3.0, 9.0]
    expect_md = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    for form in (texts, pa.array(texts), pa.chunked_array([texts[:2], texts[2:]]), pa.array(texts).dictionary_encode()):
        w, md = text_feature_arrays(form)
        assert w.tolist() == expect_w and md.tolist() == expect_md
    assert text_features("# T\n- a").markdown == 0.5 and text_features("great, sadly").sentiment == 0.0
    assert np.asarray(text_feature_arrays([])[0]).shape == (0,)
