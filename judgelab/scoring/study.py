"""Former home of the scoring study's planning, now :mod:`judgelab.scoring.plan` (kept so that
existing imports work)."""

from judgelab.scoring.plan import ScoringStudy

__all__ = ["ScoringStudy"]
