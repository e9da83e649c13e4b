# Shared helpers of every study: judge lookup, provenance, per-backend resources.

from judgelab.config import check_judges, config_hash, fill_output_limits
from judgelab.roles import check_roles, with_roles

fill_output_limits(config)  # top-level output_limits -> every real judge entry without its own
JUDGE_SPECS = {s.name: s for s in check_judges(config, source="config")}
REPLAY_SPECS = {
    s.name: s
    for s in check_judges({"judges": config.get("replay_judges", [])}, source="config: replay_judges")
}
ALL_JUDGE_ENTRIES = {
    d["name"]: d for d in list(config["judges"]) + list(config.get("replay_judges", []))
}
CONFIG_HASH = config_hash(config)
CACHE = config["cache"]
# A real run stops here when an auxiliary role (gold judge, writers, generators, teachers,
# detectors) names a simulated judge without allow_simulated_roles (judgelab.roles).
SIMULATED_ROLES = check_roles(config)
# Every judge-querying rule appends its verdict tables here; the call summary reads them all.
VERDICT_TABLES = []


def check_template(name, where):
    """Fail at DAG construction (not mid-run) on an unknown prompt template."""
    from judgelab.prompts import PAIRWISE_TEMPLATES

    PAIRWISE_TEMPLATES.get(name, where=where)
    for n, d in ALL_JUDGE_ENTRIES.items():
        t = (d.get("options") or {}).get("prompt_template")
        if t is not None:
            PAIRWISE_TEMPLATES.get(t, where=f"judge {n!r} options/prompt_template")


def judge_entry(name):
    return ALL_JUDGE_ENTRIES[name]


def judges_of(*backends):
    return [n for n, s in JUDGE_SPECS.items() if s.backend in backends]


def name_regex(names):
    """Wildcard constraint matching exactly these names (or nothing)."""
    import re

    return "|".join(re.escape(n) for n in names) if names else "(?!x)x"


def gpus_for(name):
    spec = {**JUDGE_SPECS, **REPLAY_SPECS}[name]
    return int(spec.options.get("tensor_parallel_size", 1)) if spec.backend == "vllm" else 0


def api_slots_for(name):
    """Custom resource throttling API traffic: cap with --resources api_slots=N."""
    spec = {**JUDGE_SPECS, **REPLAY_SPECS}[name]
    return 1 if spec.backend == "openai" else 0


def provenance_for(judge_names, study=None, panel=()):
    """Provenance params; with ``study``, the study's simulated roles are added as inputs
    (tables then name them in ``simulated_inputs``; ``panel``: the judges it evaluates)."""
    prov = {
        "config_hash": CONFIG_HASH,
        "seed": config["seed"],
        "judges": [judge_entry(n) for n in judge_names],
    }
    return with_roles(prov, SIMULATED_ROLES, study, panel) if study else prov


def judges_for_dataset(dataset):
    """All configured judges, plus the replayed judges recorded on this pair set."""
    replay = [n for n, s in REPLAY_SPECS.items() if s.options.get("dataset") == dataset]
    return list(JUDGE_SPECS) + replay


def query_params(w, study):
    """Params of a judge-querying job: judge entry, template, orders, cache, provenance."""
    entry = judge_entry(w.judge)
    return dict(
        judge=entry,
        template=(entry.get("options") or {}).get("prompt_template", study["template"]),
        orders=study["orders"],
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        provenance=provenance_for([w.judge]),
    )
