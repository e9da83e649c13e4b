"""Planted judge logs: recorded verdict tables with known biases, to check the card.

A simulated judge decides each presentation by a mixture of mechanisms: with
probability ``fail`` it gives no verdict, ``tie`` a tie; otherwise it picks the slot
shown first (weight ``position``), the longer response (``length``), the more
formatted one (``markdown``), its own family's (``self_pref``), or else follows gold
with probability ``accuracy``.  Every pair has a longer response (ratio >= 2), exactly
one formatted response and exactly one response from the judge's family, each on an
independent coin flip, so the population values of the card's metrics are known in
closed form (:func:`planted_truth`).  Everything made here is marked simulated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from judgelab.verdict_import.importer import RECORDED_COLUMNS, model_family

_WORDS = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river stone cloud".split()


@dataclass(frozen=True)
class PlantedJudge:
    position: float = 0.0
    length: float = 0.0
    markdown: float = 0.0
    self_pref: float = 0.0
    accuracy: float = 0.85
    tie: float = 0.05
    fail: float = 0.03
    family: str = "openai"

    def __post_init__(self) -> None:
        if self.position + self.length + self.markdown + self.self_pref > 1 or self.tie + self.fail >= 1:
            raise ValueError("mechanism weights must sum to at most 1, tie + fail to less than 1")


def planted_truth(j: PlantedJudge) -> dict[str, float]:
    """Population values of the card metrics for a planted judge."""
    d = 1 - j.tie - j.fail
    parsed = 1 - j.fail  # the card computes position over parsed verdicts (ties in the denominator)
    follow = 1 - j.position - j.length - j.markdown - j.self_pref
    return {
        "position_preference": d / parsed * j.position,
        # the cue rows of a log with gold: the excess over gold's share (gold is independent of every
        # cue and balanced here, so gold's share is 1/2 and the excess is the raw share's distance from it)
        "length_preference": j.length / 2,
        "markdown_preference": j.markdown / 2,
        "self_preference": j.self_pref / 2,
        "length_share_raw": 0.5 + j.length / 2,
        "markdown_share_raw": 0.5 + j.markdown / 2,
        "self_share_raw": 0.5 + j.self_pref / 2,
        "accuracy_average": d * (follow * j.accuracy + (1 - follow) * 0.5),
        "tie_rate": j.tie,
        "parse_failures": j.fail,
    }


def _text(rng: np.random.Generator, n: int, formatted: bool) -> str:
    words = list(rng.choice(_WORDS, size=n))
    if not formatted:
        return " ".join(words)
    lines = [" ".join(words[i:i + 6]) for i in range(0, n, 6)]
    return "## Answer\n" + "\n".join(f"- {ln}" for ln in lines)


def planted_log(j: PlantedJudge, *, n_items: int = 100, pairs_per_item: int = 2, seed: int = 0,
                judge: str = "planted") -> pd.DataFrame:
    """A recorded verdict table (both orders of every pair) from the planted judge."""
    rng = np.random.default_rng(seed)
    own_model, other_model = {"openai": ("gpt-4o", "claude-3-opus")}.get(j.family, (f"{j.family}-model", "gpt-4o"))
    rows: list[dict[str, Any]] = []
    for i in range(n_items):
        for k in range(pairs_per_item):
            short = int(rng.integers(15, 40))
            lengths = [short, int(short * rng.uniform(2.0, 3.0))]
            if rng.random() < 0.5:
                lengths.reverse()
            md_a = bool(rng.random() < 0.5)
            texts = [_text(rng, lengths[0], md_a), _text(rng, lengths[1], not md_a)]
            own_a = bool(rng.random() < 0.5)
            models = [own_model, other_model] if own_a else [other_model, own_model]
            gold = "A" if rng.random() < 0.5 else "B"
            longer = "A" if lengths[0] > lengths[1] else "B"
            for order in ("AB", "BA"):
                u = rng.random()
                if u < j.fail:
                    verdict, status = "", "unparsed"
                elif u < j.fail + j.tie:
                    verdict, status = "tie", "ok"
                else:
                    status = "ok"
                    m = rng.random()
                    first = "A" if order == "AB" else "B"
                    if m < j.position:
                        verdict = first
                    elif m < j.position + j.length:
                        verdict = longer
                    elif m < j.position + j.length + j.markdown:
                        verdict = "A" if md_a else "B"
                    elif m < j.position + j.length + j.markdown + j.self_pref:
                        verdict = "A" if own_a else "B"
                    else:
                        verdict = gold if rng.random() < j.accuracy else ("B" if gold == "A" else "A")
                shown = verdict if order == "AB" or verdict in ("", "tie") else {"A": "B", "B": "A"}[verdict]
                rows.append({
                    "judge": judge, "backend": "recorded", "model": f"simulated/{j.family}", "family": j.family,
                    "pair_id": f"q{i:04d}-p{k}", "item_id": f"q{i:04d}", "order": order,
                    "instruction": f"question {i}", "response_a": texts[0], "response_b": texts[1],
                    "model_a": models[0], "model_b": models[1], "family_a": model_family(models[0]),
                    "family_b": model_family(models[1]), "verdict_shown": shown, "verdict": verdict,
                    "preference": {"A": 0.0, "B": 1.0, "tie": 0.5}.get(verdict, np.nan), "label": "",
                    "expected_verdict": gold, "correct": verdict == gold, "status": status,
                    "parse_method": "planted", "raw_text": "", "simulated": True, "category": "planted",
                    "source_file": "planted", "source_row": len(rows),
                })
    df = pd.DataFrame(rows, columns=RECORDED_COLUMNS)
    df["correct"] = df["correct"].astype("boolean")
    return df
