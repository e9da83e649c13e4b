"""Planning of the topk study's DAG (rules/topk.smk): which judges answer, which judge the
focus tables follow, which replayed judges and rank runs there are -- checked once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from judgelab.topk.pipeline import focus_judge, rank_judges


@dataclass
class TopkPlan:
    cfg: Mapping[str, Any]
    judges: list[str]
    focus: str
    replay: list[str]
    rank_pools: dict[str, Any] = field(default_factory=dict)
    rank_judges: list[str] = field(default_factory=list)

    @property
    def llmbar_judges(self) -> list[str]:
        return self.judges + self.replay


def plan_topk(config: Mapping[str, Any], judge_specs: Mapping[str, Any], replay_specs: Mapping[str, Any]) -> TopkPlan:
    cfg = config["topk"]
    judges = list(judge_specs)
    replay = [n for n, s in replay_specs.items() if s.options.get("dataset") in cfg["llmbar"]["datasets"]]
    return TopkPlan(cfg=cfg, judges=judges, focus=focus_judge(cfg, judges), replay=replay,
                    rank_pools=dict(cfg.get("rank", {}).get("pools", {})), rank_judges=rank_judges(cfg, judges))
