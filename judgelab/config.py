"""Loading and validating the pipeline config, and the judge specification record.

The JSON schema in ``config/schema.yaml`` is the single source of truth: the
Snakefile validates with Snakemake's ``validate`` and the CLI / library use
:func:`validate_config` with the same file, so a bad key fails the same way
everywhere, with the path of the offending key in the message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from judgelab.records import DEFAULT_OUTPUT_LIMITS, OUTPUT_TASKS, canonical_json, sha256_hex
from judgelab.registry import BACKENDS, backend_traits, is_simulated

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = REPO_ROOT / "config" / "schema.yaml"


class ConfigError(ValueError):
    """A config value is missing or invalid; the message names the key and file."""


@dataclass(frozen=True)
class Price:
    input_per_1k: float = 0.0
    output_per_1k: float = 0.0

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return tokens_in / 1000.0 * self.input_per_1k + tokens_out / 1000.0 * self.output_per_1k


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
            price=Price(float(price.get("input_per_1k", 0.0)), float(price.get("output_per_1k", 0.0))),
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


def load_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(path)
    try:
        with p.open(encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
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


def validate_config(config: dict[str, Any], *, source: str = "config") -> dict[str, Any]:
    """Validate against ``config/schema.yaml`` (filling defaults), or raise ConfigError."""
    import jsonschema

    schema = load_yaml(SCHEMA_PATH)
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = _extend_with_default(validator_cls)(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        path = "/".join(str(p) for p in e.absolute_path) or "(top level)"
        raise ConfigError(f"{source}: invalid value at key '{path}': {e.message}")
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
    """Semantic checks the schema cannot express: known backends (by the names the registry
    declares, without importing a backend), unique names."""
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


def config_hash(config: dict[str, Any]) -> str:
    """Short hash of the whole (validated) config, recorded in every output table."""
    return sha256_hex(canonical_json(config))[:12]


def load_config(*paths: str | os.PathLike[str]) -> dict[str, Any]:
    """Load and merge config files in order (later wins), then validate."""
    config: dict[str, Any] = {}
    for p in paths:
        config = merge(config, load_yaml(p))
    return validate_config(config, source=" + ".join(str(p) for p in paths))


def default_config_paths() -> list[Path]:
    """What the Snakefile loads when no --configfile is given."""
    return [REPO_ROOT / "config" / "judges" / "simulated.yaml", REPO_ROOT / "config" / "config.yaml"]
