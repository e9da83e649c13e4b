"""Provider batch jobs: a run's calls sent at the providers' batch price, answered into the call cache.

OpenAI's Batch API and Anthropic's Message Batches answer the same requests as their live APIs
at half the price, within 24 hours.  A paper-scale run asks hundreds of thousands of calls nobody
waits for, so the plan can write them as batch input files and the answers come back into the
one call cache, where every rule then finds them as if it had asked live:

1. ``judgelab plan --batch-dir DIR ...`` (:mod:`judgelab.batch.export`) writes, for each judge of
   the ``openai`` backend (any OpenAI-compatible endpoint), the calls the plan counts as not yet
   cached: ``DIR/openai/<judge>.jsonl`` (Batch API input, ``/v1/chat/completions`` bodies) and
   ``DIR/anthropic/<judge>.jsonl`` (Message Batches requests), each call's ``custom_id`` its
   call-cache key, and ``DIR/manifest.jsonl``, what each key asks of which judge.
2. The user submits either provider's files and saves the output files in ``DIR/results/``.
3. ``judgelab batch-import DIR`` (:mod:`judgelab.batch.import_`) stores each answer under its key,
   parsed as a live answer is (:func:`judgelab.judges.runner.answered_call`), and records each error as a
   failure (asked again live by the next run, never taken for an answer).

The layout names (:data:`MANIFEST`, ...) are shared by both modules.
"""

from __future__ import annotations

#: What each exported call asks: one JSON line per call (key, judge entry name, request payload).
MANIFEST = "manifest.jsonl"
#: The export's own facts: the cache it counted against, the judge entries, the limits used.
META = "batch.json"
OPENAI_DIR = "openai"
ANTHROPIC_DIR = "anthropic"
#: Where the user saves the providers' output files for ``judgelab batch-import``.
RESULTS_DIR = "results"
