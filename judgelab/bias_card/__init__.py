"""Bias cards of judges from their recorded verdicts (``judgelab audit``).

The names below load on first use (PEP 562), so importing a light submodule such as
``judgelab.bias_card.plan`` (the workflow's planner does) does not load the card's statistics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgelab.bias_card.card import CARD_COLUMNS, METRICS, CardSettings, bias_card, judge_card

__all__ = ["CARD_COLUMNS", "METRICS", "CardSettings", "bias_card", "judge_card"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from judgelab.bias_card import card

        return getattr(card, name)
    raise AttributeError(f"module 'judgelab.bias_card' has no attribute {name!r}")
