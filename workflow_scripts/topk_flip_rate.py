"""Rule topk_flip_rate: one judge asked the same pairs again and again at temperature 1, through
the call cache (each ask its own key); its repeated verdicts and its flip rate with an interval.

The step is :func:`judgelab.topk.calls.flip_rate`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.topk.calls import flip_rate
from judgelab.workflow import run_step

run_step(snakemake, flip_rate)
