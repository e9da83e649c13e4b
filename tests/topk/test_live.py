"""Ranking a user's own pool live (judgelab.topk.live, judgelab.topk.userpool; issue 12).

* with no true quality anywhere (a judge that reads quality from the texts, as a real model
  would), the loop stops by its posterior rule before the budget, asks fewer calls than the
  full oracle's N(N-1), and returns the judge's hidden top-k;
* with a planted truth in the items file the simulated panel reads it and recall is reported;
* a rerun replays the same queries from the cache (no new call); a USD budget stops spending;
* soft labels come from the A/B logit margin; per-response covariates are averaged over
  prompts; trusted anchors drive the gate; a covariate that tracks the judge's quality is
  warned about;
* bad items files fail with the file, line/row and key named.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.datasets.features import word_count
from judgelab.io import InputError
from judgelab.judges import make_judge
from judgelab.judges.simulated import SimulatedJudge
from judgelab.records import CallStatus, JudgeResponse
from judgelab.topk.experiment import single_threaded_blas
from judgelab.topk.live import CovariateQualityWarning, LiveSettings, rank_live, result_tables
from judgelab.topk.oracle import label_from_response
from judgelab.topk.userpool import load_user_pool
from tests.conftest import REPO

EXAMPLE = REPO / "data" / "topk" / "example_pool.jsonl"
MODELS = REPO / "data" / "topk" / "example_models.jsonl"


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with single_threaded_blas():
        yield


def _entry(name="live-judge", competence=3.0, biases=None, price=None):
    e = {"name": name, "backend": "simulated", "model": "sim", "family": "meta",
         "sampling": {"temperature": 0.0, "seed": 3},
         "options": {"profile": {"competence": competence,
                                 "biases": biases if biases is not None else {"verbosity": 0.5, "position": 0.2}}}}
    if price:
        e["price"] = price
    return e


class TextReadingJudge(SimulatedJudge):
    """A stand-in for a real model: it knows each text's quality (as a model would read it off
    the text) and is never handed a true quality -- it fails if a request carries one."""

    def __init__(self, spec, quality_of_text):
        super().__init__(spec)
        self.quality_of_text = quality_of_text
        self.seen_truth = []

    def answer(self, requests):
        for r in requests:
            self.seen_truth.append(dict(r.truth))
            r.truth = {"quality_a": self.quality_of_text[r.slots["A"]], "quality_b": self.quality_of_text[r.slots["B"]]}
        return super().answer(requests)


def _strip_truth(tmp_path):
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    hidden = {r["text"]: r.pop("true_quality") for r in rows}
    p = tmp_path / "pool.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p, hidden


def test_live_ranking_needs_no_truth_stops_by_its_rule_and_asks_less_than_the_oracle(tmp_path):
    path, hidden = _strip_truth(tmp_path)
    pool = load_user_pool(path, ["length_std"])
    assert pool.truth is None and pool.n_items == 30
    judge = TextReadingJudge(JudgeSpec.from_dict(_entry()), hidden)
    with CallCache(tmp_path / "c.sqlite") as cache:
        res = rank_live(pool, judge, cache, LiveSettings(k=5, budget_calls=800, stop_threshold=0.9))
    assert all(t == {} for t in judge.seen_truth)  # nothing on the path hands a true quality over
    t = result_tables(res, pool_name="mine", judge="live-judge", simulated=True)
    s = t["summary"].iloc[0]
    assert res.stop_reason == "posterior" and s["stopped_by_rule"]
    assert res.calls < 800 and res.calls < s["full_oracle_calls"] == 30 * 29
    assert res.expected_recall >= 0.9 and res.trace["expected_recall"].iloc[-1] >= 0.9
    assert (res.trace["expected_recall"].iloc[:-1] < 0.9).all()  # it stopped at the first round it could
    assert math.isnan(s["recall"]) and "true_quality" not in t["ranking"]
    q = np.array([hidden[pool.items[i].responses[pool.prompts[0]]] for i in range(30)])
    top = set(t["ranking"].loc[t["ranking"]["in_top_k"], "id"])
    truly = {pool.ids[i] for i in np.flatnonzero(q == q.max())}
    assert len(top & truly) >= 4  # the judge's hidden top-5 (recall >= 0.8)
    # the queries: no pair in one order twice, random presentation order, ids and prompts recorded
    qs = t["queries"]
    assert len(qs) == res.calls and not qs.duplicated(["first_id", "second_id", "prompt"]).any()
    assert 0.3 < (qs["first_item"] < qs["second_item"]).mean() < 0.7


def test_planted_truth_is_read_by_the_panel_and_recall_is_reported(tmp_path):
    pool = load_user_pool(EXAMPLE, ["length_std"])
    judge = make_judge(JudgeSpec.from_dict(_entry()))
    with CallCache(tmp_path / "c.sqlite") as cache:
        res = rank_live(pool, judge, cache, LiveSettings(k=5, budget_calls=800, stop_threshold=0.9))
        s = result_tables(res, pool_name="example", judge="live-judge", simulated=True)["summary"].iloc[0]
        assert res.stop_reason == "posterior" and res.calls < 870
        assert s["recall"] >= 0.8 and np.isfinite(s["recall_naive"])
        assert s["c_length_std"] > 0 and s["c_length_std_ci_low"] > 0  # the planted verbosity preference
        # a rerun replays the same queries from the cache: no new call, same answer
        again = rank_live(pool, judge, cache, LiveSettings(k=5, budget_calls=800, stop_threshold=0.9))
    assert again.queries["cached"].all() and len(again.queries) == len(res.queries)
    pd.testing.assert_frame_equal(again.queries.drop(columns="cached"), res.queries.drop(columns="cached"))


def test_usd_budget_stops_spending(tmp_path):
    pool = load_user_pool(EXAMPLE, ["length_std"])
    judge = make_judge(JudgeSpec.from_dict(_entry(price={"input_per_1k": 0.01, "output_per_1k": 0.03})))
    with CallCache(tmp_path / "c.sqlite") as cache:
        res = rank_live(pool, judge, cache, LiveSettings(k=5, budget_calls=None, budget_usd=0.2, stop_threshold=0.99))
    per_call = res.queries["cost_usd"].mean()
    assert per_call > 0 and res.stop_reason == "budget_usd"
    assert 0.2 <= res.spent_usd <= 0.2 + 2 * per_call  # the batch is shrunk to what the budget allows
    assert res.calls == pytest.approx(0.2 / per_call, abs=3)


def _resp(value, status="ok", logprobs=None):
    return JudgeResponse(key="k", judge="j", backend="b", model="m", kind="pairwise", raw_text=str(value),
                         value=value, status=CallStatus(status), logprobs=logprobs)


def test_soft_labels_from_the_logit_margin():
    lp = {"A": math.log(0.7), "B": math.log(0.2)}  # renormalised over A/B: 0.7 / 0.9
    assert label_from_response(_resp("A", logprobs=lp), soft=True) == pytest.approx(0.7 / 0.9)
    assert label_from_response(_resp("B", logprobs={"A": -3.0, "B": -0.1}), soft=True) == pytest.approx(
        1 / (1 + math.exp(2.9)))
    assert label_from_response(_resp("A", logprobs=lp), soft=False) == 1.0
    assert label_from_response(_resp("B"), soft=True) == 0.0  # generation verdict: no margin to keep
    assert math.isnan(label_from_response(_resp("tie"), soft=True))
    assert math.isnan(label_from_response(_resp(None, status="unparsed"), soft=True))
    assert math.isnan(label_from_response(_resp(None, status="error"), soft=True))


def test_models_across_prompts_aggregate_covariates_and_use_anchors(tmp_path):
    pool = load_user_pool(MODELS, ["length_std", "log2_length"])
    assert pool.shape == "models" and len(pool.prompts) == 5 and pool.n_items == 8
    words = np.array([np.mean([word_count(t) for t in it.responses.values()]) for it in pool.items])
    np.testing.assert_allclose(pool.X[:, 0], (words - words.mean()) / words.std())
    logs = np.array([np.mean([math.log2(word_count(t) + 1) for t in it.responses.values()]) for it in pool.items])
    np.testing.assert_allclose(pool.X[:, 1], logs)
    judge = make_judge(JudgeSpec.from_dict(_entry()))
    with CallCache(tmp_path / "c.sqlite") as cache:
        res = rank_live(pool, judge, cache, LiveSettings(k=3, budget_calls=400, stop_threshold=0.9))
    t = result_tables(res, pool_name="models", judge="live-judge", simulated=True)
    s = t["summary"].iloc[0]
    assert s["full_oracle_calls"] == 8 * 7 * 5 and res.calls < s["full_oracle_calls"]
    # one pair is asked on several prompts (and never twice on one prompt in one order)
    qs = t["queries"]
    pairs = qs.assign(a=qs[["first_id", "second_id"]].min(axis=1), b=qs[["first_id", "second_id"]].max(axis=1))
    assert pairs.groupby(["a", "b"])["prompt"].nunique().max() > 1
    assert not qs.duplicated(["first_id", "second_id", "prompt"]).any()
    # 4 anchored models with distinct scores: 6 labelled pairs for the gate
    assert s["gate_n_anchor_pairs"] == 6 and np.isfinite(s["gate_agree_aware"])
    assert s["gate_enabled"] == (s["gate_agree_aware"] >= s["gate_agree_naive"])
    assert np.isfinite(s["recall"])


def test_a_covariate_that_tracks_quality_is_warned_about(tmp_path):
    # a pool where the longer answer really is the better one (a legitimate covariate)
    rows = []
    for i in range(12):
        text = " ".join(["The answer covers one more correct point."] * (i + 1))
        rows.append({"id": f"a{i}", "question": "Explain.", "text": text, "true_quality": 0.4 * i})
    p = tmp_path / "legit.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pool = load_user_pool(p, ["length_std"])
    judge = make_judge(JudgeSpec.from_dict(_entry(biases={})))
    with CallCache(tmp_path / "c.sqlite") as cache, warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = rank_live(pool, judge, cache, LiveSettings(k=3, budget_calls=200, stop_threshold=0.95))
    assert res.correlations["length_std"] > 0.8
    assert any(issubclass(x.category, CovariateQualityWarning) and "'length_std'" in str(x.message) for x in w)
    s = result_tables(res, pool_name="legit", judge="j", simulated=True)["summary"].iloc[0]
    assert "Assumption 1" in s["warnings"]


def _write(tmp_path, lines, name="items.jsonl"):
    p = tmp_path / name
    p.write_text("".join((json.dumps(x) if not isinstance(x, str) else x) + "\n" for x in lines))
    return p


def test_bad_items_files_name_file_line_and_key(tmp_path):
    ok = {"id": "a", "question": "Q?", "text": "x"}
    cases = [
        ([ok, {"question": "Q?", "text": "y"}], r"items.jsonl:2: missing 'id'"),
        ([ok, {"id": "b", "question": "Q?", "text": "y"}, {"id": "a", "question": "Q?", "text": "z"}],
         r"items.jsonl:3: duplicate id 'a' \(first at .*items.jsonl:1\)"),
        ([ok, {"id": "b", "question": "Q?", "txt": "y"}], r"items.jsonl:2: unknown key\(s\) \['txt'\]"),
        ([ok, {"id": "b", "question": "Q?", "text": "y", "responses": [{"prompt": "p", "text": "t"}]}],
         r"items.jsonl:2 \(id 'b'\): give exactly one of 'text'"),
        ([ok, {"id": "b", "question": "Q?", "text": "y", "covariates": {"len": "long"}}],
         r"items.jsonl:2 \(id 'b'\) covariates.len: must be a finite number"),
        ([{**ok, "true_quality": 1.0}, {"id": "b", "question": "Q?", "text": "y"},
          {"id": "c", "question": "Q?", "text": "z", "true_quality": 0.0}],
         r"'true_quality' is given for some items but not for 'b'"),
        ([ok, {"id": "b", "question": "Q?", "text": "y"}, "{not json"], r"items.jsonl:3: not valid JSON"),
        ([ok, {"id": "b", "question": "Other?", "text": "y"}, {"id": "c", "question": "Q?", "text": "z"}],
         r"do not all share prompts: \['b'\]"),
        ([{"id": "a", "text": "x"}], r"items.jsonl:1 \(id 'a'\): no 'question'"),
    ]
    for lines, pattern in cases:
        with pytest.raises(InputError, match=pattern):
            load_user_pool(_write(tmp_path, lines), [])
    good = _write(tmp_path, [ok, {"id": "b", "question": "Q?", "text": "y y"}, {"id": "c", "question": "Q?", "text": "z"}])
    with pytest.raises(InputError, match=r"item 'a' has no covariate 'helpfulness'"):
        load_user_pool(good, ["helpfulness"])
    csv = tmp_path / "items.csv"
    csv.write_text("id,question,text,cov_len\na,Q?,x,1\nb,Q?,y,2\nc,Q?,z,oops\n")
    with pytest.raises(InputError, match=r"items.csv row 4 \(id 'c'\) covariates.len: must be a finite number"):
        load_user_pool(csv, ["len"])
    csv.write_text("id,question,text,cov_len\na,Q?,x,1\nb,Q?,y,2\nc,Q?,z,4\n")
    np.testing.assert_allclose(load_user_pool(csv, ["len"]).X[:, 0], [1, 2, 4])


@pytest.mark.slow
def test_readme_command_plans_the_live_ranking_with_an_api_judge(tmp_path, data_root):
    """README "On your own data (topk)": the API judge set plus config/topk-own-data.yaml plans
    topk_rank for both shipped pools (a dry run: no key, no call)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    wd = tmp_path / "wf"
    wd.mkdir()
    for part in ["rules", "config", "workflow_scripts", "report", "envs", "judgelab", "data", "pyproject.toml",
                 "Snakefile"]:
        src = REPO / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, wd / part)
    exe = Path(sys.executable).with_name("snakemake")
    targets = ["results/topk/rank/example/gpt-4o-mini/summary.csv", "results/topk/rank/models/gpt-4o-mini/summary.csv"]
    proc = subprocess.run([str(exe) if exe.exists() else "snakemake", "-n", "--cores", "2", "--configfile",
                           "config/judges/api.yaml", "config/topk-own-data.yaml", "--", *targets],
                          cwd=wd, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "topk_rank        2" in out or out.count("rule topk_rank:") == 2, out[-2000:]
