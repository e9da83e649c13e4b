"""Rule topk_items: item pools of known quality and the bias-probe pairs.

The step is :func:`judgelab.topk.calls.items`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.topk.calls import items
from judgelab.workflow import run_step

run_step(snakemake, items)
