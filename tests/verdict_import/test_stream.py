"""The audit's streamed table (texts reduced to features as read) gives the card of the full table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab.bias_card.card import CardSettings, bias_card
from judgelab.verdict_import import importer
from judgelab.verdict_import.importer import FEATURE_COLUMNS, TEXT_COLUMNS, import_verdicts
from judgelab.verdict_import.presets import preset_mapping

PIECES = ["**bold** claim", "- item\n- item two", "plain prose here", "# Heading\n1. first", "`code` sample",
          "naïve café — résumé", "", "   ", "> quoted\n| a | b |"]


def _judgebench_log(folder: Path, n: int, scale: int = 1, seed: int = 0) -> None:
    """A JudgeBench-layout log (two games per record, the second swapped) with varied texts."""
    rng = np.random.default_rng(seed)
    for k, judge in enumerate(("arena_hard", "reward_model")):
        lines = []
        for i in range(n):
            a = " ".join(PIECES[j] for j in rng.integers(0, len(PIECES), 1 + int(rng.integers(0, 4)))) * scale
            b = " ".join(PIECES[j] for j in rng.integers(0, len(PIECES), 1 + int(rng.integers(0, 6)))) * scale
            games = []
            for _ in range(2):
                dec = [None, "A>B", "B>A", "A=B"][int(rng.integers(0, 4))] if rng.random() < 0.9 else "A>>B"
                j = {"judge_model": f"model-{k}", "prompt": "p", "response": f"[[{dec}]]"}
                if judge == "reward_model" and rng.random() < 0.7:
                    j["scores"] = [float(rng.normal()), float(rng.normal())]
                games.append({"judgment": j, "decision": dec})
            lines.append(json.dumps({"pair_id": f"{k}-{i}", "original_id": i // 3, "source": "s", "question": f"q{i}",
                                     "response_model": "gpt-4o", "response_A": a, "response_B": b,
                                     "label": ["A>B", "B>A"][i % 2], "judge_name": judge, "judgments": games},
                                    ensure_ascii=False))
        (folder / f"judge_name={judge},judge_model=model-{k}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("chunk", [7, 65_536])
def test_streamed_and_in_memory_tables_give_the_same_card(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(importer, "CHUNK_ROWS", chunk)  # features measured chunk by chunk, or at once
    _judgebench_log(tmp_path, 120)
    m = preset_mapping("judgebench")
    full = import_verdicts([tmp_path], m)
    lean = import_verdicts([tmp_path], m, texts=False)
    assert not set(TEXT_COLUMNS) & set(lean.columns) and set(FEATURE_COLUMNS) <= set(lean.columns)
    assert lean.attrs["empty_responses"] == full.attrs["empty_responses"] > 0
    same = [c for c in full.columns if c in lean.columns]
    pd.testing.assert_frame_equal(lean[same].astype(object), full[same].astype(object))
    s = CardSettings(n_resamples=200)
    card_full, card_lean = bias_card(full, s), bias_card(lean, s)
    pd.testing.assert_frame_equal(card_lean, card_full)  # exactly: every estimate, CI and p-value
    # the cues are really there: length and markdown rows have units, non-ASCII texts included
    rows = card_full.set_index(["judge", "view", "metric"])
    assert (rows.xs("length_preference", level="metric")["n"] > 0).all()
    assert (rows.xs("markdown_preference", level="metric")["n"] > 0).all()


def test_the_streamed_table_does_not_grow_with_the_texts(tmp_path, monkeypatch):
    monkeypatch.setattr(importer, "CHUNK_TEXT_BYTES", 2_000)  # many chunks: texts leave as they are read
    short, long = tmp_path / "short", tmp_path / "long"
    short.mkdir()
    long.mkdir()
    _judgebench_log(short, 150, scale=1)
    _judgebench_log(long, 150, scale=10)
    m = preset_mapping("judgebench")
    a, b = import_verdicts([short], m, texts=False), import_verdicts([long], m, texts=False)
    size_a, size_b = a.memory_usage(deep=True).sum(), b.memory_usage(deep=True).sum()
    assert abs(size_b - size_a) <= 0.01 * size_a  # same pairs: same table, whatever the texts' length
    full_a = import_verdicts([short], m).memory_usage(deep=True).sum()
    full_b = import_verdicts([long], m).memory_usage(deep=True).sum()
    assert full_b > 2 * full_a  # (the table with texts does grow: the check above has teeth)
    assert (b["words_a"] >= a["words_a"]).all() and (b["words_a"] > a["words_a"]).any()
