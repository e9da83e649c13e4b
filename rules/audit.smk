# Study `audit`: every configured judge on real pair sets, in both presentation orders.
#
# Method.  Each pair set is loaded from public data (LLMBar by default) into the pairs
# table.  Every judge answers every pair twice, once in the stored order (AB) and once
# swapped (BA), with the configured pairwise template (replayed real judges use the
# template they were recorded with).  Verdicts are mapped back to the stored order and
# compared with gold: accuracy per order, accuracy in both orders, positional agreement
# and tie rate, with every unparsed answer, refusal and API error counted.

# the study's plan (judgelab/audit/plan.py), made in rules/plans.smk
AUDIT = PLANS["audit"].plan.cfg
AUDIT_SETS = PLANS["audit"].plan.sets


AUDIT_VERDICTS = [
    f"results/audit/verdicts/{ds}/{j}.parquet" for ds in AUDIT_SETS for j in judges_for_dataset(ds)
]
VERDICT_TABLES.extend(AUDIT_VERDICTS)
STUDY_OUTPUTS["audit"] = [
    "results/audit/summary.csv",
    "results/audit/figures/accuracy.png",
]


rule audit_pairs:
    """Load a public pair set into the documented pairs table."""
    output:
        "results/audit/pairs/{dataset}.parquet",
    params:
        spec=lambda w: {**AUDIT["datasets"][w.dataset],
                        **({"n_pairs": AUDIT["n_pairs"]} if AUDIT.get("n_pairs") else {})},
        provenance=lambda w: provenance_for([]),
    log:
        "results/logs/audit_pairs/{dataset}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/build_pairs.py"


_AUDIT_QUERY = dict(
    input="results/audit/pairs/{dataset}.parquet",
    output="results/audit/verdicts/{dataset}/{judge}.parquet",
    log="results/logs/audit_query/{dataset}/{judge}.log",
)


rule audit_query:
    """Ask one judge about every pair, in both orders, through the call cache."""
    input:
        _AUDIT_QUERY["input"],
        api_keys=needs_keys(lambda w: w.judge),
    output:
        _AUDIT_QUERY["output"],
    wildcard_constraints:
        judge=name_regex(ALL_JUDGE_ENTRIES),
    params:
        q=lambda w: query_params(w, AUDIT),
    resources:
        **job_resources(lambda w: w.judge),
    log:
        _AUDIT_QUERY["log"],
    conda:
        env_for(lambda w: w.judge)
    script:
        "../workflow_scripts/query_pairs.py"


rule audit_summary:
    """Accuracy, order consistency and tie rate per judge and pair set (Wilson CIs)."""
    input:
        AUDIT_VERDICTS,
    output:
        report(
            "results/audit/summary.csv",
            caption="../report/audit_summary.rst",
            category="Judge audit",
        ),
    params:
        provenance=provenance_for(list(ALL_JUDGE_ENTRIES)),
    log:
        "results/logs/audit_summary.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/audit_summary.py"


rule audit_figure:
    """Accuracy per judge and order, stamped when any judge is simulated."""
    input:
        "results/audit/summary.csv",
    output:
        report(
            "results/audit/figures/accuracy.png",
            caption="../report/audit_accuracy.rst",
            category="Judge audit",
        ),
    log:
        "results/logs/audit_figure.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/audit_figure.py"
