"""Loading and validating the pipeline config, and the judge specification record.

The JSON schema in ``config/schema.yaml`` is the single source of truth: the
Snakefile (:func:`validate_workflow_config`, at parse time) and the CLI / library
(:func:`load_config`, :func:`validate_config`) validate with the same file, so a bad
key fails the same way everywhere, with the path of the offending key in the message.

Config files are merged (judge set, ``config/config.yaml``, each ``--configfile``, then
Snakemake's ``--config``), and a merged dict no longer says which file a key came from.
So every file is first checked on its own for keys the schema does not know
(:func:`unknown_keys`: the file, the key path and the nearest known key), and for
secrets (:func:`secret_keys`: a config file is recorded by Snakemake, copied and shared,
a credential belongs in the environment); then the merged config is validated, an error
naming the last file that set the offending key.  :func:`check_references` checks what
the schema cannot: names that must name a configured judge, data set, run or strategy.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgelab.records import DEFAULT_OUTPUT_LIMITS, OUTPUT_TASKS, canonical_json, sha256_hex
from judgelab.registry import BACKENDS, backend_traits, is_simulated

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = REPO_ROOT / "config" / "schema.yaml"
#: The conda env files of the workflow's jobs: ``envs/<name>.yaml`` for a backend whose
#: ``conda_env`` trait is ``name`` (the rules' ``conda:``, judgelab.workflow.resources.job_conda_env).
ENVS_DIR = REPO_ROOT / "envs"


class ConfigError(ValueError):
    """A config value is missing or invalid; the message names the key and file."""


@dataclass(frozen=True)
class Price:
    """USD per 1k tokens at list price; ``batch_discount`` is the share a provider's batch jobs take
    off it (0.5 for OpenAI's Batch API and Anthropic's Message Batches), 0 where none is configured."""

    input_per_1k: float = 0.0
    output_per_1k: float = 0.0
    batch_discount: float = 0.0

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return tokens_in / 1000.0 * self.input_per_1k + tokens_out / 1000.0 * self.output_per_1k

    def batch_cost(self, tokens_in: int, tokens_out: int) -> float:
        """The same tokens sent as a provider batch job (``judgelab plan --batch-dir``)."""
        return self.cost(tokens_in, tokens_out) * (1.0 - self.batch_discount)


@dataclass(frozen=True)
class JudgeSpec:
    """One entry of the ``judges`` list.

    ``family`` is the model family used for self-preference (a judge prefers
    answers from its own family); ``sampling`` holds temperature, max_tokens, seed
    and friends; ``options`` are backend-specific (base URL and key env var for
    ``openai``, tensor parallelism for ``vllm``, the bias profile for ``simulated``).

    Request-level output control (:meth:`judgelab.judges.base.Judge.sampling_for`):
    ``output_limits`` maps a request's task (verdict, cot, generation, reasoning) to
    its ``max_tokens``; ``drop_params`` names sampling keys never sent (a reasoning
    model that rejects ``temperature``); ``rename_params`` sends a key under another
    name (``{max_tokens: max_completion_tokens}`` for OpenAI's reasoning models).
    """

    name: str
    backend: str
    model: str
    family: str = "unknown"
    sampling: dict[str, Any] = field(default_factory=dict)
    price: Price = field(default_factory=Price)
    concurrency: int = 4
    options: dict[str, Any] = field(default_factory=dict)
    output_limits: dict[str, int] = field(default_factory=dict)
    drop_params: tuple[str, ...] = ()
    rename_params: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, where: str = "judges") -> JudgeSpec:
        missing = [k for k in ("name", "backend", "model") if k not in d]
        if missing:
            raise ConfigError(f"{where}: missing key(s) {missing}")
        price = d.get("price") or {}
        limits = dict(d.get("output_limits") or {})
        bad = sorted(set(limits) - set(OUTPUT_TASKS))
        if bad:
            raise ConfigError(f"{where}: output_limits: unknown task(s) {bad}; known: {list(OUTPUT_TASKS)}")
        return cls(
            name=str(d["name"]),
            backend=str(d["backend"]),
            model=str(d["model"]),
            family=str(d.get("family", "unknown")),
            sampling=dict(d.get("sampling") or {}),
            price=Price(float(price.get("input_per_1k", 0.0)), float(price.get("output_per_1k", 0.0)),
                        _batch_discount(price, where)),
            concurrency=int(d.get("concurrency", 4)),
            options=dict(d.get("options") or {}),
            output_limits={k: int(v) for k, v in limits.items()},
            drop_params=tuple(str(p) for p in (d.get("drop_params") or ())),
            rename_params={str(k): str(v) for k, v in (d.get("rename_params") or {}).items()},
        )

    def output_limit(self, task: str) -> int:
        """``max_tokens`` for a request of this task: the judge's own limit, else the default."""
        return int(self.output_limits.get(task, DEFAULT_OUTPUT_LIMITS[task]))

    @property
    def simulated(self) -> bool:
        return is_simulated(self.backend)


def _batch_discount(price: dict[str, Any], where: str) -> float:
    """``price.batch_discount`` as a share in [0, 1] (the schema checks config files; a judge entry
    built elsewhere, such as a batch manifest's, is checked here)."""
    value = price.get("batch_discount", 0.0)
    try:
        share = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: price.batch_discount must be a number in [0, 1], got {value!r}") from None
    if not 0.0 <= share <= 1.0:
        raise ConfigError(f"{where}: price.batch_discount must be a number in [0, 1], got {value!r}")
    return share


def load_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A YAML file's top-level mapping, or one ConfigError line naming the file.

    PyYAML is imported here, not with the module: every job of the workflow imports this module for
    its config types and reads no YAML (Snakemake hands it the merged config), and the import costs
    some 10-30 ms a process.  libyaml's loader is used where PyYAML was built with it (the same
    documents, some ten times faster)."""
    import yaml

    p = Path(path)
    try:
        with p.open(encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {p}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: top level must be a mapping, got {type(data).__name__}")
    return data


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Recursive dict merge; lists and scalars in ``over`` replace (as Snakemake does)."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


@functools.lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return load_yaml(SCHEMA_PATH)


def _key_path(path: Any) -> str:
    """``('strategies', 'datasets', 'x', 'loader')`` -> ``strategies.datasets.x.loader``;
    list indices as ``[i]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _unknown_in(error: Any) -> list[tuple[tuple[Any, ...], str, list[str]]]:
    """(path, unknown key, known keys) of an ``additionalProperties`` error, also inside the
    branches of an ``anyOf``/``oneOf`` (a field spec that is a string, a list or a mapping: the
    mapping branch is the one that names the unknown key)."""
    found = []
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        props = error.schema.get("properties") or {}
        patterns = list(error.schema.get("patternProperties") or {})
        for key in error.instance:
            if key not in props and not any(re.search(pat, str(key)) for pat in patterns):
                found.append((tuple(error.absolute_path), str(key), sorted(props)))
    for sub in error.context or ():
        if isinstance(sub.instance, dict):
            found.extend(_unknown_in(sub))
    return found


def _renamed_in(message: str, renamed: list[str]) -> bool:
    """Whether an unknown-key ``message`` is about a key a renamed-key message already names."""
    return any(r.split(" was renamed")[0].split(": key ")[-1] in message for r in renamed)


def _nearest(key: str, known: list[str]) -> str | None:
    near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if not near:  # a case slip, or a prefix ("temp" for "temperature")
        near = [k for k in known if k.lower() == key.lower() or (len(key) >= 4 and k.startswith(key))][:1]
    return near[0] if near else None


def unknown_keys(data: dict[str, Any], *, source: str) -> list[str]:
    """One message per key of ``data`` (one config file, or the ``--config`` overrides) that the
    schema does not know, at any level: the file, the key path and the nearest known key."""
    import jsonschema

    schema = _schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    messages: list[str] = []
    for error in validator.iter_errors(data):
        for path, key, known in _unknown_in(error):
            full = _key_path((*path, key))
            near = _nearest(key, known)
            hint = (f"did you mean '{_key_path((*path, near))}'?" if near
                    else f"known keys here: {', '.join(known)}" if known else "no keys are allowed here")
            msg = f"{source}: unknown key '{full}' ({hint})"
            if msg not in messages:
                messages.append(msg)
    return messages


#: Key names that hold a credential (compared lower-case, ``-`` read as ``_``).  A key that
#: *names* where the credential lives (``api_key_env``) is not one.
SECRET_KEYS = frozenset({
    "api_key", "apikey", "openai_api_key", "anthropic_api_key", "secret", "client_secret", "password",
    "passwd", "token", "access_token", "auth_token", "bearer_token", "hf_token", "authorization",
    "x_api_key", "api_token", "session_token", "private_key",
})
#: Values that are credentials whatever their key: provider key prefixes, a bearer header,
#: a URL with a password in it.
_SECRET_VALUE = re.compile(r"(?i)(\b(sk|sk-proj|sk-ant|hf|ghp|xox[bp])[-_][A-Za-z0-9_\-]{16,}|^bearer\s+\S{8,}"
                           r"|://[^/\s:@]+:[^/\s@]+@)")


def secret_keys(data: Any, *, source: str, _path: tuple[Any, ...] = ()) -> list[str]:
    """Messages for every credential in a config file: a key named like one (``api_key``,
    ``password``, ``token``, ...) or a value shaped like one (``sk-...``, ``Bearer ...``, a URL
    with ``user:password@``).  The value itself is never repeated in the message."""
    found: list[str] = []
    if isinstance(data, dict):
        for k, v in data.items():
            path = (*_path, str(k))
            norm = str(k).lower().replace("-", "_")
            if norm in SECRET_KEYS and isinstance(v, str | int) and v != "":
                found.append(f"{source}: key '{_key_path(path)}' holds a credential; config files are recorded "
                             f"and shared, so keep secrets out of them: put it in an environment variable and name "
                             f"that variable (options.api_key_env for the openai backend; ~/.pgpass or PGPASSWORD "
                             f"for a postgresql cache)")
            else:
                found.extend(secret_keys(v, source=source, _path=path))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            found.extend(secret_keys(v, source=source, _path=(*_path, i)))
    elif isinstance(data, str) and _SECRET_VALUE.search(data):
        found.append(f"{source}: the value of '{_key_path(_path)}' looks like a credential (an API key, a bearer "
                     f"token or a password in a URL); config files are recorded and shared, so keep secrets out "
                     f"of them: put it in an environment variable and name that variable (options.api_key_env "
                     f"for the openai backend; ~/.pgpass or PGPASSWORD for a postgresql cache)")
    return found


def _has_path(data: Any, path: tuple[Any, ...]) -> bool:
    for part in path:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return False
    return True


def _origin(path: tuple[Any, ...], layers: list[tuple[str, dict[str, Any]]], default: str) -> str:
    """The last layer (file, or ``--config``) that sets ``path`` or the longest part of it."""
    for n in range(len(path), 0, -1):
        for source, data in reversed(layers):
            if _has_path(data, path[:n]):
                return source
    return default


# -- renamed names ----------------------------------------------------------------------------------

#: Every key and command-line option judgelab renamed, old -> new, in one place.  An old name is
#: refused with its new one (one line, exit 2), never read as the new one and never ignored: a
#: value written under a name judgelab no longer reads must not vanish silently.  Keys are dotted
#: paths in their scope (``config``: the pipeline config; ``verdict_mapping``: a log mapping, from a
#: ``--mapping`` file, a ``{preset: NAME, ...}`` override or a config entry); ``*`` stands for any
#: one part (a set's name, a list index).
RENAMED_KEYS: dict[str, dict[str, str]] = {
    "config": {
        # the LLMBar both-orders study has its own name; ``audit`` is the bias-card command
        "audit": "orders",
        # a log mapping inside the config: its file type has its own key (``format`` names the preset)
        "audit_logs.sets.*.format.format": "audit_logs.sets.*.format.file_type",
        "rbd.log_audit.format.format": "rbd.log_audit.format.file_type",
        "judges.*.options.mapping.format": "judges.*.options.mapping.file_type",
        "replay_judges.*.options.mapping.format": "replay_judges.*.options.mapping.file_type",
    },
    "verdict_mapping": {
        "format": "file_type",  # the file type (json, jsonl, csv, ...); ``--format`` names the preset
        "tables.*.format": "tables.*.file_type",
    },
}

#: ``(command, old option) -> new option`` of the command line, ``command`` ``*`` for every
#: command; ``("", old command) -> new command`` for a renamed subcommand
#: (:func:`judgelab.cli.refuse_renamed_options`).
RENAMED_OPTIONS: dict[tuple[str, str], str] = {}


def _matches(data: Any, parts: list[str], done: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The concrete paths of ``data`` a dotted pattern (``*``: any one part) names."""
    if not parts:
        return [done]
    head, rest = parts[0], parts[1:]
    if isinstance(data, dict):
        keys = list(data) if head == "*" else [head] if head in data else []
        return [m for k in keys for m in _matches(data[k], rest, (*done, k))]
    if isinstance(data, list) and head == "*":
        return [m for i, v in enumerate(data) for m in _matches(v, rest, (*done, i))]
    return []


def renamed_keys(data: Any, *, scope: str, source: str) -> list[str]:
    """One message per renamed key ``data`` still uses (:data:`RENAMED_KEYS` of ``scope``):
    ``<source>: key 'old' was renamed to 'new'``, the path's ``*`` parts filled in."""
    out = []
    for old, new in RENAMED_KEYS[scope].items():
        for path in _matches(data, old.split(".")):
            parts = iter(p for p, o in zip(path, old.split("."), strict=True) if o == "*")
            new_path = tuple(next(parts) if n == "*" else n for n in new.split("."))
            out.append(f"{source}: key '{_key_path(path)}' was renamed to '{_key_path(new_path)}'")
    return out


def refuse_renamed_keys(data: Any, *, scope: str, source: str) -> None:
    """ConfigError naming every renamed key of ``data`` (:func:`renamed_keys`); nothing when none."""
    problems = renamed_keys(data, scope=scope, source=source)
    if problems:
        raise ConfigError("; ".join(problems))


def check_layers(layers: list[tuple[str, dict[str, Any]]]) -> None:
    """Refuse renamed keys, unknown keys and secrets in each config layer (file or ``--config``),
    naming it."""
    problems: list[str] = []
    for source, data in layers:
        renamed = renamed_keys(data, scope="config", source=source)
        problems += renamed + [m for m in unknown_keys(data, source=source) if not _renamed_in(m, renamed)]
        problems += secret_keys(data, source=source)
    if problems:
        raise ConfigError("; ".join(problems))


def validate_config(config: dict[str, Any], *, source: str = "config",
                    layers: list[tuple[str, dict[str, Any]]] | None = None) -> dict[str, Any]:
    """Validate against ``config/schema.yaml`` (filling defaults), or raise ConfigError.

    ``layers``: the (source, dict) pieces ``config`` was merged from; an error then names the
    last of them that set the offending key instead of ``source``."""
    import jsonschema

    schema = _schema()
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = _extend_with_default(validator_cls)(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = _origin(tuple(e.absolute_path), layers, source) if layers else source
        unknown = _unknown_in(e)
        if unknown:  # merged-in keys no layer check saw (a dict built in code)
            raise ConfigError("; ".join(unknown_keys(config, source=where)))
        raise ConfigError(f"{where}: invalid value at key '{_key_path(e.absolute_path)}': {e.message}")
    fill_output_limits(config)
    drop_profile_leftovers(config)
    check_judges(config, source=source)
    return config


def drop_profile_leftovers(config: Any) -> Any:
    """Remove ``options.profile`` from every judge entry whose backend is not ``simulated``
    (in place; returns ``config``).

    ``profile`` is the simulated panel's option.  Config files merge mappings key by key, so a
    judge set that puts a real model into a role the defaults fill with a simulated entry
    (``rbd.teacher``, ``rbd.generators.<set>``) cannot delete the default's profile; on a real
    backend it can only be that leftover, and the backend would reject it as unknown.
    """
    if isinstance(config, dict):
        if {"name", "backend", "model"} <= set(config) and not is_simulated(config):
            opts = config.get("options")
            if isinstance(opts, dict) and "profile" in opts:
                config["options"] = {k: v for k, v in opts.items() if k != "profile"}
        for v in config.values():
            drop_profile_leftovers(v)
    elif isinstance(config, list):
        for v in config:
            drop_profile_leftovers(v)
    return config


def fill_output_limits(config: dict[str, Any]) -> dict[str, Any]:
    """Give every entry of ``judges`` and ``replay_judges`` the top-level ``output_limits``
    for the tasks it does not set itself (in place; returns ``config``).

    Precedence of a request's ``max_tokens``: the request's own ``params``, the judge's
    ``output_limits`` for the task, the judge's ``sampling.max_tokens``, the top-level
    ``output_limits``, the built-in default.  So a judge that sets ``sampling.max_tokens``
    (e.g. a small CPU model kept short) gets no top-level limits filled in.

    Judges defined inside a study section (gold judges, rbd detectors) keep their own
    ``output_limits`` and otherwise the built-in defaults
    (:data:`judgelab.records.DEFAULT_OUTPUT_LIMITS`, the schema's defaults too).
    """
    top = config.get("output_limits") or {}
    if not top:
        return config
    for key in ("judges", "replay_judges"):
        for d in config.get(key) or []:
            if (isinstance(d, dict) and not is_simulated(d)
                    and (d.get("sampling") or {}).get("max_tokens") is None):
                d["output_limits"] = {**top, **(d.get("output_limits") or {})}
    return config


def _extend_with_default(validator_class):
    """Validator that also fills ``default`` values, as Snakemake's validate does."""
    validate_props = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub:
                    instance.setdefault(prop, sub["default"])
        yield from validate_props(validator, properties, instance, schema)

    import jsonschema

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


def check_judges(config: dict[str, Any], *, source: str = "config") -> list[JudgeSpec]:
    """Semantic checks the schema cannot express: known backends (the registry's names; each
    named backend's class is imported to read its traits), unique names."""
    specs = []
    seen: set[str] = set()
    for i, d in enumerate(config.get("judges") or []):
        where = f"{source}: judges[{i}]"
        spec = JudgeSpec.from_dict(d, where=where)
        if spec.backend not in BACKENDS or not backend_traits(spec.backend).configurable:
            known = [b for b in BACKENDS.names() if backend_traits(b).configurable]
            raise ConfigError(
                f"{where} ({spec.name}): unknown backend {spec.backend!r}; known: {', '.join(known)}"
            )
        if spec.name in seen:
            raise ConfigError(f"{where}: duplicate judge name {spec.name!r}")
        seen.add(spec.name)
        specs.append(spec)
    return specs


def judge_env_file(entry: Any) -> Path:
    """The conda env file the jobs of a judge entry run in: its backend's ``conda_env`` trait."""
    return ENVS_DIR / f"{backend_traits(entry).conda_env}.yaml"


def missing_env_line(entry: Any, where: str) -> str | None:
    """One line naming the judge and its missing conda env file, or None when the file exists."""
    path = judge_env_file(entry)
    if path.is_file():
        return None
    name, backend = (entry.get("name"), entry.get("backend")) if isinstance(entry, Mapping) else (
        entry.name, entry.backend)
    return (f"{where} ({name}): backend {backend!r} runs its jobs in conda env "
            f"{backend_traits(entry).conda_env!r}, but {path} does not exist")


def check_judge_envs(config: Mapping[str, Any], *, source: str = "config") -> None:
    """Every configured and replayed judge's conda env file exists.  Why here and not in
    :func:`check_judges`: the file matters to a workflow run with ``--use-conda`` only (where the
    rules' ``conda:`` refuses it, judgelab.workflow.resources.job_conda_env), not to a command that runs
    the judge in this process; ``judgelab check-config`` checks it before any run."""
    for key in ("judges", "replay_judges"):
        for i, entry in enumerate(config.get(key) or []):
            line = missing_env_line(entry, f"{source}: {key}[{i}]")
            if line:
                raise ConfigError(line)


def _names(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list | tuple) else [] if value is None else [str(value)]


def check_references(config: dict[str, Any], *,
                     layers: list[tuple[str, dict[str, Any]]] | None = None) -> None:
    """Every name in a validated config that must name something configured does: judges (of
    ``judges``, a study's own ``extra_judges``, detectors), data sets and run sets, train runs,
    strategies.  Raises one :class:`ConfigError` listing every dangling name with its key, the
    file that set it (from ``layers``) and the nearest defined name.

    The schema cannot say this (the allowed values are other keys of the same config); the
    workflow's studies check their own at DAG construction too, but only for the targets a
    run asks for, so a typo in a study not run today would wait for the day it is."""
    judges = [str(d.get("name")) for d in config.get("judges") or []]
    replay = [str(d.get("name")) for d in config.get("replay_judges") or []]
    problems: list[str] = []

    def ref(path: tuple[Any, ...], value: Any, allowed: list[str], what: str) -> None:
        for i, name in enumerate(_names(value)):
            if name in allowed:
                continue
            at = (*path, i) if isinstance(value, list | tuple) else path
            where = _origin(at, layers, "config") if layers else "config"
            near = _nearest(name, allowed)
            hint = f"did you mean {near!r}?" if near else f"defined: {', '.join(allowed) or '(none)'}"
            if Path(where) == REPO_ROOT / "config" / "config.yaml":
                hint += "; a default of the shipped config: set this key in your own config file"
            problems.append(f"{where}: key '{_key_path(at)}' names {what} {name!r} that is not defined ({hint})")

    audit = config.get("orders") or {}
    ref(("orders", "run_datasets"), audit.get("run_datasets"), list(audit.get("datasets") or {}),
        "an orders.datasets set")

    sc = config.get("scoring") or {}
    if sc:
        sc_judges = judges + [str(d.get("name")) for d in sc.get("extra_judges") or []]
        ref(("scoring", "run_datasets"), sc.get("run_datasets"), list(sc.get("datasets") or {}),
            "a scoring.datasets set")
        ref(("scoring", "judges"), sc.get("judges"), judges, "a judge")
        gold = sc.get("gold") or {}
        ref(("scoring", "gold", "judge"), gold.get("judge"), sc_judges, "a judge (judges or scoring.extra_judges)")
        ref(("scoring", "gold", "candidates"), gold.get("candidates"), sc_judges,
            "a judge (judges or scoring.extra_judges)")
        ref(("scoring", "generation", "models"), (sc.get("generation") or {}).get("models"), sc_judges,
            "a judge (judges or scoring.extra_judges)")

    st = config.get("strategies") or {}
    if st:
        sets = list(st.get("datasets") or {})
        panel_strategies = _names(st.get("strategies"))
        ref(("strategies", "run_datasets"), st.get("run_datasets"), sets, "a strategies.datasets set")
        for key in ("judges", "control_judges", "cross_bias_judges"):
            ref(("strategies", key), st.get(key), judges, "a judge")
        for judge, members in (st.get("ensembles") or {}).items():
            ref(("strategies", "ensembles"), judge, judges, "a judge")
            ref(("strategies", "ensembles", judge), members, judges, "a judge")
        holm = st.get("holm_family") or {}
        ref(("strategies", "holm_family", "judges"), holm.get("judges"), judges, "a judge")
        ref(("strategies", "holm_family", "strategies"), holm.get("strategies"), panel_strategies,
            "a strategy of strategies.strategies")
        ref(("strategies", "mixed_strategies"), st.get("mixed_strategies"), panel_strategies,
            "a strategy of strategies.strategies")
        selector = st.get("selector") or {}
        ref(("strategies", "selector", "natural"), selector.get("natural"), sets, "a strategies.datasets set")
        ref(("strategies", "selector", "adversarial"), selector.get("adversarial"), sets,
            "a strategies.datasets set")
        ctl = st.get("controlled") or {}
        run = _names(st.get("run_datasets")) if st.get("run_datasets") is not None else sets
        uses_controlled = any(((st.get("datasets") or {}).get(n) or {}).get("loader") == "controlled" for n in run)
        if uses_controlled and ctl.get("missing_generator", "error") == "error":
            ref(("strategies", "controlled", "expansion_generator"), ctl.get("expansion_generator"), judges,
                "a judge")
            # the families the controlled set pairs (a merged-in default for another family is unused)
            used = [*(ctl.get("original_pairing") or []), *[f for p in ctl.get("round_robin") or [] for f in p]]
            for fam, name in (ctl.get("origin_generators") or {}).items():
                if fam in used:
                    ref(("strategies", "controlled", "origin_generators", fam), name, judges, "a judge")

    uda = config.get("uda") or {}
    if uda:
        sets = list(uda.get("datasets") or {})
        ref(("uda", "judges"), uda.get("judges"), judges, "a judge")
        ref(("uda", "run_datasets"), uda.get("run_datasets"), sets, "a uda.datasets tournament")
        for i, t in enumerate(uda.get("transfer") or []):
            ref(("uda", "transfer", i, "train"), t.get("train"), sets, "a uda.datasets tournament")
            ref(("uda", "transfer", i, "apply"), t.get("apply"), sets, "a uda.datasets tournament")

    topk = config.get("topk") or {}
    ref(("topk", "rank", "judges"), (topk.get("rank") or {}).get("judges"), judges + replay, "a judge")

    rbd = config.get("rbd") or {}
    if rbd:
        ref(("rbd", "evaluators"), rbd.get("evaluators"), judges, "a judge")
        evaluators = _names(rbd.get("evaluators")) or judges
        ref(("rbd", "supervision_evaluators"), rbd.get("supervision_evaluators"), evaluators,
            "an evaluator (rbd.evaluators)")
        ref(("rbd", "loop_sets"), rbd.get("loop_sets"), _names(rbd.get("sets")), "a set of rbd.sets")
        runs = list((rbd.get("train") or {}).get("runs") or {})
        detectors = []
        for i, d in enumerate(rbd.get("detectors") or []):
            if d.get("trained") is not None:
                ref(("rbd", "detectors", i, "trained"), d.get("trained"), runs, "a train run (rbd.train.runs)")
            name = (d.get("judge") or {}).get("name") if d.get("judge") else d.get("trained")
            if name:
                detectors.append(str(name))
        ref(("rbd", "loop", "detectors"), (rbd.get("loop") or {}).get("detectors"), detectors,
            "a detector (rbd.detectors)")
        la = rbd.get("log_audit") or {}
        if la.get("files"):
            ref(("rbd", "log_audit", "detector"), la.get("detector"), detectors, "a detector (rbd.detectors)")
    if problems:
        raise ConfigError("; ".join(problems))


def config_hash(config: dict[str, Any]) -> str:
    """Short hash of the whole (validated) config, recorded in every output table."""
    return sha256_hex(canonical_json(config))[:12]


def load_config(*paths: str | os.PathLike[str], references: bool = False) -> dict[str, Any]:
    """Load and merge config files in order (later wins), then validate: each file on its own
    for unknown keys and secrets (:func:`check_layers`) and the merged config against the
    schema, as the Snakefile does at parse time; with ``references`` (``judgelab check-config``)
    also every name that must name something configured (:func:`check_references`)."""
    layers = [(str(p), load_yaml(p)) for p in paths]
    check_layers(layers)
    config: dict[str, Any] = {}
    for _, data in layers:
        config = merge(config, data)
    validate_config(config, source=" + ".join(str(p) for p in paths), layers=layers)
    if references:
        check_references(config, layers=layers)
    return config


def validate_workflow_config(config: dict[str, Any], *, files: list[str | os.PathLike[str]],
                             overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Snakefile's check, at parse time (before Snakemake records a job): each config file
    that exists (the Snakefile's ``configfile:`` ones, then ``--configfile``) and the ``--config``
    overrides checked on their own, then the merged ``config`` validated in place (defaults
    filled).  Cross-references are the studies' own checks at DAG construction, for the jobs
    the targets need (a default naming a judge of another judge set must not stop an audit
    run); ``judgelab check-config`` checks them all."""
    layers = [(str(f), load_yaml(f)) for f in files if Path(f).exists()]
    if overrides:
        layers.append(("--config", dict(overrides)))
    check_layers(layers)
    validate_config(config, source=" + ".join(s for s, _ in layers) or "config", layers=layers)
    return config


def default_config_paths() -> list[Path]:
    """What the Snakefile loads when no --configfile is given."""
    return [REPO_ROOT / "config" / "judges" / "simulated.yaml", REPO_ROOT / "config" / "config.yaml"]


def config_with_files(configfiles: Sequence[str | os.PathLike[str]] | None, *, references: bool = False) -> dict[str, Any]:
    """The shipped default config merged with the ``--configfile`` files a command was given, in order."""
    return load_config(*default_config_paths(), *[Path(p) for p in configfiles or []], references=references)


def find_judge(config: Mapping[str, Any], name: str) -> JudgeSpec:
    """The judge (or replay judge) of the merged config named ``name``; one line naming the known ones."""
    entries = list(config["judges"]) + list(config.get("replay_judges", []))
    for d in entries:
        if d["name"] == name:
            return JudgeSpec.from_dict(d)
    known = ", ".join(d["name"] for d in entries)
    raise ConfigError(f"no judge named {name!r} in the config; known: {known}")
