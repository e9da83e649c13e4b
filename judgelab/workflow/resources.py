"""What a Snakemake job asks a scheduler for, derived from the judges it runs.

Each rule that runs a judge or a model declares ``resources: **job_resources(judges)``, and
each rule that runs a judge ``conda: env_for(judges)`` (rules/common.smk binds
:func:`job_resources` and :func:`job_conda_env` to the configured judges); the GPUs, API slots,
tier and conda env follow from the judges' backend traits
(:func:`judgelab.registry.backend_traits`), never from a backend's name or the rule's name.  A
new backend is routed by what its class declares: ``needs_api_slot`` gives the ``api`` tier and
one ``api_slots`` unit (capped by the profile's ``resources: api_slots``), ``loads_weights`` the
``model`` tier, ``gpus(options)`` > 0 the ``gpu`` tier and a ``gpu`` resource (which the SLURM
executor turns into ``--gpus=N``, routed by profiles/slurm/partitions.yaml to the GPU
partition), ``conda_env`` the env file (:func:`job_conda_env`, the rule's ``conda:``).

Rules that run no judge and no model (pairs, tables, figures, summaries) declare nothing and
are ``localrules`` (:func:`light_rules`): their cost does not depend on the judges, and a
scheduler round trip would cost more than the job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from judgelab.config import ConfigError, missing_env_line
from judgelab.registry import backend_traits

#: Resources of each tier.  Per-cluster changes: edit these, or
#: ``--set-resources RULE:runtime=...`` for one rule.
JOB_TIERS: dict[str, dict[str, int]] = {
    "gpu": {"mem_mb": 64000, "runtime": 480, "cpus_per_task": 8},    # vLLM / checkpoints on GPUs
    "model": {"mem_mb": 16000, "runtime": 240, "cpus_per_task": 4},  # checkpoints, training, embeddings on CPU
    "api": {"mem_mb": 4000, "runtime": 480, "cpus_per_task": 2},     # HTTP APIs: long waits, little CPU
    "light": {"mem_mb": 4000, "runtime": 60, "cpus_per_task": 1},    # simulated / replayed judges
}
#: The conda env of jobs whose judges ask for nothing else (``Judge.conda_env``'s default).
DEFAULT_ENV = "judges"

Entry = Any  # a judge entry: a config mapping or a JudgeSpec
Judges = Any  # names, entries, one of them, None, or a function of the wildcards giving them


def env_file(env: str) -> str:
    """The path a rule's ``conda:`` gives for a conda env name (relative to rules/)."""
    return f"../envs/{env}.yaml"


def resolve(specs: Mapping[str, Entry], judges: Judges, wildcards: Any = None) -> list[Entry]:
    """Judge entries from names (looked up in ``specs``), entries, or a function of the wildcards."""
    js = judges(wildcards) if callable(judges) else judges
    if js is None:
        return []
    if isinstance(js, (str, Mapping)):
        js = [js]
    return [specs[j] if isinstance(j, str) else j for j in js if j is not None]


def job_needs(entries: Iterable[Entry], gpu: int | None = None, model: bool = False) -> tuple[int, int, str]:
    """(gpus, api_slots, tier) of a job running these judge entries; ``gpu``/``model`` add what
    the judges do not say (a training run on CUDA, a model loaded without a judge entry)."""
    traits = [backend_traits(e) for e in entries]
    g = max([t.gpus for t in traits] or [0])
    g = g if gpu is None else max(int(gpu), g)
    slots = sum(1 for t in traits if t.needs_api_slot)
    m = bool(model) or any(t.loads_weights for t in traits)
    tier = "gpu" if g else "model" if m else "api" if slots else "light"
    return g, slots, tier


def job_resources(specs: Mapping[str, Entry], judges: Judges = (), gpu: Any = None,
                  model: Any = False) -> dict[str, Callable[[Any], Any]]:
    """``resources: **job_resources(...)`` of a job that runs judges or models.

    ``specs``: the judge entries by name (rules/common.smk binds the configured ones);
    ``judges``: names or entries of the judges the job queries or loads, or a function of the
    wildcards returning them; ``gpu``: GPUs needed beyond the judges' own (int or function);
    ``model``: the job loads a model even without a GPU (bool or function).  Gives gpu,
    api_slots, mem_mb, runtime (minutes) and cpus_per_task, each a function of the wildcards."""

    def needs(wildcards: Any) -> tuple[int, int, str]:
        g = gpu(wildcards) if callable(gpu) else gpu
        m = model(wildcards) if callable(model) else model
        return job_needs(resolve(specs, judges, wildcards), g, m)

    def need(i: int) -> Callable[[Any], Any]:
        return lambda wildcards: needs(wildcards)[i]

    def tier(key: str) -> Callable[[Any], Any]:
        return lambda wildcards: JOB_TIERS[needs(wildcards)[2]][key]

    return dict(gpu=need(0), api_slots=need(1), mem_mb=tier("mem_mb"), runtime=tier("runtime"),
                cpus_per_task=tier("cpus_per_task"))


def conda_env(entries: Iterable[Entry]) -> str:
    """The conda env file of a job running all these judge entries: the one env any of them
    asks for beyond the default (vLLM pins its own torch), else the default."""
    envs = {backend_traits(e).conda_env for e in entries} - {DEFAULT_ENV}
    if len(envs) > 1:
        raise ConfigError(f"one job runs judges that need different conda envs ({', '.join(sorted(envs))}); "
                          "give them separate roles")
    return env_file(envs.pop() if envs else DEFAULT_ENV)


def job_conda_env(specs: Mapping[str, Entry], judges: Judges = ()) -> Callable[[Any], str]:
    """``conda: job_conda_env(...)`` of a job that runs judges: a function of the wildcards
    giving the env file of the judges the job runs (:func:`conda_env`), with ``specs`` and
    ``judges`` as in :func:`job_resources` -- so one rule serves every backend, and a backend
    with an env of its own (``envs/<conda_env>.yaml``) needs no rule of its own."""

    def env(wildcards: Any) -> str:
        entries = resolve(specs, judges, wildcards)
        for entry in entries:
            line = missing_env_line(entry, "judge")
            if line:
                raise ConfigError(line)
        return conda_env(entries)

    return env


def light_rules(rules: Iterable[Any]) -> list[str]:
    """Names of the rules that declare no judge or model (neither ``gpu`` nor ``api_slots``, as
    :func:`job_resources` gives): the Snakefile makes them localrules, so a cluster executor
    runs them on the submit host instead of sending each ~2 s job through the scheduler."""
    return [r.name for r in rules if not {"gpu", "api_slots"} & set(r.resources)]
