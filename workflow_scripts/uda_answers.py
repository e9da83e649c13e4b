"""Rule uda_answers: one answerer of a generated tournament answers every prompt (paper 000's answer prompt).

The step is :func:`judgelab.uda.calls.answers`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.uda.calls import answers
from judgelab.workflow import run_step

run_step(snakemake, answers)
