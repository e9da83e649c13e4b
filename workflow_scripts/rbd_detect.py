"""Rule rbd_detect: one detector on the balanced test set and the diagnostic sets.

The step is :func:`judgelab.rbd.calls.detect`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.rbd.calls import detect
from judgelab.workflow import run_step

run_step(snakemake, detect)
