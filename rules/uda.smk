# Study `uda`: multi-judge Elo and the consensus-trained adaptive Elo adapter (paper 000).
#
# Method.  A tournament is N answer models x P prompts (MT-Bench turn 1 with its human votes,
# Arena-Hard-Auto v0.1, or a simulated tournament with planted model quality).  Every judge
# first answers every prompt itself with the paper's answer prompt, then judges every ordered
# pair of answers (both presentation orders: P N(N-1) judgments) with the paper's A/B/C prompt
# ([[C]] = tie), through the call cache.  Baseline Elo (Eq. 1, K = 32, initial 1200, the 400-point
# logistic scale) runs per judge in a seeded order: prompts shuffled, each prompt's
# presentations arranged in rounds of disjoint pairs (an exact sequential Elo).  Every answer and
# every judge's own answer is embedded once (sentence-transformers; all-MiniLM-L6-v2 from the
# offline package by default).  The adapter -- a 3-layer MLP on Algorithm 1's 6D+9 features,
# built from per-(prompt, model pair) and per-(prompt, model, judge) tables -- outputs an
# instance-level K and soft labels; the Elo update of Algorithm 2 runs differentiably along every
# judge's sequence, all judges batched, and AdamW minimises Eq. (3): each judge's final scores
# pulled toward the consensus G of the baseline scores (squared error, Pearson) and the judges'
# mean pulled to G, with a warm-up/cosine schedule, a seeded validation split of prompts and the
# best checkpoint by validation loss.  The ablated adapter drops every feature of the judge's own
# answer (6D+9 -> 2D+3).  Adapters are applied in-domain and zero-shot to the other tournament
# (`uda.transfer`, the paper's ArenaHard -> transfer-set protocol).  Tables follow the paper:
# inter-judge sample std per model and its reduction (Tables 1-2), mean std and Pearson with the
# reference -- human Bradley-Terry scores of MT-Bench votes with bootstrap CIs, or the planted
# quality -- per judge and for the consensus (Table 3, Fig. 4), alignment with the baseline
# consensus (Table 4), self-preference deviation, and the score matrices (Tables 5-7).

include: "uda_common.smk"


rule uda_human:
    """Human reference of MT-Bench: Bradley-Terry fit of the turn-1 expert votes (ties = half a
    win each way) on the tournament's Elo scale, with percentile-bootstrap 95% CIs over votes."""
    output:
        report("results/uda/human/bradley_terry.csv", caption="../report/uda_human.rst", category="UDA"),
    params:
        votes=UDA["human"]["votes"],
        n_boot=UDA["human"]["bootstrap"],
        elo=UDA["elo"],
        provenance=uda_provenance([]),
    log:
        "results/logs/uda_human.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/uda_human.py"


_UDA_ANSWERS = dict(
    output=dict(jsonl="results/uda/{dataset}/model_answer/{answerer}.jsonl",
                calls="results/uda/{dataset}/model_answer/{answerer}.parquet"),
    log="results/logs/uda_answers/{dataset}/{answerer}.log",
)


rule uda_answers:
    """A generated tournament (a user's prompts): one answerer -- a configured judge -- answers every
    prompt with the paper's answer prompt, through the call cache; model_answer JSONL (MT-Bench's
    layout, each call's status) and the call table."""
    input:
        uda_prompts_file,
        api_keys=needs_keys(lambda w: w.answerer),
    output:
        **_UDA_ANSWERS["output"],
    wildcard_constraints:
        dataset=name_regex(UDA_GENERATED),
        answerer=name_regex(JUDGE_SPECS),
    params:
        q=uda_answers_params,
    resources:
        **job_resources(lambda w: w.answerer),
    log:
        _UDA_ANSWERS["log"],
    conda:
        env_for(lambda w: w.answerer)
    script:
        "../workflow_scripts/uda_answers.py"


rule uda_generation:
    """Calls of a generated tournament's answerers by status, and the prompts it left out because some
    answerer gave no usable answer (empty, refusal, error)."""
    input:
        tournament="results/uda/{dataset}/tournament.parquet",
        calls=lambda w: [f"results/uda/{w.dataset}/model_answer/{m}.parquet" for m in UDA["datasets"][w.dataset]["models"]],
    output:
        "results/uda/{dataset}/tables/generation.csv",
    wildcard_constraints:
        dataset=name_regex(UDA_GENERATED),
    params:
        provenance=lambda w: uda_provenance(list(UDA["datasets"][w.dataset]["models"])),
    log:
        "results/logs/uda_generation/{dataset}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/uda_generation.py"


rule uda_tournament:
    """The tournament table: prompts x answer models, with the latent quality the simulated panel
    reads (planted, human Bradley-Terry, a configured prior, or none); a generated tournament reads
    its prompts and the answerers' model_answer files."""
    input:
        unpack(uda_tournament_inputs),
        roles=needs_roles(lambda w: [f"uda.datasets.{w.dataset}"]),
    output:
        "results/uda/{dataset}/tournament.parquet",
    params:
        name=lambda w: w.dataset,
        spec=lambda w: UDA["datasets"][w.dataset],
        families=uda_answerer_families,
        provenance=uda_provenance([]),
    log:
        "results/logs/uda_tournament/{dataset}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/uda_tournament.py"


_UDA_QUERY = dict(
    input="results/uda/{dataset}/tournament.parquet",
    output=dict(answers="results/uda/{dataset}/answers/{judge}.parquet",
                verdicts="results/uda/{dataset}/verdicts/{judge}.parquet"),
    log="results/logs/uda_query/{dataset}/{judge}.log",
)


rule uda_query:
    """One judge answers every prompt (the paper's answer prompt), then judges every ordered pair of
    answers (the paper's A/B/C prompt), through the call cache."""
    input:
        _UDA_QUERY["input"],
        api_keys=needs_keys(lambda w: w.judge),
    output:
        **_UDA_QUERY["output"],
    wildcard_constraints:
        judge=name_regex(UDA_JUDGES),
    params:
        q=uda_query_params,
    resources:
        **job_resources(lambda w: w.judge),
    log:
        _UDA_QUERY["log"],
    conda:
        env_for(lambda w: w.judge)
    script:
        "../workflow_scripts/uda_query.py"


rule uda_embed:
    """Embed every answer and every judge's own answer once (Algorithm 1's e_i, e_j, e_k)."""
    input:
        tournament="results/uda/{dataset}/tournament.parquet",
        answers=lambda w: [f"results/uda/{w.dataset}/answers/{j}.parquet" for j in UDA_JUDGES],
    output:
        "results/uda/{dataset}/embeddings.parquet",
    params:
        embedding=UDA["embedding"],
        provenance=uda_provenance(UDA_JUDGES),
    threads: 1
    resources:
        **job_resources(model=True),
    log:
        "results/logs/uda_embed/{dataset}.log",
    conda:
        "../envs/train.yaml"
    script:
        "../workflow_scripts/uda_embed.py"


rule uda_train:
    """Train the full and the ablated adapter on one tournament: Eq. (3) through the batched
    differentiable Elo recursion, AdamW, warm-up + cosine schedule, best validation checkpoint."""
    input:
        tournament="results/uda/{dataset}/tournament.parquet",
        verdicts=lambda w: [f"results/uda/{w.dataset}/verdicts/{j}.parquet" for j in UDA_JUDGES],
        embeddings="results/uda/{dataset}/embeddings.parquet",
    output:
        adapters=[f"results/uda/{{dataset}}/adapters/{v}.pt" for v in UDA_VARIANTS],
        history="results/uda/{dataset}/adapters/training.csv",
    wildcard_constraints:
        dataset=name_regex(UDA_TRAINED),
    params:
        variants=UDA_VARIANTS,
        training=UDA["training"],
        elo=UDA["elo"],
        judges=UDA_JUDGES,
        provenance=uda_provenance(UDA_JUDGES),
    threads: 1
    resources:
        **job_resources(model=True),
    log:
        "results/logs/uda_train/{dataset}.log",
    conda:
        "../envs/train.yaml"
    script:
        "../workflow_scripts/uda_train.py"


rule uda_scores:
    """Baseline and UDA Elo scores (final and per-prompt trajectories) of every judge: the in-domain
    adapters and those transferred zero-shot from other tournaments."""
    input:
        tournament="results/uda/{dataset}/tournament.parquet",
        verdicts=lambda w: [f"results/uda/{w.dataset}/verdicts/{j}.parquet" for j in UDA_JUDGES],
        embeddings="results/uda/{dataset}/embeddings.parquet",
        adapters=lambda w: [f"results/uda/{src}/adapters/{v}.pt"
                            for src in ([w.dataset] if w.dataset in UDA_TRAINED else []) + uda_transfers_into(w.dataset)
                            for v in UDA_VARIANTS],
    output:
        scores="results/uda/{dataset}/scores.parquet",
        trajectories="results/uda/{dataset}/trajectories.parquet",
    params:
        elo=UDA["elo"],
        judges=UDA_JUDGES,
        provenance=uda_provenance(UDA_JUDGES),
    threads: 1
    log:
        "results/logs/uda_scores/{dataset}.log",
    conda:
        "../envs/train.yaml"
    script:
        "../workflow_scripts/uda_scores.py"


rule uda_tables:
    """The paper's tables for one tournament (Tables 1-7 layouts, self-preference, call outcomes)."""
    input:
        unpack(lambda w: {
            "tournament": f"results/uda/{w.dataset}/tournament.parquet",
            "scores": f"results/uda/{w.dataset}/scores.parquet",
            "verdicts": [f"results/uda/{w.dataset}/verdicts/{j}.parquet" for j in UDA_JUDGES],
            "answers": [f"results/uda/{w.dataset}/answers/{j}.parquet" for j in UDA_JUDGES],
            "human": uda_human_input(w),
        }),
    output:
        **{t: report(f"results/uda/{{dataset}}/tables/{t}.csv", caption=f"../report/uda_{t}.rst", category="UDA",
                     subcategory="{dataset}") for t in UDA_TABLES},
    params:
        spec=lambda w: UDA["datasets"][w.dataset],
        elo=UDA["elo"],
        judges=UDA_JUDGES,
        provenance=uda_provenance(UDA_JUDGES),
    log:
        "results/logs/uda_tables/{dataset}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/uda_tables.py"


rule uda_figures:
    """Score trajectories baseline vs UDA (Fig. 3), judge x model heatmaps (Fig. 5), per-judge
    Pearson with the reference (Fig. 4) and the training curves, stamped when simulated."""
    input:
        unpack(lambda w: {
            "trajectories": f"results/uda/{w.dataset}/trajectories.parquet",
            "matrix": f"results/uda/{w.dataset}/tables/matrix.csv",
            "reference": f"results/uda/{w.dataset}/tables/reference.csv",
            "methods": f"results/uda/{w.dataset}/tables/methods.csv",
            "history": [f"results/uda/{w.dataset}/adapters/training.csv"] if w.dataset in UDA_TRAINED else [],
        }),
    output:
        **{f: report(f"results/uda/{{dataset}}/figures/{f}.png", caption=f"../report/uda_fig_{f}.rst", category="UDA",
                     subcategory="{dataset}")
           for f in UDA_FIGURES},
    params:
        provenance=uda_provenance(UDA_JUDGES),
    log:
        "results/logs/uda_figures/{dataset}.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/uda_figures.py"


rule uda_summary:
    """One row per tournament and method: mean inter-judge std and its reduction, Pearson with the
    reference (mean over judges and of the consensus), self-preference range, and the held-out raw
    and relative std of every method (UDA and its controls) on the validation prompts."""
    input:
        methods=[f"results/uda/{ds}/tables/methods.csv" for ds in UDA_SETS],
        self_preference=[f"results/uda/{ds}/tables/self_preference.csv" for ds in UDA_SETS],
        controls=[f"results/uda/{ds}/tables/controls.csv" for ds in UDA_SETS],
    output:
        report("results/uda/summary.csv", caption="../report/uda_summary.rst", category="UDA"),
    params:
        datasets=UDA_SETS,
        provenance=uda_provenance(UDA_JUDGES),
    log:
        "results/logs/uda_summary.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/uda_summary.py"


# Paper 000's headline numbers beside this run's (judgelab/reproduction/uda.py): one row per
# number, its provenance (planted / simulated / replayed / real) and verdict.
from judgelab.reproduction import uda as _uda_repro

# the held-out Arena-Hard split the adapter is applied to zero-shot (None: the run has none)
_UDA_HELDOUT = _uda_repro.heldout_split(UDA, UDA_SETS)

STUDY_OUTPUTS["uda"] = [*STUDY_OUTPUTS["uda"], "results/uda/reproduction.csv"]


rule uda_reproduction:
    """reproduction.csv: the paper's values, this run's, provenance and verdict."""
    input:
        [f"results/uda/{t}" for t in [*_uda_repro.TABLES, *_uda_repro.heldout_tables(_UDA_HELDOUT)]
         if f"results/uda/{t}" in STUDY_OUTPUTS["uda"]],
    output:
        report(
            "results/uda/reproduction.csv",
            caption="../report/uda_reproduction.rst",
            category="UDA",
        ),
    params:
        study="uda",
        judges=ALL_JUDGE_ENTRIES,
        options={"heldout": _UDA_HELDOUT},
        config_hash=CONFIG_HASH,
        seed=config["seed"],
    log:
        "results/logs/uda_reproduction.log",
    conda:
        "../envs/core.yaml"
    script:
        "../workflow_scripts/reproduction.py"
