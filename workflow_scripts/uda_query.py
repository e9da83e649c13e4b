"""Rule uda_query: one judge answers every prompt, then judges every ordered pair of answers.

The step is :func:`judgelab.uda.calls.query`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.uda.calls import query
from judgelab.workflow import run_step

run_step(snakemake, query)
