# Study `uda`: configuration, path lists and helpers of rules/uda.smk (no rules here).

from judgelab.config import ConfigError as _UdaConfigError
from judgelab.uda.tournament import TOURNAMENT_LOADERS as _UDA_LOADERS

UDA = config["uda"]
UDA_SETS = list(UDA["datasets"]) if UDA.get("run_datasets") is None else list(UDA["run_datasets"])
for _d in UDA_SETS:
    if _d not in UDA["datasets"]:
        raise _UdaConfigError(f"config uda.run_datasets: {_d!r} is not a tournament in uda.datasets "
                              f"({', '.join(UDA['datasets'])})")
UDA_JUDGES = list(UDA.get("judges") or JUDGE_SPECS)
UDA_VARIANTS = list(UDA["variants"])
UDA_TRAINED = [d for d in UDA_SETS if UDA["datasets"][d].get("train", True)]
for _j in UDA_JUDGES:
    if _j not in JUDGE_SPECS:
        raise _UdaConfigError(f"config uda.judges: no judge named {_j!r}; known: {', '.join(JUDGE_SPECS)}")
for _d, _spec in UDA["datasets"].items():
    _UDA_LOADERS.get(str(_spec["loader"]), where=f"config uda.datasets.{_d}.loader")
for _n, _t in enumerate(UDA["transfer"]):
    for _k in ("train", "apply"):
        if _t[_k] not in UDA_SETS:
            raise _UdaConfigError(f"config uda.transfer[{_n}].{_k}: {_t[_k]!r} is not a tournament in uda.datasets")
    if _t["train"] not in UDA_TRAINED:
        raise _UdaConfigError(f"config uda.transfer[{_n}].train: no adapter is trained on {_t['train']!r} (train: false)")
# generated tournaments (a user's prompts, answered by configured judges: rule uda_answers)
UDA_GENERATED = [d for d in UDA_SETS if UDA["datasets"][d]["loader"] == "generated"]
for _d in UDA_GENERATED:
    _spec = UDA["datasets"][_d]
    if not _spec.get("prompts"):
        raise _UdaConfigError(f"config uda.datasets.{_d}.prompts: a generated tournament needs a prompts file")
    for _m in _spec["models"]:
        if not isinstance(_m, str) or _m not in JUDGE_SPECS:
            raise _UdaConfigError(f"config uda.datasets.{_d}.models: {_m!r} is not a configured judge; the answerers "
                                  f"of a generated tournament are judges ({', '.join(JUDGE_SPECS)})")
for _d in UDA_SETS:
    for _j in UDA["datasets"][_d].get("judge_models") or {}:
        if _j not in JUDGE_SPECS:
            raise _UdaConfigError(f"config uda.datasets.{_d}.judge_models: {_j!r} is not a configured judge")
UDA_TABLES = ["std", "methods", "alignment", "self_preference", "matrix", "reference", "judges", "controls"]
UDA_FIGURES = ["trajectories", "heatmap", "pearson", "training"]


def uda_transfers_into(ds):
    return [t["train"] for t in UDA["transfer"] if t["apply"] == ds]


UDA_ANSWERS = [f"results/uda/{ds}/answers/{j}.parquet" for ds in UDA_SETS for j in UDA_JUDGES]
UDA_VERDICTS = [f"results/uda/{ds}/verdicts/{j}.parquet" for ds in UDA_SETS for j in UDA_JUDGES]
VERDICT_TABLES.extend(UDA_ANSWERS + UDA_VERDICTS)

UDA_GENERATION = [f"results/uda/{ds}/model_answer/{m}.parquet" for ds in UDA_GENERATED
                  for m in UDA["datasets"][ds]["models"]]
VERDICT_TABLES.extend(UDA_GENERATION)

UDA_OUTPUTS = (
    [f"results/uda/{ds}/tables/{t}.csv" for ds in UDA_SETS for t in UDA_TABLES]
    + [f"results/uda/{ds}/tables/generation.csv" for ds in UDA_GENERATED]
    + [f"results/uda/{ds}/figures/{f}.png" for ds in UDA_SETS for f in UDA_FIGURES]
    + ["results/uda/summary.csv"]
)


def uda_provenance(names):
    return {"config_hash": CONFIG_HASH, "seed": config["seed"], "judges": [judge_entry(n) for n in names]}


def uda_human_input(w):
    spec = UDA["datasets"][w.dataset]
    uses = spec.get("quality", {}).get("source") == "human_bt" or spec.get("reference") == "human_bt"
    return ["results/uda/human/bradley_terry.csv"] if uses else []


def uda_query_params(w):
    spec = UDA["datasets"][w.dataset]
    return dict(
        judge=judge_entry(w.judge),
        spec=spec,
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        provenance=uda_provenance([w.judge]),
    )


def uda_prompts_file(w):
    """A generated tournament's prompts file, as a path Snakemake can track (repo or data root)."""
    from judgelab.datasets.sources import DataMissing
    from judgelab.uda.tournament import prompts_path

    try:
        return str(prompts_path(UDA["datasets"][w.dataset], w.dataset))
    except DataMissing as exc:
        raise _UdaConfigError(f"config uda.datasets.{w.dataset}.prompts: {exc}") from None


def uda_tournament_inputs(w):
    spec = UDA["datasets"][w.dataset]
    gen = spec["loader"] == "generated"
    return {
        "human": uda_human_input(w),
        "prompts": [uda_prompts_file(w)] if gen else [],
        "answers": [f"results/uda/{w.dataset}/model_answer/{m}.jsonl" for m in spec["models"]] if gen else [],
    }


def uda_answerer_families(w):
    spec = UDA["datasets"][w.dataset]
    if spec["loader"] != "generated":
        return {}
    return {m: JUDGE_SPECS[m].family for m in spec["models"]}


def uda_answers_params(w):
    spec = UDA["datasets"][w.dataset]
    return dict(
        answerer=judge_entry(w.answerer),
        spec=spec,
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        provenance=uda_provenance([w.answerer]),
    )
