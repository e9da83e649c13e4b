"""Backend traits are declared once, on the backend class, and everything asks them.

A toy backend registered from outside the package (no other edit anywhere) must be routed
by what it declares: resources tier and API-slot throttling, conda env, ``judgelab plan``'s
stand-ins, the studies' judge handling, provenance -- in process, and in a real Snakemake
plan, where it arrives through the ``judgelab.backends`` entry-point group.  And no module
outside ``judgelab/judges/`` compares a backend's name.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from judgelab.config import ConfigError, JudgeSpec, check_judges
from judgelab.judges.base import Judge
from judgelab.records import JudgeRequest, RawAnswer
from judgelab.registry import BACKENDS, backend_traits, is_simulated
from judgelab.workflow import resources
from tests.conftest import REPO

TOY_HTTP = "toy-http"
TOY_GPU = "toy-gpu"


class ToyHTTPJudge(Judge):
    """A new HTTP backend: rate-limited API, nothing loaded locally."""

    needs_api_slot = True

    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        return [RawAnswer(text="A") for _ in requests]


class ToyGPUJudge(Judge):
    """A new sharded local backend with its own conda env and logit verdicts."""

    loads_weights = True
    logit_verdicts = True
    conda_env = "vllm"

    @classmethod
    def gpus(cls, options):
        return int(options.get("shards", 1))

    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        return [RawAnswer(text="A") for _ in requests]


@pytest.fixture
def toys(monkeypatch):
    """Register the toy backends for one test (the registry's entries, restored after)."""
    monkeypatch.setattr(BACKENDS, "_entries", {**BACKENDS._entries, TOY_HTTP: ToyHTTPJudge, TOY_GPU: ToyGPUJudge})
    http = {"name": "toy", "backend": TOY_HTTP, "model": "toy-1", "family": "toyfam"}
    gpu = {"name": "toy-big", "backend": TOY_GPU, "model": "toy-70b", "family": "toyfam", "options": {"shards": 4}}
    return SimpleNamespace(http=http, gpu=gpu)


def test_shipped_backends_declare_their_traits():
    t = {b: backend_traits(b) for b in BACKENDS.names()}
    assert t["simulated"].simulated and not t["simulated"].runs_model
    assert t["replay"].recorded and not t["replay"].runs_model
    assert t["openai"].needs_api_slot and not t["openai"].loads_weights
    assert t["vllm"].loads_weights and t["vllm"].logit_verdicts and t["vllm"].conda_env == "vllm"
    assert t["transformers"].loads_weights and t["transformers"].logit_verdicts
    assert t["classifier"].loads_weights and not t["classifier"].configurable
    assert [b for b, x in t.items() if x.needs_api_slot] == ["openai"]
    assert [b for b, x in t.items() if x.simulated] == ["simulated"]
    # GPUs are a function of the entry's options
    assert backend_traits({"backend": "vllm", "options": {"tensor_parallel_size": 4}}).gpus == 4
    assert backend_traits({"backend": "vllm"}).gpus == 1
    assert backend_traits({"backend": "transformers", "options": {"device": "cuda:0"}}).gpus == 1
    assert backend_traits({"backend": "transformers", "options": {"device": "cpu"}}).gpus == 0
    assert backend_traits({"backend": "classifier", "options": {"device": "cuda"}}).gpus == 1
    # an HTTP judge that serves its own model in the job loads weights there
    assert backend_traits({"backend": "openai", "options": {"launch": "transformers-serve"}}).loads_weights


def test_the_pseudo_backend_is_refused_in_a_config():
    with pytest.raises(ConfigError, match=r"unknown backend 'classifier'; known: .*openai") as e:
        check_judges({"judges": [{"name": "c", "backend": "classifier", "model": "m"}]})
    assert "classifier" not in str(e.value).split("known:")[1]


def test_a_new_http_backend_gets_the_api_tier_and_a_slot(toys):
    assert resources.job_needs([toys.http]) == (0, 1, "api")
    specs = {"toy": JudgeSpec.from_dict(toys.http)}
    res = resources.job_resources(specs, lambda w: w.judge)
    w = SimpleNamespace(judge="toy")
    assert {k: f(w) for k, f in res.items()} == {"gpu": 0, "api_slots": 1, **resources.JOB_TIERS["api"]}
    # two HTTP judges in one job: two slots
    assert resources.job_needs([toys.http, toys.http])[1] == 2
    assert resources.conda_env([toys.http]) == "../envs/judges.yaml"


def test_a_new_sharded_backend_gets_its_gpus_tier_and_env(toys):
    assert resources.job_needs([toys.gpu]) == (4, 0, "gpu")
    assert resources.job_needs([toys.gpu, toys.http]) == (4, 1, "gpu")
    specs = {"toy": toys.http, "toy-big": toys.gpu}
    env = resources.job_conda_env(specs, lambda w: w.judge)  # a rule's `conda:`
    assert env(SimpleNamespace(judge="toy-big")) == "../envs/vllm.yaml"
    assert env(SimpleNamespace(judge="toy")) == "../envs/judges.yaml"
    assert resources.conda_env([toys.gpu, toys.http]) == "../envs/vllm.yaml"


def test_plan_stands_in_for_a_new_backend_and_keeps_simulated_ones(toys):
    from judgelab.workflow.plan import stand_in_config

    sim = {"name": "s", "backend": "simulated", "model": "sim"}
    cfg, originals = stand_in_config({"judges": [toys.http, sim], "rbd": {"teacher": toys.gpu}})
    assert is_simulated(cfg["judges"][0]) and is_simulated(cfg["rbd"]["teacher"])
    assert cfg["judges"][1] == sim
    assert originals["toy"] == toys.http and originals["toy-big"] == toys.gpu


def test_studies_and_provenance_ask_the_traits(toys):
    from judgelab.topk.oracle import study_judge_entry
    from judgelab.workflow import provenance

    # logit verdicts only where the backend has them
    assert (study_judge_entry(toys.gpu)["options"] or {}).get("verdict_mode") == "logits"
    assert "verdict_mode" not in (study_judge_entry(toys.http).get("options") or {})
    prov = provenance("abc", 0, [toys.http, {"name": "s", "backend": "simulated", "model": "x", "role": "r.gold"}])
    assert prov["simulated"] is False and prov["simulated_inputs"] == "r.gold=s"
    assert prov["_judge_simulated"] == {"toy": False, "s": True}
    # a real judge of a new backend is a real judge everywhere (roles, the no-silent-simulation check)
    from judgelab.workflow.roles import is_real_run
    assert is_real_run({"judges": [toys.http]})
    assert not is_real_run({"judges": [{"name": "s", "backend": "simulated", "model": "x"}]})
    # the scoring study's panel keeps a new backend (only recorded judges are left out), and
    # its jobs get the new backend's conda env
    from judgelab.config import default_config_paths, load_config
    from judgelab.scoring.plan import ScoringStudy

    cfg = load_config(*default_config_paths())
    rec = {"name": "rec", "backend": "replay", "model": "m", "options": {"dataset": "x"}}
    entries = {**{d["name"]: d for d in cfg["judges"]}, "toy": toys.http, "toy-big": toys.gpu, "rec": rec}
    study = ScoringStudy(cfg, entries, "h")
    assert {"toy", "toy-big"} <= set(study.judges) and "rec" not in study.judges
    assert resources.conda_env([study.entry("toy")]) == "../envs/judges.yaml"
    assert resources.conda_env([study.entry("toy-big")]) == "../envs/vllm.yaml"


# -- the grep: no backend-name comparison outside judgelab/judges/ ---------------------

_NAMES = "|".join(map(re.escape, BACKENDS.names()))
_LIT = rf"""["'](?:{_NAMES})["']"""
#: a comparison with a backend-name literal: ``x == "vllm"``, ``"vllm" != x``, ``in ("openai", ...)``
_COMPARE = re.compile(rf"""(?:==|!=)\s*{_LIT}|{_LIT}\s*(?:==|!=)|\bin\s*[\(\[\{{][^\)\]\}}]*{_LIT}""")
#: other vocabularies that share a word with a backend name (each with its reason)
NOT_BACKENDS = {
    r"""\.get\("loader"\) == "simulated\"""": "a data set's loader (the simulated tournament), not a backend",
    r"""(?:prompting|kind)\W*\s*[!=]=\s*"classifier\"""": "an rbd detector's prompting / a train run's kind",
    r"""for noisy in \(""": "logger names of the HTTP client libraries",
    r"""kind not in \("causal_lm", "classifier"\)""": "an rbd train run's kind",
    r"""\.get\("judges"(?:, "panel")?\) == "replay\"""": "a strategies data set's `judges: replay` option",
}


def _backend_name_comparisons() -> list[str]:
    files = [*(REPO / "judgelab").rglob("*.py"), *(REPO / "workflow_scripts").glob("*.py"),
             *(REPO / "rules").glob("*.smk"), REPO / "Snakefile"]
    hits = []
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("judgelab/judges/"):
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if _COMPARE.search(code) and not any(re.search(p, code) for p in NOT_BACKENDS):
                hits.append(f"{rel}:{i}: {line.strip()}")
            elif path.suffix == ".smk" and re.search(_LIT, code):
                hits.append(f"{rel}:{i}: a backend name in the rules: {line.strip()}")
    return hits


def test_no_backend_name_comparison_outside_the_backends():
    assert _backend_name_comparisons() == []


def test_the_grep_sees_a_comparison(tmp_path, monkeypatch):
    """The check above is not vacuous: the patterns it hunts match the shapes it replaced."""
    for bad in ('if spec.backend == "vllm":', 'x = e.get("backend") in ("openai", "x")',
                'LOGIT = ["transformers", "vllm"]; y = b in ["transformers"]', '"replay" != b'):
        assert _COMPARE.search(bad), bad
    assert not _COMPARE.search('conda: env_for(lambda w: w.judge)  # e.g. "../envs/vllm.yaml"')


# -- a real Snakemake plan with a toy backend from an installed package ----------------

TOY_MODULE = textwrap.dedent('''
    """A toy OpenAI-like backend, installed as a package of one's own."""
    from judgelab.judges import BACKENDS
    from judgelab.judges.base import Judge
    from judgelab.records import RawAnswer


    @BACKENDS.register("toyhttp")
    class ToyHTTP(Judge):
        needs_api_slot = True

        def answer(self, requests):
            return [RawAnswer(error="toy backend: no server") for _ in requests]
''')


def _install_toy(root: Path) -> Path:
    """A site dir holding the toy module and its dist-info declaring the entry point."""
    root.mkdir(parents=True)
    (root / "toyhttp.py").write_text(TOY_MODULE)
    info = root / "toyhttp-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyhttp\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[judgelab.backends]\ntoyhttp = toyhttp\n")
    return root


def _plan(configfile: Path | str, pythonpath: str) -> tuple[int, str, list[dict]]:
    from tests.workflow.test_profile_routing import _parse_jobs, _snakemake

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "JUDGELAB_PROGRESS": "0", "PYTHONPATH": pythonpath}
    env.setdefault("JUDGELAB_DATA", str(REPO.parent / "shared" / "data"))
    proc = subprocess.run([_snakemake(), "-n", "-F", "--nolock", "--profile", "profiles/slurm-venv",
                           "--configfile", str(configfile)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    out = proc.stdout + proc.stderr
    return proc.returncode, out, _parse_jobs(out)


@pytest.mark.slow
def test_a_toy_http_backend_plans_exactly_like_the_openai_one(tmp_path):
    """api.yaml with every `backend: openai` turned into the toy backend (declared by an
    installed package, no edit in judgelab): every job asks for the same resources."""
    site = _install_toy(tmp_path / "site")
    api = (REPO / "config" / "judges" / "api.yaml").read_text()
    assert "backend: openai" in api
    toy = tmp_path / "api-toy.yaml"
    toy.write_text(api.replace("backend: openai", "backend: toyhttp"))
    assert yaml.safe_load(toy.read_text())["judges"][0]["backend"] == "toyhttp"
    pp = os.pathsep.join([str(REPO), str(site), os.environ.get("PYTHONPATH", "")])
    rc0, out0, jobs0 = _plan("config/judges/api.yaml", pp)
    rc1, out1, jobs1 = _plan(toy, pp)
    assert rc0 == 0, out0[-3000:]
    assert rc1 == 0, out1[-3000:]
    key = lambda j: (j["rule"], j["wildcards"])  # noqa: E731
    want = {key(j): j["resources"] for j in jobs0}
    got = {key(j): j["resources"] for j in jobs1}
    assert set(got) == set(want)
    assert got == want
    throttled = [k for k, r in got.items() if r.get("api_slots", 0) >= 1]
    assert len(throttled) >= 10 and all(got[k]["runtime"] == resources.JOB_TIERS["api"]["runtime"]
                                        for k in throttled if got[k].get("gpu", 0) == 0
                                        and got[k]["mem_mb"] < resources.JOB_TIERS["model"]["mem_mb"])


def test_python_path_is_this_checkout():
    assert Path(resources.__file__).resolve().is_relative_to(REPO), sys.path[:3]
