"""Study ``rbd``: biased sets, bias labels and the Reasoning-based Bias Detector loop (paper 001).

The study follows the paper's pipeline (Sections 3-6, Algorithm 1):

1. :mod:`~judgelab.rbd.sets` builds, for each bias type, an unbiased set D and its biased
   counterpart D_bias with the same questions (verbosity from GSM8K, position and
   bandwagon from Arena pairs with a human winner, sentiment from text-only ScienceQA),
   plus the multi-bias set, the two diagnostic sets and a cross-domain factual set, and
   loads the authors' own versions for comparison;
2. :mod:`~judgelab.rbd.evaluate` asks every evaluator about D and D_bias and derives the
   bias label b_i of Eq. 1 (correct on D, wrong on D_bias);
3. :mod:`~judgelab.rbd.supervision` has a teacher write ``<think>...</think> Yes/No``
   traces and keeps those whose label matches b_i;
4. :mod:`~judgelab.rbd.train` fine-tunes a causal LM detector with LoRA on the kept
   traces (and the label-only classifier baseline);
5. :mod:`~judgelab.rbd.loop` runs Algorithm 1 (evaluator -> detector -> re-prompt with the
   reasoning, up to T times) and :mod:`~judgelab.rbd.metrics` computes every number the
   paper reports (accuracy, consistency, b_i, detector accuracy/precision/recall/F1,
   stubbornness and overconfidence, latency and cost).

Prompts (:mod:`~judgelab.rbd.prompts`) are the paper's own (Appendix E).
"""
