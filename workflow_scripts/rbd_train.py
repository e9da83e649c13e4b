"""Rule rbd_train: fine-tune a detector (LoRA or every weight) on the kept traces, or the label-only classifier.

The step is :func:`judgelab.rbd.calls.train`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.rbd.calls import train
from judgelab.workflow import run_step

run_step(snakemake, train)
