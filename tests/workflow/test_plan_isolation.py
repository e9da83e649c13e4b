"""A config error of one study never stops another study's target.

Each study is planned by its package (``judgelab/<study>/plan.py``) through
:func:`judgelab.workflow.planning.plan_study`; with a bad key in one study's section, ``snakemake -n``
of another study's target still plans (rc 0), while the bad study's own targets stop with the
error, naming the key.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest
import yaml

from judgelab.config import default_config_paths, load_config, merge
from judgelab.workflow.planning import STUDIES, StudyPlan, plan_study
from tests.conftest import REPO

#: study -> (a bad config section, the key its error names, a target of another study)
BAD = {
    "orders": ({"orders": {"run_datasets": ["nope"]}}, "orders.run_datasets", "results/audit_logs/bias_cards.csv"),
    "audit_logs": ({"audit_logs": {"sets": {"x": {"format": "nope", "files": ["x.jsonl"]}}}},
                   "audit_logs/sets/x/format", "results/orders/summary.csv"),
    "strategies": ({"strategies": {"run_datasets": ["nope"]}}, "strategies/run_datasets", "results/orders/summary.csv"),
    "scoring": ({"scoring": {"run_datasets": ["nope"]}}, "scoring.run_datasets", "results/orders/summary.csv"),
    "topk": ({"topk": {"rank": {"judges": ["nope"]}}}, "topk.rank.judges", "results/orders/summary.csv"),
    "uda": ({"uda": {"run_datasets": ["nope"]}}, "uda.run_datasets", "results/orders/summary.csv"),
    "rbd": ({"rbd": {"loop": {"detectors": ["nope"]}}}, "rbd.loop.detectors", "results/orders/summary.csv"),
}


def test_every_study_is_covered():
    assert set(BAD) == set(STUDIES)


@pytest.mark.parametrize("study", sorted(BAD))
def test_the_bad_key_is_named_by_the_study_plan(study):
    """In process: the plan of the bad study carries the error; every other study plans."""
    section, key, _ = BAD[study]
    cfg = load_config(*default_config_paths())
    cfg = merge(cfg, section)
    plans = _plans(cfg)
    assert not plans[study].ok and key in str(plans[study].error)
    assert plans[study].failed_outputs() == [f"results/{study}/config_error"]
    assert all(p.ok for s, p in plans.items() if s != study), {s: str(p.error) for s, p in plans.items()}


def _plans(cfg) -> dict[str, StudyPlan]:
    """What rules/plans.smk does, in process."""
    from judgelab.bias_card.plan import plan_audit_logs
    from judgelab.config import check_judges, config_hash
    from judgelab.orders.plan import plan_orders
    from judgelab.rbd.plan import plan_rbd
    from judgelab.scoring.plan import ScoringStudy
    from judgelab.strategies.plan import plan_strategies
    from judgelab.topk.plan import plan_topk
    from judgelab.uda.plan import plan_uda

    specs = {s.name: s for s in check_judges(cfg)}
    replay = {s.name: s for s in check_judges({"judges": cfg.get("replay_judges", [])})}
    entries = {d["name"]: d for d in [*cfg["judges"], *cfg.get("replay_judges", [])]}
    h = config_hash(cfg)
    return {
        "orders": plan_study("orders", plan_orders, cfg, entries),
        "audit_logs": plan_study("audit_logs", plan_audit_logs, cfg),
        "strategies": plan_study("strategies", plan_strategies, cfg, specs, replay),
        "scoring": plan_study("scoring", ScoringStudy, cfg, entries, h),
        "topk": plan_study("topk", plan_topk, cfg, specs, replay),
        "uda": plan_study("uda", plan_uda, cfg, specs, entries, h),
        "rbd": plan_study("rbd", plan_rbd, cfg, specs),
    }


def _snakemake() -> str:
    exe = Path(sys.executable).with_name("snakemake")
    return str(exe) if exe.exists() else "snakemake"


@cache
def _dry_run(study: str, target: str, tmp: str) -> tuple[int, str]:
    section, _, _ = BAD[study]
    path = Path(tmp) / f"bad-{study}.yaml"
    path.write_text(yaml.safe_dump(section))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "JUDGELAB_PROGRESS": "0"}
    env.setdefault("JUDGELAB_DATA", str(REPO.parent / "shared" / "data"))
    proc = subprocess.run([_snakemake(), "-n", "--nolock", "--configfile", str(path), "--", target],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("bad"))
    jobs = [(s, BAD[s][2]) for s in BAD] + [("rbd", "results/rbd/evaluation.csv"),
                                             ("strategies", "results/strategies/tables/strategies.csv")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(jobs, pool.map(lambda j: _dry_run(*j, tmp), jobs), strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("study", sorted(BAD))
def test_another_studys_target_still_plans(study, runs):
    rc, out = runs[(study, BAD[study][2])]
    assert rc == 0, out[-3000:]
    assert f"study {study}: config error" in out and BAD[study][1] in out


@pytest.mark.slow
@pytest.mark.parametrize(("study", "target"), [("rbd", "results/rbd/evaluation.csv"),
                                                ("strategies", "results/strategies/tables/strategies.csv")])
def test_the_bad_studys_own_target_stops_naming_the_key(study, target, runs):
    rc, out = runs[(study, target)]
    assert rc != 0
    assert f"rule {study}_config_error" in out and "ConfigError" in out and BAD[study][1] in out


def test_the_rules_hold_rules_and_bind_functions_of_the_package():
    """No Python function is defined in rules/*.smk or the Snakefile (tests could not import it)."""
    defs = [f"{p.relative_to(REPO)}:{i}: {ln.strip()}"
            for p in [*(REPO / "rules").glob("*.smk"), REPO / "Snakefile"]
            for i, ln in enumerate(p.read_text().splitlines(), 1) if ln.lstrip().startswith("def ")]
    assert defs == []


def test_every_study_plans_in_its_package():
    homes = {"orders": "orders", "audit_logs": "bias_card"}
    for study in STUDIES:
        assert (REPO / "judgelab" / homes.get(study, study) / "plan.py").is_file(), study
    assert "include: \"rules/plans.smk\"" in (REPO / "Snakefile").read_text()
