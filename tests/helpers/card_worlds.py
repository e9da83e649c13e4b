"""Cheap planted worlds for the bias card's statistical tests: a recorded verdict table built with
NumPy (the feature columns a table read without texts carries, no text to measure), one judge,
every pair shown in both orders."""

from __future__ import annotations

import numpy as np
import pandas as pd


def gold_length_world(rng: np.random.Generator, *, n_pairs: int = 120, pairs_per_item: int = 2,
                      gold_longer: float = 0.6, err_gold_longer: float = 0.0, err_gold_shorter: float = 0.0,
                      judge: str = "j") -> pd.DataFrame:
    """Pairs whose longer response is gold's in ``gold_longer`` of them (on average); the judge errs
    (picks the other response) with probability ``err_gold_longer`` on pairs whose gold is the longer
    and ``err_gold_shorter`` where gold is the shorter, independently per presentation.  Equal rates:
    errors blind to length (no length preference beyond gold); a higher rate where gold is the shorter:
    a planted length preference.  No markdown difference, no model or family cue."""
    longer_a = rng.random(n_pairs) < 0.5
    gold_is_longer = rng.random(n_pairs) < gold_longer
    gold_a = np.where(gold_is_longer, longer_a, ~longer_a)
    words_a = np.where(longer_a, 100.0, 50.0)
    words_b = np.where(longer_a, 50.0, 100.0)
    order = np.repeat(np.array([["AB", "BA"]]), n_pairs, axis=0).ravel()
    rep = np.repeat(np.arange(n_pairs), 2)
    err_p = np.where(gold_is_longer, err_gold_longer, err_gold_shorter)[rep]
    wrong = rng.random(2 * n_pairs) < err_p
    gold = np.where(gold_a, "A", "B")[rep]
    verdict = np.where(wrong, np.where(gold == "A", "B", "A"), gold)
    shown = np.where(order == "AB", verdict, np.where(verdict == "A", "B", "A"))
    return pd.DataFrame({
        "judge": judge, "family": "openai", "pair_id": [f"p{i}" for i in rep],
        "item_id": [f"q{i // pairs_per_item}" for i in rep], "order": order, "verdict": verdict,
        "verdict_shown": shown, "expected_verdict": gold, "status": "ok", "label": "",
        "model_a": "m1", "model_b": "m2", "family_a": "other", "family_b": "other2",
        "words_a": words_a[rep], "words_b": words_b[rep], "markdown_a": 0.0, "markdown_b": 0.0,
        "has_text_a": True, "has_text_b": True,
    })
