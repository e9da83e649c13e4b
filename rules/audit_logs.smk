# Study `audit_logs`: bias cards of judges from their recorded verdicts, with no judge call.
#
# Method.  Each configured log set names files (globs, relative to the data root or the
# working directory) and their format: a preset of judgelab.verdict_import.PRESETS or a
# custom column mapping.  Every file is imported on its own job (so a cluster run spreads
# hundreds of logs over nodes) into the recorded verdict table; one job per set then
# computes the bias card of every judge in it (judgelab.bias_card): accuracy per order and
# in both orders, positional agreement, position preference b, length and markdown
# preference with a length-controlled logit, self-preference, tie rate and parse failures,
# each with an item-clustered CI, its test, MDE and an underpowered flag.

import os

# the study's plan (judgelab/bias_card/plan.py), made in rules/plans.smk: each set's files
# expanded, its format and the card's settings checked
AUDIT_LOGS = PLANS["audit_logs"].plan.cfg
AUDIT_LOG_FILES = PLANS["audit_logs"].plan.files
STUDY_OUTPUTS["audit_logs"] = PLANS["audit_logs"].plan.outputs()


rule audit_logs_import:
    """Import one recorded-verdict file into the recorded verdict table."""
    input:
        # the log file when on disk (a known public file not yet downloaded is fetched by the job)
        lambda w: [f for f in [AUDIT_LOG_FILES[w.logset][int(w.idx)]] if os.path.isabs(f)],
    output:
        "results/audit_logs/imported/{logset}/{idx}.parquet",
    wildcard_constraints:
        idx=r"\d+",
    params:
        spec=lambda w: AUDIT_LOGS["sets"][w.logset],
        path=lambda w: AUDIT_LOG_FILES[w.logset][int(w.idx)],
        provenance=lambda w: provenance_for([]),
    log:
        "results/logs/audit_logs_import/{logset}/{idx}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/audit_logs_import.py"


rule audit_logs_card:
    """Bias card, markdown card and figure of every judge in one log set."""
    input:
        lambda w: [
            f"results/audit_logs/imported/{w.logset}/{i}.parquet"
            for i in range(len(AUDIT_LOG_FILES[w.logset]))
        ],
    output:
        card=report(
            "results/audit_logs/{logset}/bias_card.csv",
            caption="../report/audit_logs_card.rst",
            category="Judge audit from logs",
        ),
        md="results/audit_logs/{logset}/bias_card.md",
        fig=report(
            "results/audit_logs/{logset}/bias_card.png",
            caption="../report/audit_logs_card.rst",
            category="Judge audit from logs",
        ),
        verdicts="results/audit_logs/{logset}/verdicts.parquet",
    params:
        settings=AUDIT_LOGS["settings"],
        provenance=lambda w: provenance_for([]),
    log:
        "results/logs/audit_logs_card/{logset}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/audit_logs_card.py"


rule audit_logs_summary:
    """All sets' cards in one table (a `set` column added)."""
    input:
        [f"results/audit_logs/{s}/bias_card.csv" for s in AUDIT_LOG_FILES],
    output:
        "results/audit_logs/bias_cards.csv",
    params:
        sets=list(AUDIT_LOG_FILES),
    log:
        "results/logs/audit_logs_summary.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/audit_logs_summary.py"
