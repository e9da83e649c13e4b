"""Rule rbd_loop: Algorithm 1 for one evaluator with every loop detector.

The step is :func:`judgelab.rbd.calls.loop`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.rbd.calls import loop
from judgelab.workflow import run_step

run_step(snakemake, loop)
