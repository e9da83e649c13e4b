"""Rule rbd_baseline: one of Table 4's baselines judges D and D_bias of the bias sets.

The step is :func:`judgelab.rbd.calls.baseline`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.rbd.calls import baseline
from judgelab.workflow import run_step

run_step(snakemake, baseline)
