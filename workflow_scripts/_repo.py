"""Put this checkout's ``judgelab`` first on sys.path, so rule scripts import the library
from the repository in any environment (venv, conda env per rule group, SLURM node)."""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
