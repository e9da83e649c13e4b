"""Hand-built recorded verdict tables (importer.RECORDED_COLUMNS) for the bias card tests."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from judgelab.verdict_import.importer import RECORDED_COLUMNS

SHORT = "a short answer"
LONG = "a much longer answer with many more words in it than the other one has"


@dataclass(frozen=True)
class Call:
    """One presentation: the verdict as shown ('' when none) and its parse status."""

    item: str
    pair: str
    order: str
    shown: str
    status: str = "ok"
    gold: str = "A"
    response_a: str = LONG
    response_b: str = SHORT
    label: str = ""


def stored(shown: str, order: str) -> str:
    if order == "BA" and shown in ("A", "B"):
        return {"A": "B", "B": "A"}[shown]
    return shown


def table(calls: list[Call], judge: str = "j", family: str = "openai") -> pd.DataFrame:
    rows = []
    for i, c in enumerate(calls):
        v = stored(c.shown, c.order)
        rows.append({
            "judge": judge, "backend": "recorded", "model": judge, "family": family, "pair_id": c.pair,
            "item_id": c.item, "order": c.order, "instruction": f"q {c.item}", "response_a": c.response_a,
            "response_b": c.response_b, "model_a": "m1", "model_b": "m2", "family_a": "other",
            "family_b": "other2", "verdict_shown": c.shown, "verdict": v,
            "preference": {"A": 0.0, "B": 1.0, "tie": 0.5}.get(v), "label": c.label,
            "expected_verdict": c.gold, "correct": v == c.gold if c.gold else None, "status": c.status,
            "parse_method": "test", "raw_text": "", "simulated": False, "category": "", "source_file": "t",
            "source_row": i,
        })
    return pd.DataFrame(rows, columns=RECORDED_COLUMNS)


def both_orders(item: str, pair: str, shown_ab: str, shown_ba: str, **kw) -> list[Call]:
    st_ab = kw.pop("status_ab", "ok" if shown_ab else "unparsed")
    st_ba = kw.pop("status_ba", "ok" if shown_ba else "unparsed")
    return [Call(item, pair, "AB", shown_ab, st_ab, **kw), Call(item, pair, "BA", shown_ba, st_ba, **kw)]


def lengths(i: int) -> dict:
    """Responses whose length ratio varies from pair to pair (so a logit has a length cue)."""
    return {"response_a": " ".join(["word"] * (5 + 7 * (i % 5))), "response_b": " ".join(["word"] * (6 + 3 * (i % 4)))}


#: the modules of the card that call row builders and statistics by name
CARD_MODULES = ("card", "rows_share", "rows_cue", "rows_logit", "rows_benchmark", "rows_human")


def break_everywhere(monkeypatch, name: str, replacement) -> None:
    """Replace ``name`` in every card module that calls it (a row builder is called from the card and
    from other builders), so that every call of it, wherever it is made, gets ``replacement``."""
    import importlib

    hit = False
    for mod in CARD_MODULES:
        module = importlib.import_module(f"judgelab.bias_card.{mod}")
        if hasattr(module, name):
            monkeypatch.setattr(module, name, replacement)
            hit = True
    assert hit, name
