"""Auxiliary roles of a run, and the rule that a real run never uses the simulated panel silently.

Beside the judges under study (``judges``), the studies need other models: a gold judge and
reference / response writers (scoring), the generators of the controlled pair set
(strategies), the writers, the reasoning teacher and the prompted detectors (rbd), and a
synthetic tournament (uda).  The shipped defaults point these roles at simulated entries,
so that the default run works offline.  In a *real run* -- any configured judge is not
simulated -- a simulated role would make real judges grade placeholder texts, so
:func:`check_roles` stops the run at DAG construction with an error naming the role and its
config key, unless the config says so on purpose with ``allow_simulated_roles`` (``true``
for every role, or a list of role keys).  Allowed simulated roles are then named in every
table (column ``simulated_inputs``, :func:`simulated_inputs`) and figure stamp of their study.

The role table is data about config keys, not study logic: a study that adds a role adds
one entry to :func:`auxiliary_roles`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from judgelab.config import ConfigError, load_yaml
from judgelab.registry import is_simulated

#: Set by ``judgelab plan`` for its stand-in run: the path of the user's real config, so that the
#: per-job role check (``needs_roles``) judges the real run, not the simulated stand-ins.
ROLE_CONFIG_ENV = "JUDGELAB_ROLE_CONFIG"


def role_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The config whose roles the per-job check reads: the file named by :data:`ROLE_CONFIG_ENV`
    when set (a plan's stand-in run), else ``config`` itself."""
    path = os.environ.get(ROLE_CONFIG_ENV)
    if not path:
        return config
    return load_yaml(path)


@dataclass(frozen=True)
class Role:
    """One auxiliary role: the study, the config key that sets it, and what fills it."""

    study: str
    key: str  # config key path, e.g. "scoring.gold.judge"
    what: str  # words for messages, e.g. "scoring gold judge"
    judge: str  # the judge name filling the role ("" for a synthetic data source)
    backend: str  # "simulated" for the simulated panel or a simulated data source
    entry: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # the judge entry

    @property
    def simulated(self) -> bool:
        return is_simulated(self.backend)

    def label(self) -> str:
        return f"{self.key}={self.judge}" if self.judge else self.key


def _entries(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(d["name"]): d for d in list(config.get("judges") or []) + list(config.get("replay_judges") or [])}


def _named(study: str, key: str, what: str, name: Any, entries: Mapping[str, Mapping[str, Any]]) -> Role:
    """A role that names a judge; an unknown name is the study's own error to raise."""
    entry = dict(entries.get(str(name)) or {})
    return Role(study, key, what, str(name), str(entry.get("backend", "unknown")), entry)


def _entry(study: str, key: str, what: str, entry: Any) -> Role | None:
    if not isinstance(entry, Mapping) or "name" not in entry:
        return None
    return Role(study, key, what, str(entry["name"]), str(entry.get("backend", "unknown")), dict(entry))


def auxiliary_roles(config: Mapping[str, Any]) -> list[Role]:
    """Every auxiliary role the config's studies will use, resolved to judges."""
    entries = _entries(config)
    roles: list[Role] = []
    sc = config.get("scoring") or {}
    if sc:
        sc_entries = {**entries, **{str(d["name"]): d for d in sc.get("extra_judges") or []}}
        gold = (sc.get("gold") or {}).get("judge")
        if gold:
            roles.append(_named("scoring", "scoring.gold.judge", "scoring gold judge", gold, sc_entries))
        for i, c in enumerate((sc.get("gold") or {}).get("candidates") or []):
            roles.append(_named("scoring", f"scoring.gold.candidates[{i}]", "scoring gold candidate (Table 2)", c,
                                sc_entries))
        synth = any((d or {}).get("synthesise_responses") for d in (sc.get("datasets") or {}).values())
        for i, m in enumerate((sc.get("generation") or {}).get("models") or []):
            what = "scoring reference writer" + (" / response synthesis" if synth else "")
            roles.append(_named("scoring", f"scoring.generation.models[{i}]", what, m, sc_entries))
    st = config.get("strategies") or {}
    if st and any((d or {}).get("loader") == "controlled" for d in (st.get("datasets") or {}).values()):
        ctl = st.get("controlled") or {}
        if ctl.get("expansion_generator"):
            roles.append(_named("strategies", "strategies.controlled.expansion_generator",
                                "strategies LENGTH/STYLE generator", ctl["expansion_generator"], entries))
        fams = [*(ctl.get("original_pairing") or []), *[f for p in ctl.get("round_robin") or [] for f in p]]
        for fam in dict.fromkeys(fams):
            name = (ctl.get("origin_generators") or {}).get(fam)
            if name:
                roles.append(_named("strategies", f"strategies.controlled.origin_generators.{fam}",
                                    f"strategies MODEL_ORIGIN generator ({fam})", name, entries))
    rbd = config.get("rbd") or {}
    if rbd:
        sets = set(rbd.get("sets") or [])
        for s, e in (rbd.get("generators") or {}).items():
            if s in sets and (r := _entry("rbd", f"rbd.generators.{s}", f"rbd writer of set {s}", e)):
                roles.append(r)
        if not rbd.get("supervision_data") and (  # the authors' released traces replace the teacher
                r := _entry("rbd", "rbd.teacher", "rbd reasoning teacher", rbd.get("teacher"))):
            roles.append(r)
        for i, d in enumerate(rbd.get("detectors") or []):
            if isinstance(d, Mapping) and (r := _entry("rbd", f"rbd.detectors[{i}].judge",
                                                        f"rbd detector ({d.get('prompting', '?')})", d.get("judge"))):
                roles.append(r)
    uda = config.get("uda") or {}
    if uda:
        run = uda.get("run_datasets")
        for name, d in (uda.get("datasets") or {}).items():
            if (run is None or name in run) and (d or {}).get("loader") == "simulated":
                roles.append(Role("uda", f"uda.datasets.{name}", "uda simulated tournament (synthetic answers)",
                                  "", "simulated"))
    return roles


def is_real_run(config: Mapping[str, Any]) -> bool:
    """A run is real when any configured judge is not simulated (one real judge beside
    simulated ones is enough: its verdicts must not rest on placeholder inputs)."""
    return any(not is_simulated(d) for d in config.get("judges") or [])


def _matches(key: str, patterns: Iterable[str]) -> bool:
    """``key`` is one of ``patterns`` or lies under one (``rbd`` covers ``rbd.teacher``,
    ``scoring.gold.candidates`` covers ``scoring.gold.candidates[0]``)."""
    return any(key == p or key.startswith(f"{p}.") or key.startswith(f"{p}[") for p in patterns)


def _allowed(config: Mapping[str, Any], role: Role) -> bool:
    allow = config.get("allow_simulated_roles", False)
    if allow is True:
        return True
    if isinstance(allow, list | tuple):
        return _matches(role.key, [str(a) for a in allow])
    return False


def allows_simulated(config: Mapping[str, Any], key: str) -> bool:
    """Whether a simulated judge at config ``key`` may act in this run: always in a simulated
    run, in a real run only where ``allow_simulated_roles`` allows the key."""
    return not is_real_run(config) or _allowed(config, Role("", key, "", "", "simulated", {}))


def usable_simulated_roles(config: Mapping[str, Any]) -> list[Role]:
    """The simulated roles a job of this run may use, without checking anything: every one in a
    simulated run, the allowed ones in a real run (a job needing any other stops in
    :func:`check_roles`).  Provenance names these as the simulated inputs of their study."""
    simulated = [r for r in auxiliary_roles(config) if r.simulated]
    if not is_real_run(config):
        return simulated
    return [r for r in simulated if _allowed(config, r)]


def check_roles(config: Mapping[str, Any], keys: Iterable[str] | None = None, *,
                judge: str | None = None) -> list[Role]:
    """Stop a real run whose needed auxiliary roles use the simulated panel without the switch.

    ``keys`` selects the roles a job needs (config keys, or prefixes of them such as ``rbd``
    or ``scoring.gold.candidates``; ``None``: every role of the config) and ``judge`` narrows
    them to the roles this judge fills.  The workflow calls it per job (an input function,
    ``rules/common.smk``), so a target that does not need a role never resolves it.

    Returns the selected simulated roles (all of them in a simulated run, the allowed ones in
    a real run); raises :class:`ConfigError` naming every offending role and its key.
    """
    roles = [r for r in auxiliary_roles(config)
             if (keys is None or _matches(r.key, keys)) and (judge is None or r.judge == judge)]
    simulated = [r for r in roles if r.simulated]
    if not is_real_run(config):
        return simulated
    bad = [r for r in simulated if not _allowed(config, r)]
    if bad:
        lines = "; ".join(f"{r.what} '{r.judge or 'synthetic'}' (config key {r.key})" for r in bad)
        raise ConfigError(
            f"config: real judges are configured, but {len(bad)} auxiliary role(s) would use the simulated panel: "
            f"{lines}. Point each key at a configured real judge (or a real judge entry), leave the role out, "
            f"or allow it on purpose with allow_simulated_roles: true (or a list of these keys); outputs then "
            f"name the simulated inputs."
        )
    return simulated


def simulated_inputs(config: Mapping[str, Any], study: str | None = None) -> str:
    """The simulated roles of a study as one string for the ``simulated_inputs`` column
    (``""`` when none): e.g. ``scoring.gold.judge=sim-gpt-4.1; scoring.generation.models[0]=...``."""
    return "; ".join(r.label() for r in auxiliary_roles(config) if r.simulated and (study is None or r.study == study))


def role_entries(roles: list[Role], study: str) -> list[dict[str, Any]]:
    """Provenance entries of a study's simulated roles: the judge entry with ``role`` set
    to the config key(s) it fills (:func:`judgelab.workflow.provenance` reads them)."""
    by_name: dict[str, dict[str, Any]] = {}
    for r in roles:
        if r.study != study or not r.simulated or not r.judge:
            continue
        e = by_name.setdefault(r.judge, {**r.entry, "name": r.judge, "backend": r.backend, "role": r.key})
        if r.key not in e["role"].split(","):
            e["role"] = f"{e['role']},{r.key}"
    return list(by_name.values())


def with_roles(prov: dict[str, Any], roles: list[Role], study: str, panel: Any = ()) -> dict[str, Any]:
    """``prov`` (``{"config_hash", "seed", "judges"}``) with the study's simulated role
    entries appended.  A listed judge that fills a role and is not in ``panel`` (the judges
    the study evaluates) is there for its role: its entry is replaced by the role entry, so
    its rows do not make the table's own judges simulated."""
    extra = role_entries(roles, study)
    if not extra:
        return prov
    names, panel = {e["name"] for e in extra}, set(panel)
    own = [e for e in prov.get("judges") or [] if e.get("name") not in names or e.get("name") in panel]
    return {**prov, "judges": own + extra}


def _judge_entries(obj: Any) -> Iterable[Mapping[str, Any]]:
    """Every judge entry anywhere in the config (the panel, study roles, rbd writers and detectors)."""
    if isinstance(obj, Mapping):
        if {"name", "backend", "model"} <= set(obj):
            yield obj
        for v in obj.values():
            yield from _judge_entries(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _judge_entries(v)


def _missing_in(entries: Iterable[Any], env: Mapping[str, str], out: dict[str, list[str]]) -> dict[str, list[str]]:
    """Add to ``out`` the key variables of ``entries`` (config mappings or JudgeSpecs) that are
    unset or empty in ``env``, each with the names of the judges that read it."""
    from judgelab.registry import UnknownEntryError, backend_traits

    for entry in entries:
        try:
            var = backend_traits(entry).key_env
        except UnknownEntryError:  # the config's own validation names an unknown backend
            continue
        if var is None or env.get(var):
            continue
        name = str(entry["name"] if isinstance(entry, Mapping) else entry.name)
        names = out.setdefault(var, [])
        if name not in names:
            names.append(name)
    return out


def missing_keys(config: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """The environment variables the config's judges read their keys from (their backend's
    ``key_env`` trait: :class:`judgelab.registry.BackendTraits`) that are unset or empty, each with
    the judges that need it.  What the backend itself checks when a job starts, asked before any
    job by ``check-config`` (every judge of the config); a run asks it of the judges its jobs use
    (:class:`JobKeys`)."""
    return _missing_in(_judge_entries(config), os.environ if environ is None else environ, {})


#: What a missing-key line advises where the whole config is checked (``check-config``).
OFFLINE_ADVICE = "export it, or check the config alone with --offline"


def key_lines(missing: Mapping[str, list[str]], advice: str = OFFLINE_ADVICE) -> list[str]:
    """One line per missing key variable (``{variable: [judge, ...]}``), naming the judges that need it."""
    return [f"environment variable {var} is not set (options.api_key_env of {', '.join(names)}); {advice}"
            for var, names in sorted(missing.items())]


def missing_key_lines(config: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per missing key variable (:func:`missing_keys`), naming the judges that need it."""
    return key_lines(missing_keys(config, environ))


class JobKeys:
    """The keys of the judges a workflow's jobs call, checked for the jobs a run will start.

    ``rules/common.smk`` binds one to the configured judges; each rule that calls a judge declares
    ``api_keys=needs_keys(judges)`` among its inputs, with the same judges its ``job_resources``
    names.  That input function returns no file: Snakemake evaluates it only for the jobs of the
    requested targets, so a key is asked for only where a job of this run calls its judge -- a
    judge set may name judges whose keys this run does not need.  The Snakefile's ``onstart``
    then calls :meth:`check` on the jobs that will run (outputs already made need no key), before
    the first of them starts.  A dry run has no ``onstart``: the input function itself warns there,
    once per variable and judge, for the jobs in the DAG.
    """

    #: The advice of a run's missing-key line.
    ADVICE = "export it before the run (no job was started), or ask only for targets whose judges need no key"

    def __init__(self, specs: Mapping[str, Any], dry_run: Callable[[], bool] = lambda: False,
                 environ: Mapping[str, str] | None = None) -> None:
        self.specs = specs  # the configured judges by name (entries or JudgeSpecs)
        self.dry_run = dry_run  # () -> bool: whether this is a dry run (known once the DAG is built)
        self.environ = environ
        self.warned: set[tuple[str, str]] = set()

    def needs(self, judges: Any) -> _JobKeyInput:
        """The input function of a rule whose jobs call ``judges`` (names, entries or a function
        of the wildcards giving them, as :func:`judgelab.workflow.resources.job_resources` takes)."""
        return _JobKeyInput(self, judges)

    def _env(self) -> Mapping[str, str]:
        return os.environ if self.environ is None else self.environ

    def missing(self, jobs: Iterable[Any]) -> dict[str, list[str]]:
        """The unset key variables of the judges ``jobs`` (Snakemake jobs) call, each with its judges."""
        out: dict[str, list[str]] = {}
        for job in jobs:
            for item in job.rule.input:
                if isinstance(item, _JobKeyInput) and item.keys is self:
                    _missing_in(item.entries(job.wildcards), self._env(), out)
        return {var: sorted(names) for var, names in out.items()}  # jobs come in no fixed order

    def check(self, jobs: Iterable[Any]) -> list[str]:
        """The error lines of a run whose ``jobs`` call judges with unset keys (empty when none)."""
        return key_lines(self.missing(jobs), self.ADVICE)

    def warn(self, entries: Iterable[Any]) -> list[str]:
        """The dry run's warning lines for these judge entries, each variable and judge once."""
        lines = []
        for var, names in sorted(_missing_in(entries, self._env(), {}).items()):
            new = [n for n in names if (var, n) not in self.warned]
            self.warned.update((var, n) for n in new)
            if new:
                lines.append(f"environment variable {var} is not set (options.api_key_env of {', '.join(new)}); "
                             f"a run of these targets stops before its first job")
        return lines


class _JobKeyInput:
    """One rule's input function of :class:`JobKeys` (no files); it knows the rule's judges."""

    def __init__(self, keys: JobKeys, judges: Any) -> None:
        self.keys, self.judges = keys, judges

    def entries(self, wildcards: Any) -> list[Any]:
        from judgelab.workflow.resources import resolve

        return resolve(self.keys.specs, self.judges, wildcards)

    def __call__(self, wildcards: Any) -> list[str]:
        if self.keys.dry_run():
            for line in self.keys.warn(self.entries(wildcards)):
                print(f"judgelab: warning: {line}", file=sys.stderr)
        return []


def check_log_formats(config: Mapping[str, Any]) -> None:
    """Each ``audit_logs`` set's ``format`` names a known preset (or is a valid mapping): what the
    study's plan checks at DAG construction, asked by ``check-config`` too (it plans no study)."""
    from judgelab.registry import UnknownEntryError
    from judgelab.verdict_import import mapping_from_config

    sets = (config.get("audit_logs") or {}).get("sets") or {}
    for name, spec in sets.items():
        where = f"config: audit_logs/sets/{name}/format"
        if not isinstance(spec, Mapping) or "format" not in spec:
            continue  # the schema's own error
        try:
            mapping_from_config(spec["format"], where=where)
        except UnknownEntryError as e:  # its message names the --format flag; here the key is the place
            raise ConfigError(f"{where}: {e}") from None
