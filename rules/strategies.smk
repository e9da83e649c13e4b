# Study `strategies`: nine debiasing strategies of LLM judges (paper 003), end to end.
#
# Method.  Three kinds of pair sets are built.  The controlled bias set (375 pairs, Appendix
# A) comes from the project's question bank: LENGTH expansions written by a generator judge,
# LENGTH truncations cut at sentence boundaries, identical POSITION pairs, STYLE pairs of a
# markdown answer and its plain-prose transformation (and their position mirror STYLE_BA),
# and MODEL_ORIGIN pairs of answers written by generators of different model families
# (Gemini-vs-Claude plus a seeded round robin); every pair there has gold "tie" except the
# truncations.  MT-Bench human votes (turn 1) joined to the answer texts, sampled with
# default_rng(42).choice, and a seeded LLMBar sample carry human gold.  Every judge then
# answers every pair under each strategy: B0 (a JSON verdict), S1 (position swap, tie on
# disagreement), S2 (same-family ensemble at temperatures 0 / 0.3 / 0.7, majority), S3
# (cross-family ensemble, majority), S4 (five-criteria rubric), S5 (chain of thought), S6
# (reference-guided), S7 (combined full) and S8 (merged CoT + rubric, position-swapped).
# Calls shared by strategies are one cached request.  On the controlled set we report
# signed bias scores b = P(target) - P(other) with bootstrap CIs (position, length-aware
# verbosity, position-averaged style, self-preference, model preference), truncation
# accuracy, per-topic style bias and the change of |b| under each strategy; on the gold
# sets, agreement with bootstrap CIs, Cohen's kappa, verdict distributions, McNemar tests
# vs B0 with Holm-Bonferroni, per-judge mixed-effects models with instance random
# intercepts, the minimum detectable effect, the cost-accuracy Pareto front and the
# strategy selector of Algorithm 1, derived from these results.  Replayed real judges
# (LLMBar Natural, both orders) give S1 from real verdicts.

from pathlib import Path

from judgelab.strategies.plan import TABLES as _T

STRAT = config["strategies"]


# the study's plan (judgelab/strategies/plan.py), made in rules/plans.smk
STRAT_STUDY, _STRAT_PLAN_ERROR = PLANS["strategies"].plan
STRAT_SETS = STRAT_STUDY.datasets
STRAT_CONTROLLED = STRAT_STUDY.controlled
STRAT_GOLD_SETS = STRAT_STUDY.gold_sets
STRAT_REPLAY_SETS = STRAT_STUDY.replay_sets
STRAT_PANEL = STRAT_STUDY.panel
STRAT_ALL_JUDGES = STRAT_STUDY.all_judges
STRAT_CTL = STRAT_STUDY.ctl
STRAT_GEN_TASKS = STRAT_STUDY.gen_tasks
STRAT_GENERATIONS = STRAT_STUDY.generations()
STRAT_FIGURES = STRAT_STUDY.figures()
STUDY_OUTPUTS["strategies"] = STRAT_STUDY.outputs()
STRAT_SETTINGS = STRAT_STUDY.settings()
VERDICT_TABLES.extend(STRAT_STUDY.verdict_tables())
_STRAT_GEN_PARAMS = dict(controlled=STRAT_CTL, seed=config["seed"], cache=CACHE,
                         max_error_rate=config["max_error_rate"])


# provenance params; simulated generator roles are named as inputs (rules/common.smk)
_strat_prov = lambda names: provenance_for(names, "strategies", STRAT_PANEL)


_STRAT_QUERY = dict(settings=STRAT_SETTINGS, templates=STRAT["templates"], cache=CACHE,
                    max_error_rate=config["max_error_rate"])


rule strategies_generate:
    """A generator judge writes the controlled set's texts through the call cache: the LENGTH
    expansions (about 2.8x longer, no new facts) and the MODEL_ORIGIN answers of its family."""
    input:
        bank=STRAT_CTL["bank"],
        roles=needs_roles(["strategies.controlled"], judge=lambda w: w.judge, error=_STRAT_PLAN_ERROR),
        api_keys=needs_keys(lambda w: w.judge),
    output:
        "results/strategies/generations/{judge}.parquet",
    wildcard_constraints:
        judge=name_regex(STRAT_GEN_TASKS),
    params:
        judge=lambda w: judge_entry(w.judge),
        tasks=lambda w: STRAT_GEN_TASKS[w.judge],
        g=_STRAT_GEN_PARAMS,
        provenance=lambda w: _strat_prov([w.judge]),
    resources:
        **job_resources(lambda w: w.judge),
    log:
        "results/logs/strategies_generate/{judge}.log",
    conda:
        env_for(lambda w: w.judge)
    script:
        "../workflow_scripts/strategies_generate.py"


rule strategies_controlled:
    """Assemble the controlled bias set (Appendix A) from the bank and the generations, with
    seeded slot assignments and question draws; summarise it (pairs, lengths, markdown cue)."""
    input:
        bank=STRAT_CTL["bank"],
        generations=STRAT_GENERATIONS,
        roles=needs_roles(["strategies.controlled"], error=_STRAT_PLAN_ERROR),
    output:
        pairs="results/strategies/pairs/controlled.parquet",
        summary=report(f"{_T}/controlled_summary.csv", caption="../report/strategies_controlled.rst",
                       category="Debiasing strategies"),
    params:
        controlled=STRAT_CTL,
        origin_generators=STRAT_STUDY.origin,
        seed=config["seed"],
        provenance=_strat_prov(list(STRAT_GEN_TASKS)),
    log:
        "results/logs/strategies_controlled.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/strategies_controlled.py"


rule strategies_pairs:
    """Load a gold-labelled pair set: MT-Bench human votes joined to the answers (seeded
    default_rng(seed).choice sample) or a seeded LLMBar sample."""
    output:
        "results/strategies/pairs/{dataset}.parquet",
    wildcard_constraints:
        dataset=name_regex([d for d in STRAT_SETS if d not in STRAT_CONTROLLED]),
    params:
        name=lambda w: w.dataset,
        spec=lambda w: STRAT["datasets"][w.dataset],
        provenance=_strat_prov([]),
    log:
        "results/logs/strategies_pairs/{dataset}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/strategies_pairs.py"


rule strategies_query:
    """One judge makes every call of every strategy on one pair set (shared calls once)."""
    input:
        "results/strategies/pairs/{dataset}.parquet",
        api_keys=needs_keys(lambda w: w.judge),
    output:
        "results/strategies/calls/{dataset}/{judge}.parquet",
    wildcard_constraints:
        judge=name_regex(STRAT_ALL_JUDGES),
        dataset=name_regex(STRAT_SETS),
    params:
        judge=lambda w: judge_entry(w.judge),
        strategies=lambda w: STRAT_STUDY.strategies(w.dataset),
        q=_STRAT_QUERY,
        provenance=lambda w: _strat_prov([w.judge]),
    resources:
        **job_resources(lambda w: w.judge),
    log:
        "results/logs/strategies_query/{dataset}/{judge}.log",
    conda:
        env_for(lambda w: w.judge)
    script:
        "../workflow_scripts/strategies_query.py"


rule strategies_verdicts:
    """Aggregate each strategy's calls into one verdict per judge and instance (S1/S8: keep
    if both orders agree, else tie; S2/S3/S7: majority; S3 from cross-family members' B0
    calls), counting every unparsed, refused, failed or missing component call."""
    input:
        pairs="results/strategies/pairs/{dataset}.parquet",
        calls=lambda w: STRAT_STUDY.calls(w.dataset),
    output:
        "results/strategies/verdicts/{dataset}.parquet",
    params:
        judges=lambda w: STRAT_STUDY.judge_strategies(w.dataset),
        families=lambda w: STRAT_STUDY.families_of(w.dataset, ALL_JUDGE_ENTRIES),
        settings=STRAT_SETTINGS,
        control_judges=STRAT["control_judges"],
        ensembles=STRAT["ensembles"],
        provenance=lambda w: _strat_prov(STRAT_STUDY.judges(w.dataset)),
    log:
        "results/logs/strategies_verdicts/{dataset}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/strategies_verdicts.py"


rule strategies_bias:
    """Signed bias scores with bootstrap CIs on the controlled set (position; verbosity mapped to
    the actually longer response; style position-averaged over STYLE and STYLE_BA;
    self-preference where a side is the judge's family, else model preference), truncation
    accuracy, per-topic style bias (Table 7), expansion vs truncation (Table 8) and the change
    of |b| under each strategy vs B0 (Fig. 2)."""
    input:
        verdicts=expand("results/strategies/verdicts/{ds}.parquet", ds=STRAT_CONTROLLED),
        pairs=expand("results/strategies/pairs/{ds}.parquet", ds=STRAT_CONTROLLED),
    output:
        bias=report(f"{_T}/bias_scores.csv", caption="../report/strategies_bias.rst", category="Debiasing strategies"),
        topic=report(f"{_T}/topic_style.csv", caption="../report/strategies_topic_style.rst",
                     category="Debiasing strategies"),
        length=report(f"{_T}/length_ablation.csv", caption="../report/strategies_length.rst",
                      category="Debiasing strategies"),
        cross=report(f"{_T}/cross_bias.csv", caption="../report/strategies_cross_bias.rst",
                     category="Debiasing strategies"),
    params:
        a=STRAT_STUDY.analysis(config["seed"], _strat_prov(STRAT_PANEL)),
        original_target=STRAT_CTL["original_pairing"][0],
        cross_bias_judges=STRAT["cross_bias_judges"],
        control_judges=STRAT["control_judges"],
    log:
        "results/logs/strategies_bias.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/strategies_bias.py"


rule strategies_agreement:
    """Agreement with gold and bootstrap 95% CIs, Cohen's kappa, verdict distributions and tie
    rates (Tables 1-3, 6), malformed answers by kind, per-category agreement (Fig. 3), McNemar
    vs B0 with Holm-Bonferroni (Table 4), mixed-effects models per judge (Table 5) and the
    minimum detectable effect (Appendix D)."""
    input:
        expand("results/strategies/verdicts/{ds}.parquet", ds=STRAT_GOLD_SETS),
    output:
        agreement=report(f"{_T}/agreement.csv", caption="../report/strategies_agreement.rst",
                         category="Debiasing strategies"),
        category=report(f"{_T}/category_agreement.csv", caption="../report/strategies_category.rst",
                        category="Debiasing strategies"),
        mcnemar=report(f"{_T}/mcnemar.csv", caption="../report/strategies_mcnemar.rst",
                       category="Debiasing strategies"),
        mixed=report(f"{_T}/mixed_effects.csv", caption="../report/strategies_mixed.rst",
                     category="Debiasing strategies"),
        mde=report(f"{_T}/mde.csv", caption="../report/strategies_mde.rst", category="Debiasing strategies"),
    params:
        a=STRAT_STUDY.analysis(config["seed"], _strat_prov(STRAT_ALL_JUDGES)),
    log:
        "results/logs/strategies_agreement.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/strategies_agreement.py"


rule strategies_selection:
    """The strategy registry table with cost multipliers, the cost-accuracy Pareto front
    (Fig. 4) and Algorithm 1's recommendations derived from the measured tables."""
    input:
        agreement=f"{_T}/agreement.csv",
        mixed=f"{_T}/mixed_effects.csv",
    output:
        strategies=report(f"{_T}/strategies.csv", caption="../report/strategies_registry.rst",
                          category="Debiasing strategies"),
        pareto=report(f"{_T}/pareto.csv", caption="../report/strategies_pareto.rst", category="Debiasing strategies"),
        recommendations=report(f"{_T}/recommendations.csv", caption="../report/strategies_selector.rst",
                               category="Debiasing strategies"),
    params:
        settings=STRAT_SETTINGS,
        strategies=STRAT["strategies"],
        selector=STRAT["selector"],
        exclude=STRAT["control_judges"],
        alpha=STRAT["alpha"],
        provenance=_strat_prov(STRAT_ALL_JUDGES),
    log:
        "results/logs/strategies_selection.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/strategies_selection.py"


rule strategies_human:
    """Human annotations of STYLE pairs (CSV) against the judges' B0 markdown preference on the
    same pairs: the human-vs-judge gap table (Table 9)."""
    input:
        annotations=STRAT["human_annotations"] or [],
        verdicts=expand("results/strategies/verdicts/{ds}.parquet", ds=STRAT_CONTROLLED),
        pairs=expand("results/strategies/pairs/{ds}.parquet", ds=STRAT_CONTROLLED),
    output:
        report(f"{_T}/human_style_gap.csv", caption="../report/strategies_human.rst", category="Debiasing strategies"),
    params:
        exclude_constant_slot=STRAT["human_exclude_constant_slot"],
        provenance=_strat_prov(STRAT_PANEL),
    log:
        "results/logs/strategies_human.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/strategies_human.py"


rule strategies_replay:
    """S1 from real judges' recorded verdicts in both orders (LLMBar Natural): the authors'
    order statistics recomputed, and position swap vs the single-order baseline."""
    input:
        verdicts=expand("results/strategies/verdicts/{ds}.parquet", ds=STRAT_REPLAY_SETS),
        calls=[p for ds in STRAT_REPLAY_SETS for p in STRAT_STUDY.calls(ds)],
    output:
        report(f"{_T}/replay_s1.csv", caption="../report/strategies_replay.rst", category="Debiasing strategies"),
    params:
        provenance=_strat_prov([j for ds in STRAT_REPLAY_SETS for j in STRAT_STUDY.judges(ds)]),
    log:
        "results/logs/strategies_replay.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/strategies_replay.py"


rule strategies_figures:
    """Figures: agreement with CIs, the Pareto front, per-category agreement (B0), and on the
    controlled set the bias heatmap (B0, RdBu centred at 0) and the cross-bias heatmap."""
    input:
        agreement=f"{_T}/agreement.csv",
        pareto=f"{_T}/pareto.csv",
        category=f"{_T}/category_agreement.csv",
        bias=f"{_T}/bias_scores.csv" if STRAT_CONTROLLED else [],
        cross=f"{_T}/cross_bias.csv" if STRAT_CONTROLLED else [],
    output:
        [report(f, caption=f"../report/strategies_fig_{Path(f).stem}.rst", category="Debiasing strategies")
         for f in STRAT_FIGURES],
    params:
        category_dataset=STRAT["selector"]["natural"],
    log:
        "results/logs/strategies_figures.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/strategies_figures.py"


# Paper 003's headline numbers beside this run's (judgelab/reproduction/strategies.py): one row
# per number, its provenance (planted / simulated / replayed / real) and verdict.
from judgelab.reproduction import strategies as _strat_repro

STUDY_OUTPUTS["strategies"] = [*STUDY_OUTPUTS["strategies"], "results/strategies/reproduction.csv"]


rule strategies_reproduction:
    """reproduction.csv: the paper's values, this run's with intervals, provenance and verdict."""
    input:
        [f"results/strategies/{t}" for t in _strat_repro.TABLES if f"results/strategies/{t}" in STUDY_OUTPUTS["strategies"]],
    output:
        report(
            "results/strategies/reproduction.csv",
            caption="../report/strategies_reproduction.rst",
            category="Debiasing strategies",
        ),
    params:
        study="strategies",
        judges=ALL_JUDGE_ENTRIES,
        options={},
        config_hash=CONFIG_HASH,
        seed=config["seed"],
    log:
        "results/logs/strategies_reproduction.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/reproduction.py"
