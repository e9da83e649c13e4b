"""Study ``uda``: multi-judge Elo and the consensus-trained adaptive Elo adapter (paper 000).

Paper 000 (UDA, "Unsupervised Debiasing Alignment for Pair-wise LLM-as-a-Judge") runs one
Elo tournament per judge over N answer models x P prompts (every ordered pair of answers
judged with an A/B/C prompt), and replaces the constant-K Elo update by an adapter: a
3-layer MLP that reads embedding features of the two answers and of the judge's own answer
(Algorithm 1) and outputs an instance-level K-factor and soft labels (Algorithm 2).  The
adapter is trained without labels, by pulling every judge's final Elo scores toward the
consensus of the baseline Elo scores of all judges (Eq. 3).

Modules:

* :mod:`~judgelab.uda.tournament` -- tournament tables (real MT-Bench / Arena-Hard answers
  or a simulated tournament), the judges' own answers and verdicts through the call cache;
* :mod:`~judgelab.uda.prompts`    -- the paper's answer and A/B/C judging prompts;
* :mod:`judgelab.simworld.uda`    -- text writers of the simulated tournament (the simulated world);
* :mod:`~judgelab.uda.data`       -- the arrays of one tournament (embeddings, verdict scores);
* :mod:`~judgelab.uda.elo`        -- the update schedule, baseline Elo and the Elo recursion with
  its adjoint; :mod:`~judgelab.uda.autograd` wraps it as a torch autograd Function batched over
  judges;
* :mod:`~judgelab.uda.embeddings` -- per-answer sentence embeddings (sentence-transformers);
* :mod:`~judgelab.uda.features`   -- Algorithm 1 features, built per (prompt, model, model)
  and (prompt, model, judge) and never materialised per comparison;
* :mod:`~judgelab.uda.adapter`    -- the MLP f_theta with its first layer applied blockwise;
* :mod:`~judgelab.uda.training`   -- Eq. (3), AdamW, schedule, validation split, checkpoints;
* :mod:`~judgelab.uda.metrics`    -- inter-judge std, Pearson with a reference, alignment
  with the baseline consensus, self-preference deviation (the paper's Tables 1-4);
* :mod:`~judgelab.uda.human`      -- Bradley-Terry fit of MT-Bench human votes with CIs;
* :mod:`~judgelab.uda.study`      -- the pipeline steps as functions of tables (rule scripts call them).
"""
