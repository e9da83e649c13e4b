"""Rule strategies_query*: one judge makes every call of every strategy on one pair set.

The step is :func:`judgelab.strategies.calls.query`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.strategies.calls import query
from judgelab.workflow import run_step

run_step(snakemake, query)
