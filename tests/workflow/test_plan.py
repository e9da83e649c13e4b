"""``judgelab plan``: calls not yet in the cache, tokens and USD, on the simulated set with a
partially warm cache (the count drops for what a run has already asked); the figures of every
shipped paper config against those the stand-in workflow gave (tests/fixtures/plan/README.md);
estimates never above the worst case; every rule that runs a judge or model has a planner."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from judgelab.cache import CallCache
from judgelab.config import ConfigError, JudgeSpec
from judgelab.judges.base import Judge
from judgelab.judges.runner import PLAN_LOG_ENV, run_requests
from judgelab.records import JudgeRequest, Message, OutputKind, RawAnswer, canonical_json, sha256_hex
from judgelab.workflow.calls import PlanCache
from judgelab.workflow.plan import ALL_STUDIES, format_plan, plan, stand_in_config, summarise
from tests.conftest import REPO

PARTS = ("Snakefile", "rules", "config", "workflow_scripts", "report", "envs", "judgelab", "data", "pyproject.toml")
JUDGES = ("sim-gpt-4o", "sim-unbiased")


def test_stand_ins_replace_every_real_entry_and_keep_names_and_prices():
    cfg = {"judges": [{"name": "a", "backend": "openai", "model": "gpt-x", "price": {"input_per_1k": 1.0}},
                      {"name": "s", "backend": "simulated", "model": "sim"}],
           "rbd": {"teacher": {"name": "t", "backend": "vllm", "model": "r1"},
                   "detectors": [{"prompting": "zero_shot", "judge": {"name": "d", "backend": "openai", "model": "m"}},
                                 {"prompting": "rbd", "trained": "run"}]}}
    out, originals = stand_in_config(cfg)
    assert [j["backend"] for j in out["judges"]] == ["simulated", "simulated"]
    assert out["judges"][0]["price"] == {"input_per_1k": 1.0} and out["judges"][0]["name"] == "a"
    assert out["rbd"]["teacher"]["backend"] == "simulated" and out["rbd"]["detectors"][0]["judge"]["backend"] == "simulated"
    assert out["rbd"]["detectors"][1] == {"prompting": "rbd", "trained": "run"}
    assert originals["t"]["backend"] == "vllm" and originals["a"]["model"] == "gpt-x"
    assert cfg["judges"][0]["backend"] == "openai"  # the input is not changed


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    wd = tmp_path / "proj"
    wd.mkdir()
    for part in PARTS:
        if (REPO / part).exists():
            (wd / part).symlink_to(REPO / part)
    rows = [{"pair_id": str(i), "prompt": f"Question {i}: name a prime number.", "response_a": f"{2 + i}",
             "response_b": f"Answer {i}: 2 is prime.", "expected_verdict": "B"} for i in range(6)]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "mine.yaml").write_text(
        "orders:\n  datasets:\n    mine: {loader: pairs, source: " + str(tmp_path / "pairs.jsonl") + "}\n")
    return wd


def _targets() -> list[str]:
    return [f"results/orders/verdicts/mine/{j}.parquet" for j in JUDGES]


@pytest.mark.slow
def test_plan_counts_drop_after_calls_are_cached(project: Path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("JUDGELAB_PROGRESS", "0")
    extra = project.parent / "mine.yaml"
    scratch = project.parent / "scratch"
    cold_all = plan([extra], targets=_targets(), directory=str(project), scratch=str(scratch))
    # one study here: each judge's "(all studies)" row equals its audit row
    totals = cold_all[cold_all["study"] == ALL_STUDIES].set_index("judge").drop(columns="study")
    cold = cold_all[cold_all["study"] != ALL_STUDIES].set_index("judge")
    pd.testing.assert_frame_equal(totals, cold.drop(columns="study"))
    assert set(cold.index) == set(JUDGES)
    for j in JUDGES:  # 6 pairs x 2 orders, none cached yet
        assert (cold.loc[j, "calls"], cold.loc[j, "cached"], cold.loc[j, "to_call"]) == (12, 0, 12)
        assert cold.loc[j, "study"] == "orders" and cold.loc[j, "est_tokens_in"] > 0
        assert cold.loc[j, "max_tokens_out"] == 12 * 1024  # the verdict limit, the worst case
    assert cold.loc["sim-gpt-4o", "est_usd"] > 0 and cold.loc["sim-unbiased", "est_usd"] == 0  # no price
    assert not (project / "results").exists()  # planning ran elsewhere and asked nothing here

    # One judge's calls reach the project's cache, as a run would leave them.  (A simulated
    # judge's stand-in is itself, so the scratch run's answers are that run's answers.)
    with CallCache(scratch / "plan-cache.sqlite") as src, \
            CallCache(project / "results" / "cache" / "calls.sqlite") as dst:
        dst.put_many([(c, src.request(c.key)) for c in src.iter_calls(judge="sim-gpt-4o")])
    warm = plan([extra], targets=_targets(), directory=str(project))
    warm = warm[warm["study"] == "orders"].set_index("judge")
    assert (warm.loc["sim-gpt-4o", "cached"], warm.loc["sim-gpt-4o", "to_call"]) == (12, 0)
    assert warm.loc["sim-gpt-4o", "est_usd"] == 0
    assert (warm.loc["sim-unbiased", "cached"], warm.loc["sim-unbiased", "to_call"]) == (0, 12)
    text = format_plan(warm.reset_index())
    assert "TOTAL" in text and "sim-unbiased" in text


def test_summary_prices_only_the_calls_the_cache_lacks(tmp_path):
    """Unit check of the comparison with the real cache and of the pricing (no workflow run)."""
    from judgelab.cache import CachedCall
    from judgelab.records import JudgeRequest, Message, OutputKind, canonical_json, sha256_hex
    from judgelab.workflow.plan import summarise

    reqs = [JudgeRequest(messages=[Message("user", "x" * 4000 * (i + 1))], kind=OutputKind.PAIRWISE, fmt="json",
                         task="cot" if i else None) for i in range(2)]
    log = tmp_path / "plan.jsonl"
    log.write_text("".join(json.dumps({
        "judge": "j", "rule": "orders_query", "label": "", "payload_sha": sha256_hex(canonical_json(r.payload())),
        "task": r.output_task, "max_tokens_param": None, "chars_in": len(r.prompt_text()), "tokens_out": 100,
    }) + "\n" for r in reqs))
    entry = {"name": "j", "backend": "openai", "model": "m", "output_limits": {"cot": 3000},
             "price": {"input_per_1k": 1.0, "output_per_1k": 10.0}}
    with CallCache(tmp_path / "calls.sqlite") as cache:  # the first request was asked before
        cache.put_many([(CachedCall("k0", "j", "openai", "m", "pairwise", "A", None, 1, 1, 0.0, 0.0, None),
                         reqs[0].payload())])
    row = summarise(log, {"j": entry}, tmp_path / "calls.sqlite").iloc[0]
    assert (row["calls"], row["cached"], row["to_call"]) == (2, 1, 1)
    assert row["est_tokens_in"] == 2000 and row["est_tokens_out"] == 100 and row["max_tokens_out"] == 3000
    assert row["est_usd"] == pytest.approx(2.0 + 1.0) and row["max_usd"] == pytest.approx(2.0 + 30.0)


class _Answering(Judge):
    """Answers every request at once with a 4-token verdict (a stand-in's role in a plan run)."""

    def answer(self, requests):
        return [RawAnswer(text="[[A]]", tokens_in=len(r.prompt_text()) // 4, tokens_out=4) for r in requests]


def _llmbar_requests(ids) -> list[JudgeRequest]:
    return [JudgeRequest(messages=[Message("user", f"LLMBar pair {i}: which output follows the instruction?")],
                         fmt="brackets", meta={"i": i}) for i in ids]


def test_a_call_two_studies_share_counts_under_each_and_once_in_the_total(tmp_path: Path, monkeypatch):
    """Issue #19: the same LLMBar calls asked by audit and by topk were counted under whichever
    study ran first.  Here audit needs pairs 0-9 and topk pairs 4-13 (six shared); the topk job
    runs second, so its six shared calls are stand-in cache hits, yet topk needs them."""
    log = tmp_path / "plan-calls.jsonl"
    monkeypatch.setenv(PLAN_LOG_ENV, str(log))
    judge = _Answering(JudgeSpec.from_dict({"name": "j", "backend": "answeringtest", "model": "m",
                                            "price": {"input_per_1k": 1.0, "output_per_1k": 2.0}}))
    with PlanCache() as cache:
        cache.plan_rule = "orders_query"  # as plan_calls sets it before each job
        run_requests(judge, _llmbar_requests(range(10)) * 2, cache, progress=False)  # each asked twice: one call
        cache.plan_rule = "topk_llmbar_replay"
        run_requests(judge, _llmbar_requests(range(4, 14)), cache, progress=False)
        # the real cache of the project already holds pair 13 (topk only)
        real = tmp_path / "real.sqlite"
        with CallCache(real) as dst:
            k13 = judge.key(_llmbar_requests([13])[0])
            dst.put_many([(c, cache.request(c.key)) for c in cache.iter_calls(judge="j") if c.key == k13])
    originals = {"j": {"name": "j", "backend": "openai", "model": "gpt-x",
                       "price": {"input_per_1k": 1.0, "output_per_1k": 2.0}}}
    plan_table = summarise(log, originals, real)
    table = plan_table.set_index("study")
    assert list(table.index) == ["orders", "topk", ALL_STUDIES]
    assert (table.loc["orders", "calls"], table.loc["orders", "cached"], table.loc["orders", "to_call"]) == (10, 0, 10)
    assert (table.loc["topk", "calls"], table.loc["topk", "cached"], table.loc["topk", "to_call"]) == (10, 1, 9)
    assert (table.loc[ALL_STUDIES, "calls"], table.loc[ALL_STUDIES, "cached"],
            table.loc[ALL_STUDIES, "to_call"]) == (14, 1, 13)  # 10 + 10 - 6 shared
    t_in = sum(len(r.prompt_text()) // 4 for r in _llmbar_requests(range(13)))  # pair 13 is cached
    assert table.loc[ALL_STUDIES, "est_tokens_in"] == t_in
    assert table.loc[ALL_STUDIES, "est_tokens_out"] == 13 * 4  # the stand-in's answer lengths, once per call
    assert table.loc[ALL_STUDIES, "est_usd"] == pytest.approx((t_in + 2 * 13 * 4) / 1000, abs=1e-4)

    text = format_plan(plan_table)
    total = next(line for line in text.splitlines() if line.startswith("TOTAL")).split()
    assert total[3:6] == ["14", "1", "13"]  # the total counts a shared call once (not 20 / 1 / 19)
    assert "counted under each study" in text and "count it once" in text


@pytest.mark.slow
def test_a_one_judge_set_plans_a_target_that_needs_no_role_and_stops_on_one_that_does(project: Path, monkeypatch):
    """Roles are checked per job of the requested targets (issue 19): the stand-in run checks each
    job's roles against the user's real config, not the stand-ins (which are all simulated)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("JUDGELAB_PROGRESS", "0")
    own = project.parent / "own.yaml"
    own.write_text((project.parent / "mine.yaml").read_text() + "judges:\n"
                   "  - {name: mine, backend: openai, model: m, family: openai, options: {api_key_env: MY_KEY}}\n")
    table = plan([own], targets=["results/orders/verdicts/mine/mine.parquet"], directory=str(project))
    row = table[table["study"] == "orders"].set_index("judge").loc["mine"]
    assert (row["calls"], row["to_call"]) == (12, 12)  # planned, with the shipped simulated roles left unused
    scoring = project.parent / "scoring.yaml"  # the user's judge and writers, the shipped (simulated) gold judge
    scoring.write_text("scoring: {judges: [mine], gold: {candidates: []}, generation: {models: [mine, mine]}}\n")
    with pytest.raises(ConfigError) as e:
        plan([REPO / "config/scoring-own-data.yaml", own, scoring], targets=["results/scoring/table3.csv"],
             directory=str(project))
    assert "scoring gold judge 'sim-gpt-4.1' (config key scoring.gold.judge)" in str(e.value)


def _log(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_estimates_never_above_the_worst_case(tmp_path):
    """A stand-in's answer can run longer than the real request allows (issue: 1,278 tokens
    estimated where the stated worst case was 776); the real answer stops at the limit, so
    each call's estimate is capped at its own limit -- and only there."""
    reqs = [JudgeRequest(messages=[Message("user", f"q{i}")], kind=OutputKind.PAIRWISE, fmt="json") for i in range(3)]
    outs = [10, 500, 40]  # the second is longer than its limit of 64
    limits = [None, 64, 64]
    log = _log(tmp_path / "plan.jsonl", [
        {"judge": "j", "rule": "orders_query", "label": "", "payload_sha": sha256_hex(canonical_json(r.payload())),
         "task": r.output_task, "max_tokens_param": m, "chars_in": 400, "tokens_out": o}
        for r, o, m in zip(reqs, outs, limits, strict=True)])
    entry = {"name": "j", "backend": "openai", "model": "m", "output_limits": {"verdict": 100},
             "price": {"input_per_1k": 1.0, "output_per_1k": 10.0}}
    row = summarise(log, {"j": entry}, tmp_path / "none.sqlite").iloc[0]
    assert row["max_tokens_out"] == 100 + 64 + 64
    assert row["est_tokens_out"] == 10 + 64 + 40  # 500 capped at 64; the others as answered
    assert row["est_tokens_out"] <= row["max_tokens_out"] and row["est_usd"] <= row["max_usd"]
    assert row["est_usd"] == pytest.approx(0.3 + (10 + 64 + 40) * 0.01)


def test_payload_messages_are_the_dataclass_fields():
    """The fast message dicts of JudgeRequest.payload equal dataclasses.asdict (cache keys unchanged)."""
    from dataclasses import asdict

    req = JudgeRequest(messages=[Message("system", "be fair"), Message("user", "which? é [[A]]")], fmt="brackets")
    assert req.payload()["messages"] == [asdict(m) for m in req.messages]


def test_every_rule_that_runs_a_judge_or_model_has_a_planner():
    """A rule declaring job_resources (a judge or model run) with no planner would be a silent
    hole in every plan that needs it (the planner also refuses such a DAG at run time)."""
    import re

    from judgelab.workflow.calls import rule_calls

    declared = set()
    for smk in sorted((REPO / "rules").glob("*.smk")):
        for block in re.split(r"\n(?=rule )", smk.read_text()):
            m = re.match(r"rule (\w+):", block)
            if m and "**job_resources(" in block:
                declared.add(m.group(1))
    assert len(declared) > 20
    assert declared - set(rule_calls()) == set()


def test_a_plan_refuses_a_dag_with_an_unplanned_rule(project: Path, monkeypatch):
    import judgelab.workflow.calls

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    extra = project.parent / "mine.yaml"
    real = judgelab.workflow.calls.rule_calls
    monkeypatch.setattr(judgelab.workflow.calls, "rule_calls",
                        lambda: {k: v for k, v in real().items() if not k.startswith("orders_query")})
    with pytest.raises(RuntimeError, match=r"calls of rules? orders_query.*no planner"):
        plan([extra], targets=_targets(), directory=str(project), progress=False)


def test_the_cli_names_an_unplanned_rule_in_one_line(project: Path, monkeypatch, capsys):
    """``judgelab plan`` on a DAG with a judge-calling rule that has no planner: exit 2 and one
    ``judgelab: error:`` line naming the rule (no traceback)."""
    import judgelab.workflow.calls
    from judgelab.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    real = judgelab.workflow.calls.rule_calls
    monkeypatch.setattr(judgelab.workflow.calls, "rule_calls",
                        lambda: {k: v for k, v in real().items() if k != "orders_query"})
    rc = main(["plan", "--quiet", "--directory", str(project), "--configfile", str(project.parent / "mine.yaml"),
               *_targets()])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].startswith("judgelab: error: cannot count the calls of rule orders_query")
    assert "Traceback" not in err[0] and "calls.py" in err[0]


@pytest.mark.slow
def test_planned_calls_are_the_calls_the_workflow_makes(project: Path, monkeypatch, capfd):
    """The plan of a small config, then the real workflow on it: the run's cache holds exactly
    the planned calls (same requests per judge), and the plan said what it was doing on stderr."""
    import subprocess
    import sys

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("JUDGELAB_PROGRESS", "0")
    extra = project.parent / "mine.yaml"
    scratch = project.parent / "scratch"
    table = plan([extra], targets=_targets(), directory=str(project), scratch=str(scratch), progress=True)
    err = capfd.readouterr().err
    assert "judgelab plan: reading the workflow's DAG" in err and "judgelab plan: [1/" in err
    logged = [json.loads(line) for line in (scratch / "plan-calls.jsonl").read_text().splitlines()]
    planned = {(r["judge"], r["payload_sha"]) for r in logged}
    snakemake = Path(sys.executable).with_name("snakemake")
    proc = subprocess.run([str(snakemake), "--cores", "1", "--configfile", str(extra), "--", *_targets()],
                          cwd=project, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with CallCache(project / "results" / "cache" / "calls.sqlite") as cache:
        made = {(c.judge, sha256_hex(canonical_json(cache.request(c.key)))) for j in JUDGES
                for c in cache.iter_calls(judge=j)}
    assert made == planned and len(made) == 24
    after = plan([extra], targets=_targets(), directory=str(project), progress=False)
    after = after[after["study"] == ALL_STUDIES].set_index("judge")
    assert list(after["to_call"]) == [0, 0] and list(after["cached"]) == [12, 12]
    assert len(table) == 4


FIXTURES = REPO / "tests" / "fixtures" / "plan"
PAPER_PLANS = {  # fixture: (config file, targets) -- the commands of tests/fixtures/plan/README.md
    "paper-strategies": ("config/judges/paper-strategies.yaml", ["results/strategies/tables/agreement.csv"]),
    "paper-scoring": ("config/judges/paper-scoring.yaml", ["results/scoring/table3.csv"]),  # + RECORDED_SIZE
    "paper-topk-table4": ("config/judges/paper-topk.yaml", ["results/topk/tables/table4_recall_at_k.csv"]),  # + RECORDED_SIZE
    "paper-uda": ("config/judges/paper-uda.yaml", ["results/uda/summary.csv"]),  # + RECORDED_SIZE
    "paper-rbd": ("config/judges/paper-rbd.yaml", ["results/rbd/loop/table2.csv"]),  # + RECORDED_SIZE
    "default": (None, []),  # the default config, the whole DAG
}
#: config files merged after a paper config to plan it at the size its figures were recorded at (the
#: paper-size count is tests/workflow/test_paper_config_counts.py's)
RECORDED_SIZE = {"paper-rbd": FIXTURES / "paper-rbd.recorded-size.yaml",
                 "paper-scoring": FIXTURES / "paper-scoring.recorded-size.yaml",
                 "paper-topk-table4": FIXTURES / "paper-topk.recorded-size.yaml",
                 "paper-uda": FIXTURES / "paper-uda.recorded-size.yaml"}
#: paper-rbd: the judges whose calls a detector's flags steer (the evaluators' re-prompts in the
#: loop, and the trained detector itself) differ from the recorded figures (README there)
RBD_LOOP_JUDGES = {"gpt-4o", "gpt-4o-mini", "claude-3-5-sonnet", "claude-3-5-haiku", "deepseek-v3", "llama-3.1-8b",
                   "llama-3.1-70b", "llama-3.1-405b", "rbd-tiny"}
FIGURES = ["calls", "cached", "to_call", "est_tokens_in", "est_tokens_out", "max_tokens_out", "est_usd", "max_usd"]


def _table(df: pd.DataFrame) -> pd.DataFrame:
    return df.set_index(["judge", "study"]).sort_index()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PAPER_PLANS))
def test_paper_configs_plan_the_recorded_figures(name: str, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(REPO)
    cfg, targets = PAPER_PLANS[name]
    files = ([REPO / cfg] if cfg else []) + ([RECORDED_SIZE[name]] if name in RECORDED_SIZE else [])
    new = _table(plan(files, targets=targets, directory=str(tmp_path), progress=False))
    old = _table(pd.read_csv(FIXTURES / f"{name}.csv", keep_default_na=False))
    assert list(new.index) == list(old.index)
    same = [k for k in old.index if k[0] not in RBD_LOOP_JUDGES] if name == "paper-rbd" else list(old.index)
    if name == "default":  # rbd-tiny's worst case was the config's 8,192 per call; a run asks it for 32
        tiny = [k for k in old.index if k[0] == "rbd-tiny"]
        assert list(new.loc[tiny, "max_tokens_out"]) == list(new.loc[tiny, "calls"] * 32)
        assert list(old.loc[tiny, "max_tokens_out"]) == list(old.loc[tiny, "calls"] * 8192)
        rest = [f for f in FIGURES if f != "max_tokens_out"]
        pd.testing.assert_frame_equal(new.loc[tiny, rest], old.loc[tiny, rest], check_dtype=False)
        same = [k for k in same if k[0] != "rbd-tiny"]
    assert len(same) >= 4
    pd.testing.assert_frame_equal(new.loc[same, FIGURES], old.loc[same, FIGURES], check_dtype=False)
    for figure in ("est_tokens_out", "est_usd"):
        assert (new[figure] <= new[figure.replace("est_", "max_")]).all()
    if name == "paper-rbd":  # the loop's figures with the stand-in detector, recorded when this changed
        now = _table(pd.read_csv(FIXTURES / "paper-rbd.stand-in-detector.csv", keep_default_na=False))
        pd.testing.assert_frame_equal(new[FIGURES], now[FIGURES], check_dtype=False)
        loop = [k for k in old.index if k[0] in RBD_LOOP_JUDGES - {"rbd-tiny"}]
        assert (new.loc[loop, "calls"] > 0).all()
