# Study `topk`: bias-aware Bayesian Bradley-Terry and top-k-aware active acquisition (paper 002).
#
# Method.  Items answer "Give an accurate and informative overview of <topic>" with C = 6
# statements drawn from a bank of 12 true and 12 false statements per topic; quality is
# theta = #true - #false and the true top-k (k = 5) are the fully-correct items.  Verbosity is
# binary and independent of quality: the elaborated form appends a content-free,
# authoritative clause to every statement, assigned by a balanced shuffle rejected unless
# |corr(theta, verbosity)| < 0.12.  For every judge we query all N(N-1) ordered pairs of every
# pool once with the A/B prompt at temperature 0 (logit verdicts for local backends) and cache
# the verdict matrix (the oracle).  Strategies are then evaluated offline against the fixed
# oracle, randomness entering only through the strategy seed: the bias-aware Bradley-Terry
# model (Eqs. 1-2, L-BFGS MAP with warm starts, Laplace posterior, top-k membership from 1500
# posterior draws, bias-prior precision lambda_b = 0.1, refit every 8 acquisitions) against the
# naive model, post-hoc length residualisation, order-swap majority vote, the hierarchical
# empirical-Bayes shrinkage and the trusted-anchor gate; acquisition by the top-k-aware score
# (Eq. 3), global uncertainty (D-optimal), round-robin, random, entropy-only and the ablations
# dropping each factor, with presentation order randomised and recorded.  Recall of the true
# top-k is compared with paired t-tests and paired-bootstrap CIs over oracles; Spearman's rho
# relates naive recall and the gain across judges; isolated bias probes get Wilson CIs.  The
# synthetic simulator (theta ~ N(0, 1.25^2), controllable c*, kappa*) repeats the study with
# known parameters, and LLMBar (both orders, 5-fold cross-validated l2 logistic correction on
# the judge score plus length/format differences) tests external validity.


# the study's plan (judgelab/topk/plan.py), made in rules/plans.smk
TOPK_PLAN = PLANS["topk"].plan
TOPK = TOPK_PLAN.cfg
TOPK_JUDGES = TOPK_PLAN.judges
TOPK_FOCUS = TOPK_PLAN.focus
TOPK_REPLAY = TOPK_PLAN.replay
TOPK_LLMBAR_JUDGES = TOPK_PLAN.llmbar_judges
TOPK_TABLES = [
    "table1_judges",
    "table2_correctness",
    "shrinkage",
    "table3_budget",
    "table4_ablation",
    "table4_recall_at_k",
    "frontier",
    "spearman",
]
TOPK_FIGURES = ["recall_vs_budget", "naive_vs_true", "allocation", "ablation", "judges_recall_vs_c", "frontier"]
TOPK_EVAL = ["recall", "params", "scores", "budget", "allocation", "queries"]

TOPK_ORACLES = [f"results/topk/oracle/{j}.parquet" for j in TOPK_JUDGES]
TOPK_PROBE_VERDICTS = [f"results/topk/probes/verdicts/{j}.parquet" for j in TOPK_JUDGES]
TOPK_LLMBAR_VERDICTS = [f"results/topk/llmbar/verdicts/{j}.parquet" for j in TOPK_LLMBAR_JUDGES]
VERDICT_TABLES.extend(TOPK_ORACLES + TOPK_PROBE_VERDICTS + TOPK_LLMBAR_VERDICTS)

# the temperature-1 flip rate (topk.flip_rate; not part of the main protocol): per flip judge
TOPK_FLIP_JUDGES = TOPK_PLAN.flip_judges
TOPK_FLIPS = [f"results/topk/flip_rate/{j}.csv" for j in TOPK_FLIP_JUDGES]
VERDICT_TABLES.extend(f"results/topk/flip_rate/verdicts/{j}.parquet" for j in TOPK_FLIP_JUDGES)

# live ranking of the user's own pools (topk.rank): every pool x rank judge
TOPK_RANK_POOLS = TOPK_PLAN.rank_pools
TOPK_RANK_JUDGES = TOPK_PLAN.rank_judges
TOPK_RANK = [f"results/topk/rank/{p}/{j}/summary.csv" for p in TOPK_RANK_POOLS for j in TOPK_RANK_JUDGES]

STUDY_OUTPUTS["topk"] = (
    TOPK_RANK
    + TOPK_FLIPS
    + [f"results/topk/tables/{t}.csv" for t in TOPK_TABLES]
    + [f"results/topk/figures/{f}.png" for f in TOPK_FIGURES]
    + [
        "results/topk/probes/summary.csv",
        "results/topk/llmbar/summary.csv",
        "results/topk/synthetic/summary.csv",
    ]
)


# params of every judge-querying rule: the judge as configured, the study config, the cache
_TOPK_Q = lambda w: dict(
    judge=judge_entry(w.judge),
    cfg=TOPK,
    cache=CACHE,
    max_error_rate=config["max_error_rate"],
    provenance=provenance_for([w.judge]),
)


rule topk_items:
    """Item pools (theta = #true - #false, balanced verbosity with |corr| < max_corr) and the
    isolated bias-probe pairs, from the project's statement banks."""
    input:
        TOPK["banks"],
    output:
        pools="results/topk/items.parquet",
        probes="results/topk/probes/pairs.parquet",
    params:
        cfg=TOPK,
        provenance=provenance_for([]),
    log:
        "results/logs/topk_items.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/topk_items.py"


_TOPK_QUERY = dict(
    input=dict(
        pools="results/topk/items.parquet",
        probes="results/topk/probes/pairs.parquet",
        llmbar="results/topk/llmbar/pairs.parquet",
    ),
    output=dict(
        oracle="results/topk/oracle/{judge}.parquet",
        probes="results/topk/probes/verdicts/{judge}.parquet",
        llmbar="results/topk/llmbar/verdicts/{judge}.parquet",
    ),
    log="results/logs/topk_query/{judge}.log",
)


rule topk_query:
    """Oracle collection: the judge answers all N(N-1) ordered pairs of every pool once (A/B
    prompt, temperature 0); then the bias probes and every LLMBar pair, in both orders; all
    through the call cache."""
    input:
        **_TOPK_QUERY["input"],
        api_keys=needs_keys(lambda w: w.judge),
    output:
        **_TOPK_QUERY["output"],
    wildcard_constraints:
        judge=name_regex(TOPK_JUDGES),
    params:
        q=_TOPK_Q,
    resources:
        **job_resources(lambda w: w.judge),
    log:
        _TOPK_QUERY["log"],
    conda:
        env_for(lambda w: w.judge)
    script:
        "../workflow_scripts/topk_query.py"


_TOPK_RANK = dict(
    input=dict(pool_file=lambda w: TOPK_RANK_POOLS[w.pool]),
    output=dict(
        ranking="results/topk/rank/{pool}/{judge}/ranking.csv",
        queries="results/topk/rank/{pool}/{judge}/queries.parquet",
        trace="results/topk/rank/{pool}/{judge}/trace.csv",
        summary="results/topk/rank/{pool}/{judge}/summary.csv",
    ),
    log="results/logs/topk_rank/{pool}/{judge}.log",
)


rule topk_rank:
    """Rank a user's items file live (topk.rank.pools): the judge answers only the pairs the
    top-k-aware rule picks, in batches between Laplace refits, through the call cache, until
    the posterior expected top-k recall reaches the threshold or the call/USD budget is spent.
    No true quality is read (a planted one only adds recall to the summary)."""
    input:
        **_TOPK_RANK["input"],
        api_keys=needs_keys(lambda w: w.judge),
    output:
        **_TOPK_RANK["output"],
    wildcard_constraints:
        pool=name_regex(list(TOPK_RANK_POOLS)),
        judge=name_regex(TOPK_JUDGES),
    params:
        q=_TOPK_Q,
    resources:
        **job_resources(lambda w: w.judge),
    log:
        _TOPK_RANK["log"],
    conda:
        env_for(lambda w: w.judge)
    script:
        "../workflow_scripts/topk_rank.py"


rule topk_flip_rate:
    """The temperature-1 flip rate (paper 002, measured apart from the main protocol): the judge
    answers topk.flip_rate.n_pairs sampled ordered pairs of its pools topk.flip_rate.repeats
    times each at topk.flip_rate.temperature (sampled answers, no logit verdicts; each ask its
    own cache key); the share of repeat pairs that disagree, with a Wilson interval clustered by
    pair (judgelab/topk/flips.py)."""
    input:
        pools="results/topk/items.parquet",
        api_keys=needs_keys(lambda w: w.judge),
    output:
        verdicts="results/topk/flip_rate/verdicts/{judge}.parquet",
        summary=report(
            "results/topk/flip_rate/{judge}.csv", caption="../report/topk_flip_rate.rst", category="Top-k ranking"
        ),
    wildcard_constraints:
        judge=name_regex(TOPK_FLIP_JUDGES),
    params:
        q=_TOPK_Q,
        seed=config["seed"],
    resources:
        **job_resources(lambda w: w.judge),
    log:
        "results/logs/topk_flip_rate/{judge}.log",
    conda:
        env_for(lambda w: w.judge)
    script:
        "../workflow_scripts/topk_flip_rate.py"


rule topk_evaluate:
    """Offline evaluation against the judge's fixed oracles: full-data fits of every estimator
    (naive, bias-aware over the lambda_b sweep, hierarchical, residualisation, order-swap
    majority, gate) and the active loop of every strategy and seed, recall at each budget."""
    input:
        pools="results/topk/items.parquet",
        oracle="results/topk/oracle/{judge}.parquet",
    output:
        **{t: f"results/topk/eval/{{judge}}/{t}.parquet" for t in TOPK_EVAL},
    wildcard_constraints:
        judge=name_regex(TOPK_JUDGES),
    params:
        judge=lambda w: judge_entry(w.judge),
        cfg=TOPK,
        focus=lambda w: w.judge == TOPK_FOCUS,
        seed=config["seed"],
        provenance=lambda w: provenance_for([w.judge]),
    log:
        "results/logs/topk_evaluate/{judge}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/topk_evaluate.py"


rule topk_synthetic:
    """The synthetic simulator: Eq. (1) verdicts with planted c*, kappa* per scenario (biased,
    the unbiased control, a legitimate covariate for the gate), evaluated like the judges."""
    output:
        recall="results/topk/synthetic/recall.parquet",
        params="results/topk/synthetic/params.parquet",
        budget="results/topk/synthetic/budget.parquet",
        summary=report(
            "results/topk/synthetic/summary.csv",
            caption="../report/topk_synthetic.rst",
            category="Top-k ranking",
        ),
    params:
        cfg=TOPK,
        seed=config["seed"],
        provenance=provenance_for([]),
    log:
        "results/logs/topk_synthetic.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/topk_synthetic.py"


rule topk_llmbar_pairs:
    """The configured LLMBar subsets as one pairs table (category = subset)."""
    output:
        "results/topk/llmbar/pairs.parquet",
    params:
        cfg=TOPK,
        provenance=provenance_for([]),
    log:
        "results/logs/topk_llmbar_pairs.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/topk_llmbar_pairs.py"


rule topk_llmbar_replay:
    """A replayed real judge (LLMBar authors' recorded verdicts) on the LLMBar subset it was
    recorded on, both orders, with its recorded prompt template."""
    input:
        "results/topk/llmbar/pairs.parquet",
        api_keys=needs_keys(lambda w: w.judge),
    output:
        "results/topk/llmbar/verdicts/{judge}.parquet",
    wildcard_constraints:
        judge=name_regex(TOPK_REPLAY),
    params:
        q=_TOPK_Q,
    resources:
        **job_resources(lambda w: w.judge),
    log:
        "results/logs/topk_llmbar_replay/{judge}.log",
    conda:
        env_for(lambda w: w.judge)
    script:
        "../workflow_scripts/topk_llmbar_query.py"


rule topk_tables:
    """Tables 1-4, shrinkage sweep, cost-quality frontier, Spearman across judges, the bias
    probes (Wilson CIs) and LLMBar external validity."""
    input:
        eval=[f"results/topk/eval/{j}/{t}.parquet" for j in TOPK_JUDGES for t in ("recall", "params", "budget")],
        probe_pairs="results/topk/probes/pairs.parquet",
        probes=TOPK_PROBE_VERDICTS,
        llmbar_pairs="results/topk/llmbar/pairs.parquet",
        llmbar=TOPK_LLMBAR_VERDICTS,
    output:
        **{
            t: report(f"results/topk/tables/{t}.csv", caption=f"../report/topk_{t}.rst", category="Top-k ranking")
            for t in TOPK_TABLES
        },
        probes=report(
            "results/topk/probes/summary.csv", caption="../report/topk_probes.rst", category="Top-k ranking"
        ),
        llmbar=report(
            "results/topk/llmbar/summary.csv", caption="../report/topk_llmbar.rst", category="Top-k ranking"
        ),
    params:
        cfg=TOPK,
        judges=[judge_entry(j) for j in TOPK_JUDGES],
        seed=config["seed"],
        provenance=provenance_for(TOPK_LLMBAR_JUDGES),
    log:
        "results/logs/topk_tables.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/topk_tables.py"


rule topk_figures:
    """Figs. 2-5, 7, 8 of the paper (stamped when any judge is simulated)."""
    input:
        budget=[f"results/topk/eval/{j}/budget.parquet" for j in TOPK_JUDGES],
        synthetic="results/topk/synthetic/budget.parquet",
        scores=f"results/topk/eval/{TOPK_FOCUS}/scores.parquet",
        allocation=f"results/topk/eval/{TOPK_FOCUS}/allocation.parquet",
        judges="results/topk/tables/table1_judges.csv",
        frontier="results/topk/tables/frontier.csv",
    output:
        **{
            f: report(f"results/topk/figures/{f}.png", caption=f"../report/topk_fig_{f}.rst", category="Top-k ranking")
            for f in TOPK_FIGURES
        },
    params:
        cfg=TOPK,
        focus=TOPK_FOCUS,
        config_hash=CONFIG_HASH,
    log:
        "results/logs/topk_figures.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/topk_figures.py"


# Paper 002's headline numbers beside this run's (judgelab/reproduction/topk.py): one row per
# number, its provenance (planted / simulated / replayed / real) and verdict.
from judgelab.reproduction import topk as _topk_repro

STUDY_OUTPUTS["topk"] = [*STUDY_OUTPUTS["topk"], "results/topk/reproduction.csv"]


rule topk_reproduction:
    """reproduction.csv: the paper's values, this run's with intervals, provenance and verdict."""
    input:
        [f"results/topk/{t}" for t in _topk_repro.TABLES if f"results/topk/{t}" in STUDY_OUTPUTS["topk"]]
        + TOPK_FLIPS,
    output:
        report(
            "results/topk/reproduction.csv",
            caption="../report/topk_reproduction.rst",
            category="Top-k ranking",
        ),
    params:
        study="topk",
        judges=ALL_JUDGE_ENTRIES,
        options={"focus": TOPK_FOCUS},
        config_hash=CONFIG_HASH,
        seed=config["seed"],
    log:
        "results/logs/topk_reproduction.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/reproduction.py"
