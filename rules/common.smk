# Shared helpers of every study: judge lookup, provenance, per-backend resources -- bound
# here to the config, defined in the package (judgelab.workflow.dag, judgelab.workflow.resources).

from functools import partial as _partial

from judgelab.workflow import resources as _resources
from judgelab.workflow.dag import Dag as _Dag
from judgelab.workflow.dag import name_regex
from judgelab.workflow.roles import JobKeys as _JobKeys
from judgelab.workflow.roles import with_roles

SHARED = _Dag(config)  # fills output limits and drops profile leftovers in `config`, checks the judges
JUDGE_SPECS = SHARED.judge_specs
REPLAY_SPECS = SHARED.replay_specs
ALL_JUDGE_ENTRIES = SHARED.entries
CONFIG_HASH = SHARED.config_hash
CACHE = SHARED.cache
# Auxiliary roles (gold judge, writers, generators, teacher, detectors, a synthetic tournament)
# are checked per job, not here: each rule that uses one declares `roles=needs_roles(...)` among
# its inputs, an input function Snakemake evaluates only for the jobs the requested targets
# need.  A real run stops there, naming the rule, the role and its config key, when a needed
# role is simulated without allow_simulated_roles (judgelab.workflow.roles); roles of studies the targets
# do not need are never resolved.  SIMULATED_ROLES: the simulated roles outputs may name.
SIMULATED_ROLES = SHARED.simulated_roles
needs_roles = SHARED.needs_roles
judge_entry = SHARED.judge_entry
provenance_for = SHARED.provenance_for
judges_for_dataset = SHARED.judges_for_dataset
query_params = SHARED.query_params
# Every judge-querying rule appends its verdict tables here; the call summary reads them all.
VERDICT_TABLES = []


# -- cluster resources --------------------------------------------------------------
# What a job asks a scheduler for is derived from the backend traits of the judges it runs,
# never from a backend's or a rule's name (judgelab.workflow.resources).  Each rule that runs a judge
# or a model declares `**job_resources(judges)` as its resources; rules that run none declare
# nothing and are `localrules` (Snakefile).  Per-cluster changes: edit JOB_TIERS in
# judgelab/workflow/resources.py, or `--set-resources RULE:runtime=...` for one rule.
ALL_JUDGE_SPECS = {**JUDGE_SPECS, **REPLAY_SPECS}
job_resources = _partial(_resources.job_resources, ALL_JUDGE_SPECS)
# The conda env of a job that runs judges is their backends' `conda_env` trait, envs/<name>.yaml:
# each rule that calls a judge declares `conda: env_for(judges)` with the judges of its
# `job_resources`, so one rule serves every backend and a backend with an env of its own needs
# its env file only (`judgelab check-config` refuses a judge whose env file is missing).
env_for = _partial(_resources.job_conda_env, ALL_JUDGE_SPECS)
light_rules = _resources.light_rules

# -- API keys ------------------------------------------------------------------------
# Each rule that calls a judge also declares `api_keys=needs_keys(judges)` among its inputs, with
# the judges its `job_resources` names: an input function with no files that Snakemake evaluates
# only for the jobs the requested targets need.  Before the first job starts, the Snakefile's
# `onstart` checks the key variables of the judges of the jobs that will run (one line per unset
# variable, exit 2); judges the targets do not use are not asked for a key.  A dry run warns.
JOB_KEYS = _JobKeys(ALL_JUDGE_SPECS, dry_run=lambda: workflow.dryrun)
needs_keys = JOB_KEYS.needs
