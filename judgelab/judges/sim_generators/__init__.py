"""Extra generation tasks of the simulated writer, one module per study.

Every module in this package is imported when the simulated backend loads, so a
study registers its template writers with ``@GENERATORS.register("task")`` (from
:mod:`judgelab.judges.simulated`) in its own file, without editing shared code.
"""

from __future__ import annotations

import importlib
import pkgutil


def load_all() -> None:
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
