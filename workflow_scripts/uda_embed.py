"""Rule uda_embed: one sentence embedding per answer and per judge's own answer.

The step is :func:`judgelab.uda.calls.embed`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.uda.calls import embed
from judgelab.workflow import run_step

run_step(snakemake, embed)
