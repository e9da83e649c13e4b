"""A tiny name -> factory registry, so a new backend or strategy is one entry.

Lookups of unknown names raise :class:`UnknownEntryError` listing what exists, which is
what a user who mistyped ``backend: vlm`` in a config needs to see.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownEntryError(KeyError):
    """An unknown name was looked up in a registry (message names the known ones)."""

    def __str__(self) -> str:  # KeyError quotes its message; we want plain text
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[str, T] = {}

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
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "(none)"
            loc = f" ({where})" if where else ""
            raise UnknownEntryError(f"unknown {self.what} {name!r}{loc}; known: {known}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def names(self) -> list[str]:
        return sorted(self._entries)
