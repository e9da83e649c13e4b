"""Study uda on a user's own prompts: the generation step and the per-judge own-model map (issue 12).

In paper 000 the judges are the answer models.  A generated tournament has every answerer -- a
configured judge -- answer the prompts of a file (the paper's answer prompt, through the call
cache), and the tournament reads those answers.  Checked: each answerer answers each prompt once,
and a judge that is also an answerer gets its own answer from the cache (the same text, no new
call); empty answers are counted and the prompt leaves the tournament; two judges of one family
map to their own models through ``judge_models``, the family map is only a configured fallback;
bad prompt files name file and line.
"""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest

from judgelab.cache import CallCache
from judgelab.config import ConfigError, JudgeSpec
from judgelab.io import InputError, write_jsonl
from judgelab.judges import make_judge
from judgelab.uda.tournament import (
    build_tournament,
    generate_answers,
    generation_summary,
    judge_tournament,
    load_prompts,
    model_answer_rows,
    own_model_of,
)
from tests.conftest import REPO

PROMPTS = REPO / "data" / "uda" / "own_prompts.jsonl"
PANEL = {"ans-openai-a": "openai", "ans-openai-b": "openai", "ans-meta": "meta"}


def spec_of(name: str, fam: str, n: int) -> JudgeSpec:
    return JudgeSpec.from_dict({"name": name, "backend": "simulated", "model": f"sim/{name}", "family": fam,
                                "sampling": {"temperature": 0.0, "seed": n},
                                "options": {"profile": {"competence": 1.0, "biases": {"self_preference": 0.5}}}})


def generated_spec(tmp_path, **extra):
    return {"loader": "generated", "prompts": str(PROMPTS), "models": list(PANEL),
            "answers_dir": str(tmp_path / "model_answer"), "families": dict(PANEL), **extra}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gen")
    prompts = load_prompts(PROMPTS)
    cache_path = tmp / "calls.sqlite"
    frames = []
    with CallCache(cache_path) as cache:
        for n, (name, fam) in enumerate(PANEL.items()):
            g = generate_answers(make_judge(spec_of(name, fam, n)), prompts, cache, dataset="own")
            write_jsonl(tmp / "model_answer" / f"{name}.jsonl", model_answer_rows(g))
            frames.append(g)
    return {"tmp": tmp, "prompts": prompts, "calls": pd.concat(frames, ignore_index=True), "cache": cache_path}


def test_every_answerer_answers_every_prompt_once_and_the_tournament_reads_them(generated):
    tmp, prompts, calls = generated["tmp"], generated["prompts"], generated["calls"]
    assert len(prompts) == 8 and calls.groupby("answerer")["prompt_id"].nunique().eq(8).all()
    assert calls["status"].eq("ok").all() and (calls["judge"] == calls["answerer"]).all()
    spec = generated_spec(tmp)
    tab = build_tournament("own", spec, seed=0)
    assert len(tab) == 8 * 3 and set(tab["model"]) == set(PANEL)
    assert tab.drop_duplicates("model").set_index("model")["family"].to_dict() == PANEL
    assert tab["model_quality"].isna().all()  # no ground truth where none exists
    row = calls[(calls["answerer"] == "ans-meta") & (calls["prompt_id"] == "own-03")]["answer"].item()
    assert tab[(tab["model"] == "ans-meta") & (tab["prompt_id"] == "own-03")]["answer"].item() == row
    # a judge that answered: its own answer is its tournament answer, from the cache (no new call)
    with CallCache(generated["cache"]) as cache:
        judge = make_judge(spec_of("ans-openai-b", "openai", 1))
        own = own_model_of("ans-openai-b", "openai", spec, tab)
        answers, verdicts = judge_tournament(judge, tab, cache, own_model=own, label="own:b")
    assert own == "ans-openai-b"
    mine = tab[tab["model"] == "ans-openai-b"].set_index("prompt_id")["answer"]
    assert answers.set_index("prompt_id")["answer"].to_dict() == mine.to_dict()
    assert len(verdicts) == 8 * 3 * 2
    with sqlite3.connect(generated["cache"]) as c:
        asked = c.execute("SELECT requested, new_calls FROM runs WHERE label = 'own:b:answers'").fetchone()
    assert asked == (8, 0)


def test_empty_answers_are_counted_and_leave_the_tournament(generated):
    tmp = generated["tmp"]
    calls = generated["calls"].copy()
    bad = (calls["answerer"] == "ans-meta") & (calls["prompt_id"] == "own-05")
    calls.loc[bad, ["answer", "status"]] = ["", "unparsed"]
    write_jsonl(tmp / "broken" / "ans-meta.jsonl", model_answer_rows(calls[calls["answerer"] == "ans-meta"]))
    for name in ("ans-openai-a", "ans-openai-b"):
        (tmp / "broken" / f"{name}.jsonl").write_text((tmp / "model_answer" / f"{name}.jsonl").read_text())
    tab = build_tournament("own", generated_spec(tmp, answers_dir=str(tmp / "broken")), seed=0)
    assert tab["prompt_id"].nunique() == 7 and "own-05" not in set(tab["prompt_id"])
    summary = generation_summary(calls, tab).set_index("answerer")
    assert summary.loc["ans-meta", "n_unparsed"] == 1 and summary.loc["ans-meta", "n_ok"] == 7
    assert summary["prompts_left_out"].eq(1).all() and summary["prompts_in_tournament"].eq(7).all()


def test_own_model_map_is_per_judge_and_the_family_map_only_a_configured_fallback(generated):
    tab = build_tournament("own", generated_spec(generated["tmp"]), seed=0)
    spec = generated_spec(generated["tmp"])
    # two judges of one family, each its own model (generated: the answerer itself)
    assert own_model_of("ans-openai-a", "openai", spec, tab) == "ans-openai-a"
    assert own_model_of("ans-openai-b", "openai", spec, tab) == "ans-openai-b"
    # an outside judge of that family has none unless a map says so ...
    assert own_model_of("gpt-judge", "openai", spec, tab) is None
    # ... per judge, or by family where a family map is configured
    per_judge = {**spec, "judge_models": {"gpt-judge": "ans-openai-b", "ans-meta": None}}
    assert own_model_of("gpt-judge", "openai", per_judge, tab) == "ans-openai-b"
    assert own_model_of("ans-meta", "meta", per_judge, tab) is None
    by_family = {**spec, "own_models": {"openai": "ans-openai-a"}}
    assert own_model_of("gpt-judge", "openai", by_family, tab) == "ans-openai-a"
    assert own_model_of("ans-openai-b", "openai", by_family, tab) == "ans-openai-b"  # per judge first
    with pytest.raises(ConfigError, match=r"uda\.datasets\.own\.judge_models\.gpt-judge: 'nope'"):
        own_model_of("gpt-judge", "openai", {**spec, "judge_models": {"gpt-judge": "nope"}}, tab)
    # real tournaments: no family map configured, no own model (the old implicit guess is gone)
    real = pd.DataFrame({"dataset": "r", "model": ["gpt-4", "gpt-3.5-turbo"], "family": ["openai", "openai"]})
    assert own_model_of("j", "openai", {"loader": "mt_bench"}, real) is None


def test_bad_prompt_files_name_file_and_line(tmp_path, generated):
    p = tmp_path / "p.jsonl"
    p.write_text(json.dumps({"question_id": 1, "prompt": "a"}) + "\n" + json.dumps({"prompt": "b"}) + "\n")
    with pytest.raises(InputError, match=r"p\.jsonl:2: missing field 'question_id'"):
        load_prompts(p)
    p.write_text(json.dumps({"question_id": 1, "prompt": "a"}) + "\n" + json.dumps({"question_id": 1, "turns": ["b"]}) + "\n")
    with pytest.raises(InputError, match="duplicate question_id"):
        load_prompts(p)
    with pytest.raises(InputError, match="no answers of 'ans-openai-a'"):
        build_tournament("own", generated_spec(tmp_path), seed=0)
