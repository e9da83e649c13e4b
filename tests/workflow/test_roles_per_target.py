"""Auxiliary roles are resolved per requested target (issue 19, item 3).

A user's own judge set replaces the shipped judges, but the other studies keep their shipped
simulated auxiliary roles (scoring gold judge, rbd writers and detectors, strategies generators).
The workflow checks a role only for the jobs that use it (``needs_roles`` in
``rules/common.smk``), so each study's own-data target plans with the user's set and no
``allow_simulated_roles``; a target whose jobs do need a simulated (or unconfigured) role still
stops, naming the rule, the role and its config key.

The unit tests (fast, the mutation map's) pin :func:`judgelab.workflow.roles.check_roles`'s selection
and the real-run rule; the DAG tests build the job graph in-process (a dry run: nothing runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from judgelab.config import ConfigError, load_yaml
from judgelab.workflow.roles import (
    auxiliary_roles,
    check_roles,
    is_real_run,
    role_entries,
    simulated_inputs,
    usable_simulated_roles,
    with_roles,
)
from tests.conftest import REPO
from tests.workflow.test_no_silent_simulation import _config, _job_simulated, _workdir

MINE = {"name": "mine", "backend": "openai", "model": "m", "family": "openai", "options": {"api_key_env": "MY_KEY"}}
YOURS = {"name": "yours", "backend": "openai", "model": "y", "family": "other", "options": {"api_key_env": "MY_KEY"}}
SIM = {"name": "sim-x", "backend": "simulated", "model": "simulated/x", "family": "openai"}


# -- selection of the roles a job needs ---------------------------------------------------------
def test_only_the_selected_roles_are_checked():
    cfg = _config({"judges": [MINE]})
    assert check_roles(cfg, ["topk"]) == []  # topk fills no auxiliary role: nothing to stop
    assert check_roles(cfg, []) == []
    with pytest.raises(ConfigError) as e:
        check_roles(cfg, ["scoring.gold.judge"])
    msg = str(e.value)
    assert "1 auxiliary role(s)" in msg and "scoring gold judge 'sim-gpt-4.1' (config key scoring.gold.judge)" in msg
    assert "rbd" not in msg and "scoring.generation" not in msg
    with pytest.raises(ConfigError) as e:
        check_roles(cfg)  # no selection: every role of the config (the check-config command)
    assert "scoring.gold.judge" in str(e.value) and "rbd.teacher" in str(e.value)


@pytest.mark.parametrize(("keys", "stopped"), [
    (["rbd"], {"rbd.teacher", "rbd.generators.verbosity", "rbd.detectors[0].judge"}),
    (["rbd.detectors[1]"], {"rbd.detectors[1].judge"}),
    (["rbd.generators.verbosity"], {"rbd.generators.verbosity"}),
    (["scoring.generation.models"], {"scoring.generation.models[0]", "scoring.generation.models[1]"}),
    (["rbd.teach", "scoring.gold.judg", "rb"], set()),  # a key is matched whole, never by a part of a word
])
def test_a_key_selects_itself_and_the_keys_under_it(keys, stopped):
    cfg = _config({"judges": [MINE]})
    if not stopped:
        assert check_roles(cfg, keys) == []
        return
    with pytest.raises(ConfigError) as e:
        check_roles(cfg, keys)
    named = {k for k in ("rbd.teacher", "rbd.generators.verbosity", "rbd.generators.sentiment",
                         "rbd.detectors[0].judge", "rbd.detectors[1].judge", "scoring.gold.judge",
                         "scoring.generation.models[0]", "scoring.generation.models[1]")
             if f"(config key {k})" in str(e.value)}
    assert stopped <= named
    if keys != ["rbd"]:
        assert named == stopped


def test_judge_narrows_to_the_roles_that_judge_fills():
    cfg = _config({"judges": [MINE], "scoring": {"gold": {"judge": "mine", "candidates": ["mine", "sim-gpt-4.1"]}}})
    assert check_roles(cfg, ["scoring.gold.candidates"], judge="mine") == []
    with pytest.raises(ConfigError, match=r"config key scoring\.gold\.candidates\[1\]\)") as e:
        check_roles(cfg, ["scoring.gold.candidates"], judge="sim-gpt-4.1")
    assert "candidates[0]" not in str(e.value)


def test_a_panel_mixing_real_and_simulated_judges_is_a_real_run():
    """One real judge beside simulated ones makes the run real: its verdicts must not rest on a
    simulated gold judge without the switch."""
    assert is_real_run({"judges": [SIM, MINE]}) and is_real_run({"judges": [MINE, SIM]})
    assert not is_real_run({"judges": [SIM]}) and not is_real_run({"judges": []})
    mixed = _config({"judges": [SIM, MINE]})
    with pytest.raises(ConfigError, match=r"config key scoring\.gold\.judge"):
        check_roles(mixed, ["scoring.gold.judge"])
    assert usable_simulated_roles(mixed) == []


def test_usable_roles_are_all_in_a_simulated_run_and_the_allowed_ones_in_a_real_run():
    sim = {r.key for r in usable_simulated_roles(_config())}
    assert {"scoring.gold.judge", "rbd.teacher", "uda.datasets.simulated"} <= sim
    assert all(r.simulated for r in usable_simulated_roles(_config()))
    assert usable_simulated_roles(_config({"judges": [MINE]})) == []
    listed = _config({"judges": [MINE], "allow_simulated_roles": ["rbd.teacher", "scoring.gold"]})
    assert {r.key for r in usable_simulated_roles(listed)} == {"rbd.teacher", "scoring.gold.judge"}
    assert {r.key for r in check_roles(listed, ["rbd.teacher", "scoring.gold.judge"])} == {"rbd.teacher",
                                                                                           "scoring.gold.judge"}
    every = _config({"judges": [MINE], "allow_simulated_roles": True})
    allowed = {r.key for r in usable_simulated_roles(every)}
    assert allowed == {r.key for r in auxiliary_roles(every) if r.simulated}
    assert {"scoring.gold.judge", "rbd.teacher", "uda.datasets.simulated"} <= allowed
    # a real role is never listed as a simulated input
    real_gold = _config({"judges": [MINE], "allow_simulated_roles": True, "scoring": {"gold": {"judge": "mine"}}})
    assert "scoring.gold.judge" not in {r.key for r in usable_simulated_roles(real_gold)}


def test_the_own_data_configs_carry_no_switch():
    for rel in ("config/topk-own-data.yaml", "config/uda-own-data.yaml", "config/scoring-own-data.yaml",
                *[p.relative_to(REPO).as_posix() for p in sorted((REPO / "config" / "examples").glob("*.yaml"))]):
        assert "allow_simulated_roles" not in load_yaml(REPO / rel), rel


# -- the DAG of each study's own-data target with a user's own judge set ---------------------------
def target_jobs(tmp_path: Path, configfiles: list[Path], targets: list[str]) -> list[Any]:
    """The jobs of ``targets`` (forced, as on a fresh clone), built in-process, executing nothing."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

    wd = _workdir(tmp_path)
    with SnakemakeApi(OutputSettings()) as api:
        wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                          config_settings=ConfigSettings(configfiles=configfiles),
                          snakefile=wd / "Snakefile", workdir=wd)
        wf.dag(DAGSettings(targets=frozenset(targets), forceall=True))
        w = wf._workflow
        w._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
        w._build_dag()
        return list(w.dag.jobs)


def _user_set(tmp_path: Path, extra: dict[str, Any], judges: list[dict[str, Any]] = (MINE,)) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"judges": list(judges), "replay_judges": [], **extra}))
    return path


OWN_DATA = {  # study: (its own-data config, what the user's set adds, targets, the rule that must be planned)
    "topk": ("config/topk-own-data.yaml", {"topk": {"rank": {"judges": ["mine"]}}},
             ["results/topk/rank/example/mine/summary.csv", "results/topk/rank/models/mine/summary.csv"],
             "topk_rank"),
    "scoring": ("config/scoring-own-data.yaml",
                {"scoring": {"judges": ["mine"], "gold": {"judge": "mine", "candidates": []},
                             "generation": {"models": ["mine", "mine"]}}},
                ["results/scoring/table2.csv", "results/scoring/table3.csv"], "scoring_gold"),
    "strategies": ("config/examples/strategies-own-data.yaml", {},
                   ["results/strategies/tables/agreement.csv", "results/strategies/tables/mcnemar.csv"],
                   "strategies_query"),
    "rbd": ("config/examples/rbd-own-data.yaml", {"rbd": {"log_audit": {"detector": None}}},
            ["results/rbd/evaluation.csv"], "rbd_evaluate"),
    # a generated tournament compares answer models: the user's set has two (the answerers are judges)
    "uda": ("config/uda-own-data.yaml", {"uda": {"judges": ["mine", "yours"],
                                                 "datasets": {"own": {"models": ["mine", "yours"]}}}},
            ["results/uda/own/tables/controls.csv", "results/uda/own/tables/generation.csv"], "uda_answers"),
}


@pytest.mark.slow  # builds the DAG in-process (seconds)
@pytest.mark.parametrize("study", sorted(OWN_DATA))
def test_a_users_own_judge_set_plans_each_studys_own_data_target(tmp_path, study, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    own, extra, targets, rule = OWN_DATA[study]
    judges = [MINE, YOURS] if study == "uda" else [MINE]
    user = _user_set(tmp_path, extra, judges)
    jobs = target_jobs(tmp_path, [REPO / own, user], targets)
    rules = {j.rule.name for j in jobs}
    assert rule in rules, sorted(rules)
    assert not any(r.startswith(s) for r in rules for s in OWN_DATA if s != study), sorted(rules)
    assert not _job_simulated(jobs), _job_simulated(jobs)
    assert all(not (j.params.get("provenance") or {}).get("simulated_inputs") for j in jobs)


@pytest.mark.slow  # builds the DAG in-process (seconds)
def test_the_same_set_stops_on_a_target_that_needs_a_simulated_role(tmp_path, monkeypatch):
    """The scoring own-data target with the user's judges and writers but the shipped (simulated)
    gold judge: the gold job stops, naming the rule, the role and its key, and no other role."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    user = _user_set(tmp_path, {"scoring": {"judges": ["mine"], "gold": {"candidates": []},
                                            "generation": {"models": ["mine", "mine"]}}})
    with pytest.raises(Exception) as e:  # Snakemake wraps the ConfigError in its InputFunctionException
        target_jobs(tmp_path, [REPO / "config/scoring-own-data.yaml", user], ["results/scoring/table3.csv"])
    msg = str(e.value)
    assert "scoring gold judge 'sim-gpt-4.1' (config key scoring.gold.judge)" in msg, msg
    assert "rule scoring_gold," in msg and "1 auxiliary role(s)" in msg, msg


@pytest.mark.slow  # builds the DAG in-process (seconds)
def test_a_missing_detector_role_stops_only_its_target(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    user = _user_set(tmp_path, {"rbd": {"log_audit": {"detector": None}}})
    with pytest.raises(Exception) as e:
        target_jobs(tmp_path, [REPO / "config/examples/rbd-own-data.yaml", user], ["results/rbd/log_audit/summary.csv"])
    assert "rbd detector (rbd) 'sim-rbd-8b' (config key rbd.detectors[0].judge)" in str(e.value)


@pytest.mark.slow  # builds the DAG in-process (seconds)
def test_an_unconfigured_generator_stops_only_the_controlled_set(tmp_path, monkeypatch):
    """strategies.controlled.expansion_generator names a judge the user's set lacks: a gold-set
    target plans (above); the controlled set's target stops naming the key, as before."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    user = _user_set(tmp_path, {})
    with pytest.raises(Exception) as e:
        target_jobs(tmp_path, [user], ["results/strategies/pairs/controlled.parquet"])
    assert "strategies/controlled/expansion_generator: generator 'sim-gemini-2.5-flash' is not a configured judge" \
        in str(e.value)


# -- the role table, from a config that has every kind of role ------------------------------------
def _every_kind() -> dict[str, Any]:
    sim = {"backend": "simulated", "model": "s"}
    return {
        "judges": [{"name": "a", **sim}, MINE],
        "replay_judges": [{"name": "rec", "backend": "replay", "model": "r"}],
        "scoring": {"extra_judges": [{"name": "g", **sim}],
                    "gold": {"judge": "g", "candidates": ["mine", "nobody"]},
                    "datasets": {"x": None, "y": {"synthesise_responses": True}},
                    "generation": {"models": ["a", "rec"]}},
        "strategies": {"datasets": {"gold": {"loader": "pairs"}, "ctl": {"loader": "controlled"}},
                       "controlled": {"expansion_generator": "a", "original_pairing": ["google", "meta"],
                                      "round_robin": [["openai", "anthropic"], ["google", "meta"]],
                                      "origin_generators": {"google": "mine", "meta": "a", "openai": "",
                                                            "anthropic": "rec"}}},
        "rbd": {"sets": ["v", "s", "plain"],
                "generators": {"v": {"name": "w", **sim}, "s": "not an entry", "unused": {"name": "u", **sim}},
                "teacher": {"name": "t", "backend": "transformers", "model": "m"},
                "detectors": [{"prompting": "rbd", "judge": {"name": "d", **sim}},
                              {"prompting": "classifier", "trained": "run"}, "not a detector",
                              {"judge": {"name": "z", "backend": "openai", "model": "m"}},
                              {"prompting": "few_shot", "judge": {"name": "nb", "model": "m"}}]},
        "uda": {"run_datasets": ["s1", "gen"], "datasets": {"s1": {"loader": "simulated"}, "s2": {"loader": "simulated"},
                                                            "gen": {"loader": "generated"}}},
    }


def test_every_kind_of_role_resolves_to_its_judge_and_backend():
    got = [(r.study, r.key, r.what, r.judge, r.backend) for r in auxiliary_roles(_every_kind())]
    assert got == [
        ("scoring", "scoring.gold.judge", "scoring gold judge", "g", "simulated"),
        ("scoring", "scoring.gold.candidates[0]", "scoring gold candidate (Table 2)", "mine", "openai"),
        ("scoring", "scoring.gold.candidates[1]", "scoring gold candidate (Table 2)", "nobody", "unknown"),
        ("scoring", "scoring.generation.models[0]", "scoring reference writer / response synthesis", "a", "simulated"),
        ("scoring", "scoring.generation.models[1]", "scoring reference writer / response synthesis", "rec", "replay"),
        ("strategies", "strategies.controlled.expansion_generator", "strategies LENGTH/STYLE generator", "a",
         "simulated"),
        ("strategies", "strategies.controlled.origin_generators.google", "strategies MODEL_ORIGIN generator (google)",
         "mine", "openai"),
        ("strategies", "strategies.controlled.origin_generators.meta", "strategies MODEL_ORIGIN generator (meta)",
         "a", "simulated"),
        ("strategies", "strategies.controlled.origin_generators.anthropic",
         "strategies MODEL_ORIGIN generator (anthropic)", "rec", "replay"),
        ("rbd", "rbd.generators.v", "rbd writer of set v", "w", "simulated"),
        ("rbd", "rbd.teacher", "rbd reasoning teacher", "t", "transformers"),
        ("rbd", "rbd.detectors[0].judge", "rbd detector (rbd)", "d", "simulated"),
        ("rbd", "rbd.detectors[3].judge", "rbd detector (?)", "z", "openai"),
        ("rbd", "rbd.detectors[4].judge", "rbd detector (few_shot)", "nb", "unknown"),  # no backend named
        ("uda", "uda.datasets.s1", "uda simulated tournament (synthetic answers)", "", "simulated"),
    ]
    roles = {r.key: r for r in auxiliary_roles(_every_kind())}
    assert roles["rbd.teacher"].entry == {"name": "t", "backend": "transformers", "model": "m"}
    assert roles["scoring.gold.judge"].entry["model"] == "s" and roles["scoring.gold.candidates[1]"].entry == {}
    assert roles["uda.datasets.s1"].label() == "uda.datasets.s1" and roles["rbd.teacher"].label() == "rbd.teacher=t"


def test_roles_follow_what_the_config_runs():
    cfg = _every_kind()
    cfg["scoring"]["datasets"]["y"] = {"synthesise_responses": False}
    cfg["rbd"]["supervision_data"] = "released.csv"  # the authors' traces replace the teacher
    cfg["uda"]["run_datasets"] = None  # every tournament runs
    cfg["strategies"]["datasets"].pop("ctl")  # no controlled set: no generator is used
    keys = {r.key: r for r in auxiliary_roles(cfg)}
    assert keys["scoring.generation.models[0]"].what == "scoring reference writer"
    assert "rbd.teacher" not in keys and not any(k.startswith("strategies") for k in keys)
    assert {k for k in keys if k.startswith("uda")} == {"uda.datasets.s1", "uda.datasets.s2"}
    assert auxiliary_roles({"judges": [MINE]}) == []
    no_gold = _every_kind()
    no_gold["scoring"]["gold"] = {}
    no_gold["strategies"]["controlled"]["expansion_generator"] = None
    keys = {r.key for r in auxiliary_roles(no_gold)}
    assert "scoring.gold.judge" not in keys and "strategies.controlled.expansion_generator" not in keys
    assert "scoring.generation.models[0]" in keys


def test_simulated_inputs_and_provenance_entries_name_each_judge_once():
    cfg = _every_kind()
    cfg["judges"] = [{"name": "a", "backend": "simulated", "model": "s"}]  # a simulated run
    assert simulated_inputs(cfg, "scoring") == ("scoring.gold.judge=g; scoring.generation.models[0]=a")
    assert simulated_inputs(cfg, "uda") == "uda.datasets.s1" and simulated_inputs(cfg, "topk") == ""
    assert simulated_inputs(cfg).startswith("scoring.gold.judge=g; ") and "uda.datasets.s1" in simulated_inputs(cfg)
    roles = auxiliary_roles(cfg)
    entries = role_entries(roles, "strategies")
    assert entries == [{"name": "a", "backend": "simulated", "model": "s",
                        "role": "strategies.controlled.expansion_generator,strategies.controlled.origin_generators.meta"}]
    assert role_entries(roles + roles, "strategies") == entries  # a key is named once
    assert role_entries(roles, "uda") == []  # a synthetic data source names no judge entry
    assert [e["name"] for e in role_entries(roles, "rbd")] == ["w", "d"]  # the real teacher is no simulated input
    prov = {"config_hash": "h", "seed": 1, "judges": [{"name": "a", "backend": "simulated"}, {"name": "o"}]}
    assert with_roles(prov, roles, "topk") is prov  # nothing to add
    as_role = with_roles(prov, roles, "strategies")  # "a" fills the role only: its own entry is replaced
    assert [e["name"] for e in as_role["judges"]] == ["o", "a"] and as_role["judges"][1]["role"].startswith("strat")
    assert as_role["config_hash"] == "h" and as_role["seed"] == 1
    in_panel = with_roles(prov, roles, "strategies", panel=["a"])  # "a" is also judged: both entries stay
    assert [e["name"] for e in in_panel["judges"]] == ["a", "o", "a"]
    assert with_roles({"config_hash": "h"}, roles, "strategies")["judges"][0]["name"] == "a"


def test_without_the_switch_key_a_real_run_allows_nothing_and_the_message_names_every_role():
    cfg = {"judges": [MINE], "scoring": {"extra_judges": [SIM], "gold": {"judge": "sim-x"}},
           "uda": {"datasets": {"s1": {"loader": "simulated"}}}}  # no allow_simulated_roles key at all
    assert usable_simulated_roles(cfg) == []
    with pytest.raises(ConfigError) as e:
        check_roles(cfg)
    assert ("2 auxiliary role(s) would use the simulated panel: scoring gold judge 'sim-x' (config key "
            "scoring.gold.judge); uda simulated tournament (synthetic answers) 'synthetic' (config key uda.datasets.s1)."
            ) in str(e.value)
    assert check_roles({**cfg, "allow_simulated_roles": ["uda"]}, ["uda"])[0].key == "uda.datasets.s1"


def test_role_config_is_the_plans_real_config_when_named(tmp_path, monkeypatch):
    from judgelab.workflow.roles import ROLE_CONFIG_ENV, role_config

    cfg = _config({"judges": [MINE]})
    monkeypatch.delenv(ROLE_CONFIG_ENV, raising=False)
    assert role_config(cfg) is cfg
    real = tmp_path / "real.yaml"
    real.write_text(yaml.safe_dump({"judges": [YOURS]}), encoding="utf-8")
    monkeypatch.setenv(ROLE_CONFIG_ENV, str(real))
    assert role_config(cfg) == {"judges": [YOURS]}
    monkeypatch.setenv(ROLE_CONFIG_ENV, "")
    assert role_config(cfg) is cfg
