"""Rule rbd_set / rbd_set_generated: build one biased set (D and D_bias) and, if it needs one, its generator calls.

The step is :func:`judgelab.rbd.calls.build_set`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.rbd.calls import build_set
from judgelab.workflow import run_step

run_step(snakemake, build_set)
