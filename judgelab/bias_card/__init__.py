"""Bias cards of judges from their recorded verdicts (``judgelab audit``)."""

from judgelab.bias_card.card import CARD_COLUMNS, METRICS, CardSettings, bias_card, judge_card

__all__ = ["CARD_COLUMNS", "METRICS", "CardSettings", "bias_card", "judge_card"]
