"""Rule topk_llmbar_pairs: the configured LLMBar subsets as one pairs table.

The step is :func:`judgelab.topk.calls.llmbar`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.topk.calls import llmbar
from judgelab.workflow import run_step

run_step(snakemake, llmbar)
