"""Paper 002's grid in the topk study: oracles per judge (Table 1's n) and LLMBar judges (Fig. 6).

``topk.oracles_per_judge`` gives a judge the first n of the ``topk.n_oracles`` pools (the paper
collects 1-10 oracles per judge, fewer for the costly ones); ``topk.llmbar.judges`` names the
judges asked the LLMBar pairs (the paper: GPT-4o-mini).  A name that is no judge, or more pools
than are built, is one config error.
"""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from judgelab.cache import CallCache
from judgelab.config import ConfigError, JudgeSpec, default_config_paths, load_config
from judgelab.topk.experiment import single_threaded_blas
from judgelab.topk.items import PoolDesign, build_items, load_banks
from judgelab.topk.oracle import judge_pools, llmbar_query, pool_oracles, query_judge
from judgelab.topk.plan import plan_topk
from tests.conftest import REPO
from tests.helpers.dag_slices import topk_slice

BANKS = REPO / "data" / "topk" / "statements.json"
DESIGN = PoolDesign(n_items=16, k=4)


def _entry(name: str) -> dict:
    return {"name": name, "backend": "simulated", "model": "sim", "family": "meta",
            "sampling": {"temperature": 0.0, "seed": 3}, "options": {"profile": {"biases": {"verbosity": 0.5}}}}


def _cfg(**extra) -> dict:
    cfg = copy.deepcopy(load_config(*default_config_paths())["topk"])
    cfg.update(extra)
    return cfg


def test_a_judge_gets_the_first_n_pools_and_the_others_all():
    items = build_items(load_banks(BANKS), DESIGN, n_oracles=5, seed=7)
    cfg = {"oracles_per_judge": {"a": 2}}
    assert sorted(judge_pools(items, cfg, "a")["oracle"].unique()) == [0, 1]
    assert sorted(judge_pools(items, cfg, "b")["oracle"].unique()) == [0, 1, 2, 3, 4]
    assert judge_pools(items, {"oracles_per_judge": None}, "a").equals(items)
    assert judge_pools(items, {}, "a").equals(items)


def test_the_oracle_asks_only_the_judges_pools_and_the_evaluation_sees_those(tmp_path):
    items = build_items(load_banks(BANKS), DESIGN, n_oracles=4, seed=7)
    cfg = _cfg(oracles_per_judge={"few": 2})
    with CallCache(tmp_path / "c.sqlite") as cache:
        few, _ = query_judge(_entry("few"), cfg, items, [], cache, None)
        every, _ = query_judge(_entry("every"), cfg, items, [], cache, None)
        asked = {j: sum(1 for _ in cache.iter_calls(judge=j)) for j in ("few", "every")}
    assert asked == {"few": 2 * 16 * 15, "every": 4 * 16 * 15}  # hand count: pools x N(N - 1)
    assert sorted(few["oracle"].unique()) == [0, 1] and len(few) == 2 * 16 * 15
    with single_threaded_blas():
        assert [p.oracle_id for p in pool_oracles(few, items, ["verbosity"], "meta")] == [0, 1]
        assert [p.oracle_id for p in pool_oracles(every, items, ["verbosity"], "meta")] == [0, 1, 2, 3]


def test_llmbar_is_asked_of_the_named_judges_only(tmp_path):
    pairs = pd.DataFrame([{"pair_id": f"p{i}", "prompt": f"Q{i}?", "response_a": f"short {i}",
                           "response_b": f"a much longer answer {i} " * 3, "expected_verdict": "A",
                           "category": "llmbar_natural"} for i in range(5)])
    cfg = _cfg(llmbar={**_cfg()["llmbar"], "judges": ["asked"]})
    with CallCache(tmp_path / "c.sqlite") as cache:
        asked = llmbar_query(_entry("asked"), cfg, pairs, cache, None)
        skipped = llmbar_query(_entry("skipped"), cfg, pairs, cache, None)
        calls = {j: sum(1 for _ in cache.iter_calls(judge=j)) for j in ("asked", "skipped")}
    assert len(asked) == 10 and calls == {"asked": 10, "skipped": 0}  # both orders of 5 pairs
    assert skipped.empty and list(skipped.columns) == list(asked.columns)


def _specs(*names: str) -> dict:
    return {n: JudgeSpec.from_dict(_entry(n), where=n) for n in names}


def test_the_plan_lists_the_llmbar_judges_and_checks_the_names():
    config = {"topk": _cfg(llmbar={**_cfg()["llmbar"], "judges": ["b"]})}
    assert plan_topk(config, _specs("a", "b"), {}).llmbar_judges == ["b"]
    assert plan_topk({"topk": _cfg()}, _specs("a", "b"), {}).llmbar_judges == ["a", "b"]
    with pytest.raises(ConfigError, match=r"topk\.llmbar\.judges: 'c' is not a configured or replayed judge"):
        plan_topk({"topk": _cfg(llmbar={**_cfg()["llmbar"], "judges": ["c"]})}, _specs("a", "b"), {})


@pytest.mark.parametrize(("per_judge", "message"), [
    ({"c": 2}, r"topk\.oracles_per_judge: 'c' is not a configured judge"),
    ({"a": 5}, r"topk\.oracles_per_judge\.a: 5 pools, but topk\.n_oracles builds 4"),
])
def test_a_bad_oracle_count_is_one_config_error(per_judge, message):
    with pytest.raises(ConfigError, match=message):
        plan_topk({"topk": _cfg(n_oracles=4, oracles_per_judge=per_judge)}, _specs("a", "b"), {})
    plan_topk({"topk": _cfg(n_oracles=4, oracles_per_judge={"a": 4})}, _specs("a", "b"), {})


@pytest.mark.slow
def test_the_dag_gives_each_judge_its_pools_and_llmbar_to_the_named_judge(tmp_path_factory, data_root):
    """The workflow passes both settings on: Table 1's n is each judge's pool count, the oracle
    files hold only those pools, and the LLMBar summary has the named judge alone.  The slice
    (``TOPK`` of tests/helpers/dag_slices.py: 3 pools, sim-gpt-4o given 1 and sim-unbiased 2, LLMBar
    asked of sim-gpt-4o) is built once for this test and the figure-stamps test."""
    wd = topk_slice(tmp_path_factory)
    t1 = pd.read_csv(wd / "results" / "topk" / "tables" / "table1_judges.csv").set_index("judge")
    assert t1.loc["sim-gpt-4o", "n_oracles"] == 1 and t1.loc["sim-unbiased", "n_oracles"] == 2
    assert (t1.drop(index=["sim-gpt-4o", "sim-unbiased"])["n_oracles"] == 3).all()
    oracle = pd.read_parquet(wd / "results" / "topk" / "oracle" / "sim-gpt-4o.parquet")
    assert set(oracle["oracle"]) == {0} and len(oracle) == 30 * 29
    summary = pd.read_csv(wd / "results" / "topk" / "llmbar" / "summary.csv")
    assert set(summary["judge"]) == {"sim-gpt-4o"}
