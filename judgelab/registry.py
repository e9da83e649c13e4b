"""A tiny name -> factory registry, so a new backend or strategy is one entry.

Lookups of unknown names raise :class:`UnknownEntryError` listing what exists, which is
what a user who mistyped ``backend: vlm`` in a config needs to see.

A registry may also *declare* names by the module that registers them (``modules``): such a
name is known (``in``, :meth:`Registry.names`) before that module is imported, and
:meth:`Registry.get` imports it on first lookup.  This is how the judge backends
(:data:`BACKENDS`) sit here, at the ground floor: the config validation needs their names
and the backends need the config, so the names are data here, and the classes arrive when
a judge is built -- imports only run downward (``tests/project/test_layering.py`` forbids cycles).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from judgelab.judges.base import Judge

T = TypeVar("T")


class UnknownEntryError(KeyError):
    """An unknown name was looked up in a registry (message names the known ones)."""

    def __str__(self) -> str:  # KeyError quotes its message; we want plain text
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """Entries by name; ``modules`` declares names by the module that registers each."""

    def __init__(self, what: str, *, modules: Mapping[str, str] | None = None,
                 entry_points: str | None = None) -> None:
        self.what = what
        self._entries: dict[str, T] = {}
        self._modules: dict[str, str] = dict(modules or {})
        self._entry_points = entry_points  # group whose entries declare more names (``name = module``)
        self._scanned = entry_points is None

    def _scan(self) -> None:
        """Declare the names an installed package gives in the entry-point group (once): a
        package of one's own adds a backend without an edit here, and a Snakemake run, which
        imports nothing of the user's, finds it too."""
        if self._scanned:
            return
        self._scanned = True
        for ep in importlib.metadata.entry_points(group=str(self._entry_points)):
            self._modules.setdefault(ep.name, ep.module)

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: ``@BACKENDS.register("openai")``."""

        def deco(obj: T) -> T:
            self.add(name, obj)
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        if name in self._entries:
            raise ValueError(f"{self.what} {name!r} is registered twice")
        self._entries[name] = obj

    def get(self, name: str, *, where: str = "") -> T:
        if name not in self._entries and name not in self._modules:
            self._scan()
        if name not in self._entries and name in self._modules:
            module = self._modules[name]
            importlib.import_module(module)  # registers the name
            if name not in self._entries:
                raise UnknownEntryError(f"{self.what} {name!r} is declared by module {module!r}, "
                                        "which did not register it")
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(self.names()) or "(none)"
            loc = f" ({where})" if where else ""
            raise UnknownEntryError(f"unknown {self.what} {name!r}{loc}; known: {known}") from None

    def __contains__(self, name: object) -> bool:
        if name not in self._entries and name not in self._modules:
            self._scan()
        return name in self._entries or name in self._modules

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> list[str]:
        self._scan()
        return sorted({*self._entries, *self._modules})


#: Entry-point group through which an installed package declares backends of its own
#: (``[project.entry-points."judgelab.backends"] mine = "my_package.my_backend"``).
BACKEND_ENTRY_POINTS = "judgelab.backends"

#: Judge backends by name (``spec.backend``), each declared by the module whose
#: ``@BACKENDS.register(name)`` class it is; :func:`judgelab.judges.make_judge` builds them.
#: A backend of your own: register it in your module and declare it in the entry-point group
#: :data:`BACKEND_ENTRY_POINTS` (or here), or import your module before a config names it.
#: What the pipeline does with a backend's judges (conda env, GPUs, API slots, tier, whether
#: its verdicts are synthetic) it asks the class's traits (:func:`backend_traits`), never the name.
BACKENDS: Registry[type[Judge]] = Registry("judge backend", modules={
    "classifier": "judgelab.judges.classifier",
    "openai": "judgelab.judges.openai_backend",
    "replay": "judgelab.judges.replay",
    "simulated": "judgelab.judges.simulated",
    "transformers": "judgelab.judges.transformers_backend",
    "vllm": "judgelab.judges.vllm_backend",
}, entry_points=BACKEND_ENTRY_POINTS)


@dataclass(frozen=True)
class BackendTraits:
    """What the pipeline needs to know of one judge entry's backend, declared on the backend
    class (:meth:`judgelab.judges.base.Judge.traits`).  Rules, resources, ``judgelab plan`` and
    the studies read these, so a new backend is routed by what it is, not by its name."""

    backend: str
    #: answers are synthetic (the simulated panel); every output made from them says so
    simulated: bool
    #: answers are recordings replayed from logs; no model runs and output limits do not apply
    recorded: bool
    #: each job querying it takes one unit of the ``api_slots`` resource (HTTP rate limits)
    needs_api_slot: bool
    #: the job loads model weights into its own memory (the ``model`` tier at least)
    loads_weights: bool
    #: GPUs a job running this entry needs (0: none)
    gpus: int
    #: the backend can read a pairwise verdict from next-token logits (``verdict_mode: logits``)
    logit_verdicts: bool
    #: the conda env its jobs run in (``envs/<conda_env>.yaml``)
    conda_env: str
    #: a config's ``judges`` may name it (False: an internal pseudo-backend)
    configurable: bool
    #: the environment variable its calls read a key from (None: it needs none); checked before a run
    key_env: str | None = None

    @property
    def runs_model(self) -> bool:
        """Answers come from a model (not synthetic, not replayed): a real judge."""
        return not (self.simulated or self.recorded)


def _backend_and_options(entry: Any) -> tuple[str, Mapping[str, Any]]:
    if isinstance(entry, str):
        return entry, {}
    if isinstance(entry, Mapping):
        return str(entry.get("backend")), entry.get("options") or {}
    return str(entry.backend), entry.options or {}


def backend_traits(entry: Any) -> BackendTraits:
    """The traits of a judge entry (a config mapping or a JudgeSpec; options may change GPUs or
    whether weights load) or of a backend name (its traits under default options).  Unknown
    backends raise :class:`UnknownEntryError` naming the known ones."""
    name, options = _backend_and_options(entry)
    return BACKENDS.get(name).traits(options, name=name)


def is_simulated(entry: Any) -> bool:
    """Whether a judge entry's (or backend name's) answers are synthetic; False for an unknown
    backend, so that checks running before the config's own validation never raise here."""
    name, _ = _backend_and_options(entry)
    return name in BACKENDS and backend_traits(name).simulated
