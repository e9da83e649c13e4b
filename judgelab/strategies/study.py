"""Former home of the strategies study's planning, now :mod:`judgelab.strategies.plan` (kept
so that existing imports work)."""

from judgelab.strategies.plan import TABLES, StrategiesStudy, plan_strategies

__all__ = ["TABLES", "StrategiesStudy", "plan_strategies"]
