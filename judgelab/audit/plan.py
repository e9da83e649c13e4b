"""Planning of the audit study's DAG (rules/audit.smk): the pair sets to run, the template."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judgelab.config import ConfigError
from judgelab.workflow.planning import check_template


@dataclass
class AuditPlan:
    cfg: Mapping[str, Any]
    sets: list[str]


def plan_audit(config: Mapping[str, Any], judge_entries: Mapping[str, Mapping[str, Any]]) -> AuditPlan:
    cfg = config["audit"]
    sets = list(cfg.get("run_datasets") or cfg["datasets"])
    for ds in sets:
        if ds not in cfg["datasets"]:
            raise ConfigError(f"config audit.run_datasets: unknown set {ds!r}; known: {', '.join(cfg['datasets'])}")
    check_template(cfg["template"], "config: audit/template", judge_entries)
    return AuditPlan(cfg=cfg, sets=sets)
