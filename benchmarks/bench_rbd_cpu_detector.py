"""CPU time and peak memory of the rbd detector target with the real CPU judge set.

Runs, in a fresh copy of the workflow (a new call cache: every call is asked), what the study
guide's command runs:

    snakemake --cores 2 --configfile config/judges/local-cpu.yaml -- results/rbd/detectors/metrics.csv

in four stages, so the CPU time splits by part: the teacher's traces (set construction by the
writer, evaluation, labels, cases, the teacher), the SmolLM2 RBD fine-tune, its label-only twin,
and the detectors on the test set with the metrics table (the two tiny runs of the default config
train there too).  CPU time is user + system time of every process Snakemake ran
(``getrusage(RUSAGE_CHILDREN)`` deltas: each job is waited for); peak memory is the largest
resident set of any one of them.  Prints the stages, the kept traces, and the test-set rows of
``metrics.csv`` (parse rate, accuracy and its Wilson 95% interval); asserts nothing.

    python benchmarks/bench_rbd_cpu_detector.py [--cores 2] [--keep DIR] [--json OUT.json]

The dequantized SmolLM2 copy (``$JUDGELAB_MODEL_DIR``, default ``~/.cache/judgelab/served``) is
built once per machine (~20 CPU-s) by whichever job needs it first; the script says whether it
was already there.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
PARTS = ["Snakefile", "rules", "config", "workflow_scripts", "report", "envs", "judgelab", "data", "pyproject.toml"]
CONFIG = "config/judges/local-cpu.yaml"
STAGES = [
    ("teacher traces (sets, evaluation, labels, cases, teacher)", "results/rbd/supervision/traces.parquet"),
    ("fine-tune rbd-smollm2", "results/rbd/train/rbd-smollm2/loss.csv"),
    ("fine-tune label-only-smollm2", "results/rbd/train/label-only-smollm2/loss.csv"),
    ("detectors on the test set + metrics", "results/rbd/detectors/metrics.csv"),
]


def copy_workflow(wd: Path) -> None:
    wd.mkdir(parents=True)
    for part in PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, wd / part, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, wd / part)


def children_usage() -> tuple[float, int]:
    """(CPU seconds, peak resident KiB) of the waited-for child processes so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime, r.ru_maxrss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=None, help="run in this (new) folder and keep it")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here as JSON")
    ap.add_argument("--configfile", nargs="*", default=[], help="overlays after local-cpu.yaml (e.g. a smaller size)")
    args = ap.parse_args()
    wd = args.keep or Path(tempfile.mkdtemp(prefix="bench-rbd-cpu-")) / "wf"
    copy_workflow(wd)
    served = Path(os.environ.get("JUDGELAB_MODEL_DIR", Path.home() / ".cache/judgelab/served"))
    warm = (served / "smollm2-135m-instruct-q4_1" / "model.safetensors").is_file()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "JUDGELAB_PROGRESS": "0", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.setdefault("JUDGELAB_DATA", str(REPO.parent / "shared" / "data"))
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    print(f"workdir {wd}; dequantized SmolLM2 copy {'present' if warm else 'absent (built by the first job)'}")
    rows = []
    for name, target in STAGES:
        cpu0, _ = children_usage()
        t0 = time.perf_counter()
        proc = subprocess.run([snakemake, "--cores", str(args.cores), "-q", "--configfile", CONFIG,
                               *args.configfile, "--", target], cwd=wd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        cpu1, peak = children_usage()
        if proc.returncode != 0:
            sys.exit(f"stage {name!r} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
        rows.append({"stage": name, "wall_s": round(wall, 1), "cpu_s": round(cpu1 - cpu0, 1)})
        print(f"{name}: {wall:.0f} s wall, {cpu1 - cpu0:.0f} CPU-s", flush=True)
    cpu, peak = children_usage()
    traces = pd.read_parquet(wd / "results/rbd/supervision/traces.parquet")
    cases = pd.read_parquet(wd / "results/rbd/detectors/cases.parquet")
    metrics = pd.read_csv(wd / "results/rbd/detectors/metrics.csv")
    test = metrics[(metrics["subset"] == "test") & (metrics["bias_type"] == "all")]
    cols = ["detector", "prompting", "simulated", "n", "n_missing", "parse_rate", "accuracy", "accuracy_low",
            "accuracy_high", "precision", "recall", "f1"]
    losses = {r: pd.read_csv(wd / f"results/rbd/train/{r}/loss.csv") for r in ("rbd-smollm2", "label-only-smollm2")}
    summary = {
        "total_cpu_s": round(cpu, 1), "total_cpu_min": round(cpu / 60, 1),
        "total_wall_s": round(sum(r["wall_s"] for r in rows), 1), "peak_rss_mib": round(peak / 1024),
        "stages": rows, "dequantized_copy_warm": warm,
        "teacher_traces": len(traces), "kept_traces": int(traces["kept"].sum()),
        "kept_yes": int((traces["kept"] & (traces["truth"] == "yes")).sum()),
        "test_cases": int((cases["subset"] == "test").sum()),
        "test_yes": int(((cases["subset"] == "test") & (cases["truth"] == "yes")).sum()),
        "train_steps": {r: len(df) for r, df in losses.items()},
        "first_last_loss": {r: [round(float(df["loss"].iloc[0]), 3), round(float(df["loss"].iloc[-1]), 3)]
                            for r, df in losses.items()},
        "test_metrics": test[cols].to_dict("records"),
    }
    print(f"total: {cpu / 60:.1f} CPU-min, {summary['total_wall_s']:.0f} s wall, peak RSS {peak / 1024:.0f} MiB")
    print(f"teacher traces {summary['teacher_traces']}, kept {summary['kept_traces']} "
          f"({summary['kept_yes']} Yes); test cases {summary['test_cases']} ({summary['test_yes']} Yes); steps {summary['train_steps']}; "
          f"loss first/last {summary['first_last_loss']}")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(test[cols].to_string(index=False))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1, default=str))


if __name__ == "__main__":
    main()
