"""Two lines of the columnar JSONL reader that only a JSONL log reaches, held to the record path.

The columnar reader (:mod:`judgelab.verdict_import.columnar`) answers for files the record path
could read, so every line of it must give the record path's table: the swap of the responses in
the games of a ``responses: shown`` log (a CSV log never reaches that reader, so its test cannot
see this line), and the ids longer than 96 characters that both paths hash (the boundary exactly
at 96, counted in characters, not bytes).  Each test also checks the table against values worked
out here by hand, so a mutant that moved both paths alike would still fail.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from judgelab.datasets.features import text_feature_arrays
from judgelab.verdict_import.importer import import_verdicts
from judgelab.verdict_import.mapping import build_mapping


def _both(f: Path, mapping) -> tuple[pd.DataFrame, pd.DataFrame]:
    fast = import_verdicts([f], mapping, texts=False)
    slow = import_verdicts([f], mapping, texts=False, columnar=False)
    pd.testing.assert_frame_equal(fast, slow)  # values, dtypes and categories alike
    return fast, slow


def _write(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


# --- the responses as shown: the BA game sees them swapped ----------------------------------------

#: one record per call pair: "first"/"second" are the responses as the log names them, game 0 shows
#: them in that order (AB), game 1 swapped (BA); the verdicts are in each game's own letters
SHOWN = {
    "file_type": "jsonl", "responses": "shown",
    "judge": "judge", "pair_id": "id", "item_id": "q",
    "response_a": "first", "response_b": "second", "model_a": "m1", "model_b": "m2",
    "games": [{"order": "AB", "verdict": {"label": "v1", "values": {"A": "A", "B": "B"}}},
              {"order": "BA", "verdict": {"label": "v2", "values": {"A": "A", "B": "B"}}}],
}


def _shown_records(n: int) -> list[dict]:
    """Responses of clearly different length and markdown on each side, models of different
    families, verdicts varied (an independent count below tells the slots apart)."""
    return [{"judge": "judge-x", "id": f"p{i}", "q": f"q{i % 4}",
             "first": "one two three " * (i % 3 + 1), "second": "# Head\n\n- a\n- b\n\n**bold** " + "w " * (7 + i),
             "m1": "gpt-4", "m2": "claude-3", "v1": "AB"[i % 2], "v2": "AB"[(i // 2) % 2]} for i in range(n)]


def test_a_shown_responses_jsonl_log_is_read_alike_by_both_paths_in_both_orders(tmp_path, taken):
    recs = _shown_records(12)
    f = _write(tmp_path / "shown.jsonl", recs)
    fast, _ = _both(f, build_mapping(SHOWN))
    assert taken == [f.name]  # the columnar reader read it (the line under test ran)
    words_first, md_first = text_feature_arrays([r["first"] for r in recs])
    words_second, md_second = text_feature_arrays([r["second"] for r in recs])
    for order, (slot_a, slot_b) in (("AB", (0, 1)), ("BA", (1, 0))):
        rows = fast[fast["order"] == order].set_index("pair_id").loc[[r["id"] for r in recs]]
        words = (words_first, words_second)
        md = (md_first, md_second)
        assert rows["words_a"].tolist() == pytest.approx(list(words[slot_a]))
        assert rows["words_b"].tolist() == pytest.approx(list(words[slot_b]))
        assert rows["markdown_a"].tolist() == pytest.approx(list(md[slot_a]))
        assert rows["markdown_b"].tolist() == pytest.approx(list(md[slot_b]))
        models = ("gpt-4", "claude-3")
        assert set(rows["model_a"].astype(str)) == {models[slot_a]}
        assert set(rows["model_b"].astype(str)) == {models[slot_b]}
        assert set(rows["family_a"].astype(str)) == {("openai", "anthropic")[slot_a]}
    # the verdicts in the stored frame: a BA game's "A" is the stored B
    ba = fast[fast["order"] == "BA"].set_index("pair_id")
    for r in recs:
        assert ba.at[r["id"], "verdict_shown"] == r["v2"]
        assert ba.at[r["id"], "verdict"] == {"A": "B", "B": "A"}[r["v2"]]


# --- ids of 95, 96 and 97 characters: hashed past 96 on both paths --------------------------------


def _sha_id(*parts: object) -> str:
    """The documented hashed id: ``p`` + 12 hex of SHA-256 over the parts joined by U+001F."""
    return "p" + hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:12]


@pytest.mark.parametrize("char", ["x", "é"])  # é: two bytes, one character
def test_ids_of_95_96_and_97_characters_alike_on_both_paths(tmp_path, taken, char):
    lengths = (95, 96, 97)
    recs = [{"judge": "j", "id": char * k, "q": "q" + char * (k - 1), "a": f"a{k}", "b": f"b{k}", "v": "A"}
            for k in lengths]
    f = _write(tmp_path / "ids.jsonl", recs)
    m = build_mapping({"file_type": "jsonl", "judge": "judge", "pair_id": "id", "item_id": "q", "response_a": "a",
                       "response_b": "b", "verdict": {"label": "v", "values": {"A": "A", "B": "B"}}})
    fast, _ = _both(f, m)
    assert taken == [f.name]
    got = fast.set_index("source_row")
    for row, (k, r) in enumerate(zip(lengths, recs, strict=True), start=1):
        want = r["id"] if k <= 96 else _sha_id(r["id"])
        assert got.at[row, "pair_id"] == want
        assert got.at[row, "item_id"] == (r["q"] if k <= 96 else _sha_id(r["q"]))
