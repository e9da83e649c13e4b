"""Rule rbd_labels: bias labels b_i (Eq. 1) and the bias-existence summary (Fig. 3).

The step is :func:`judgelab.rbd.calls.labels`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.rbd.calls import labels
from judgelab.workflow import run_step

run_step(snakemake, labels)
