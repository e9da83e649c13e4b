"""Rule *_query: one judge answers every pair of a pair set, in the configured orders.

The step is :func:`judgelab.workflow.calls.orders_query`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.workflow import run_step
from judgelab.workflow.calls import orders_query

run_step(snakemake, orders_query)
