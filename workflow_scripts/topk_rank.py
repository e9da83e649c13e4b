"""Rule topk_rank: rank one of the user's items files live with one judge, through the call
cache, until the posterior stopping rule or the budget (judgelab.topk.live).

The step is :func:`judgelab.topk.calls.rank`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.topk.calls import rank
from judgelab.workflow import run_step

run_step(snakemake, rank)
