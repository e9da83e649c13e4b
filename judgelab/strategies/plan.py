"""The strategies study's DAG plumbing (rules/strategies.smk), checked at DAG construction.

Which judges answer which pair set, which judge generates which controlled-set texts, the
output lists, and the params of each rule -- derived once from the config, so a bad name in the
config fails before anything runs, with the key in the message.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from judgelab.config import ConfigError, JudgeSpec
from judgelab.prompts import PAIRWISE_TEMPLATES
from judgelab.strategies import ROLE_TEMPLATES, get_strategies

log = logging.getLogger(__name__)

TABLES = "results/strategies/tables"
FIGURES = "results/strategies/figures"
BIAS_TABLES = ("bias_scores", "topic_style", "length_ablation", "cross_bias")
GOLD_TABLES = ("agreement", "category_agreement", "mcnemar", "mixed_effects", "mde")


class StrategiesStudy:
    def __init__(self, config: Mapping[str, Any], judge_specs: Mapping[str, JudgeSpec],
                 replay_specs: Mapping[str, JudgeSpec]) -> None:
        self.cfg = config["strategies"]
        self.judge_specs, self.replay_specs = dict(judge_specs), dict(replay_specs)
        self.panel = list(self.cfg["judges"]) if self.cfg["judges"] is not None else list(judge_specs)
        for n in self.panel:
            if n not in judge_specs:
                raise ConfigError(f"config: strategies/judges: unknown judge {n!r}; known: {', '.join(judge_specs)}")
        get_strategies(self.cfg["strategies"])
        for ds, spec in self.cfg["datasets"].items():
            if spec.get("strategies"):
                get_strategies(spec["strategies"], where=f"config: strategies/datasets/{ds}/strategies")
        for role, t in {**ROLE_TEMPLATES, **self.cfg["templates"]}.items():
            PAIRWISE_TEMPLATES.get(t, where=f"config: strategies/templates/{role}")
        run = self.cfg.get("run_datasets")
        unknown = sorted(set(run or []) - set(self.cfg["datasets"]))
        if unknown:
            raise ConfigError(f"config: strategies/run_datasets: {', '.join(unknown)} not in strategies/datasets "
                              f"({', '.join(self.cfg['datasets'])})")
        # config files merge into the defaults, so a user's own set is run alone by naming it here
        self.cfg = {**self.cfg, "datasets": {d: s for d, s in self.cfg["datasets"].items() if run is None or d in run}}
        self.datasets = list(self.cfg["datasets"])
        self.controlled = [d for d, s in self.cfg["datasets"].items() if s["loader"] == "controlled"]
        self.gold_sets = [d for d, s in self.cfg["datasets"].items() if s["loader"] != "controlled" and self.judges(d)]
        self.replay_sets = [d for d in self.gold_sets if self.cfg["datasets"][d].get("judges") == "replay"]
        sel = self.cfg["selector"]
        if sel["natural"] not in self.gold_sets:
            raise ConfigError(f"config: strategies/selector/natural: {sel['natural']!r} is not a gold-labelled data set "
                              f"with judges; known: {', '.join(self.gold_sets) or '(none)'}")
        if sel["adversarial"] is not None and sel["adversarial"] not in self.gold_sets:
            raise ConfigError(f"config: strategies/selector/adversarial: {sel['adversarial']!r} is not a gold-labelled "
                              f"data set with judges; known: {', '.join(self.gold_sets) or '(none)'}")
        self.ctl = self.cfg["controlled"]
        fams = [*self.ctl["original_pairing"], *[f for p in self.ctl["round_robin"] for f in p]]
        self.families = list(dict.fromkeys(fams))
        self.substitutions: list[str] = []  # generator swaps made on purpose (missing_generator: substitute)
        self.expander = self._pick(self.ctl["expansion_generator"])
        self.origin = {f: self._pick(self.ctl["origin_generators"].get(f, ""), f) for f in self.families}
        self.gen_tasks: dict[str, dict[str, Any]] = {}
        if self.controlled and self.expander is not None:
            self.gen_tasks.setdefault(self.expander, {"expansion": False, "families": []})["expansion"] = True
            for f, j in self.origin.items():
                if j is not None:
                    self.gen_tasks.setdefault(j, {"expansion": False, "families": []})["families"].append(f)
        self.all_judges = sorted({j for ds in self.datasets for j in self.judges(ds)})

    # -- judges and strategies per data set --------------------------------------------
    def judges(self, ds: str) -> list[str]:
        """The panel, or (``judges: replay``) the replayed judges recorded on this set."""
        if self.cfg["datasets"][ds].get("judges", "panel") == "replay":
            return [n for n, s in self.replay_specs.items() if s.options.get("dataset") == ds]
        return list(self.panel)

    def strategies(self, ds: str) -> list[str]:
        return list(self.cfg["datasets"][ds].get("strategies") or self.cfg["strategies"])

    def judge_strategies(self, ds: str) -> dict[str, list[str]]:
        return {j: self.strategies(ds) for j in self.judges(ds)}

    def families_of(self, ds: str, entries: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
        return [(j, str(entries[j].get("family", "unknown"))) for j in self.judges(ds)]

    def _pick(self, name: str, family: str | None = None) -> str | None:
        """A configured judge by name.  A name that is not one stops the run naming the key,
        unless ``controlled.missing_generator: substitute`` asks on purpose for the first
        judge of the family (of the panel, for the expansion generator; None when there is
        none, and that family's MODEL_ORIGIN pairs are left out), which is logged."""
        if name in self.judge_specs:
            return name
        key = ("strategies/controlled/expansion_generator" if family is None
               else f"strategies/controlled/origin_generators/{family}")
        if self.controlled and self.ctl.get("missing_generator", "error") != "substitute":
            raise ConfigError(
                f"config: {key}: generator {name or '(none)'!r} is not a configured judge; known: "
                f"{', '.join(self.judge_specs)}.  Name one, or set strategies/controlled/missing_generator: "
                f"substitute to use the first judge of the family on purpose (pairs of a family without a judge "
                f"are then left out)")
        if family is not None:
            pick = next((n for n, s in self.judge_specs.items() if s.family == family), None)
        else:
            pick = next(iter(self.judge_specs), None)
        if self.controlled:
            self.substitutions.append(f"{key}: {name or '(none)'} -> {pick or 'left out'}")
            log.warning("strategies: %s", self.substitutions[-1])
        return pick

    # -- files ---------------------------------------------------------------------------
    def generations(self) -> list[str]:
        return [f"results/strategies/generations/{j}.parquet" for j in self.gen_tasks]

    def calls(self, ds: str) -> list[str]:
        return [f"results/strategies/calls/{ds}/{j}.parquet" for j in self.judges(ds)]

    def verdict_tables(self) -> list[str]:
        """Tables with per-call accounting rows (the call summary reads them)."""
        return [*self.generations(), *[p for ds in self.datasets for p in self.calls(ds)]]

    def figures(self) -> list[str]:
        figs = ["agreement", "pareto", "category_agreement"] + (["bias_heatmap", "cross_bias"] if self.controlled else [])
        return [f"{FIGURES}/{f}.png" for f in figs]

    def outputs(self) -> list[str]:
        out = [f"{TABLES}/strategies.csv", *[f"{TABLES}/{t}.csv" for t in GOLD_TABLES], f"{TABLES}/pareto.csv",
               f"{TABLES}/recommendations.csv", *self.figures()]
        if self.controlled:
            out += [f"{TABLES}/controlled_summary.csv", *[f"{TABLES}/{t}.csv" for t in BIAS_TABLES]]
            if self.cfg["human_annotations"]:
                out.append(f"{TABLES}/human_style_gap.csv")
        if self.replay_sets:
            out.append(f"{TABLES}/replay_s1.csv")
        return out

    # -- params ----------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        return {"temperatures": list(self.cfg["temperatures"]), "cross_family_size": int(self.cfg["cross_family_size"])}

    def analysis(self, seed: int, provenance: dict[str, Any]) -> dict[str, Any]:
        family = {**(self.cfg.get("holm_family") or {}), "exclude_judges": list(self.cfg.get("control_judges") or [])}
        return {"seed": seed, "bootstrap": self.cfg["bootstrap"], "alpha": self.cfg["alpha"], "power": self.cfg["power"],
                "glmm_nodes": self.cfg["glmm_nodes"], "holm_family": family,
                "mixed_strategies": self.cfg.get("mixed_strategies"), "provenance": provenance}


def plan_strategies(config: Mapping[str, Any], judge_specs: Any, replay_specs: Any
                    ) -> tuple[StrategiesStudy, ConfigError | None]:
    """The study the workflow plans, and the ConfigError of a controlled-set generator that is
    not a configured judge (None when all are).

    That error stops only the jobs that need the controlled set (``needs_roles`` in
    ``rules/strategies.smk``), so a target of another study, or a gold set alone, still plans
    with a judge set that lacks the generators; the rules' shapes then come from the same study
    with ``missing_generator: substitute`` (its substitution warnings are muted: no job runs them).
    """
    try:
        return StrategiesStudy(config, judge_specs, replay_specs), None
    except ConfigError as e:
        strat = config["strategies"]
        sub = {**config, "strategies": {**strat, "controlled": {**strat["controlled"], "missing_generator": "substitute"}}}
        level = log.level
        log.setLevel(logging.ERROR)
        try:
            return StrategiesStudy(sub, judge_specs, replay_specs), e  # any other config error raises here
        finally:
            log.setLevel(level)
