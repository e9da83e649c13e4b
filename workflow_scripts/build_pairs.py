"""Rule orders_pairs: load a public pair set into the pairs table.

The step is :func:`judgelab.workflow.calls.orders_pairs`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.workflow import run_step
from judgelab.workflow.calls import orders_pairs

run_step(snakemake, orders_pairs)
