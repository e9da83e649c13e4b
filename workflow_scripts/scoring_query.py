"""Rule scoring_query / scoring_gold: one judge scores every sampled item under each prompt variant.

The step is :func:`judgelab.scoring.calls.query`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.scoring.calls import query
from judgelab.workflow import run_step

run_step(snakemake, query)
