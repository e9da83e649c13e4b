"""Rule rbd_supervision: the teacher writes <think>...</think> Yes/No traces; those matching b_i are kept.

The step is :func:`judgelab.rbd.calls.supervision`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.rbd.calls import supervision
from judgelab.workflow import run_step

run_step(snakemake, supervision)
