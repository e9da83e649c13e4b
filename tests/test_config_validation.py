"""Config refuses what it does not know: unknown keys at every level (with the file and the nearest
known key), dangling names (judges, data sets, runs, detectors), and credentials in config files;
the same checks run in ``judgelab check-config``, in :func:`load_config` and at Snakefile parse
time (before Snakemake records anything in ``.snakemake/``)."""

from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from judgelab.cli import main
from judgelab.config import (
    ConfigError,
    default_config_paths,
    load_config,
    validate_config,
    validate_workflow_config,
)
from tests.conftest import REPO

SECRET = "sk-proj-abcdef0123456789abcdef0123456789"


def _write(tmp_path: Path, data: dict | str, name: str = "mine.yaml") -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return p


def _error(tmp_path: Path, data: dict | str) -> str:
    p = _write(tmp_path, data)
    with pytest.raises(ConfigError) as e:
        load_config(*default_config_paths(), p, references=True)
    msg = str(e.value)
    assert str(p) in msg, msg  # the file that holds the mistake is named
    return msg


@pytest.mark.parametrize(("typo", "near"), [
    ("judgs", "judges"), ("stratgies", "strategies"), ("max_eror_rate", "max_error_rate"), ("cahce", "cache"),
])
def test_top_level_typo_is_an_error_naming_the_nearest_key(tmp_path, typo, near):
    value = [{"name": "x", "backend": "simulated", "model": "m"}] if typo == "judgs" else 1
    msg = _error(tmp_path, {typo: value})
    assert f"unknown key '{typo}'" in msg and f"did you mean '{near}'?" in msg, msg


@pytest.mark.parametrize(("data", "key", "near"), [
    ({"strategies": {"stratgies": ["B0"]}}, "strategies.stratgies", "strategies.strategies"),
    ({"scoring": {"gold": {"judgee": "sim-gpt-4.1"}}}, "scoring.gold.judgee", "scoring.gold.judge"),
    ({"judges": [{"name": "a", "backend": "simulated", "model": "m", "sampling": {"temprature": 0.2}}]},
     "judges[0].sampling.temprature", "judges[0].sampling.temperature"),
    ({"rbd": {"train": {"runs": {"r": {"learning_rat": 0.1}}}}}, "rbd.train.runs.r.learning_rat",
     "rbd.train.runs.r.learning_rate"),
])
def test_nested_typo_is_an_error_naming_the_path(tmp_path, data, key, near):
    msg = _error(tmp_path, data)
    assert f"unknown key '{key}'" in msg and f"did you mean '{near}'?" in msg, msg


def test_typo_under_all_of_and_in_a_named_set(tmp_path):
    """Keys reached through allOf (output_limits) and under a user-named set are checked too."""
    msg = _error(tmp_path, {"output_limits": {"verdit": 64}})
    assert "unknown key 'output_limits.verdit' (did you mean 'output_limits.verdict'?)" in msg, msg
    msg = _error(tmp_path, {"orders": {"datasets": {"mine": {"loader": "llmbar", "source": "s", "sorce": "t"}}}})
    assert "unknown key 'orders.datasets.mine.sorce' (did you mean 'orders.datasets.mine.source'?)" in msg, msg


def test_validate_config_alone_refuses_unknown_keys():
    """A dict built in code (no file) is checked too: the merged config's own unknown key."""
    with pytest.raises(ConfigError, match=r"^config: unknown key 'cahce' \(did you mean 'cache'\?\)"):
        validate_config({"judges": [{"name": "a", "backend": "simulated", "model": "m"}], "cahce": "x"})


def test_a_key_far_from_any_known_one_lists_the_known_keys(tmp_path):
    msg = _error(tmp_path, {"strategies": {"bootstrap": {"zzzz": 1}}})
    assert "known keys here: level, n_resamples" in msg, msg


def test_every_shipped_config_and_documented_combination_passes():
    """The shipped judge sets alone, and each example with the judge set its header names."""
    combos = [[f] for f in sorted(glob.glob(str(REPO / "config/judges/*.yaml")))]
    for f in sorted(glob.glob(str(REPO / "config/examples/*.yaml"))):
        combos.append([str(REPO / "config/judges/local-cpu.yaml"), f])
    for f in sorted(glob.glob(str(REPO / "config/*-own-data.yaml"))):
        combos.append([str(REPO / "config/judges/api.yaml"), f])
    assert len(combos) >= 15
    for fs in combos:
        load_config(*default_config_paths(), *fs, references=True)


# -- cross-references ---------------------------------------------------------------------------

@pytest.mark.parametrize(("data", "key", "name"), [
    ({"scoring": {"gold": {"judge": "gpt-4.1"}}}, "scoring.gold.judge", "gpt-4.1"),
    ({"scoring": {"gold": {"candidates": ["sim-gpt-4o", "nobody"]}}}, "scoring.gold.candidates[1]", "nobody"),
    ({"scoring": {"run_datasets": ["mt_bench", "mtbench"]}}, "scoring.run_datasets[1]", "mtbench"),
    ({"orders": {"run_datasets": ["llmbar_natral"]}}, "orders.run_datasets[0]", "llmbar_natral"),
    ({"strategies": {"run_datasets": ["mtbnch"]}}, "strategies.run_datasets[0]", "mtbnch"),
    ({"strategies": {"judges": ["sim-gpt-4o", "sim-gpt4o"]}}, "strategies.judges[1]", "sim-gpt4o"),
    ({"strategies": {"selector": {"natural": "mt_bench"}}}, "strategies.selector.natural", "mt_bench"),
    ({"strategies": {"holm_family": {"strategies": ["S1", "S9"]}}}, "strategies.holm_family.strategies[1]", "S9"),
    ({"strategies": {"controlled": {"expansion_generator": "gemini-flash"}}},
     "strategies.controlled.expansion_generator", "gemini-flash"),
    ({"uda": {"run_datasets": ["mt-bench"]}}, "uda.run_datasets[0]", "mt-bench"),
    ({"uda": {"transfer": [{"train": "arena_hard", "apply": "mtbench"}]}}, "uda.transfer[0].apply", "mtbench"),
    ({"rbd": {"evaluators": ["sim-gpt-4"]}}, "rbd.evaluators[0]", "sim-gpt-4"),
    ({"rbd": {"loop": {"detectors": ["sim-rbd-8"]}}}, "rbd.loop.detectors[0]", "sim-rbd-8"),
    ({"rbd": {"loop_sets": ["verbosty"]}}, "rbd.loop_sets[0]", "verbosty"),
    ({"topk": {"rank": {"judges": ["gpt-4o-mini"]}}}, "topk.rank.judges[0]", "gpt-4o-mini"),
])
def test_a_name_that_names_nothing_is_an_error(tmp_path, data, key, name):
    msg = _error(tmp_path, data)
    assert f"key '{key}' names" in msg and f"{name!r} that is not defined" in msg, msg


def test_a_dangling_name_suggests_the_nearest_defined_one(tmp_path):
    msg = _error(tmp_path, {"orders": {"run_datasets": ["llmbar_natral"]}})
    assert "did you mean 'llmbar_natural'?" in msg


def test_a_dangling_default_says_where_to_set_it(tmp_path):
    """A judge set alone leaves the shipped defaults' generators dangling: check-config names the
    shipped file and says to set the key; a run of another study (load_config) is not stopped."""
    data = {"judges": [{"name": "g", "backend": "openai", "model": "gpt-4o"}], "allow_simulated_roles": True}
    p = _write(tmp_path, data)
    with pytest.raises(ConfigError) as e:
        load_config(*default_config_paths(), p, references=True)
    assert (f"{REPO / 'config/config.yaml'}: key 'strategies.controlled.expansion_generator' names a judge "
            f"'sim-gemini-2.5-flash' that is not defined") in str(e.value)
    assert "set this key in your own config file" in str(e.value)
    load_config(*default_config_paths(), p)


def test_substitute_generators_are_not_dangling(tmp_path):
    """missing_generator: substitute asks on purpose for a stand-in generator: not a dangling name."""
    p = _write(tmp_path, {"strategies": {"controlled": {"expansion_generator": "gemini-flash",
                                                        "missing_generator": "substitute"}}})
    load_config(*default_config_paths(), p, references=True)


def test_check_config_refuses_a_dangling_gold_judge_with_one_line(tmp_path, capsys):
    p = _write(tmp_path, {"scoring": {"gold": {"judge": "gpt-4.1"}}})
    assert main(["check-config", "--configfile", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("judgelab: error: ") and "scoring.gold.judge" in err[0]


def test_check_config_refuses_the_judges_typo(tmp_path, capsys):
    """The typo of the issue: the panel under `judgs:` used to pass as the simulated default panel."""
    p = _write(tmp_path, {"judgs": [{"name": "gpt-4o", "backend": "openai", "model": "gpt-4o"}]})
    assert main(["check-config", "--configfile", str(p)]) == 2
    err = capsys.readouterr()
    assert "config OK" not in err.out
    assert f"{p}: unknown key 'judgs' (did you mean 'judges'?)" in err.err


# -- secrets ------------------------------------------------------------------------------------

def _judge(**options) -> dict:
    return {"judges": [{"name": "g", "backend": "openai", "model": "gpt-4o", "options": options}],
            "allow_simulated_roles": True}


@pytest.mark.parametrize(("data", "key"), [
    (_judge(api_key=SECRET), "judges[0].options.api_key"),
    (_judge(api_key="not-shaped-like-a-key"), "judges[0].options.api_key"),
    (_judge(extra_body={"headers": {"Authorization": "Bearer abcdefghijkl"}}),
     "judges[0].options.extra_body.headers.Authorization"),
    (_judge(base_url=f"https://api.example.com/v1?key={SECRET}"), "judges[0].options.base_url"),
    ({"cache": "postgresql://judgelab:hunter22@db.example.org/judgelab"}, "cache"),
])
def test_a_credential_in_a_config_file_is_refused_without_repeating_it(tmp_path, data, key):
    msg = _error(tmp_path, data)
    assert f"'{key}'" in msg and "environment variable" in msg, msg
    for secret in (SECRET, "not-shaped-like-a-key", "abcdefghijkl", "hunter22"):
        assert secret not in msg


def test_naming_the_variable_that_holds_the_key_is_fine(tmp_path):
    p = _write(tmp_path, _judge(api_key_env="OPENAI_API_KEY", base_url="https://api.openai.com/v1"))
    load_config(*default_config_paths(), p)  # (the shipped defaults' generators are for check-config)


# -- the Snakefile: the same checks at parse time -------------------------------------------------

def test_workflow_check_names_the_config_override_layer():
    """`--config cahce=...` is its own layer: the message says --config, not a file."""
    cfg = load_config(*default_config_paths())
    with pytest.raises(ConfigError, match=r"^--config: unknown key 'cahce' \(did you mean 'cache'\?\)"):
        validate_workflow_config(cfg, files=[str(p) for p in default_config_paths()], overrides={"cahce": "x"})


def test_workflow_check_names_the_file_that_set_a_bad_value(tmp_path):
    p = _write(tmp_path, {"strategies": {"alpha": 2}})
    cfg: dict = {}
    for f in (*default_config_paths(), p):
        cfg = {**cfg, **yaml.safe_load(Path(f).read_text())} if not cfg else _merge(cfg, yaml.safe_load(
            Path(f).read_text()))
    with pytest.raises(ConfigError, match=rf"^{p}: invalid value at key 'strategies.alpha'"):
        validate_workflow_config(cfg, files=[*map(str, default_config_paths()), str(p)])


def _merge(a: dict, b: dict) -> dict:
    from judgelab.config import merge

    return merge(a, b)


@pytest.mark.slow
def test_snakemake_refuses_typos_and_secrets_before_recording_anything(tmp_path, data_root):
    """At parse time: the run stops naming the file and key, and the secret is nowhere on disk."""
    from tests.workflow.test_pipeline import copy_workflow, run_sm

    wd = copy_workflow(tmp_path / "wf")
    (wd / "typo.yaml").write_text("max_eror_rate: 0.1\n")
    proc = run_sm(wd, "-n", "--configfile", "typo.yaml", check=False)
    assert proc.returncode != 0
    assert "typo.yaml: unknown key 'max_eror_rate' (did you mean 'max_error_rate'?)" in proc.stdout + proc.stderr
    proc = run_sm(wd, "-n", "--config", "judgs=[]", check=False)
    assert proc.returncode != 0 and "--config: unknown key 'judgs'" in proc.stdout + proc.stderr

    (wd / "secret.yaml").write_text(yaml.safe_dump(_judge(api_key=SECRET)))
    # a real run (not -n): the job would record its parameters, were it built
    proc = run_sm(wd, "--configfile", "secret.yaml", "--", "results/orders/summary.csv", check=False)
    assert proc.returncode != 0
    assert "secret.yaml: key 'judges[0].options.api_key' holds a credential" in proc.stdout + proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    leaked = [p for p in wd.rglob("*") if p.is_file() and p.name != "secret.yaml"
              and SECRET.encode() in p.read_bytes()]
    assert not leaked, leaked
    assert not (wd / "results").exists()


def test_shipped_configs_name_no_credentials():
    for f in glob.glob(str(REPO / "config/**/*.yaml"), recursive=True):
        if Path(f).name == "schema.yaml":
            continue
        from judgelab.config import secret_keys

        assert secret_keys(yaml.safe_load(Path(f).read_text()) or {}, source=f) == [], f


def test_check_config_cli_runs_as_documented(tmp_path):
    """`judgelab check-config --configfile FILE` exits 2 with one error line (a subprocess, as typed)."""
    p = _write(tmp_path, {"stratgies": {"judges": ["sim-gpt-4o"]}})
    exe = Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin" / "judgelab"
    if not exe.exists():
        pytest.skip("judgelab entry point not installed")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([str(exe), "check-config", "--configfile", str(p)], capture_output=True, text=True,
                          env=env, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"judgelab: error: {p}: unknown key 'stratgies' (did you mean 'strategies'?)"
