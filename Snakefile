# judgelab: one DAG from data to figures for the studies of LLM-judge bias.
#
#   snakemake --cores 2                                   # embedded simulated panel
#   snakemake --cores 2 --configfile config/judges/api.yaml
#   snakemake --profile profiles/slurm --configfile config/judges/vllm-open.yaml
#
# Config: the judge set comes first (config/judges/simulated.yaml by default), the
# pipeline config second; --configfile files given on the command line override both.

import sys

from snakemake.utils import min_version

from judgelab.config import validate_workflow_config
from judgelab.workflow.scheduling import one_pending_reevaluation

min_version("8.20")

# the scheduler loop wakes when a job ends or a rate-limit timespan passes, not once per second per
# finished job (judgelab/workflow/scheduling.py says why)
one_pending_reevaluation()


configfile: "config/judges/simulated.yaml"
configfile: "config/config.yaml"


# Each config file and the --config overrides on their own (unknown keys, secrets), then the
# merged config against config/schema.yaml (defaults filled) and its cross-references: at parse
# time, before any job (or .snakemake/metadata) sees the config.
validate_workflow_config(
    config,
    files=["config/judges/simulated.yaml", "config/config.yaml", *map(str, workflow.overwrite_configfiles)],
    overrides=dict(workflow.config_settings.config),
)


include: "rules/common.smk"
# each study's plan (judgelab/<study>/plan.py); a study whose config has an error is left out,
# and its targets stop with that error (rules/config_errors.smk) while the others plan
include: "rules/plans.smk"


# each study's rules, rules/<study>.smk for every study of judgelab.workflow.planning.STUDIES whose plan
# is ok; they set STUDY_OUTPUTS[<study>], the study's targets
for _study in STUDIES:
    if PLANS[_study].ok:

        include: f"rules/{_study}.smk"


include: "rules/config_errors.smk"
include: "rules/report.smk"


rule all:
    input:
        list(STUDY_OUTPUTS.values()),
        REPORT_OUTPUTS,
    default_target: True


# Rules that run no judge and no model stay on the submit host under a cluster executor
# (rules/common.smk, "cluster resources"); every other job is submitted with the resources
# its judges need.
workflow.localrules(*light_rules(workflow.rules))



onstart:
    # the API keys of the judges the jobs of this run call (rules/common.smk, "API keys"), checked
    # before the first job starts; `--touch` calls no judge
    if not workflow.touch:
        _key_lines = JOB_KEYS.check(workflow.dag.needrun_jobs())
        for _line in _key_lines:
            print(f"judgelab: error: {_line}", file=sys.stderr)
        if _key_lines:
            raise SystemExit(2)
