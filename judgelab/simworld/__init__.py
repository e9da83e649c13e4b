"""The simulated world: the study-specific parts of judgelab's embedded default.

What it is.  Without a GPU or an API key the whole DAG runs on the simulated judge panel
(:mod:`judgelab.judges.simulated`): seeded judges with planted biases that read the texts
they are shown.  That panel is the embedded default *and* the planted truth the tests check
the estimators against (a bias planted here must be recovered by the study's estimator).
Everything it writes is marked simulated (``[simulated text]`` in texts, ``simulated=True``
on judges and table rows, a stamp on figures), and a real run never uses it silently.

The generic part of that world -- the judge's decision model, its scores and labels, the
plain answer writers -- is backbone and lives in :mod:`judgelab.judges.simulated`.  What a
single study needs the world to do lives here, one module per study:

* :mod:`~judgelab.simworld.strategies` -- paper 003's debiasing prompt styles as the
  simulated judge reads them, reference answers and length expansions;
* :mod:`~judgelab.simworld.scoring`    -- paper 004's texts written to a target rubric level;
* :mod:`~judgelab.simworld.rbd`        -- paper 001's set construction, evaluator, revision
  and teacher writers;
* :mod:`~judgelab.simworld.uda`        -- paper 000's tournament: family-signed answers,
  synthetic prompts and the judges' own (near-copy) answers;
* :mod:`~judgelab.simworld.topk`       -- paper 002's synthetic Bradley-Terry oracles (no
  judge texts: verdicts drawn from Eq. (1) with planted ``c*`` and ``kappa*``).

Layering.  ``simworld`` sits beside the studies, not under them: it may import the backbone
and a study's prompt constants and records (the markers a real model would read, the
record type a study consumes), and a study may import its own simworld module (to build a
simulated tournament, to read the level a simulated text was written at).  The backbone
never imports ``simworld`` by name (``tests/project/test_layering.py`` checks): the simulated
backend finds the writer tasks and prompt styles registered here through the entry-point
group ``judgelab.simulated_tasks`` (``pyproject.toml``), loaded the first time it needs
them -- see :func:`judgelab.judges.simulated.load_simulated_tasks`.  A user's own package can
register a simulated writer task the same way.
"""
