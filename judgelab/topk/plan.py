"""Planning of the topk study's DAG (rules/topk.smk): which judges answer, which judge the
focus tables follow, which replayed judges and rank runs there are -- checked once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judgelab.config import ConfigError


def focus_judge(cfg: dict[str, Any], judge_names: Sequence[str]) -> str:
    """The configured focus judge, or the first judge when it is not in this judge set."""
    f = cfg.get("focus_judge")
    return f if isinstance(f, str) and f in judge_names else judge_names[0]


def rank_judges(cfg: dict[str, Any], judge_names: Sequence[str]) -> list[str]:
    """Judges of the live ranking: ``topk.rank.judges`` or the focus judge; unknown names fail."""
    names = cfg.get("rank", {}).get("judges")
    if names is None:
        return [focus_judge(cfg, judge_names)] if judge_names else []
    unknown = [n for n in names if n not in judge_names]
    if unknown:
        raise ConfigError(f"topk.rank.judges: {unknown} are not configured judges ({list(judge_names)})")
    return list(names)


def flip_judges(cfg: Mapping[str, Any], judge_names: Sequence[str]) -> list[str]:
    """Judges asked for the temperature-1 flip rate: ``topk.flip_rate.judges`` or the focus judge;
    unknown names fail."""
    names = (cfg.get("flip_rate") or {}).get("judges")
    if names is None:
        return [focus_judge(dict(cfg), judge_names)] if judge_names else []
    unknown = [n for n in names if n not in judge_names]
    if unknown:
        raise ConfigError(f"config: topk.flip_rate.judges: {unknown} are not configured judges ({list(judge_names)})")
    return list(names)


@dataclass
class TopkPlan:
    cfg: Mapping[str, Any]
    judges: list[str]
    focus: str
    replay: list[str]
    rank_pools: dict[str, Any] = field(default_factory=dict)
    rank_judges: list[str] = field(default_factory=list)
    #: the judges asked for the temperature-1 flip rate (``topk.flip_rate.judges``; the focus judge)
    flip_judges: list[str] = field(default_factory=list)

    @property
    def llmbar_judges(self) -> list[str]:
        """The judges asked the LLMBar pairs: ``topk.llmbar.judges``, or every judge and replayed judge."""
        named = (self.cfg.get("llmbar") or {}).get("judges")
        every = self.judges + self.replay
        return every if named is None else [j for j in every if j in named]


def plan_topk(config: Mapping[str, Any], judge_specs: Mapping[str, Any], replay_specs: Mapping[str, Any]) -> TopkPlan:
    cfg = config["topk"]
    judges = list(judge_specs)
    replay = [n for n, s in replay_specs.items() if s.options.get("dataset") in cfg["llmbar"]["datasets"]]
    for name in (cfg.get("llmbar") or {}).get("judges") or []:
        if name not in judges and name not in replay:
            raise ConfigError(f"config: topk.llmbar.judges: {name!r} is not a configured or replayed judge "
                              f"({', '.join(judges + replay)})")
    for name, n in (cfg.get("oracles_per_judge") or {}).items():
        if name not in judges:
            raise ConfigError(f"config: topk.oracles_per_judge: {name!r} is not a configured judge "
                              f"({', '.join(judges)})")
        if int(n) > int(cfg["n_oracles"]):
            raise ConfigError(f"config: topk.oracles_per_judge.{name}: {n} pools, but topk.n_oracles builds "
                              f"{cfg['n_oracles']}")
    return TopkPlan(cfg=cfg, judges=judges, focus=focus_judge(cfg, judges), replay=replay,
                    rank_pools=dict(cfg.get("rank", {}).get("pools", {})), rank_judges=rank_judges(cfg, judges),
                    flip_judges=flip_judges(cfg, judges))
