# Shared helpers of every study: judge lookup, provenance, per-backend resources.

from functools import partial as _partial

from judgelab import resources as _resources
from judgelab.config import check_judges, config_hash, drop_profile_leftovers, fill_output_limits
from judgelab.roles import check_roles, role_config, usable_simulated_roles, with_roles

fill_output_limits(config)  # top-level output_limits -> every real judge entry without its own
drop_profile_leftovers(config)  # a real entry merged over a simulated default keeps no `profile`
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
# Auxiliary roles (gold judge, writers, generators, teacher, detectors, a synthetic tournament)
# are checked per job, not here: each rule that uses one declares `roles=needs_roles(...)` among
# its inputs, an input function Snakemake evaluates only for the jobs the requested targets
# need.  A real run stops there, naming the rule, the role and its config key, when a needed
# role is simulated without allow_simulated_roles (judgelab.roles); roles of studies the targets
# do not need are never resolved.  SIMULATED_ROLES: the simulated roles outputs may name.
SIMULATED_ROLES = usable_simulated_roles(config)
# the config roles are checked against: the user's real one in a `judgelab plan` stand-in run
ROLE_CONFIG = role_config(config)
# Every judge-querying rule appends its verdict tables here; the call summary reads them all.
VERDICT_TABLES = []


def needs_roles(keys, judge=None, error=None):
    """Input function for the jobs that use auxiliary roles; it returns no files, and raises
    for a job in the DAG whose roles a real run may not use (Snakemake names the rule and
    wildcards, the ConfigError the role and its config key).

    ``keys``: config keys or prefixes of the roles (``"rbd.teacher"``, ``"scoring.generation"``),
    or a function of the wildcards giving them; ``judge``: only the roles this judge fills (a
    name or a function of the wildcards); ``error``: a ConfigError met while planning the
    study, raised here so that it stops only the targets that need the study's jobs."""

    def check(wildcards):
        if error is not None:
            raise error
        ks = keys(wildcards) if callable(keys) else keys
        j = judge(wildcards) if callable(judge) else judge
        check_roles(ROLE_CONFIG, list(ks), judge=j)
        return []

    return check


def judge_entry(name):
    return ALL_JUDGE_ENTRIES[name]


def name_regex(names):
    """Wildcard constraint matching exactly these names (or nothing)."""
    import re

    return "|".join(re.escape(n) for n in names) if names else "(?!x)x"


# -- cluster resources --------------------------------------------------------------
# What a job asks a scheduler for is derived from the backend traits of the judges it runs,
# never from a backend's or a rule's name (judgelab.resources).  Each rule that runs a judge
# or a model declares `**job_resources(judges)` as its resources; rules that run none declare
# nothing and are `localrules` (Snakefile).  Per-cluster changes: edit JOB_TIERS in
# judgelab/resources.py, or `--set-resources RULE:runtime=...` for one rule.
ALL_JUDGE_SPECS = {**JUDGE_SPECS, **REPLAY_SPECS}
job_resources = _partial(_resources.job_resources, ALL_JUDGE_SPECS)
# the configured judges (by name) whose jobs run in a conda env file, e.g. "../envs/vllm.yaml"
judges_in_env = _partial(_resources.judges_in_env, ALL_JUDGE_SPECS)
light_rules = _resources.light_rules


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
