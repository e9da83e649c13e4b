# Every study's plan, made once by its package (judgelab/<study>/plan.py).  A config error of
# one study is kept, not raised (judgelab.workflow.planning): the Snakefile then leaves that study's
# rules out, and rules/config_errors.smk gives its output folder one rule that raises the
# error -- so the study's own targets stop naming the key, and every other study plans.

import sys

from judgelab.audit.plan import plan_audit
from judgelab.bias_card.plan import plan_audit_logs
from judgelab.workflow.planning import plan_study
from judgelab.rbd.plan import plan_rbd
from judgelab.scoring.plan import ScoringStudy
from judgelab.strategies.plan import plan_strategies
from judgelab.topk.plan import plan_topk
from judgelab.uda.plan import plan_uda

PLANS = {
    "audit": plan_study("audit", plan_audit, config, ALL_JUDGE_ENTRIES),
    "audit_logs": plan_study("audit_logs", plan_audit_logs, config),
    "strategies": plan_study("strategies", plan_strategies, config, JUDGE_SPECS, REPLAY_SPECS),
    "scoring": plan_study("scoring", ScoringStudy, config, ALL_JUDGE_ENTRIES, CONFIG_HASH),
    "topk": plan_study("topk", plan_topk, config, JUDGE_SPECS, REPLAY_SPECS),
    "uda": plan_study("uda", plan_uda, config, JUDGE_SPECS, ALL_JUDGE_ENTRIES, CONFIG_HASH),
    "rbd": plan_study("rbd", plan_rbd, config, JUDGE_SPECS),
}
# what `rule all` asks of a study whose plan failed (only its config-error rule makes it); the
# study's own rules file replaces it with the study's outputs when it planned
AUDIT_OUTPUTS = PLANS["audit"].failed_outputs()
AUDIT_LOGS_OUTPUTS = PLANS["audit_logs"].failed_outputs()
STRAT_OUTPUTS = PLANS["strategies"].failed_outputs()
SCORING_OUTPUTS = PLANS["scoring"].failed_outputs()
TOPK_OUTPUTS = PLANS["topk"].failed_outputs()
UDA_OUTPUTS = PLANS["uda"].failed_outputs()
RBD_OUTPUTS = PLANS["rbd"].failed_outputs()
for _study, _plan in PLANS.items():
    if not _plan.ok:
        print(f"study {_study}: config error (its targets stop with it): {_plan.error}", file=sys.stderr)
