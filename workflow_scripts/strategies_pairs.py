"""Rule strategies_pairs: load a gold-labelled pair set (MT-Bench human votes, LLMBar) with its seeded sample.

The step is :func:`judgelab.strategies.calls.pairs`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.strategies.calls import pairs
from judgelab.workflow import run_step

run_step(snakemake, pairs)
