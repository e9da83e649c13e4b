"""Rule rbd_loop_label_only: Algorithm 1 re-prompting with the detector's label only (Table 5).

The step is :func:`judgelab.rbd.calls.loop`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.rbd.calls import loop
from judgelab.workflow import run_step

run_step(snakemake, loop)
