# Every study's plan, made once by its package (judgelab/<study>/plan.py).  A config error of
# one study is kept, not raised (judgelab.workflow.planning): the Snakefile then leaves that study's
# rules out, and rules/config_errors.smk gives its output folder one rule that raises the
# error -- so the study's own targets stop naming the key, and every other study plans.

import sys

from judgelab.orders.plan import plan_orders
from judgelab.bias_card.plan import plan_audit_logs
from judgelab.workflow.planning import STUDIES, plan_study
from judgelab.rbd.plan import plan_rbd
from judgelab.scoring.plan import ScoringStudy
from judgelab.strategies.plan import plan_strategies
from judgelab.topk.plan import plan_topk
from judgelab.uda.plan import plan_uda

# each study of judgelab.workflow.planning.STUDIES: its planning function and what it reads
_PLANNERS = {
    "orders": (plan_orders, config, ALL_JUDGE_ENTRIES),
    "audit_logs": (plan_audit_logs, config),
    "strategies": (plan_strategies, config, JUDGE_SPECS, REPLAY_SPECS),
    "scoring": (ScoringStudy, config, ALL_JUDGE_ENTRIES, CONFIG_HASH),
    "topk": (plan_topk, config, JUDGE_SPECS, REPLAY_SPECS),
    "uda": (plan_uda, config, JUDGE_SPECS, ALL_JUDGE_ENTRIES, CONFIG_HASH),
    "rbd": (plan_rbd, config, JUDGE_SPECS),
}
assert list(_PLANNERS) == list(STUDIES), "rules/plans.smk: one planner per study of judgelab.workflow.planning.STUDIES"
PLANS = {study: plan_study(study, *_PLANNERS[study]) for study in STUDIES}
# what `rule all` asks of each study: for a study whose plan failed, a file only its config-error
# rule makes; the study's own rules file (rules/<study>.smk) replaces it with the study's outputs
STUDY_OUTPUTS = {study: plan.failed_outputs() for study, plan in PLANS.items()}
for _study, _plan in PLANS.items():
    if not _plan.ok:
        print(f"study {_study}: config error (its targets stop with it): {_plan.error}", file=sys.stderr)
