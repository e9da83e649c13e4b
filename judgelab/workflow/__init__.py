"""Glue for the thin rule scripts in ``workflow_scripts/``: logging and provenance.

A rule script does three things: read ``snakemake.input``/``params``, call the
library, write ``snakemake.output``.  The boilerplate around that (log file, the
provenance record every table carries, a clear one-line error instead of a
traceback for bad input) lives here.

A judge-calling rule's script is one line, ``run_step(snakemake, step)``: the step function is
the one ``judgelab plan`` runs (:mod:`judgelab.workflow.calls`), and :class:`RunContext` gives it what a
real job has -- the configured call cache, the configured judges, tables with the job's
provenance, models trained and loaded.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from judgelab.config import ConfigError
from judgelab.io import InputError
from judgelab.registry import is_simulated

if TYPE_CHECKING:
    import pandas as pd

    from judgelab.cache import CallCache, CallStore
    from judgelab.judges.base import Judge
    from judgelab.workflow.calls import RuleCalls


def setup_logging(log_path: str | None = None, level: int = logging.INFO) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        handlers.append(logging.FileHandler(log_path, mode="w", encoding="utf-8"))
    logging.basicConfig(level=level, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # warnings about the data (empty responses kept, underpowered tests, ...) belong in the rule's log
    logging.captureWarnings(True)
    # HTTP client libraries log full request lines at INFO; keep them quiet.
    for noisy in ("httpx", "httpcore", "openai", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def simulated_inputs_of(paths: Iterable[str | os.PathLike[str]]) -> str:
    """The union of the ``simulated_inputs`` columns of the tables among ``paths`` ("" if none).

    A rule script that draws figures passes this of its inputs (``simulated_inputs_of(sm.input)``)
    to each figure function, which hands it to :func:`judgelab.plots.stamp.stamp`: a figure
    built on a simulated gold judge, writer or teacher is stamped so."""
    import pandas as pd

    found: set[str] = set()
    for p in map(str, paths):
        try:
            if p.endswith(".parquet"):
                import pyarrow.parquet as pq

                if "simulated_inputs" not in pq.read_schema(p).names:
                    continue
                col = pd.read_parquet(p, columns=["simulated_inputs"])["simulated_inputs"]
            elif p.endswith(".csv"):
                with open(p, encoding="utf-8") as fh:
                    if "simulated_inputs" not in fh.readline():
                        continue
                col = pd.read_csv(p, usecols=["simulated_inputs"])["simulated_inputs"]
            else:
                continue
        except (OSError, ValueError):
            continue
        for v in col.dropna().astype(str):
            found.update(x.strip() for x in v.split(";") if x.strip())
    return "; ".join(sorted(found))


def run_script(snakemake: Any, main: Callable[[Any], None]) -> None:
    """Run a rule script's ``main(snakemake)`` with logging and clean error exits.

    Expected user errors (bad config, malformed input, missing data, an unavailable
    backend) end the job with one readable line and exit status 1; anything else
    keeps its traceback.
    """
    from judgelab.datasets.sources import DataMissing
    from judgelab.judges.base import BackendUnavailable
    from judgelab.judges.runner import TooManyErrors
    from judgelab.registry import UnknownEntryError

    log_path = snakemake.log[0] if len(snakemake.log) else None
    setup_logging(log_path)
    try:
        main(snakemake)
    except (ConfigError, InputError, DataMissing, BackendUnavailable, UnknownEntryError, TooManyErrors) as exc:
        logging.getLogger("judgelab").error("%s: %s", type(exc).__name__, exc)
        print(f"judgelab error ({snakemake.rule}): {exc}", file=sys.stderr)
        sys.exit(1)
    if _is_job_process(snakemake):
        end_job_process()


def _is_job_process(snakemake: Any) -> bool:
    """Whether this is a job process Snakemake started for a rule script (its script preamble unpickles a
    :class:`snakemake.iocontainers.Snakemake`), not a caller that passes an object of its own."""
    containers = sys.modules.get("snakemake.iocontainers")
    return containers is not None and isinstance(snakemake, getattr(containers, "Snakemake", ()))


def end_job_process() -> None:
    """End a finished job's process without the interpreter's teardown.

    A job process exits right after its outputs are written and closed. What Python does at a normal
    exit after the ``atexit`` handlers -- destroying every module and freeing every object of pandas,
    scipy, torch one by one -- changes nothing on disk and costs about a quarter of a second of CPU per
    job (``docs/benchmarks.md``, "The scheduler's timers and the jobs' teardown"); with two hundred jobs per run that is most of a
    minute. So: the ``atexit`` handlers (``logging.shutdown`` flushes and closes the job's log), the
    standard streams flushed, then ``os._exit(0)``. Only on success: an error still leaves through
    ``sys.exit``/the traceback, with its status."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


def provenance(config_hash: str, seed: int, judges: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The provenance columns of a table: config hash, pipeline seed, judge ids/seeds, and
    which of its inputs are simulated.

    ``judges`` are judge entries; an entry with a ``role`` key (the config key(s) of an
    auxiliary role it fills, :func:`judgelab.workflow.roles.with_roles`) is an *input* of the table
    (a gold judge, a writer, a teacher), not one of the judges whose rows it holds.  So:

    * ``simulated`` -- whether the table's own judges are simulated (any of them; the role
      judges when it has no others); a table with a ``judge`` column gets it per row (each
      row its judge's flag, :func:`judgelab.io.with_provenance`), so a real judge's rows
      stay ``False`` when a simulated gold judge or writer sits beside it;
    * ``simulated_inputs`` (only when there are any) -- the simulated roles the rows depend
      on, as ``key=judge`` pairs, e.g. ``scoring.gold.judge=sim-gpt-4.1``.
    """
    prov: dict[str, Any] = {"config_hash": config_hash, "pipeline_seed": int(seed)}
    if judges is not None:
        prov["judge_ids"] = ",".join(sorted({j["name"] for j in judges}))
        seeds = {j["name"]: (j.get("sampling") or {}).get("seed", 0) for j in judges}
        prov["judge_seeds"] = ",".join(f"{n}={seeds[n]}" for n in sorted(seeds))
        own = [j for j in judges if not j.get("role")] or list(judges)  # a table of role judges only: theirs
        prov["simulated"] = any(is_simulated(j) for j in own)
        inputs = sorted({f"{k}={j['name']}" for j in judges if j.get("role") and is_simulated(j)
                         for k in str(j["role"]).split(",")})
        if inputs:
            prov["simulated_inputs"] = "; ".join(inputs)
        # per-row directive for judgelab.io.with_provenance (not a column)
        # (a row of a role judge, e.g. the gold judge's own scorings, is that judge's)
        prov["_judge_simulated"] = {j["name"]: is_simulated(j) for j in judges}
    return prov


def job_param(params: Any, key: str) -> Any:
    """A rule's param ``key``: ``params.<key>``, else that key of its ``q`` or ``g`` dict (where
    the studies' query and generation rules keep a job's settings together)."""
    if hasattr(params, key):
        return getattr(params, key)
    for group in ("q", "g"):
        settings = getattr(params, group, None)
        if isinstance(settings, Mapping) and key in settings:
            return settings[key]
    raise KeyError(f"the rule's params have no {key!r} (nor q[{key!r}] or g[{key!r}])")


class RunContext:
    """A rule's job as its step function sees it (:class:`judgelab.workflow.calls.StepContext`).

    The call cache is the one the job's params name (``cache``, ``q["cache"]`` or
    ``g["cache"]``), opened on first use, so a step that asks no judge opens none; judges are
    built from their config entries once and closed with the context; every table carries the
    provenance of the job's ``provenance`` param (:func:`provenance`), as each rule's table
    always has; models are trained and loaded."""

    loads_models = True

    def __init__(self, job: Any) -> None:
        self.job = job
        self.memo: dict[Any, Any] = {}
        self.models: dict[str, dict[str, Any]] = {}
        self._judges: dict[str, Judge] = {}
        self._owned: list[Judge] = []
        self._cache: CallCache | None = None

    @property
    def cache(self) -> CallStore:
        if self._cache is None:
            from judgelab.cache import CallCache

            self._cache = CallCache(job_param(self.job.params, "cache"))
        return self._cache

    def judge(self, entry: Mapping[str, Any], where: str | None = None) -> Judge:
        from judgelab.workflow.calls import build_judge

        return build_judge(self._judges, entry, where)

    def own(self, judge: Judge) -> Judge:
        self._owned.append(judge)
        return judge

    def _provenance(self, names_judges: bool) -> dict[str, Any]:
        prov = job_param(self.job.params, "provenance")
        return provenance(prov["config_hash"], prov["seed"], prov["judges"] if names_judges else None)

    def write_table(self, df: pd.DataFrame, path: str | os.PathLike[str], *, names_judges: bool = True) -> None:
        from judgelab.io import write_table

        write_table(df, path, provenance=self._provenance(names_judges))

    def write_jsonl(self, path: str | os.PathLike[str], rows: list[dict[str, Any]]) -> None:
        from judgelab.io import write_jsonl

        write_jsonl(path, rows)

    def close(self) -> None:
        """Close the call cache, then every judge built or owned (all of them, even when one of
        them fails to close)."""
        from contextlib import ExitStack

        with ExitStack() as stack:  # callbacks run last-in first-out: the cache first
            for judge in [*self._judges.values(), *self._owned]:
                stack.callback(judge.close)
            if self._cache is not None:
                stack.callback(self._cache.close)
            self._cache, self._judges, self._owned = None, {}, []


def run_step(snakemake: Any, step: RuleCalls) -> None:
    """Run a rule's step function (a ``RULES`` entry of :mod:`judgelab.workflow.calls`) as the rule's job:
    with logging and clean error exits (:func:`run_script`), in a :class:`RunContext`."""

    def main(sm: Any) -> None:
        ctx = RunContext(sm)
        try:
            step(sm, ctx)
        finally:
            ctx.close()

    run_script(snakemake, main)
