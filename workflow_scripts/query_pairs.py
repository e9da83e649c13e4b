"""Rules *_query: one judge answers every pair of a pair set, in the configured orders.

The step is :func:`judgelab.calls.audit_query`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.calls import audit_query
from judgelab.workflow import run_step

run_step(snakemake, audit_query)
