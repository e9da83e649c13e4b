"""Rule strategies_controlled: assemble the 375-pair controlled bias set and summarise it.

The step is :func:`judgelab.strategies.calls.controlled`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.strategies.calls import controlled
from judgelab.workflow import run_step

run_step(snakemake, controlled)
