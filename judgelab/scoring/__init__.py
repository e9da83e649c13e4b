"""Study `scoring`: scoring bias of 1-5 rubric judges under prompt perturbations (paper 004).

Modules, in pipeline order:

* :mod:`~judgelab.scoring.items`      -- data sets as scoring items with every gold they have
  (Prometheus MT-Bench / Vicuna-Bench with GPT-4's three scores, FLASK, BiGGen-Bench, the
  project's rubric set), seeded samples;
* :mod:`~judgelab.scoring.generation` -- the generation-review pipeline (Fig. 4) for reference
  answers at scores 1-4 and for responses where a set has none;
* :mod:`~judgelab.scoring.prompt`     -- the Figure 3 prompt built from parts, and the
  perturbation registry (rubric order, score IDs, reference score);
* :mod:`~judgelab.scoring.query`      -- score requests per item x variant through the cache,
  the score table (-1 = no score, never coerced);
* :mod:`~judgelab.scoring.metrics`    -- golds, Table 3 (rho, r), fluctuation with paired and
  simultaneous bootstrap CIs, distributions N_k, aggregation over variants, run-to-run
  stability (ordinal Krippendorff's alpha).
"""
