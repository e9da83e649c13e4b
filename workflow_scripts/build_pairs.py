"""Rule audit_pairs: load a public pair set into the pairs table.

The step is :func:`judgelab.calls.audit_pairs`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.calls import audit_pairs
from judgelab.workflow import run_step

run_step(snakemake, audit_pairs)
