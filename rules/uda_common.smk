# Study `uda`: path lists and helpers of rules/uda.smk (no rules here), from the study's plan
# (judgelab/uda/plan.py), made in rules/plans.smk before this file is included.

from judgelab.uda.plan import FIGURES as _UDA_FIGURES
from judgelab.uda.plan import TABLES as _UDA_TABLES

UDA_PLAN = PLANS["uda"].plan
UDA = UDA_PLAN.cfg
UDA_SETS = UDA_PLAN.sets
UDA_JUDGES = UDA_PLAN.judges
UDA_VARIANTS = UDA_PLAN.variants
UDA_TRAINED = UDA_PLAN.trained
UDA_GENERATED = UDA_PLAN.generated
UDA_TABLES = _UDA_TABLES
UDA_FIGURES = _UDA_FIGURES
UDA_ANSWERS = UDA_PLAN.answers()
UDA_VERDICTS = UDA_PLAN.verdicts()
UDA_GENERATION = UDA_PLAN.generation()
VERDICT_TABLES.extend(UDA_ANSWERS + UDA_VERDICTS + UDA_GENERATION)
STUDY_OUTPUTS["uda"] = UDA_PLAN.outputs()

# input functions and params of the rules
uda_transfers_into = UDA_PLAN.transfers_into
uda_provenance = UDA_PLAN.provenance
uda_human_input = UDA_PLAN.human_input
uda_query_params = UDA_PLAN.query_params
uda_answers_params = UDA_PLAN.answers_params
uda_prompts_file = UDA_PLAN.prompts_file
uda_tournament_inputs = UDA_PLAN.tournament_inputs
uda_answerer_families = UDA_PLAN.answerer_families
