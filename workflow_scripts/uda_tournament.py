"""Rule uda_tournament: the prompts x answer-models table of one tournament.

The step is :func:`judgelab.uda.calls.tournament`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.uda.calls import tournament
from judgelab.workflow import run_step

run_step(snakemake, tournament)
