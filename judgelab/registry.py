"""A tiny name -> factory registry, so a new backend or strategy is one entry.

Lookups of unknown names raise :class:`UnknownEntryError` listing what exists, which is
what a user who mistyped ``backend: vlm`` in a config needs to see.

A registry may also *declare* names by the module that registers them (``modules``): such a
name is known (``in``, :meth:`Registry.names`) before that module is imported, and
:meth:`Registry.get` imports it on first lookup.  This is how the judge backends
(:data:`BACKENDS`) sit here, at the ground floor: the config validation needs their names
and the backends need the config, so the names are data here, and the classes arrive when
a judge is built -- imports only run downward (``tests/test_layering.py`` forbids cycles).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from judgelab.judges.base import Judge

T = TypeVar("T")


class UnknownEntryError(KeyError):
    """An unknown name was looked up in a registry (message names the known ones)."""

    def __str__(self) -> str:  # KeyError quotes its message; we want plain text
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """Entries by name; ``modules`` declares names by the module that registers each."""

    def __init__(self, what: str, *, modules: Mapping[str, str] | None = None) -> None:
        self.what = what
        self._entries: dict[str, T] = {}
        self._modules: dict[str, str] = dict(modules or {})

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
        return name in self._entries or name in self._modules

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> list[str]:
        return sorted({*self._entries, *self._modules})


#: Judge backends by name (``spec.backend``), each declared by the module whose
#: ``@BACKENDS.register(name)`` class it is; :func:`judgelab.judges.make_judge` builds them.
#: A backend of your own: register it in your module and declare it here, or import your
#: module before a config names it (``BACKENDS.register`` works on any name).
BACKENDS: Registry[type[Judge]] = Registry("judge backend", modules={
    "openai": "judgelab.judges.openai_backend",
    "replay": "judgelab.judges.replay",
    "simulated": "judgelab.judges.simulated",
    "transformers": "judgelab.judges.transformers_backend",
    "vllm": "judgelab.judges.vllm_backend",
})
