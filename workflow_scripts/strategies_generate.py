"""Rule strategies_generate: a generator judge writes the controlled set's texts (expansions, MODEL_ORIGIN answers).

The step is :func:`judgelab.strategies.calls.generate`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.strategies.calls import generate
from judgelab.workflow import run_step

run_step(snakemake, generate)
