"""Rule audit_pairs: load a public pair set into the pairs table.

The step is :func:`judgelab.workflow.calls.audit_pairs`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.workflow import run_step
from judgelab.workflow.calls import audit_pairs

run_step(snakemake, audit_pairs)
