"""Rule scoring_references / scoring_responses: the generation-review pipeline (paper 004, Fig. 4).

The step is :func:`judgelab.scoring.calls.generate`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.scoring.calls import generate
from judgelab.workflow import run_step

run_step(snakemake, generate)
