"""Planning of the audit_logs study's DAG (rules/audit_logs.smk): each log set's format and
files, and the card's settings, checked once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from judgelab.bias_card.card_settings import CardSettings
from judgelab.bias_card.settings import from_config
from judgelab.config import ConfigError
from judgelab.registry import UnknownEntryError


@dataclass
class AuditLogsPlan:
    cfg: Mapping[str, Any]
    files: dict[str, list[str]]  # log set -> its files (expanded globs)
    settings: CardSettings

    def outputs(self) -> list[str]:
        cards = [f"results/audit_logs/{s}/{f}" for s in self.files for f in ("bias_card.csv", "bias_card.md",
                                                                               "bias_card.png")]
        return cards + (["results/audit_logs/bias_cards.csv"] if self.files else [])


def plan_audit_logs(config: Mapping[str, Any]) -> AuditLogsPlan:
    from judgelab.verdict_import import mapping_from_config
    from judgelab.verdict_import.importer import expand_patterns

    cfg = config["audit_logs"]
    settings = from_config(CardSettings, cfg.get("settings"), where="config: audit_logs/settings")
    files = {}
    for name, spec in cfg["sets"].items():
        where = f"config: audit_logs/sets/{name}/format"
        try:
            mapping_from_config(spec["format"], where=where)
        except UnknownEntryError as e:  # an unknown preset: its message names the flag, not the key
            raise ConfigError(f"{where}: {e}") from None
        files[name] = expand_patterns(spec["files"], where=f"config: audit_logs/sets/{name}/files")
    return AuditLogsPlan(cfg=cfg, files=files, settings=settings)
