"""Rule rbd_cases: detector cases -- the teacher's training tuples, the balanced test set, the diagnostics.

The step is :func:`judgelab.rbd.calls.cases`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.rbd.calls import cases
from judgelab.workflow import run_step

run_step(snakemake, cases)
