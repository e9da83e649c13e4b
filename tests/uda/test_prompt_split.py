"""The uda study's prompt split (``prompt_split``: an adapter trained on one part, applied zero-shot to
the other) and the paper config that uses it (``config/judges/paper-uda.yaml``: paper 000's ten judges
answer and judge all 500 Arena-Hard prompts, 400 to train on and 100 held out).

Also the shared pair requests of a tournament (:func:`judgelab.uda.tournament.pair_skeletons`): a
judge's requests built from them are the very requests :func:`pair_requests` builds on its own (same
cache keys), which is what lets a plan build a tournament's 45,000 pairs once for ten judges."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab.config import ConfigError, JudgeSpec, default_config_paths, load_config
from judgelab.judges.simulated import SimulatedJudge
from judgelab.records import JudgeRequest
from judgelab.reproduction.uda import PAPER_JUDGES
from judgelab.uda.tournament import load_prompts, pair_requests, pair_skeletons, split_prompts
from tests.conftest import REPO

IDS = [f"q{i:03d}" for i in range(50)]


@pytest.mark.parametrize("share", [0.2, 0.5, 0.01, 0.99])
def test_the_two_parts_are_complementary_and_keep_the_file_order(share: float):
    train = split_prompts(IDS, {"heldout": share, "part": "train"}, seed=3)
    held = split_prompts(IDS, {"heldout": share, "part": "heldout"}, seed=3)
    assert not set(train) & set(held)
    assert sorted(train + held) == IDS
    # at least one prompt on each side, else the share of the prompts, rounded
    assert len(held) == min(max(1, round(share * len(IDS))), len(IDS) - 1)
    assert train == [p for p in IDS if p in set(train)] and held == [p for p in IDS if p in set(held)]


def test_the_split_is_seeded_and_the_default_part_is_train():
    a = split_prompts(IDS, {"heldout": 0.2}, seed=0)
    assert a == split_prompts(IDS, {"heldout": 0.2, "part": "train"}, seed=0)
    assert a == split_prompts(IDS, {"heldout": 0.2}, seed=0)
    assert a != split_prompts(IDS, {"heldout": 0.2}, seed=1)
    assert split_prompts(IDS, None, seed=0) == IDS
    # a random split, not a block: the held-out ten are spread over the file
    held = [IDS.index(p) for p in split_prompts(IDS, {"heldout": 0.2, "part": "heldout"}, seed=0)]
    assert max(held) - min(held) > 10


def test_an_unknown_part_names_the_key():
    with pytest.raises(ConfigError, match=r"prompt_split\.part"):
        split_prompts(IDS, {"heldout": 0.2, "part": "test"}, seed=0)


def test_load_prompts_splits_after_the_subset(tmp_path: Path):
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"question_id": p, "turns": [{"content": f"prompt {p}"}]}) + "\n"
                            for p in IDS), encoding="utf-8")
    subset = list(load_prompts(path, 20, seed=5)["prompt_id"])
    train = list(load_prompts(path, 20, seed=5, split={"heldout": 0.25, "part": "train"})["prompt_id"])
    held = list(load_prompts(path, 20, seed=5, split={"heldout": 0.25, "part": "heldout"})["prompt_id"])
    assert (len(train), len(held)) == (15, 5)
    assert sorted(train + held) == sorted(subset)


def test_the_schema_refuses_a_share_outside_zero_one(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("uda:\n  datasets:\n    own:\n      loader: generated\n      models: [a, b]\n"
                   "      prompt_split: {heldout: 1.0}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="heldout"):
        load_config(*default_config_paths(), bad)


def test_the_paper_config_trains_on_400_arena_hard_prompts_and_holds_out_100(data_root: Path):
    config = load_config(*default_config_paths(), REPO / "config/judges/paper-uda.yaml")
    uda = config["uda"]
    assert [j["name"] for j in config["judges"]] == list(PAPER_JUDGES)
    train, held = uda["datasets"]["arena_hard"], uda["datasets"]["arena_hard_heldout"]
    for spec in (train, held):
        assert spec["loader"] == "generated" and spec["models"] == list(PAPER_JUDGES)
        assert spec["n_prompts"] is None
    assert held["train"] is False and train.get("train", True) is True
    assert {(t["train"], t["apply"]) for t in uda["transfer"]} == {("arena_hard", "arena_hard_heldout"),
                                                                  ("arena_hard", "mt_bench")}
    assert set(uda["run_datasets"]) == {"arena_hard", "arena_hard_heldout", "mt_bench"}
    path = data_root / train["prompts"]
    a = list(load_prompts(path, None, config["seed"], train["prompt_split"])["prompt_id"])
    b = list(load_prompts(path, None, config["seed"], held["prompt_split"])["prompt_id"])
    assert (len(a), len(b)) == (400, 100) and not set(a) & set(b)
    assert len(set(a) | set(b)) == 500


def _table(n_prompts: int = 3, n_models: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [{"dataset": "t", "prompt_id": f"p{p}", "prompt": f"question {p}?", "category": "c",
             "model": f"m{m}", "family": f"f{m}", "answer": f"answer {p} of m{m} " * (m + 1),
             "model_quality": float(m), "quality": float(m + rng.normal())}
            for p in range(n_prompts) for m in range(n_models)]
    return pd.DataFrame(rows)


def test_requests_built_from_shared_skeletons_are_the_requests_built_alone():
    table = _table()
    own = {"p0": "my own answer", "p2": "another"}
    alone = pair_requests(table, own, "f1")
    skeletons = pair_skeletons(table)
    shared = pair_requests(table, own, "f1", skeletons=skeletons)
    assert len(alone) == len(shared) == 3 * 4 * 3
    judge = SimulatedJudge(JudgeSpec.from_dict({"name": "sim", "backend": "simulated", "model": "s", "family": "f1"}))
    assert judge.reads_truth  # the key covers the truth, so equal keys mean equal own answers too
    assert [judge.key(r) for r in alone] == [judge.key(r) for r in shared]
    assert [r.meta for r in alone] == [r.meta for r in shared]
    assert [r.truth for r in alone] == [r.truth for r in shared]
    # a second judge's requests from the same skeletons carry its own answers, and leave the first's alone
    other = pair_requests(table, {"p0": "someone else's"}, "f2", skeletons=skeletons)
    assert other[0].truth["own_answers"] == {"f2": "someone else's"}
    assert shared[0].truth["own_answers"] == {"f1": "my own answer"}
    assert all("own_answers" not in r.truth for r in skeletons)
    other[0].meta["x"] = 1
    assert "x" not in shared[0].meta and "x" not in skeletons[0].meta


def test_a_judges_requests_copy_every_field_of_the_skeletons():
    """pair_requests copies a skeleton's attributes without its constructor: the copy has every field
    and nothing else, and equals a request built by the constructor."""
    table = _table(2, 3)
    (skeleton, *_), (req, *_) = pair_skeletons(table), pair_requests(table, {"p0": "mine"}, "f0")
    assert set(vars(req)) == {f.name for f in dataclasses.fields(JudgeRequest)}
    assert req == dataclasses.replace(skeleton, truth={**skeleton.truth, "own_answers": {"f0": "mine"}})


def test_the_plan_log_counts_a_prompts_characters_without_joining_it():
    from judgelab.judges.runner import _prompt_chars
    from judgelab.records import Message

    for messages in ([Message("user", "héllo")], [Message("system", "sys"), Message("user", "ab\n\ncd")],
                     [Message("system", ""), Message("user", "x"), Message("assistant", "yz")]):
        req = JudgeRequest(messages=messages)
        assert _prompt_chars(req) == len(req.prompt_text())


def test_every_field_but_truth_and_meta_is_the_skeletons():
    skeletons = [dataclasses.replace(r, params={"temperature": 0.3}, json_mode=True, score_ids="letter", fmt="x")
                 for r in pair_skeletons(_table(2, 3))]
    for base, req in zip(skeletons, pair_requests(_table(2, 3), {}, "f0", skeletons=skeletons), strict=True):
        for f in dataclasses.fields(JudgeRequest):
            if f.name not in ("truth", "meta"):
                assert getattr(req, f.name) == getattr(base, f.name), f.name


class _Ctx:
    """The part of a step context uda_human uses: whether it fits models, and its one table."""

    def __init__(self, loads_models: bool) -> None:
        self.loads_models, self.tables = loads_models, {}

    def write_table(self, df: pd.DataFrame, path: str, *, names_judges: bool = True) -> None:
        self.tables[path] = df


def test_a_plan_takes_the_human_strengths_without_their_bootstrap(data_root: Path):
    """uda_human in a run has bootstrap intervals; in a plan the same strengths, which are all a
    tournament's quality reads, and no intervals."""
    from types import SimpleNamespace

    from judgelab.uda import calls

    job = SimpleNamespace(params=SimpleNamespace(votes="mt_bench/human_judgments_turn1", n_boot=20,
                                                 elo={"k": 32, "initial": 1200, "scale": 400},
                                                 provenance={"seed": 0}), output=["bt.csv"])
    run, planned = _Ctx(True), _Ctx(False)
    calls.human(job, run)
    calls.human(job, planned)
    a, b = run.tables["bt.csv"], planned.tables["bt.csv"]
    pd.testing.assert_frame_equal(a[["model", "theta", "elo"]], b[["model", "theta", "elo"]])
    assert a["elo_ci_low"].notna().all() and (a["elo_ci_low"] < a["elo_ci_high"]).all()
    assert b["elo_ci_low"].isna().all() and b["elo_ci_high"].isna().all()


def test_the_answer_step_asks_only_its_parts_prompts(tmp_path: Path):
    """uda_answers of a split tournament: the answerer answers the prompts of its part, no more."""
    from types import SimpleNamespace

    from judgelab.uda import calls
    from judgelab.uda.tournament import model_answers
    from judgelab.workflow.calls import PlanCache, PlanContext

    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"question_id": p, "prompt": f"prompt {p}"}) + "\n" for p in IDS),
                       encoding="utf-8")
    entry = {"name": "sim", "backend": "simulated", "model": "s", "family": "f"}
    got = {}
    for part in ("train", "heldout"):
        spec = {"loader": "generated", "prompts": str(prompts), "models": ["sim"],
                "prompt_split": {"heldout": 0.3, "part": part}}
        out = SimpleNamespace(jsonl=str(tmp_path / f"{part}.jsonl"), calls=str(tmp_path / f"{part}.parquet"))
        job = SimpleNamespace(params=SimpleNamespace(q={"answerer": entry, "spec": spec, "provenance": {"seed": 4},
                                                        "max_error_rate": 0.0}),
                              wildcards=SimpleNamespace(dataset=part, answerer="sim"), input=[str(prompts)], output=out)
        with PlanCache() as cache:
            ctx = PlanContext(cache)
            calls.answers(job, ctx)
            ctx.close()
        got[part] = set(model_answers(out.jsonl))
    assert got["heldout"] == set(split_prompts(IDS, {"heldout": 0.3, "part": "heldout"}, seed=4))
    assert len(got["heldout"]) == 15 and got["train"] == set(IDS) - got["heldout"]


def test_a_generated_tournament_holds_its_parts_prompts(tmp_path: Path):
    from judgelab.uda.tournament import build_tournament

    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"question_id": p, "prompt": f"prompt {p}"}) + "\n" for p in IDS),
                       encoding="utf-8")
    for m in ("a", "b"):
        (tmp_path / f"{m}.jsonl").write_text("".join(json.dumps(
            {"question_id": p, "model_id": m, "choices": [{"index": 0, "turns": [f"{m} on {p}"]}]}) + "\n"
            for p in IDS), encoding="utf-8")
    parts = {}
    for part in ("train", "heldout"):
        spec = {"loader": "generated", "prompts": str(prompts), "models": ["a", "b"], "answers_dir": str(tmp_path),
                "prompt_split": {"heldout": 0.2, "part": part}}
        parts[part] = set(build_tournament("t", spec, 2)["prompt_id"])
    assert parts["heldout"] == set(split_prompts(IDS, {"heldout": 0.2, "part": "heldout"}, seed=2))
    assert parts["train"] == set(IDS) - parts["heldout"] and len(parts["heldout"]) == 10


def test_a_public_tournament_is_split_too(data_root: Path):
    from judgelab.uda.tournament import build_tournament

    config = load_config(*default_config_paths())
    spec = dict(config["uda"]["datasets"]["mt_bench"], quality={"source": "none"})
    whole = list(dict.fromkeys(build_tournament("mt_bench", spec, 0)["prompt_id"]))
    held = set(build_tournament("mt_bench", {**spec, "prompt_split": {"heldout": 0.25, "part": "heldout"}}, 0)["prompt_id"])
    train = set(build_tournament("mt_bench", {**spec, "prompt_split": {"heldout": 0.25}}, 0)["prompt_id"])
    assert len(whole) == 80 and len(held) == 20 and held | train == set(whole) and not held & train


def test_the_plan_summary_names_each_calls_study_by_its_rule(tmp_path: Path):
    """summarise: a call's study is its rule's prefix; a call logged outside any rule is its own study."""
    from judgelab.workflow.plan import ALL_STUDIES, summarise

    lines = [{"judge": "j", "rule": rule, "label": "", "payload_sha": sha, "task": "verdict", "max_tokens_param": None,
              "chars_in": 400, "tokens_out": 10, "new": True}
             for rule, sha in (("uda_query", "a"), ("uda_answers", "b"), ("", "c"), ("rbd_loop", "a"))]
    log = tmp_path / "plan-calls.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    table = summarise(log, {"j": {"name": "j", "backend": "simulated", "model": "m"}}, tmp_path / "none.sqlite")
    calls = table.set_index("study")["calls"].to_dict()
    assert calls == {"(outside a rule)": 1, "rbd": 1, "uda": 2, ALL_STUDIES: 3}


def test_a_judges_remembered_identity_json_follows_its_identity():
    """Judge.key remembers its identity's JSON; a changed identity -- even 1 to 1.0 to True, which
    compare equal -- is a new key, each the key of the identity made afresh."""
    from judgelab.records import Message

    judge = SimulatedJudge(JudgeSpec.from_dict({"name": "sim", "backend": "simulated", "model": "s", "family": "f",
                                                "sampling": {"seed": 1}}))
    req = JudgeRequest(messages=[Message("user", "q")])
    keys = []
    for seed in (1, 1.0, True, 1):
        judge.spec.sampling["seed"] = seed
        keys.append(judge.key(req))
        assert keys[-1] == req.key(judge.identity(), include_truth=True)
    assert len(set(keys[:3])) == 3 and keys[3] == keys[0]
