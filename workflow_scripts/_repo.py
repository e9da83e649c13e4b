"""Put this checkout's ``judgelab`` first on sys.path, so rule scripts import the library
from the repository in any environment (venv, conda env per rule group, SLURM node); and make
the job die with its Snakemake run (every rule script imports this module first, so every
job, the ones that load a model or launch a server included, gets the watchdog of
:mod:`judgelab.workflow.lifecycle`: a ``kill -9`` of snakemake leaves no job or server running)."""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from judgelab.workflow import lifecycle  # noqa: E402  (after the path is set)

lifecycle.install()
