"""A scoring set scored under its own perturbations (``scoring.datasets.<set>.perturbations``).

Paper 004 scores rubric order and score IDs on every set (Table 3) but the reference-score
perturbations on FLASK only (Figs. 5-6); ``config/judges/paper-scoring.yaml`` says so per set.  A
set's list restricts the requests its items get, the references written for it and the coverage
table; a list outside ``scoring.perturbations`` or without the baseline is one config error.
"""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from judgelab.config import ConfigError, default_config_paths, load_config, validate_config
from judgelab.scoring.generation import generation_levels
from judgelab.scoring.plan import ScoringStudy
from judgelab.scoring.prompt import get_variant
from judgelab.scoring.query import reference_coverage, score_requests
from tests.scoring.test_scoring import ALL_VARIANTS, references_for, synthetic_items

TABLE3 = ["baseline", "descending", "random", "letter", "roman"]


def _items():
    return synthetic_items(6, dataset="mt", seed=1) + synthetic_items(4, dataset="flask", seed=2)


def test_a_sets_own_list_restricts_its_requests_and_only_its():
    items = _items()
    variants = [get_variant(v) for v in ALL_VARIANTS]
    every = score_requests(items, variants, references=references_for(items))
    own = score_requests(items, variants, references=references_for(items), variants_of={"mt": TABLE3})
    assert len(every) == 10 * len(ALL_VARIANTS)
    assert len(own) == 6 * len(TABLE3) + 4 * len(ALL_VARIANTS)  # hand count: mt 6 x 5, flask 4 x 10
    asked = {(r.meta["dataset"], r.meta["variant"]) for r in own}
    assert {v for d, v in asked if d == "mt"} == set(TABLE3)
    assert {v for d, v in asked if d == "flask"} == set(ALL_VARIANTS)
    # the requests kept are the same requests, not rebuilt differently
    key = lambda r: (r.meta["dataset"], r.meta["item_id"], r.meta["variant"])  # noqa: E731
    by_key = {key(r): r.messages[0].content for r in every}
    assert all(by_key[key(r)] == r.messages[0].content for r in own)


def test_references_are_written_only_for_sets_with_reference_perturbations():
    groups = [("mt", "g1"), ("mt", "g2"), ("flask", "g1")]
    gen = {"reference_levels": [1, 2, 3, 4]}
    levels = generation_levels(groups, "reference", seed=0, generation=gen, perturbations=ALL_VARIANTS,
                               dataset_perturbations={"mt": TABLE3, "flask": ALL_VARIANTS})
    assert levels == {("mt", "g1"): [], ("mt", "g2"): [], ("flask", "g1"): [1, 2, 3, 4]}
    default = generation_levels(groups, "reference", seed=0, generation=gen, perturbations=ALL_VARIANTS)
    assert all(v == [1, 2, 3, 4] for v in default.values())
    partial = generation_levels(groups, "reference", seed=0, generation=gen, perturbations=ALL_VARIANTS,
                                dataset_perturbations={"flask": ["baseline", "ref2"]})
    assert partial[("flask", "g1")] == [2] and partial[("mt", "g1")] == [1, 2, 3, 4]


def test_reference_coverage_lists_only_the_sets_reference_variants():
    items = _items()
    cov = reference_coverage(items, [get_variant(v) for v in ALL_VARIANTS], references_for(items),
                             variants_of={"mt": TABLE3})
    assert set(cov["dataset"]) == {"flask"} and sorted(cov["variant"]) == ["ref1", "ref2", "ref3", "ref4", "ref5"]
    assert (cov["n_items"] == 4).all()


def _config(**per_set):
    cfg = load_config(*default_config_paths())
    cfg = copy.deepcopy(cfg)
    cfg["scoring"]["datasets"] = {
        "mt": {"loader": "prometheus", "source": "prometheus_eval/mt_bench"},
        "flask": {"loader": "flask", "source": "flask/hard", "synthesise_responses": True},
    }
    for name, pert in per_set.items():
        cfg["scoring"]["datasets"][name]["perturbations"] = pert
    return cfg


def _study(cfg):
    entries = {d["name"]: d for d in cfg["judges"]}
    return ScoringStudy(cfg, entries, "h")


def test_the_study_gives_each_set_its_list_or_the_global_one():
    cfg = _config(mt=TABLE3)
    study = _study(cfg)
    assert study.dataset_perturbations == {"mt": TABLE3, "flask": list(cfg["scoring"]["perturbations"])}


@pytest.mark.parametrize(("pert", "message"), [
    (["baseline", "ref9"], r"scoring\.datasets\.mt\.perturbations: 'ref9' not in scoring\.perturbations"),
    (["descending", "letter"], r"scoring\.datasets\.mt\.perturbations: must include 'baseline'"),
])
def test_a_bad_list_is_one_config_error_naming_the_key(pert, message):
    with pytest.raises(ConfigError, match=message):
        _study(_config(mt=pert))


def test_the_schema_knows_the_key():
    cfg = _config(mt=TABLE3)
    validate_config(cfg)
    bad = _config(mt=TABLE3)
    bad["scoring"]["datasets"]["mt"]["perturbation"] = TABLE3  # a typo of the key
    with pytest.raises(ConfigError, match="perturbation"):
        validate_config(bad)



SMALL_PER_SET = """
scoring:
  run_datasets: [rubric_set, flask_hard]
  datasets:
    rubric_set: {loader: rubric_set, source: data/scoring/rubric_set.jsonl,
                 perturbations: [baseline, descending, random, letter, roman]}
    flask_hard: {loader: flask, source: flask/hard, n_items: 12, synthesise_responses: true}
  judges: [sim-unbiased, sim-gemini-2.5-flash]
  metrics: {n_boot: 200}
  stability: {n_boot: 100}
"""
DAG_TARGETS = ["results/scoring/table3.csv", "results/scoring/table3_wide.csv", "results/scoring/fluctuation.csv",
               "results/scoring/reference_coverage.csv", "results/scoring/figures/reference_rho.png"]


@pytest.mark.slow
def test_the_dag_scores_each_set_under_its_own_list(tmp_path, data_root):
    """The workflow scripts pass the lists on: the rubric set (Table 3's five prompts only) gets no
    reference-score requests and no references written, FLASK gets all ten; the tables and Fig. 5
    are built from what was scored."""

    from judgelab.cache import CallCache
    from tests.workflow.test_pipeline import copy_workflow, run_sm

    wd = copy_workflow(tmp_path / "wf")
    (wd / "small.yaml").write_text(SMALL_PER_SET)
    run_sm(wd, *DAG_TARGETS, "--configfile", "small.yaml", "-q")
    res = wd / "results" / "scoring"
    scores = pd.read_parquet(res / "scores" / "sim-unbiased.parquet")
    by_set = scores.groupby("dataset")["variant"].unique().map(set).to_dict()
    assert by_set == {"rubric_set": set(TABLE3), "flask_hard": set(ALL_VARIANTS)}
    refs = pd.read_parquet(res / "generation" / "references.parquet")
    assert set(refs["dataset"]) == {"flask_hard"}
    table3 = pd.read_csv(res / "table3.csv")
    assert set(table3.loc[table3["dataset"] == "rubric_set", "variant"]) == set(TABLE3)
    assert set(table3.loc[table3["dataset"] == "flask_hard", "variant"]) == set(ALL_VARIANTS)
    assert set(pd.read_csv(res / "reference_coverage.csv")["dataset"]) == {"flask_hard"}
    with CallCache(wd / "results" / "cache" / "calls.sqlite") as cache:
        asked = sum(1 for _ in cache.iter_calls(judge="sim-unbiased"))
    assert asked == 40 * len(TABLE3) + 12 * len(ALL_VARIANTS)  # hand count: rubric set 40 x 5, FLASK 12 x 10
