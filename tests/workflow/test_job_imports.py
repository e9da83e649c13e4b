"""A rule script does not import the statistics libraries its step leaves unused.

Every job of the DAG is a fresh Python process (Snakemake runs ``python <rule script>``), so what a
rule script imports, every job of the rule pays again: ``scipy.stats`` about 0.6 CPU-s per process,
``scipy.special`` about 0.15 (docs/benchmarks.md, "The default DAG").  The scoring study's item,
generation and query jobs need a seed function of ``scoring.metrics``, not the scipy rank fallback
beside it; the data-import job needs the verdict importer, not the logistic that only a scored log
reaches; the uda figures need the method names of ``uda.metrics``, not its correlation; the topk
jobs that ask a judge need the study's pipeline module, not the intervals and tests of the fits
that later rules make.  Those load where they are used.  The probe runs each script as its job process would, up to the call of
``run_step``/``run_script``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

#: rule script -> the modules its imports must not load
LIGHT = {
    "scoring_query": ("scipy",),
    "scoring_items": ("scipy",),
    "scoring_generate": ("scipy",),
    "audit_logs_import": ("scipy",),
    "uda_figures": ("scipy",),
    # the topk query jobs ask judges and fit nothing: no interval (bias_aware's norm), no t-test
    # (topk.stats), no optimiser (their simulated judges invert the planted biases in closed form)
    "topk_query": ("scipy.stats", "scipy.optimize"),
    "topk_llmbar_query": ("scipy.stats", "scipy.optimize"),
    "topk_llmbar_pairs": ("scipy.stats",),
    "topk_items": ("scipy.stats",),
}

PROBE = """
import json, runpy, sys
sys.path.insert(0, {scripts!r})
import judgelab.workflow as wf

wf.run_step = wf.run_script = lambda *args: None  # the script's imports only, not its job
runpy.run_path({script!r}, init_globals={{"snakemake": None}})
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("script", sorted(LIGHT))
def test_a_rule_script_loads_no_statistics_its_step_does_not_use(script, tmp_path):
    scripts = REPO / "workflow_scripts"
    probe = PROBE.format(scripts=str(scripts), script=str(scripts / f"{script}.py"))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    assert "judgelab.workflow" in loaded  # the probe did import the script's modules
    assert not [m for m in LIGHT[script] if m in loaded], f"workflow_scripts/{script}.py loads {LIGHT[script]}"
