"""Rule uda_human: Bradley-Terry scores of MT-Bench models from the human votes, with bootstrap CIs.

The step is :func:`judgelab.uda.calls.human`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.uda.calls import human
from judgelab.workflow import run_step

run_step(snakemake, human)
