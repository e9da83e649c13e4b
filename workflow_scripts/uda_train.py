"""Rule uda_train: train the full and the ablated UDA adapter on one tournament.

The step is :func:`judgelab.uda.calls.train`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.uda.calls import train
from judgelab.workflow import run_step

run_step(snakemake, train)
