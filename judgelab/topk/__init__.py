"""Study ``topk`` (paper 002): bias-aware Bayesian active top-k ranking with LLM judges.

Modules: :mod:`~judgelab.topk.items` (statement banks, item pools, covariates),
:mod:`~judgelab.topk.oracle` (collecting every ordered pair's verdict from a judge),
:mod:`~judgelab.topk.synthetic` (the synthetic study over :mod:`judgelab.simworld.topk`'s
Bradley-Terry simulator),
:mod:`~judgelab.topk.experiment` (offline evaluation of estimators and acquisition
strategies against fixed oracles), :mod:`~judgelab.topk.gate` (trusted-anchor gate),
:mod:`~judgelab.topk.probes` (isolated bias probes), :mod:`~judgelab.topk.llmbar`
(external validity on LLMBar), :mod:`~judgelab.topk.stats` and
:mod:`~judgelab.topk.tables` (the paper's Tables 1-4).  The model itself lives in
:mod:`judgelab.ranking.bias_aware` and the acquisition rules in
:mod:`judgelab.ranking.acquisition`, for reuse by other studies.
"""
