"""No silent simulation in a real run (issue 10, item 4) and the per-row ``simulated`` flag.

The DAG tests build the job graph of every shipped non-simulated judge set with the
Snakemake API (a dry run: nothing executes) and look into every job's params for judge
entries of the simulated backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from judgelab.config import ConfigError, default_config_paths, load_config, load_yaml, merge
from judgelab.io import with_provenance
from judgelab.workflow import provenance, simulated_inputs_of
from judgelab.workflow.roles import auxiliary_roles, check_roles, simulated_inputs, with_roles
from tests.conftest import REPO

JUDGE_SETS = sorted(p.stem for p in (REPO / "config" / "judges").glob("*.yaml") if p.stem != "simulated")
PARTS = ("Snakefile", "rules", "config", "workflow_scripts", "report", "envs", "judgelab", "data", "pyproject.toml")
REAL = {"name": "real-judge", "backend": "openai", "model": "m", "options": {"api_key_env": None}}


def _config(*overrides: dict[str, Any]) -> dict[str, Any]:
    cfg: dict[str, Any] = {}
    for p in default_config_paths():
        cfg = merge(cfg, load_yaml(p))
    for o in overrides:
        cfg = merge(cfg, o)
    return cfg


# -- role resolution ---------------------------------------------------------------------
def test_simulated_run_may_use_simulated_roles():
    roles = check_roles(_config())
    keys = {r.key for r in roles}
    assert {"scoring.gold.judge", "rbd.teacher", "rbd.generators.verbosity", "uda.datasets.simulated"} <= keys


def test_real_run_with_simulated_roles_stops_naming_role_and_key():
    with pytest.raises(ConfigError) as e:
        check_roles(_config({"judges": [REAL]}))
    msg = str(e.value)
    for text in ("scoring gold judge 'sim-gpt-4.1' (config key scoring.gold.judge)",
                 "rbd reasoning teacher 'sim-deepseek-r1-teacher' (config key rbd.teacher)",
                 "config key scoring.generation.models[1]", "config key uda.datasets.simulated",
                 "allow_simulated_roles"):
        assert text in msg, text


def test_switch_allows_all_or_the_listed_roles():
    cfg = _config({"judges": [REAL], "allow_simulated_roles": True})
    assert {r.key for r in check_roles(cfg)} >= {"scoring.gold.judge", "rbd.teacher"}
    listed = _config({"judges": [REAL], "allow_simulated_roles": ["scoring", "uda.datasets.simulated"]})
    with pytest.raises(ConfigError) as e:
        check_roles(listed)
    assert "rbd.teacher" in str(e.value) and "scoring.gold.judge" not in str(e.value)
    ok = _config({"judges": [REAL], "allow_simulated_roles": ["scoring", "rbd", "uda.datasets.simulated"]})
    assert "scoring.gold.judge=sim-gpt-4.1" in simulated_inputs(ok, "scoring")
    assert simulated_inputs(ok, "orders") == ""


def test_switch_is_schema_validated():
    from judgelab.config import validate_config

    with pytest.raises(ConfigError, match="allow_simulated_roles"):
        validate_config(_config({"allow_simulated_roles": "yes"}))


def test_real_roles_resolve_from_configured_judges():
    cfg = _config({"judges": [REAL], "scoring": {"extra_judges": [], "gold": {"judge": "real-judge"},
                                                 "generation": {"models": ["real-judge"]}}})
    roles = {r.key: r for r in auxiliary_roles(cfg)}
    assert roles["scoring.gold.judge"].backend == "openai" and not roles["scoring.gold.judge"].simulated


def test_strategies_missing_generator_is_an_error_unless_substitution_is_asked_for():
    from judgelab.config import check_judges
    from judgelab.strategies.plan import StrategiesStudy

    cfg = load_config(*default_config_paths())
    cfg["judges"] = [dict(REAL, family="openai")]
    specs = {s.name: s for s in check_judges(cfg)}
    with pytest.raises(ConfigError, match=r"strategies/controlled/expansion_generator: generator 'sim-gemini-2\.5-flash'"):
        StrategiesStudy(cfg, specs, {})
    cfg["strategies"]["controlled"]["missing_generator"] = "substitute"
    study = StrategiesStudy(cfg, specs, {})
    assert study.origin["openai"] == "real-judge" and study.origin["google"] is None
    assert any("origin_generators/google" in s and "left out" in s for s in study.substitutions)


# -- per-row flag and simulated inputs -----------------------------------------------------
def test_real_judges_rows_stay_real_beside_a_simulated_gold_judge():
    gold = {"name": "sim-gold", "backend": "simulated", "model": "s"}
    roles = check_roles(_config({"judges": [REAL], "allow_simulated_roles": True,
                                 "scoring": {"extra_judges": [gold], "gold": {"judge": "sim-gold"}}}))
    prov = with_roles({"config_hash": "h", "seed": 1, "judges": [REAL, gold]}, roles, "scoring", ["real-judge"])
    cols = provenance(prov["config_hash"], prov["seed"], prov["judges"])
    table = pd.DataFrame({"judge": ["real-judge", "sim-gold", "gold"], "rho": [0.5, 0.9, 1.0]})
    out = with_provenance(table, cols)
    assert out.set_index("judge")["simulated"].to_dict() == {"real-judge": False, "sim-gold": True, "gold": False}
    assert set(out["simulated_inputs"]) == {"scoring.gold.judge=sim-gold"}
    assert "_judge_simulated" not in out.columns
    # a table without a judge column carries the table's own flag
    assert not with_provenance(pd.DataFrame({"x": [1]}), cols)["simulated"].iloc[0]
    # a row that already says simulated keeps it
    kept = with_provenance(table.assign(simulated=[True, True, True]), cols)
    assert kept["simulated"].all()


def test_simulated_inputs_reach_figures(tmp_path):
    from judgelab.io import write_table

    write_table(pd.DataFrame({"judge": ["a"], "v": [1]}), tmp_path / "t.csv",
                provenance={"simulated_inputs": "rbd.teacher=sim-t"})
    write_table(pd.DataFrame({"judge": ["a"]}), tmp_path / "u.parquet",
                provenance={"simulated_inputs": "scoring.gold.judge=sim-g"})
    write_table(pd.DataFrame({"judge": ["a"]}), tmp_path / "w.parquet", provenance={"config_hash": "x"})
    got = simulated_inputs_of([str(tmp_path / n) for n in ("t.csv", "u.parquet", "w.parquet")])
    assert got == "rbd.teacher=sim-t; scoring.gold.judge=sim-g"


# -- every shipped real judge set plans without a simulated judge in any job ----------------
def _workdir(tmp: Path) -> Path:
    wd = tmp / "wf"
    wd.mkdir()
    for part in PARTS:
        if (REPO / part).exists():
            (wd / part).symlink_to(REPO / part)
    return wd


def dag_jobs(wd: Path, configfiles: list[Path]) -> list[Any]:
    """Every job of the whole DAG (forced, as on a fresh clone), built in-process, executing nothing."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

    with SnakemakeApi(OutputSettings()) as api:
        wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                          config_settings=ConfigSettings(configfiles=configfiles),
                          snakefile=wd / "Snakefile", workdir=wd)
        wf.dag(DAGSettings(forceall=True))
        w = wf._workflow
        w._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
        w._build_dag()
        return list(w.dag.jobs)


def simulated_entries(obj: Any, path: str = "") -> list[str]:
    """Paths of judge entries of the simulated backend inside a job's params."""
    if isinstance(obj, dict):
        if obj.get("backend") == "simulated" and "name" in obj:
            return [f"{path}={obj['name']}"]
        return [p for k, v in obj.items() for p in simulated_entries(v, f"{path}.{k}")]
    if isinstance(obj, list | tuple):
        return [p for i, v in enumerate(obj) for p in simulated_entries(v, f"{path}[{i}]")]
    return []


def _real_with_profile(obj: Any, path: str = "") -> list[str]:
    if isinstance(obj, dict):
        if obj.get("backend") not in (None, "simulated") and "name" in obj and "profile" in (obj.get("options") or {}):
            return [f"{path}={obj['name']}"]
        return [p for k, v in obj.items() for p in _real_with_profile(v, f"{path}.{k}")]
    if isinstance(obj, list | tuple):
        return [p for i, v in enumerate(obj) for p in _real_with_profile(v, f"{path}[{i}]")]
    return []


def _job_simulated(jobs: list[Any]) -> dict[str, list[str]]:
    found = {}
    for job in jobs:
        hits = simulated_entries(dict(job.params.items()))
        hits += [f"wildcard {k}={v}" for k, v in dict(job.wildcards.items()).items() if str(v).startswith("sim-")]
        if hits:
            found[f"{job.rule.name} {dict(job.wildcards.items())}"] = hits
    return found


@pytest.mark.slow  # builds the DAG in-process (seconds)
@pytest.mark.parametrize("judge_set", JUDGE_SETS)
def test_shipped_real_judge_set_plans_with_no_simulated_judge_in_any_job(tmp_path, judge_set, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = REPO / "config" / "judges" / f"{judge_set}.yaml"
    allowed = load_yaml(path).get("allow_simulated_roles", False)
    jobs = _dag_or_fail(tmp_path, [path])
    rules = {j.rule.name for j in jobs}
    for needed in ("orders_summary", "scoring_gold", "strategies_query", "rbd_supervision", "uda_query", "topk_query"):
        assert needed in rules, needed
    found = _job_simulated(jobs)
    if not allowed:
        assert not found, f"{judge_set}: simulated judges in jobs: {dict(list(found.items())[:5])}"
    # a real entry merged over a simulated default (rbd.teacher) keeps no simulated `profile` option,
    # which its backend would reject when the job runs
    leftovers = [f"{j.rule.name}: {p}" for j in jobs for p in _real_with_profile(dict(j.params.items()))]
    assert not leftovers, leftovers[:5]


def _dag_or_fail(tmp_path: Path, configfiles: list[Path]) -> list[Any]:
    return dag_jobs(_workdir(tmp_path), configfiles)


SIM_GOLD = """scoring:
  extra_judges:
    - {name: sim-gpt-4.1, backend: simulated, model: simulated/gpt-4.1-like, family: openai}
    - {name: gpt-4.1, backend: openai, model: gpt-4.1, family: openai, options: {api_key_env: OPENAI_API_KEY}}
  gold: {judge: sim-gpt-4.1}
"""


@pytest.mark.slow  # builds the DAG in-process (seconds)
def test_the_switch_lets_a_simulated_role_into_the_dag_and_names_it(tmp_path):
    """Negative control of the test above: with the switch, the simulated gold judge is in
    the scoring jobs' params, as a role the tables then name."""
    extra = tmp_path / "mixed.yaml"
    extra.write_text("allow_simulated_roles: [scoring.gold.judge]\n" + SIM_GOLD)
    jobs = _dag_or_fail(tmp_path, [REPO / "config" / "judges" / "api.yaml", extra])
    found = _job_simulated(jobs)
    assert any(k.startswith("scoring_gold") for k in found)
    table3 = next(j for j in jobs if j.rule.name == "scoring_tables")
    roles = [e for e in table3.params["provenance"]["judges"] if e.get("role")]
    assert [(e["name"], e["role"]) for e in roles] == [("sim-gpt-4.1", "scoring.gold.judge")]
    assert provenance("h", 1, table3.params["provenance"]["judges"])["simulated"] is False


@pytest.mark.slow  # builds the DAG in-process (seconds)
def test_real_set_with_a_simulated_role_fails_at_dag_construction(tmp_path):
    extra = tmp_path / "bad.yaml"
    extra.write_text(SIM_GOLD)
    with pytest.raises(Exception) as e:  # Snakemake wraps the ConfigError
        _dag_or_fail(tmp_path, [REPO / "config" / "judges" / "api.yaml", extra])
    assert "scoring gold judge 'sim-gpt-4.1' (config key scoring.gold.judge)" in str(e.value)


def test_figure_stamp_names_simulated_inputs():
    import matplotlib.pyplot as plt

    from judgelab.plots.stamp import INPUTS_STAMP_TEXT, STAMP_TEXT, stamp

    def texts(**kw):
        fig = plt.figure()
        stamp(fig, config_hash="abc", **kw)
        out = [t.get_text() for t in fig.texts]
        plt.close(fig)
        return out

    got = texts(simulated=False, simulated_inputs="scoring.gold.judge=sim-g")
    assert INPUTS_STAMP_TEXT in got and any("Simulated inputs: scoring.gold.judge=sim-g." in t for t in got)
    assert STAMP_TEXT not in got
    assert texts(simulated=False, simulated_inputs="") == ["config abc"]
    assert texts(simulated=False) == ["config abc"]  # no simulated inputs unless the caller names them
    assert STAMP_TEXT in texts(simulated=True)
