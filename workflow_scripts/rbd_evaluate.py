"""Rule rbd_evaluate: one evaluator judges D and D_bias of every evaluated set.

The step is :func:`judgelab.rbd.calls.evaluate`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.rbd.calls import evaluate
from judgelab.workflow import run_step

run_step(snakemake, evaluate)
