# Shared helpers of every study: judge lookup, provenance, per-backend resources.

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


def entry_gpus(entry):
    """GPUs a job needs to run this judge entry (a config dict or a JudgeSpec): vLLM takes
    ``tensor_parallel_size``; a local checkpoint (transformers backend, trained detectors)
    takes one when its ``device`` option names CUDA; anything else runs without."""
    backend = entry.get("backend") if isinstance(entry, dict) else entry.backend
    opts = (entry.get("options") if isinstance(entry, dict) else entry.options) or {}
    if backend == "vllm":
        return int(opts.get("tensor_parallel_size", 1))
    return 1 if str(opts.get("device") or "").startswith("cuda") else 0


def entries_gpus(entries):
    """GPUs of a job that loads all these judge entries at once (the largest of them)."""
    return max([entry_gpus(e) for e in entries] or [0])


def gpus_for(name):
    return entry_gpus({**JUDGE_SPECS, **REPLAY_SPECS}[name])


# -- cluster resources --------------------------------------------------------------
# What a job asks a scheduler for is derived from what it runs, never from the name of its
# rule.  Each rule that runs a judge or a model declares `**job_resources(judges)` as its
# resources (the judges it loads or queries); GPUs, API slots and the tier below follow
# from their backends.  A job with gpu > 0 gets the GPU tier and a `gpu` resource, which the SLURM
# executor turns into `--gpus=N` and its partition config (profiles/slurm/partitions.yaml)
# routes to the GPU partition.  Rules that run no judge and no model (pairs, tables,
# figures, summaries) declare nothing and are `localrules` (Snakefile): their cost does not
# depend on the judges, and a scheduler round trip would cost more than the job.
# Per-cluster changes: edit these tiers, or `--set-resources RULE:runtime=...` for one rule.
JOB_TIERS = {
    "gpu": {"mem_mb": 64000, "runtime": 480, "cpus_per_task": 8},    # vLLM / checkpoints on GPUs
    "model": {"mem_mb": 16000, "runtime": 240, "cpus_per_task": 4},  # checkpoints, training, embeddings on CPU
    "api": {"mem_mb": 4000, "runtime": 480, "cpus_per_task": 2},     # HTTP APIs: long waits, little CPU
    "light": {"mem_mb": 4000, "runtime": 60, "cpus_per_task": 1},    # simulated / replayed judges
}
MODEL_BACKENDS = {"vllm", "transformers", "classifier"}  # load weights into this job's memory


def _judge_entries(judges, wildcards):
    """Judge entries (dicts or JudgeSpecs) from names, entries, or a function of the wildcards."""
    js = judges(wildcards) if callable(judges) else judges
    if js is None:
        return []
    if isinstance(js, (str, dict)):
        js = [js]
    specs = {**JUDGE_SPECS, **REPLAY_SPECS}
    return [specs[j] if isinstance(j, str) else j for j in js if j is not None]


def _backend(entry):
    return entry.get("backend") if isinstance(entry, dict) else entry.backend


def _options(entry):
    """Backend options; an openai judge with `launch` serves its model inside the job."""
    return (entry.get("options") if isinstance(entry, dict) else entry.options) or {}


def job_needs(judges=(), gpu=None, model=False, wildcards=None):
    """(gpus, api_slots, tier) of a job running ``judges``; ``gpu``/``model`` add what the
    judges do not say (a training run on CUDA, a model loaded without a judge entry)."""
    entries = _judge_entries(judges, wildcards)
    g = gpu(wildcards) if callable(gpu) else gpu
    g = entries_gpus(entries) if g is None else max(int(g), entries_gpus(entries))
    slots = sum(1 for e in entries if _backend(e) == "openai")
    m = model(wildcards) if callable(model) else model
    m = bool(m) or any(_backend(e) in MODEL_BACKENDS or _options(e).get("launch") for e in entries)
    tier = "gpu" if g else "model" if m else "api" if slots else "light"
    return g, slots, tier


def job_resources(judges=(), gpu=None, model=False):
    """``resources: **job_resources(...)`` of a job that runs judges or models.

    ``judges``: names or entries of the judges the job queries or loads, or a function of
    the wildcards returning them; ``gpu``: GPUs needed beyond the judges' own (int or
    function); ``model``: the job loads a model even without a GPU.  Gives gpu, api_slots
    (capped globally by the profile's `resources: api_slots`), mem_mb, runtime (minutes)
    and cpus_per_task."""

    def need(i):
        return lambda wildcards: job_needs(judges, gpu, model, wildcards)[i]

    def tier(key):
        return lambda wildcards: JOB_TIERS[job_needs(judges, gpu, model, wildcards)[2]][key]

    return dict(
        gpu=need(0),
        api_slots=need(1),
        mem_mb=tier("mem_mb"),
        runtime=tier("runtime"),
        cpus_per_task=tier("cpus_per_task"),
    )


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


def light_rules(rules):
    """Names of the rules that declare no judge or model (neither `gpu` nor `api_slots`, as
    job_resources gives): the Snakefile makes them localrules, so a cluster executor runs
    them on the submit host instead of sending each ~2 s job through the scheduler."""
    return [r.name for r in rules if not {"gpu", "api_slots"} & set(r.resources)]

