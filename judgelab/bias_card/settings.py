"""Settings declared once: each a dataclass field with its public name, type, range and help
(:func:`setting`), from which a command's options (:func:`add_arguments`, :func:`from_args`), a
config fragment (:func:`schema_fragment`) and the Snakemake config reading (:func:`from_config`)
are derived, and which :func:`check` validates wherever a settings object is made.  The bias
card's ``CardSettings`` (``judgelab audit``, the ``audit_logs.settings`` fragment of
config/schema.yaml; ``tests/bias_card/test_settings.py`` checks the three faces equal) and the
leaderboard's ``BoardSettings`` (``judgelab leaderboard``'s statistic options) are declared here;
a settings class may hold other fields too (read from files), which are no option.

Why by hand: argparse, jsonschema and dataclasses each describe options their own way; no
well-kept library derives all three from one declaration (``pydantic`` would replace the
dataclass and its frozen semantics, for one record).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from judgelab.config import ConfigError

SCHEMA_TYPES = {int: "integer", float: "number"}


@dataclass(frozen=True)
class Setting:
    """How one settings field is named, typed, bounded and explained."""

    key: str  # public name: the config key, and the CLI flag with dashes (``--min-decisive``)
    kind: type  # int, float, bool (a switch), str (one of choices) or tuple (a list of choices)
    help: str
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    exclusive_maximum: float | None = None
    choices: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.key.replace("_", "-")

    def range_text(self) -> str:
        lo = (f"({self.exclusive_minimum:g}" if self.exclusive_minimum is not None
              else f"[{self.minimum:g}" if self.minimum is not None else "(-inf")
        hi = (f"{self.exclusive_maximum:g})" if self.exclusive_maximum is not None
              else f"{self.maximum:g}]" if self.maximum is not None else "inf)")
        return f"{'an integer' if self.kind is int else 'a number'} in {lo}, {hi}"

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not a valid value of this setting (None when it is)."""
        if self.kind is tuple:
            vals = list(value) if isinstance(value, (list, tuple)) else [value]
            bad = [v for v in vals if v not in self.choices]
            if bad:
                return f"unknown card view {bad[0]!r}; known: {', '.join(self.choices)}"
            if not vals or len(set(vals)) != len(vals):
                return f"must name one or more distinct views of {', '.join(self.choices)}"
            return None
        if self.kind is str:
            return None if value in self.choices else f"must be one of {', '.join(self.choices)}, got {value!r}"
        if self.kind is bool:
            return None if isinstance(value, bool) else f"must be true or false, got {value!r}"
        ok_type = isinstance(value, int) if self.kind is int else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok_type or (isinstance(value, float) and math.isnan(value)):
            return f"must be {self.range_text()}, got {value!r}"
        if ((self.minimum is not None and value < self.minimum)
                or (self.maximum is not None and value > self.maximum)
                or (self.exclusive_minimum is not None and value <= self.exclusive_minimum)
                or (self.exclusive_maximum is not None and value >= self.exclusive_maximum)):
            return f"must be {self.range_text()}, got {value!r}"
        return None


def setting(default: Any, help: str, *, key: str | None = None, **bounds: Any) -> Any:
    """A settings field: ``default``, one line of ``help``, the public ``key`` (default: the
    field's name) and its bounds (``minimum``, ``maximum``, ``exclusive_minimum``,
    ``exclusive_maximum``, or ``choices`` for a tuple of names or a name)."""
    kind = tuple if isinstance(default, tuple) else type(default)
    return field(default=default, metadata={"setting": (key, kind, help, bounds)})


def settings_of(cls: Any) -> list[tuple[str, Setting, Any]]:
    """(field name, Setting, default) of every declared setting of a settings dataclass (its
    fields not made by :func:`setting` are no setting)."""
    out = []
    for f in dataclasses.fields(cls):
        if "setting" not in f.metadata:
            continue
        key, kind, help_, bounds = f.metadata["setting"]
        out.append((f.name, Setting(key=key or f.name, kind=kind, help=help_, **bounds), f.default))
    return out


def check(obj: Any, what: str = "card setting") -> None:
    """Raise ValueError naming the first setting of ``obj`` out of its range (one line)."""
    for name, s, _ in settings_of(type(obj)):
        why = s.problem(getattr(obj, name))
        if why:
            raise ValueError(f"{what} {s.key}: {why}")


# -- the command line -------------------------------------------------------------------


def add_arguments(cls: Any, parser: argparse.ArgumentParser) -> None:
    """One option per setting (``--key`` with dashes), its default and range in the help."""
    for name, s, default in settings_of(cls):
        if s.kind is tuple:
            parser.add_argument(s.flag, dest=name, nargs="+", default=list(default), metavar="VIEW",
                                help=f"{s.help}; of {', '.join(s.choices)} (default: {' '.join(default)})")
        elif s.kind is str:
            parser.add_argument(s.flag, dest=name, choices=s.choices, default=default,
                                help=f"{s.help} (default: {default})")
        elif s.kind is bool:
            parser.add_argument(s.flag, dest=name, action=argparse.BooleanOptionalAction, default=default,
                                help=f"{s.help} (default: {'on' if default else 'off'})")
        else:
            parser.add_argument(s.flag, dest=name, type=s.kind, default=default, metavar=s.key.upper(),
                                help=f"{s.help}; {s.range_text()} (default {default})")


def from_args(cls: Any, args: argparse.Namespace, command: str = "judgelab audit", **others: Any) -> Any:
    """The settings of parsed options (``others``: the fields that are no option); every value out
    of range is named in one line (ConfigError: the command prints it and exits 2)."""
    return _make(cls, {name: getattr(args, name) for name, _, _ in settings_of(cls)},
                 lambda s: s.flag, command, others)


# -- the config -----------------------------------------------------------------------------


def schema_fragment(cls: Any) -> dict[str, Any]:
    """The JSON-schema ``properties`` of the settings (config/schema.yaml holds this verbatim)."""
    props: dict[str, Any] = {}
    for _, s, default in settings_of(cls):
        if s.kind is tuple:
            p: dict[str, Any] = {"type": "array", "minItems": 1, "uniqueItems": True,
                                 "items": {"enum": list(s.choices)}, "default": list(default)}
        elif s.kind is str:
            p = {"type": "string", "enum": list(s.choices), "default": default}
        elif s.kind is bool:
            p = {"type": "boolean", "default": default}
        else:
            p = {"type": SCHEMA_TYPES[s.kind]}
            for attr, word in (("minimum", "minimum"), ("maximum", "maximum"),
                               ("exclusive_minimum", "exclusiveMinimum"), ("exclusive_maximum", "exclusiveMaximum")):
                if getattr(s, attr) is not None:
                    p[word] = getattr(s, attr)
            p["default"] = default
        p["description"] = s.help
        props[s.key] = p
    return props


def from_config(cls: Any, mapping: Mapping[str, Any] | None, where: str) -> Any:
    """The settings of a config mapping (public keys; missing ones take their defaults);
    unknown keys and values out of range are named in one line (ConfigError)."""
    mapping = dict(mapping or {})
    by_key = {s.key: name for name, s, _ in settings_of(cls)}
    unknown = sorted(set(mapping) - set(by_key))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(by_key)}")
    return _make(cls, {by_key[k]: v for k, v in mapping.items()}, lambda s: f"{where}/{s.key}", where)


def _make(cls: Any, values: Mapping[str, Any], label: Any, what: str, others: Mapping[str, Any] | None = None) -> Any:
    problems = []
    kinds = {name: s for name, s, _ in settings_of(cls)}
    for name, v in values.items():
        s = kinds[name]
        if s.kind is float and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        why = s.problem(v)
        if why:
            problems.append(f"{label(s)}: {why}")
    if problems:
        raise ConfigError(f"{what}: " + "; ".join(problems))
    conv = {n: (tuple(v) if kinds[n].kind is tuple else kinds[n].kind(v)) for n, v in values.items()}
    return cls(**conv, **(others or {}))

