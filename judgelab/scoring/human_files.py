"""Whether paper 004's optional human-scored sets are here (:mod:`judgelab.scoring.human`).

Apart from :mod:`judgelab.scoring.human` because the workflow's planner asks it for every
``snakemake`` start, and that module loads the scoring statistics (scipy) the planner never needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgelab.datasets.sources import SOURCES, DataMissing, data_root, downloads_dir, resolve_data_path


def absent_reason(name: str, spec: Mapping[str, Any]) -> str:
    """Empty when data set ``name``'s file is here; else one line naming the file, where it was
    looked for and the pinned URL to download it from.  Nothing is downloaded."""
    source = str(spec["source"])
    if Path(source).exists():
        return ""
    rel = SOURCES[source].rel if source in SOURCES else source
    try:
        resolve_data_path(rel, download=False)
    except DataMissing:
        root = data_root()
        where = f"{root}" if root is not None else "no data root ($JUDGELAB_DATA unset)"
        fetch = f"; download {SOURCES[source].url} to {rel} there" if source in SOURCES else ""
        return (f"scoring.datasets.{name}: human-scored set absent: {rel} is not under {where} nor in "
                f"{downloads_dir()}{fetch}")
    return ""
