"""The workflow's shared view of the config (rules/common.smk binds it): the judges, the
config hash, the roles, and the input functions and params every study's rules use.

Here rather than in the rules so that tests import them and a study's rules stay rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from judgelab.config import check_judges, config_hash, drop_profile_leftovers, fill_output_limits
from judgelab.workflow.roles import check_roles, role_config, usable_simulated_roles, with_roles


def name_regex(names: Iterable[str]) -> str:
    """Wildcard constraint matching exactly these names (or nothing)."""
    names = list(names)
    return "|".join(re.escape(n) for n in names) if names else "(?!x)x"


class Dag:
    """The config as the rules see it (``config`` is completed in place: output limits filled,
    profile leftovers of real entries dropped, as the Snakefile's config must be)."""

    def __init__(self, config: dict[str, Any]) -> None:
        fill_output_limits(config)  # top-level output_limits -> every real judge entry without its own
        drop_profile_leftovers(config)  # a real entry merged over a simulated default keeps no `profile`
        self.config = config
        self.judge_specs = {s.name: s for s in check_judges(config, source="config")}
        self.replay_specs = {s.name: s for s in check_judges({"judges": config.get("replay_judges", [])},
                                                             source="config: replay_judges")}
        self.entries = {d["name"]: d for d in list(config["judges"]) + list(config.get("replay_judges", []))}
        self.config_hash = config_hash(config)
        self.cache = config["cache"]
        # Auxiliary roles (gold judge, writers, generators, teacher, detectors, a synthetic tournament)
        # are checked per job, not here (needs_roles).  simulated_roles: the simulated roles outputs
        # may name; role_config: the config roles are checked against (the user's real one in a
        # `judgelab plan` stand-in run).
        self.simulated_roles = usable_simulated_roles(config)
        self.role_config = role_config(config)

    def judge_entry(self, name: str) -> Mapping[str, Any]:
        return self.entries[name]

    def needs_roles(self, keys: Any, judge: Any = None, error: Exception | None = None) -> Callable[[Any], list[str]]:
        """Input function for the jobs that use auxiliary roles; it returns no files, and raises
        for a job in the DAG whose roles a real run may not use (Snakemake names the rule and
        wildcards, the ConfigError the role and its config key).

        ``keys``: config keys or prefixes of the roles (``"rbd.teacher"``, ``"scoring.generation"``),
        or a function of the wildcards giving them; ``judge``: only the roles this judge fills (a
        name or a function of the wildcards); ``error``: a ConfigError met while planning the
        study, raised here so that it stops only the targets that need the study's jobs."""

        def check(wildcards: Any) -> list[str]:
            if error is not None:
                raise error
            ks = keys(wildcards) if callable(keys) else keys
            j = judge(wildcards) if callable(judge) else judge
            check_roles(self.role_config, list(ks), judge=j)
            return []

        return check

    def provenance(self, entries: list[Mapping[str, Any]], study: str | None = None,
                   panel: Iterable[str] = ()) -> dict[str, Any]:
        """Provenance params of judge entries; with ``study``, the study's simulated roles are
        added as inputs (tables then name them in ``simulated_inputs``; ``panel``: the judges
        it evaluates)."""
        prov = {"config_hash": self.config_hash, "seed": self.config["seed"], "judges": list(entries)}
        return with_roles(prov, self.simulated_roles, study, list(panel)) if study else prov

    def provenance_for(self, judge_names: Iterable[str], study: str | None = None,
                       panel: Iterable[str] = ()) -> dict[str, Any]:
        """Provenance params of judges by name (:meth:`provenance`)."""
        return self.provenance([self.judge_entry(n) for n in judge_names], study, panel)

    def judges_for_dataset(self, dataset: str) -> list[str]:
        """All configured judges, plus the replayed judges recorded on this pair set."""
        replay = [n for n, s in self.replay_specs.items() if s.options.get("dataset") == dataset]
        return list(self.judge_specs) + replay

    def query_params(self, w: Any, study: Mapping[str, Any]) -> dict[str, Any]:
        """Params of a judge-querying job: judge entry, template, orders, cache, provenance."""
        entry = self.judge_entry(w.judge)
        return dict(
            judge=entry,
            template=(entry.get("options") or {}).get("prompt_template", study["template"]),
            orders=study["orders"],
            cache=self.cache,
            max_error_rate=self.config["max_error_rate"],
            provenance=self.provenance_for([w.judge]),
        )
