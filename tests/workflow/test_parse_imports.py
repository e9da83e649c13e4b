"""Parsing the workflow loads no statistics library.

Every ``snakemake`` start (a dry run, each planned job's scheduler, every DAG test) parses the
Snakefile, whose planners import judgelab modules.  When a planner pulled in a study's statistics,
``scipy.stats`` alone added about 0.8 CPU-s to each start (see docs/benchmarks.md, "The README's
test command"), and ``scipy.special`` (one logistic function of the verdict importer) about 0.15 more.
The planners need config checks only; the statistics load in the jobs.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

HEAVY = ("scipy", "statsmodels", "torch", "sklearn", "matplotlib")
#: the same without scipy as a whole, for jobs that need one of its parts
HEAVY_BUT_SCIPY = tuple(m for m in HEAVY if m != "scipy")


def _last_loaded_line(tmp_path, code: str) -> str:
    """The last ``LOADED ...`` line that ``code`` prints, run in a fresh interpreter at the repository."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    loaded = [line for line in done.stdout.splitlines() if line.startswith("LOADED")]
    assert loaded, done.stdout[-2000:] + done.stderr[-2000:]
    return loaded[-1]

PROBE = """
import atexit, sys
atexit.register(lambda: print("LOADED", ",".join(m for m in {heavy!r} if m in sys.modules)))
from snakemake.cli import main
sys.argv = ["snakemake", "-n", "-q", "--cores", "1"]
main()
"""


def test_a_dry_run_of_the_default_dag_loads_no_statistics_library(tmp_path):
    last = _last_loaded_line(tmp_path, PROBE.format(heavy=HEAVY))
    assert last == "LOADED ", (last, "a planner imports a statistics module at parse time")


def assert_loads_none(tmp_path, imports: str, heavy: tuple[str, ...]) -> None:
    """Run ``imports`` (a job's imports and set-up) in a fresh interpreter: none of ``heavy`` is loaded."""
    code = f"import sys\n{imports}\nprint('LOADED', ','.join(m for m in {heavy!r} if m in sys.modules))\n"
    last = _last_loaded_line(tmp_path, code)
    assert last == "LOADED ", last


QUERY_JOB = """
import judgelab.workflow, judgelab.strategies.calls, judgelab.scoring.calls, judgelab.uda.calls, judgelab.verdict_import
from judgelab.config import JudgeSpec
from judgelab.judges import make_judge
judge = make_judge(JudgeSpec.from_dict({"name": "j", "backend": "simulated", "model": "sim", "family": "openai",
    "options": {"profile": {"biases": {"position": 0.3, "verbosity": -0.2}}}}))
assert judge.coef["position"] > 0
"""


def test_a_query_job_with_a_simulated_judge_loads_no_scipy_stats_or_optimize(tmp_path):
    # the judge-calling jobs of strategies, scoring and uda (about seventy in the default DAG) load
    # their step module and build a judge; scipy.stats added about 0.4 CPU-s to each (the seeds
    # lived beside the metrics), scipy.optimize about 0.35 (a root finder inverted the planted
    # biases, where a closed form does); PyYAML is imported where a YAML file is read (a job reads none)
    assert_loads_none(tmp_path, QUERY_JOB, ("scipy.optimize", "scipy.stats", "yaml", *HEAVY_BUT_SCIPY))


def test_a_topk_query_job_loads_no_fits(tmp_path):
    # topk_query and topk_llmbar_replay (twelve jobs) ask a judge; the study's fits (scipy.optimize,
    # scipy.sparse, scipy.stats) belong to topk_evaluate and later rules
    assert_loads_none(tmp_path, "import judgelab.workflow, judgelab.topk.calls, judgelab.datasets.pairs",
                      ("scipy.optimize", "scipy.sparse", "scipy.stats", *HEAVY_BUT_SCIPY))


UDA_PROBE = """
import sys
import judgelab.workflow, judgelab.uda.calls, judgelab.uda.study, judgelab.uda.training, judgelab.uda.metrics
import judgelab.plots.uda
print("LOADED", ",".join(m for m in sys.modules if m == "scipy" or m.startswith("scipy.")))
"""


def test_the_uda_training_and_figure_jobs_load_no_scipy(tmp_path):
    # uda_train and uda_figures import the study's modules for their names; scipy.stats (the human
    # votes' bootstrap, the Pearson of the tables) is loaded where it is used
    last = _last_loaded_line(tmp_path, UDA_PROBE)
    assert last == "LOADED ", last


INTERVAL_JOB = """
import judgelab.workflow, judgelab.stats.agreement, judgelab.stats.mcnemar, judgelab.stats.bias
import judgelab.strategies.analysis, judgelab.uda.human
from judgelab.stats.intervals import wilson_interval
lo, hi = wilson_interval(12, 40, clusters=5)
assert 0 < lo < 0.3 < hi < 1
"""


def test_a_job_that_reports_a_wilson_interval_loads_no_statsmodels_or_scipy_stats(tmp_path):
    # nine rules of the default DAG (orders_summary, rbd_labels, scoring_stability, topk_flip_rate,
    # ...) need only this interval: statsmodels.stats.proportion with scipy.stats was about 0.7 CPU-s
    # of each; the modules that test and bootstrap import those where they use them
    assert_loads_none(tmp_path, INTERVAL_JOB, ("statsmodels", "scipy.stats", "scipy.optimize", *HEAVY_BUT_SCIPY))


TOPK_READ_JOB = """
import numpy as np
from judgelab.ranking.bias_aware import Fit, FitOptions
import judgelab.topk.calls, judgelab.topk.pipeline
fit = Fit(theta=np.zeros(2), c=np.zeros(0), kappa=0.0, cov=np.diag([4.0, 1.0]), names=["a", "b"], options=FitOptions(),
          n_comparisons=3, tau2=1.0, converged=True, n_iter=1, nll=0.0)
lo, hi = fit.interval("a")
assert abs(hi - 1.959963984540054 * 2) < 1e-12 and lo == -hi
"""


def test_a_topk_job_that_reads_fits_loads_no_optimizer_or_scipy_stats(tmp_path):
    # topk_items, topk_llmbar_pairs and topk_figures fit nothing: scipy.optimize is imported by the
    # fits; a fit's Wald interval takes the normal quantile from scipy.special
    assert_loads_none(tmp_path, TOPK_READ_JOB, ("scipy.optimize", "scipy.stats", "statsmodels", *HEAVY_BUT_SCIPY))
