"""Rule topk_llmbar_replay: a replayed judge on the LLMBar subset it was recorded on, both orders.

The step is :func:`judgelab.topk.calls.llmbar_replay`, the function ``judgelab plan`` runs for this rule.
"""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.topk.calls import llmbar_replay
from judgelab.workflow import run_step

run_step(snakemake, llmbar_replay)
