"""Planning of the uda study's DAG (rules/uda.smk, rules/uda_common.smk): the tournaments,
judges and transfers the config asks for, checked once, and the input functions and params
of the rules (importable and tested here, not written in the rules)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judgelab.config import ConfigError

TABLES = ["std", "methods", "alignment", "self_preference", "matrix", "reference", "judges", "controls"]
FIGURES = ["trajectories", "heatmap", "pearson", "training"]


class UdaPlan:
    """The uda study's shapes from the config; a bad key raises ConfigError naming it."""

    def __init__(self, config: Mapping[str, Any], judge_specs: Mapping[str, Any],
                 judge_entries: Mapping[str, Mapping[str, Any]], config_hash: str) -> None:
        from judgelab.uda.tournament import TOURNAMENT_LOADERS

        self.config, self.judge_specs, self.judge_entries, self.config_hash = config, judge_specs, judge_entries, config_hash
        self.cfg = uda = config["uda"]
        self.sets = list(uda["datasets"]) if uda.get("run_datasets") is None else list(uda["run_datasets"])
        for d in self.sets:
            if d not in uda["datasets"]:
                raise ConfigError(f"config uda.run_datasets: {d!r} is not a tournament in uda.datasets "
                                  f"({', '.join(uda['datasets'])})")
        self.judges = list(uda.get("judges") or judge_specs)
        self.variants = list(uda["variants"])
        self.trained = [d for d in self.sets if uda["datasets"][d].get("train", True)]
        for j in self.judges:
            if j not in judge_specs:
                raise ConfigError(f"config uda.judges: no judge named {j!r}; known: {', '.join(judge_specs)}")
        for d, spec in uda["datasets"].items():
            TOURNAMENT_LOADERS.get(str(spec["loader"]), where=f"config uda.datasets.{d}.loader")
        for n, t in enumerate(uda["transfer"]):
            for k in ("train", "apply"):
                if t[k] not in self.sets:
                    raise ConfigError(f"config uda.transfer[{n}].{k}: {t[k]!r} is not a tournament in uda.datasets")
            if t["train"] not in self.trained:
                raise ConfigError(f"config uda.transfer[{n}].train: no adapter is trained on {t['train']!r} "
                                  "(train: false)")
        # generated tournaments (a user's prompts, answered by configured judges: rule uda_answers)
        self.generated = [d for d in self.sets if uda["datasets"][d]["loader"] == "generated"]
        for d in self.generated:
            spec = uda["datasets"][d]
            if not spec.get("prompts"):
                raise ConfigError(f"config uda.datasets.{d}.prompts: a generated tournament needs a prompts file")
            for m in spec["models"]:
                if not isinstance(m, str) or m not in judge_specs:
                    raise ConfigError(f"config uda.datasets.{d}.models: {m!r} is not a configured judge; the "
                                      f"answerers of a generated tournament are judges ({', '.join(judge_specs)})")
        for d in self.sets:
            for j in uda["datasets"][d].get("judge_models") or {}:
                if j not in judge_specs:
                    raise ConfigError(f"config uda.datasets.{d}.judge_models: {j!r} is not a configured judge")

    # -- files ---------------------------------------------------------------------------
    def answers(self) -> list[str]:
        return [f"results/uda/{ds}/answers/{j}.parquet" for ds in self.sets for j in self.judges]

    def verdicts(self) -> list[str]:
        return [f"results/uda/{ds}/verdicts/{j}.parquet" for ds in self.sets for j in self.judges]

    def generation(self) -> list[str]:
        return [f"results/uda/{ds}/model_answer/{m}.parquet" for ds in self.generated
                for m in self.cfg["datasets"][ds]["models"]]

    def outputs(self) -> list[str]:
        return ([f"results/uda/{ds}/tables/{t}.csv" for ds in self.sets for t in TABLES]
                + [f"results/uda/{ds}/tables/generation.csv" for ds in self.generated]
                + [f"results/uda/{ds}/figures/{f}.png" for ds in self.sets for f in FIGURES]
                + ["results/uda/summary.csv"])

    # -- input functions and params of the rules ---------------------------------------------
    def transfers_into(self, ds: str) -> list[str]:
        return [t["train"] for t in self.cfg["transfer"] if t["apply"] == ds]

    def provenance(self, names: list[str]) -> dict[str, Any]:
        return {"config_hash": self.config_hash, "seed": self.config["seed"],
                "judges": [self.judge_entries[n] for n in names]}

    def human_input(self, w: Any) -> list[str]:
        spec = self.cfg["datasets"][w.dataset]
        uses = spec.get("quality", {}).get("source") == "human_bt" or spec.get("reference") == "human_bt"
        return ["results/uda/human/bradley_terry.csv"] if uses else []

    def _call_params(self, name: str, w: Any) -> dict[str, Any]:
        return dict(judge=self.judge_entries[name], spec=self.cfg["datasets"][w.dataset], cache=self.config["cache"],
                    max_error_rate=self.config["max_error_rate"], provenance=self.provenance([name]))

    def query_params(self, w: Any) -> dict[str, Any]:
        return self._call_params(w.judge, w)

    def answers_params(self, w: Any) -> dict[str, Any]:
        p = self._call_params(w.answerer, w)
        p["answerer"] = p.pop("judge")
        return p

    def prompts_file(self, w: Any) -> str:
        """A generated tournament's prompts file, as a path Snakemake can track (repo or data root)."""
        from judgelab.datasets.sources import DataMissing
        from judgelab.uda.tournament import prompts_path

        try:
            return str(prompts_path(self.cfg["datasets"][w.dataset], w.dataset))
        except DataMissing as exc:
            raise ConfigError(f"config uda.datasets.{w.dataset}.prompts: {exc}") from None

    def tournament_inputs(self, w: Any) -> dict[str, list[str]]:
        spec = self.cfg["datasets"][w.dataset]
        gen = spec["loader"] == "generated"
        return {
            "human": self.human_input(w),
            "prompts": [self.prompts_file(w)] if gen else [],
            "answers": [f"results/uda/{w.dataset}/model_answer/{m}.jsonl" for m in spec["models"]] if gen else [],
        }

    def answerer_families(self, w: Any) -> dict[str, str]:
        spec = self.cfg["datasets"][w.dataset]
        if spec["loader"] != "generated":
            return {}
        return {m: self.judge_specs[m].family for m in spec["models"]}


def plan_uda(config: Mapping[str, Any], judge_specs: Mapping[str, Any],
             judge_entries: Mapping[str, Mapping[str, Any]], config_hash: str) -> UdaPlan:
    return UdaPlan(config, judge_specs, judge_entries, config_hash)
