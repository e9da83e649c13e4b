"""Rule scoring_items: load a data set into scoring items and flag the seeded sample.

The step is :func:`judgelab.scoring.calls.items`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.scoring.calls import items
from judgelab.workflow import run_step

run_step(snakemake, items)
