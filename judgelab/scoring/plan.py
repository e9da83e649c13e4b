"""The scoring study's view of the config, for ``rules/scoring.smk``.

Which data sets run, which judges score, the study's own judges (gold judge and the
generation-review models, ``scoring.extra_judges``) and the scoring behaviour planted
in simulated judges (``scoring.sim_profiles``).  Kept here, not in the Snakefile, so
bad names fail at DAG construction with a message naming the key, and the rules
file holds rules only.
"""

from __future__ import annotations

from typing import Any

from judgelab.config import ConfigError, JudgeSpec, check_judges
from judgelab.registry import backend_traits
from judgelab.scoring.human_files import absent_reason
from judgelab.scoring.query import with_scoring_profile


class ScoringStudy:
    def __init__(self, config: dict[str, Any], judge_entries: dict[str, dict[str, Any]], config_hash: str) -> None:
        self.cfg = config["scoring"]
        self.seed = config["seed"]
        self.config_hash = config_hash
        self.judge_entries = judge_entries
        sets = self.cfg["run_datasets"]
        self.datasets: list[str] = list(self.cfg["datasets"]) if sets is None else list(sets)
        for d in self.datasets:
            if d not in self.cfg["datasets"]:
                raise ConfigError(f"config: scoring.run_datasets: {d!r} is not in scoring.datasets "
                                  f"({', '.join(self.cfg['datasets'])})")
        #: sets marked ``optional`` whose file is not here (paper 004's human-scored sets before their
        #: download): left out of the run, each with the one line saying why (judgelab/scoring/human.py)
        self.absent: dict[str, str] = {}
        for d in self.datasets:
            if self.cfg["datasets"][d].get("optional"):
                why = absent_reason(d, self.cfg["datasets"][d])
                if why:
                    self.absent[d] = why
        every = list(self.cfg["perturbations"])
        #: the perturbations an absent set would be scored under, those of ``scoring.perturbations``
        #: (its empty Table 3 rows; its own list is checked only when it runs)
        self.absent_perturbations = {d: [v for v in (self.cfg["datasets"][d].get("perturbations") or every)
                                         if v in every] for d in self.absent}
        self.datasets = [d for d in self.datasets if d not in self.absent]
        self.synthesised = [d for d in self.datasets if self.cfg["datasets"][d].get("synthesise_responses")]
        #: the perturbations each set is scored under: its own ``perturbations`` (paper 004 puts the
        #: reference-score ones on FLASK only) or ``scoring.perturbations``
        self.dataset_perturbations: dict[str, list[str]] = {}
        for d in self.datasets:
            own = self.cfg["datasets"][d].get("perturbations")
            if own is not None:
                where = f"config: scoring.datasets.{d}.perturbations"
                unknown = [v for v in own if v not in every]
                if unknown:
                    raise ConfigError(f"{where}: {', '.join(map(repr, unknown))} not in scoring.perturbations "
                                      f"({', '.join(every)})")
                if "baseline" in every and "baseline" not in own:
                    raise ConfigError(f"{where}: must include 'baseline' (the fluctuation is measured against it)")
            self.dataset_perturbations[d] = list(every if own is None else own)
        specs = check_judges({"judges": self.cfg["extra_judges"]}, source="config: scoring.extra_judges")
        self.extra = {s.name: e for s, e in zip(specs, self.cfg["extra_judges"], strict=True)}
        configured = [n for n, e in judge_entries.items() if not backend_traits(e).recorded]
        self.judges: list[str] = configured if self.cfg["judges"] is None else list(self.cfg["judges"])
        self.gold: str = self.cfg["gold"]["judge"]
        self.generators: list[str] = list(self.cfg["generation"]["models"])
        # Table 2 (paper 004): further gold candidates, each scored with the gold protocol
        cands = self.cfg["gold"].get("candidates")
        cands = self.generators if cands is None else cands
        self.gold_candidates: list[str] = [n for n in dict.fromkeys(cands) if n != self.gold]
        for name in [*self.judges, self.gold, *self.generators, *self.gold_candidates]:
            self.entry(name)  # unknown names and non-scoring profile keys fail now
        # profiles of judges absent from the current judge set are ignored: judge sets are swappable

    def entry(self, name: str) -> dict[str, Any]:
        """A judge entry of this study (configured or extra), with its planted scoring profile."""
        if name in self.extra:
            entry = self.extra[name]
        elif name in self.judge_entries:
            entry = self.judge_entries[name]
        else:
            known = ", ".join([*self.judge_entries, *self.extra])
            raise ConfigError(f"config: scoring: unknown judge {name!r}; known: {known}")
        return with_scoring_profile(entry, self.cfg["sim_profiles"].get(name))

    def spec(self, name: str) -> JudgeSpec:
        return JudgeSpec.from_dict(self.entry(name), where=f"scoring judge {name}")

    def provenance(self, names: list[str]) -> dict[str, Any]:
        return {"config_hash": self.config_hash, "seed": self.seed, "judges": [self.entry(n) for n in names]}
