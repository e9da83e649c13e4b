# Study `orders`: every configured judge on real pair sets, in both presentation orders.
#
# Method.  Each pair set is loaded from public data (LLMBar by default) into the pairs
# table.  Every judge answers every pair twice, once in the stored order (AB) and once
# swapped (BA), with the configured pairwise template (replayed real judges use the
# template they were recorded with).  Verdicts are mapped back to the stored order and
# compared with gold: accuracy per order, accuracy in both orders, positional agreement
# and tie rate, with every unparsed answer, refusal and API error counted.

# the study's plan (judgelab/orders/plan.py), made in rules/plans.smk
ORDERS = PLANS["orders"].plan.cfg
ORDERS_SETS = PLANS["orders"].plan.sets


ORDERS_VERDICTS = [
    f"results/orders/verdicts/{ds}/{j}.parquet" for ds in ORDERS_SETS for j in judges_for_dataset(ds)
]
VERDICT_TABLES.extend(ORDERS_VERDICTS)
STUDY_OUTPUTS["orders"] = [
    "results/orders/summary.csv",
    "results/orders/figures/accuracy.png",
]


rule orders_pairs:
    """Load a public pair set into the documented pairs table."""
    output:
        "results/orders/pairs/{dataset}.parquet",
    params:
        spec=lambda w: {**ORDERS["datasets"][w.dataset],
                        **({"n_pairs": ORDERS["n_pairs"]} if ORDERS.get("n_pairs") else {})},
        provenance=lambda w: provenance_for([]),
    log:
        "results/logs/orders_pairs/{dataset}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/build_pairs.py"


_ORDERS_QUERY = dict(
    input="results/orders/pairs/{dataset}.parquet",
    output="results/orders/verdicts/{dataset}/{judge}.parquet",
    log="results/logs/orders_query/{dataset}/{judge}.log",
)


rule orders_query:
    """Ask one judge about every pair, in both orders, through the call cache."""
    input:
        _ORDERS_QUERY["input"],
        api_keys=needs_keys(lambda w: w.judge),
    output:
        _ORDERS_QUERY["output"],
    wildcard_constraints:
        judge=name_regex(ALL_JUDGE_ENTRIES),
    params:
        q=lambda w: query_params(w, ORDERS),
    resources:
        **job_resources(lambda w: w.judge),
    log:
        _ORDERS_QUERY["log"],
    conda:
        env_for(lambda w: w.judge)
    script:
        "../workflow_scripts/query_pairs.py"


rule orders_summary:
    """Accuracy, order consistency and tie rate per judge and pair set (Wilson CIs)."""
    input:
        ORDERS_VERDICTS,
    output:
        report(
            "results/orders/summary.csv",
            caption="../report/orders_summary.rst",
            category="Both orders (LLMBar)",
        ),
    params:
        provenance=provenance_for(list(ALL_JUDGE_ENTRIES)),
    log:
        "results/logs/orders_summary.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/orders_summary.py"


rule orders_figure:
    """Accuracy per judge and order, stamped when any judge is simulated."""
    input:
        "results/orders/summary.csv",
    output:
        report(
            "results/orders/figures/accuracy.png",
            caption="../report/orders_accuracy.rst",
            category="Both orders (LLMBar)",
        ),
    log:
        "results/logs/orders_figure.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/orders_figure.py"
