"""Rule topk_query: one judge's oracle (all ordered pairs of every pool), the bias
probes and LLMBar, through the call cache.

The step is :func:`judgelab.topk.calls.query`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.topk.calls import query
from judgelab.workflow import run_step

run_step(snakemake, query)
