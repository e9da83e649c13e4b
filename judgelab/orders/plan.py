"""Planning of the both-orders study's DAG (rules/orders.smk): the pair sets to run, the template."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judgelab.config import ConfigError
from judgelab.workflow.planning import check_template


@dataclass
class OrdersPlan:
    cfg: Mapping[str, Any]
    sets: list[str]


def plan_orders(config: Mapping[str, Any], judge_entries: Mapping[str, Mapping[str, Any]]) -> OrdersPlan:
    cfg = config["orders"]
    sets = list(cfg.get("run_datasets") or cfg["datasets"])
    for ds in sets:
        if ds not in cfg["datasets"]:
            raise ConfigError(f"config orders.run_datasets: unknown set {ds!r}; known: {', '.join(cfg['datasets'])}")
    check_template(cfg["template"], "config: orders/template", judge_entries)
    return OrdersPlan(cfg=cfg, sets=sets)
