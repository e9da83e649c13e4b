# Cross-study reporting: what every judge cost, and how often its answers failed to parse.

REPORT_OUTPUTS = ["results/calls/summary.csv"]


rule call_summary:
    """Per judge: calls, outcomes (ok / fallback / unparsed / refusal / error), tokens, cost."""
    input:
        VERDICT_TABLES,
    output:
        report(
            "results/calls/summary.csv",
            caption="../report/call_summary.rst",
            category="Calls",
        ),
    params:
        provenance=provenance_for(list(ALL_JUDGE_ENTRIES)),
    log:
        "results/logs/call_summary.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/call_summary.py"
