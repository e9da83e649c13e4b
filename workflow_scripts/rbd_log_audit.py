"""Rule rbd_log_audit: one detector over the recorded verdict logs of rbd.log_audit.

The step is :func:`judgelab.rbd.calls.log_audit`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.rbd.calls import log_audit
from judgelab.workflow import run_step

run_step(snakemake, log_audit)
