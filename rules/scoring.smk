# Study `scoring`: scoring bias of 1-5 rubric judges under prompt perturbations (paper 004).
#
# Method.  Each data set is loaded into scoring items (instruction, response, instance
# rubric, full-mark reference answer, and the gold scores it has: GPT-4's three recorded
# scorings in the Prometheus files, human scores where a set has them, the designed level
# of the project's rubric set) and a seeded sample is drawn.  Where a set has no responses
# (the FLASK hard subset) they are written to seeded target levels, and for every rubric
# the reference answers at scores 1-4 are written, by the generation-review pipeline
# (Fig. 4): a generator writes to the score description, a reviewer checks the match,
# roles alternating between two models, until accepted or a maximum of attempts.  The gold
# score of an item is the majority of three scorings by the gold judge with the score-5
# reference.  Every judge then scores every item with the Prometheus absolute prompt
# (Fig. 3) built from parts under each perturbation: rubric order (ascending = unperturbed,
# descending, random), score IDs (1-5, E-A, i-v) and a reference answer with score 1..5
# (none = unperturbed), at temperature 0.  Scoring accuracy is Spearman's rho and Pearson's
# r against each gold (Table 3), with the fluctuation max |delta rho| against the
# unperturbed prompt and paired-bootstrap CIs; scoring tendency is the score distribution
# N_k with failed judgments as -1 (Fig. 6); Fig. 5 plots rho against the reference score.
# GPT-4's run-to-run stability on its three recorded scorings is the real-judge baseline;
# aggregating a judge's scores over prompt variants is the paper's future work, tested here.

SCORING = config["scoring"]
SCORING_STUDY = PLANS["scoring"].plan  # judgelab/scoring/plan.py, made in rules/plans.smk
SCORING_SETS = SCORING_STUDY.datasets
SCORING_SYNTH = SCORING_STUDY.synthesised
SCORING_JUDGES = SCORING_STUDY.judges
_GOLD = SCORING_STUDY.gold
_GEN = SCORING_STUDY.generators
scoring_entry = SCORING_STUDY.entry


# the study's provenance; simulated gold / writer roles are named as inputs (rules/common.smk)
scoring_provenance = lambda names: with_roles(SCORING_STUDY.provenance(names), SIMULATED_ROLES, "scoring",
                                              SCORING_JUDGES)


SCORING_ITEMS = [f"results/scoring/items/{d}.parquet" for d in SCORING_SETS]
SCORING_RESPONSES = "results/scoring/generation/responses.parquet"
# every rule that reads items also reads the synthesised responses, when a set has them
SCORING_ITEM_INPUTS = {"item_tables": SCORING_ITEMS, **({"responses": SCORING_RESPONSES} if SCORING_SYNTH else {})}
SCORING_SCORES = [f"results/scoring/scores/{j}.parquet" for j in SCORING_JUDGES]
SCORING_GOLD = "results/scoring/gold.parquet"
SCORING_GEN_CALLS = ["results/scoring/generation/references_calls.parquet"] + (
    ["results/scoring/generation/responses_calls.parquet"] if SCORING_SYNTH else []
)
VERDICT_TABLES.extend([*SCORING_SCORES, SCORING_GOLD, *SCORING_GEN_CALLS,
                       *[f"results/scoring/gold_candidates/{j}.parquet" for j in SCORING_STUDY.gold_candidates]])

SCORING_FIGURES = ["results/scoring/figures/reference_rho.png"] + [
    f"results/scoring/figures/score_distributions/{d}.png" for d in SCORING_SETS
]
STUDY_OUTPUTS["scoring"] = [
    "results/scoring/table2.csv",
    "results/scoring/table3.csv",
    "results/scoring/table3_wide.csv",
    "results/scoring/reference_coverage.csv",
    "results/scoring/fluctuation.csv",
    "results/scoring/distributions.csv",
    "results/scoring/aggregation.csv",
    "results/scoring/stability.csv",
    "results/scoring/generation_summary.csv",
    *SCORING_FIGURES,
]
_GEN_PARAMS = dict(
    generation=SCORING["generation"],
    perturbations=SCORING["perturbations"],
    dataset_perturbations=SCORING_STUDY.dataset_perturbations,
    models=[scoring_entry(n) for n in _GEN],
    seed=config["seed"],
    cache=CACHE,
    max_error_rate=config["max_error_rate"],
    provenance=scoring_provenance(_GEN),
)


rule scoring_items:
    """Load a data set into scoring items (the parts of the Prometheus prompt and every
    gold score it has) and flag the seeded sample the judges score."""
    output:
        "results/scoring/items/{dataset}.parquet",
    wildcard_constraints:
        dataset=name_regex(SCORING_SETS),
    params:
        spec=lambda w: SCORING["datasets"][w.dataset],
        seed=config["seed"],
        provenance=scoring_provenance([]),
    log:
        "results/logs/scoring_items/{dataset}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/scoring_items.py"


rule scoring_responses:
    """Write the responses to grade where a set has none (the FLASK hard subset): one per
    sampled rubric group, at a seeded target level, by the generation-review pipeline."""
    input:
        item_tables=[f"results/scoring/items/{d}.parquet" for d in SCORING_SYNTH],
        roles=needs_roles(["scoring.generation.models"]),
        api_keys=needs_keys([SCORING_STUDY.entry(n) for n in _GEN]),
    output:
        results=SCORING_RESPONSES,
        calls="results/scoring/generation/responses_calls.parquet",
    params:
        purpose="response",
        **_GEN_PARAMS,
    resources:
        **job_resources([SCORING_STUDY.entry(n) for n in _GEN]),
    log:
        "results/logs/scoring_responses.log",
    conda:
        env_for([SCORING_STUDY.entry(n) for n in _GEN])
    script:
        "../workflow_scripts/scoring_generate.py"


rule scoring_references:
    """Write reference answers at scores 1-4 for every sampled rubric group by the
    generation-review pipeline (Fig. 4): a generator writes to the score description, a
    reviewer checks the match, roles alternating; the score-5 reference comes with the data."""
    input:
        **SCORING_ITEM_INPUTS,
        roles=needs_roles(["scoring.generation.models"]),
        api_keys=needs_keys([SCORING_STUDY.entry(n) for n in _GEN]),
    output:
        results="results/scoring/generation/references.parquet",
        calls="results/scoring/generation/references_calls.parquet",
    params:
        purpose="reference",
        **_GEN_PARAMS,
    resources:
        **job_resources([SCORING_STUDY.entry(n) for n in _GEN]),
    log:
        "results/logs/scoring_references.log",
    conda:
        env_for([SCORING_STUDY.entry(n) for n in _GEN])
    script:
        "../workflow_scripts/scoring_generate.py"


rule scoring_gold:
    """Gold scores (paper 004): the gold judge scores every sampled item three times with
    the score-5 reference; the gold is their majority."""
    input:
        **SCORING_ITEM_INPUTS,
        roles=needs_roles(["scoring.gold.judge"]),
        api_keys=needs_keys([SCORING_STUDY.entry(_GOLD)]),
    output:
        SCORING_GOLD,
    params:
        judge=scoring_entry(_GOLD),
        variants=["gold"],
        repeats=SCORING["gold"]["repeats"],
        temperature=SCORING["gold"]["temperature"],
        seed=config["seed"],
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        on_reject=SCORING["generation"]["on_reject"],
        provenance=scoring_provenance([_GOLD]),
    resources:
        **job_resources([SCORING_STUDY.entry(_GOLD)]),
    log:
        "results/logs/scoring_gold.log",
    conda:
        env_for([SCORING_STUDY.entry(_GOLD)])
    script:
        "../workflow_scripts/scoring_query.py"


_GOLD_CANDIDATES = SCORING_STUDY.gold_candidates


rule scoring_gold_candidate:
    """Table 2 (paper 004): a further gold candidate scores every sampled item with the gold
    protocol (three scorings with the score-5 reference), to be compared with human scores."""
    input:
        **SCORING_ITEM_INPUTS,
        roles=needs_roles(["scoring.gold.candidates"], judge=lambda w: w.judge),
        api_keys=needs_keys(lambda w: [SCORING_STUDY.entry(w.judge)]),
    output:
        "results/scoring/gold_candidates/{judge}.parquet",
    wildcard_constraints:
        judge=name_regex(_GOLD_CANDIDATES),
    params:
        judge=lambda w: scoring_entry(w.judge),
        variants=["gold"],
        repeats=SCORING["gold"]["repeats"],
        temperature=SCORING["gold"]["temperature"],
        seed=config["seed"],
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        on_reject=SCORING["generation"]["on_reject"],
        provenance=lambda w: scoring_provenance([w.judge]),
    resources:
        **job_resources(lambda w: [SCORING_STUDY.entry(w.judge)]),
    log:
        "results/logs/scoring_gold_candidate/{judge}.log",
    conda:
        env_for(lambda w: [SCORING_STUDY.entry(w.judge)])
    script:
        "../workflow_scripts/scoring_query.py"


rule scoring_table2:
    """Table 2 (paper 004): each gold candidate's gold protocol and the recorded GPT-4 scores
    against the human scores (Spearman's rho, Pearson's r, bootstrap CIs)."""
    input:
        **SCORING_ITEM_INPUTS,
        gold=SCORING_GOLD,
        candidates=[f"results/scoring/gold_candidates/{j}.parquet" for j in _GOLD_CANDIDATES],
    output:
        report("results/scoring/table2.csv", caption="../report/scoring_table2.rst", category="Scoring bias"),
    params:
        against=SCORING["gold"]["table2_against"],
        absent=SCORING_STUDY.absent,
        candidates=[_GOLD, *_GOLD_CANDIDATES],
        metrics=SCORING["metrics"],
        seed=config["seed"],
        provenance=scoring_provenance([_GOLD, *_GOLD_CANDIDATES]),
    log:
        "results/logs/scoring_table2.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/scoring_table2.py"


_SCORING_QUERY = dict(
    input={**SCORING_ITEM_INPUTS, "references": "results/scoring/generation/references.parquet"},
    params=dict(
        judge=lambda w: scoring_entry(w.judge),
        variants=SCORING["perturbations"],
        dataset_perturbations=SCORING_STUDY.dataset_perturbations,
        repeats=1,
        temperature=SCORING["temperature"],
        seed=config["seed"],
        cache=CACHE,
        max_error_rate=config["max_error_rate"],
        on_reject=SCORING["generation"]["on_reject"],
        provenance=lambda w: scoring_provenance([w.judge]),
    ),
)


rule scoring_query:
    """One judge scores every sampled item of every set under every prompt perturbation
    (the Fig. 3 prompt built from parts), at temperature 0, through the call cache."""
    input:
        **_SCORING_QUERY["input"],
        api_keys=needs_keys(lambda w: [SCORING_STUDY.entry(w.judge)]),
    output:
        "results/scoring/scores/{judge}.parquet",
    wildcard_constraints:
        judge=name_regex(SCORING_JUDGES),
    params:
        **_SCORING_QUERY["params"],
    resources:
        **job_resources(lambda w: [SCORING_STUDY.entry(w.judge)]),
    log:
        "results/logs/scoring_query/{judge}.log",
    conda:
        env_for(lambda w: [SCORING_STUDY.entry(w.judge)])
    script:
        "../workflow_scripts/scoring_query.py"


rule scoring_tables:
    """Table 3 (rho and r per judge x perturbation x gold, paired-bootstrap delta rho with
    simultaneous bands), fluctuation, score distributions N_k (Fig. 6 data) and the
    aggregation over prompt variants."""
    input:
        **SCORING_ITEM_INPUTS,
        references="results/scoring/generation/references.parquet",
        gold=SCORING_GOLD,
        scores=SCORING_SCORES,
    output:
        table3=report("results/scoring/table3.csv", caption="../report/scoring_table3.rst", category="Scoring bias"),
        reference_coverage="results/scoring/reference_coverage.csv",
        table3_wide="results/scoring/table3_wide.csv",
        fluctuation=report(
            "results/scoring/fluctuation.csv", caption="../report/scoring_fluctuation.rst", category="Scoring bias"
        ),
        distributions="results/scoring/distributions.csv",
        aggregation=report(
            "results/scoring/aggregation.csv", caption="../report/scoring_aggregation.rst", category="Scoring bias"
        ),
    params:
        metrics=SCORING["metrics"],
        aggregation=SCORING["aggregation"],
        perturbations=SCORING["perturbations"],
        dataset_perturbations=SCORING_STUDY.dataset_perturbations,
        absent=SCORING_STUDY.absent,
        absent_perturbations=SCORING_STUDY.absent_perturbations,
        seed=config["seed"],
        provenance=scoring_provenance([*SCORING_JUDGES, _GOLD]),
    log:
        "results/logs/scoring_tables.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/scoring_tables.py"


rule scoring_stability:
    """Run-to-run stability of repeated scorings: GPT-4's three recorded scorings of every
    Prometheus item (the real-judge baseline) and the gold protocol's three scorings:
    exact agreement, ordinal Krippendorff's alpha (bootstrap CI), score distribution."""
    input:
        item_tables=SCORING_ITEMS,
        gold=SCORING_GOLD,
    output:
        report("results/scoring/stability.csv", caption="../report/scoring_stability.rst", category="Scoring bias"),
    params:
        n_boot=SCORING["stability"]["n_boot"],
        alpha=SCORING["metrics"]["alpha"],
        seed=config["seed"],
        provenance=scoring_provenance([_GOLD]),
    log:
        "results/logs/scoring_stability.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/scoring_stability.py"


rule scoring_generation_summary:
    """Acceptance rates of the generation-review pipeline per data set, purpose and level."""
    input:
        results=["results/scoring/generation/references.parquet"] + ([SCORING_RESPONSES] if SCORING_SYNTH else []),
        calls=SCORING_GEN_CALLS,
    output:
        report(
            "results/scoring/generation_summary.csv",
            caption="../report/scoring_generation.rst",
            category="Scoring bias",
        ),
    params:
        provenance=scoring_provenance(_GEN),
    log:
        "results/logs/scoring_generation_summary.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/scoring_generation_summary.py"


rule scoring_figures:
    """Figure 5 (Spearman's rho against gold with no reference and references scored 1..5)
    and Figure 6 (per data set: heatmaps of the score distribution per judge and
    perturbation, -1 = failed judgment)."""
    input:
        table3="results/scoring/table3.csv",
        distributions="results/scoring/distributions.csv",
    output:
        reference=report(
            "results/scoring/figures/reference_rho.png",
            caption="../report/scoring_reference_rho.rst",
            category="Scoring bias",
        ),
        distributions=[
            report(f, caption="../report/scoring_distributions.rst", category="Scoring bias")
            for f in SCORING_FIGURES[1:]
        ],
    params:
        datasets=SCORING_SETS,
        gold_order=SCORING["figures"]["reference_gold"],
    log:
        "results/logs/scoring_figures.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/scoring_figures.py"


# Paper 004's headline numbers beside this run's (judgelab/reproduction/scoring.py): one row per
# number, its provenance (planted / simulated / replayed / real) and verdict.
from judgelab.reproduction import scoring as _scoring_repro

STUDY_OUTPUTS["scoring"] = [*STUDY_OUTPUTS["scoring"], "results/scoring/reproduction.csv"]


rule scoring_reproduction:
    """reproduction.csv: the paper's values, this run's with intervals, provenance and verdict."""
    input:
        [f"results/scoring/{t}" for t in _scoring_repro.TABLES if f"results/scoring/{t}" in STUDY_OUTPUTS["scoring"]],
    output:
        report(
            "results/scoring/reproduction.csv",
            caption="../report/scoring_reproduction.rst",
            category="Scoring bias",
        ),
    params:
        study="scoring",
        judges={**ALL_JUDGE_ENTRIES, SCORING_STUDY.gold: scoring_entry(SCORING_STUDY.gold)},
        options={"gold_judge": SCORING_STUDY.gold},
        config_hash=CONFIG_HASH,
        seed=config["seed"],
    log:
        "results/logs/scoring_reproduction.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/reproduction.py"
