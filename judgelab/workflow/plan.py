"""``judgelab plan``: what a run will ask and cost, before anyone pays.

Design.  The number of calls a run makes is only known once the requests are built, and
most requests are built from tables that earlier rules write (pair sets, generated texts,
teacher traces), so counting from the config alone cannot give it.  ``plan`` therefore reads
the workflow's own DAG for the targets (Snakemake's API, in this process: which jobs a run
needs, with their params; :func:`dag_jobs`) and, in DAG order, runs each job's *planner* --
``RULES`` of ``judgelab/<study>/calls.py`` (:mod:`judgelab.workflow.calls`), which builds the job's
requests with the study's own builders from the config and the data.  Every real judge is
replaced by a *stand-in*: a simulated judge with the same name, family, sampling and price
(a detector the run would fine-tune, too); the stand-ins answer instantly and offline in
memory, so every planner downstream of a generation step gets texts to work on, and the
runner (:mod:`judgelab.judges.runner`) logs each distinct call (its judge, rule, request payload
hash, task and prompt length) to a plan log.  Nothing else of the workflow runs: no Snakemake
job, no training, statistics or figures, which is why a plan takes seconds, not minutes.  A
DAG with a rule that runs a judge or model but has no planner is refused (a silent hole in
the count would be worse).  The plan then compares the logged payloads with what the *real*
call cache already holds for each judge (the cache stores every answered request) and prices
the rest with the configured prices.  Progress goes to stderr, one line per job.

What the numbers are:

* ``calls``: distinct calls the run would ask, per judge and study.  A call two studies
  share (one request payload) is counted under each study that needs it, though a run
  asks it once; each judge's ``(all studies)`` row (:data:`ALL_STUDIES`) counts it once,
  and the printed TOTAL adds up those rows.  ``cached``: of these, already in the real cache;
  ``to_call``: the rest, what a run will pay for;
* ``est_tokens_in``: prompt characters / 4 (the rule of thumb of paper 003's appendix;
  real tokenizers differ by some 10-20%);
* ``est_tokens_out``: the stand-in's answer lengths (short verdicts, paragraph-length
  texts), each capped at its request's output limit (a real answer stops there, so an
  estimate is never above the worst case); ``max_tokens_out``: the output limits of the
  requests (the worst case, every answer as long as allowed: reasoning models come closer
  to this);
* ``est_usd`` / ``max_usd``: the two at the judge's ``price``;
* ``est_batch_usd`` / ``max_batch_usd``: the same calls sent as provider batch jobs, at the list
  price less the judge's ``price.batch_discount`` (the list price where none is configured).
  ``plan(..., batch_dir=DIR)`` also writes those calls as batch input files
  (:mod:`judgelab.batch`), and ``judgelab batch-import DIR`` stores the providers' answers.

Where the stand-in's answers steer what is asked next (the rbd detector loop asks again
only where a detector flags a verdict, the teacher's kept traces feed the few-shot
prompts), the counts follow the simulated panel's behaviour, not the real model's: the
plan says so in its ``note`` column for rules known to branch on answers.  Simulated
judges are planned as themselves (cost 0 unless they have a price).
"""

from __future__ import annotations

import copy
import gc
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from judgelab.config import REPO_ROOT, ConfigError, JudgeSpec, default_config_paths, fill_output_limits, load_config
from judgelab.judges.runner import PLAN_LOG_ENV
from judgelab.records import canonical_json, sha256_hex
from judgelab.registry import backend_traits
from judgelab.workflow.roles import ROLE_CONFIG_ENV

log = logging.getLogger(__name__)

#: What the scratch copy of the workflow needs (linked, not copied).
WORKFLOW_PARTS = ("Snakefile", "rules", "config", "workflow_scripts", "report", "envs", "judgelab", "data",
                  "pyproject.toml")
#: Rules whose later requests depend on earlier answers (their counts follow the stand-ins).
ANSWER_DEPENDENT_RULES = ("rbd_loop", "rbd_detect", "rbd_supervision", "scoring_references", "scoring_responses")
PLAN_COLUMNS = ["judge", "study", "backend", "model", "calls", "cached", "to_call", "est_tokens_in",
                "est_tokens_out", "max_tokens_out", "est_usd", "max_usd", "est_batch_usd", "max_batch_usd", "note"]


class UnplannedRule(RuntimeError):
    """A job the targets need makes calls (or writes what calls are built from) and its rule has
    no planner: the plan refuses rather than leave a hole in the count (the CLI prints one line)."""


def _is_entry(d: Any) -> bool:
    return isinstance(d, dict) and {"name", "backend", "model"} <= set(d)


def stand_in_config(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """A copy of ``config`` whose non-simulated judge entries (wherever they are: the panel,
    study roles, rbd detectors) are simulated stand-ins; and the original entries by name."""
    originals: dict[str, dict[str, Any]] = {}

    def walk(obj: Any) -> Any:
        if _is_entry(obj):
            if not backend_traits(obj).runs_model:  # simulated or replayed: no calls to stand in for
                originals.setdefault(str(obj["name"]), copy.deepcopy(obj))
                return obj
            originals.setdefault(str(obj["name"]), copy.deepcopy(obj))
            return {"name": obj["name"], "backend": "simulated", "model": f"plan-stand-in/{obj['model']}",
                    "family": obj.get("family", "unknown"), "sampling": dict(obj.get("sampling") or {}),
                    "price": dict(obj.get("price") or {}), "options": {}}
        if isinstance(obj, dict):
            return {k: walk(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [walk(v) for v in obj]
        return obj

    return walk(copy.deepcopy(config)), originals


def _scratch(workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    for part in WORKFLOW_PARTS:
        src = REPO_ROOT / part
        if src.exists() and not (workdir / part).exists():
            (workdir / part).symlink_to(src)


class _Env:
    """Set environment variables for a block and put the old values back after it."""

    def __init__(self, **values: str) -> None:
        self.values, self.old = values, {k: os.environ.get(k) for k in values}

    def __enter__(self) -> _Env:
        os.environ.update(self.values)
        return self

    def __exit__(self, *exc: object) -> None:
        for k, v in self.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _config_error(exc: BaseException) -> ConfigError | None:
    """The ConfigError behind an error Snakemake raised while building the DAG (an input
    function's role check, a study's plan), or None."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [exc]
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, ConfigError):
            return e
        stack += [e.__cause__, e.__context__, *[a for a in getattr(e, "args", ()) if isinstance(a, BaseException)]]
    found = re.search(r"ConfigError: (.*)", str(exc))
    return ConfigError(found.group(1)) if found else None


def dag_jobs(workdir: Path, configfile: Path, targets: Sequence[str] = ()) -> list[Any]:
    """The jobs a run of ``targets`` (default: the default target) needs, in an order where each
    job comes after the jobs it reads from: the workflow's own DAG, built in this process (no job
    runs) in ``workdir``, which holds no results, so every job is needed.

    Uses Snakemake's Python API (``snakemake.api``) and its DAG object: the Snakefile and its
    rules decide which jobs exist and their params, as in a run."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, Quietness, ResourceSettings

    cwd = os.getcwd()
    try:
        with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
            wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                              config_settings=ConfigSettings(configfiles=[configfile]),
                              snakefile=workdir / "Snakefile", workdir=workdir)
            wf.dag(DAGSettings(targets=set(targets)))
            workflow = wf._workflow
            workflow._prepare_dag(forceall=False, ignore_incomplete=True, lock_warn_only=True, nolock=True)
            workflow._build_dag()
            needed = set(workflow.dag.needrun_jobs())
            return [j for level in workflow.dag.toposorted() for j in sorted(level, key=str) if j in needed]
    except Exception as exc:
        err = _config_error(exc)
        if err is not None:
            raise err from None
        raise
    finally:
        os.chdir(cwd)


def _runs_a_model(job: Any) -> bool:
    """Whether a job's rule declares the resources of a judge or model run (``job_resources`` in
    ``rules/common.smk``; the light rules declare neither)."""
    return bool({"gpu", "api_slots"} & set(job.rule.resources.keys()))


def _progress(msg: str, show: bool, *, step: bool = False) -> None:
    """One progress line on stderr; on a terminal a job's line (``step``) is rewritten in place
    by the next one, so a plan shows one line that moves, and a log gets one line per job."""
    if not show:
        return
    if sys.stderr.isatty():
        print(f"\r\033[Kjudgelab plan: {msg}", file=sys.stderr, end="" if step else "\n", flush=True)
    else:
        print(f"judgelab plan: {msg}", file=sys.stderr, flush=True)


def _describe(job: Any) -> str:
    w = ", ".join(f"{k}={v}" for k, v in dict(job.wildcards).items())
    return job.rule.name + (f" ({w})" if w else "")


class _JobsGC:
    """Keep Python's cycle collector to each job's own objects, once, while a plan runs its jobs.

    A plan keeps what its jobs leave (the stand-ins' cache, the memos of shared payloads:
    millions of objects in a paper-size plan), and the collector's full passes would walk them
    all again and again as they pile up (a sixth of a paper-size plan's time).  So the objects
    alive when the jobs start and after each job (:meth:`job_done`) are frozen
    (:func:`gc.freeze`): the collector skips them.  Within a job the automatic passes are off too:
    one job can make millions of objects that live until it ends (a paper-size uda tournament's
    requests, answers and rows, an rbd evaluator's loop), and the passes would walk each of them
    in every young generation and in each full pass as they pile up (a tenth of an rbd or uda plan's
    time, with the freezing at job ends); one pass at each job's end (:meth:`job_done`) walks what
    the job left once and collects its garbage cycles before that is frozen.  Nothing is lost:
    what the jobs make unreachable is mostly acyclic (requests, answers, payload JSON), freed by
    its reference count at once; a garbage cycle waits until its job ends, or, among frozen
    objects, until the jobs end, when they are unfrozen and collected as usual (a paper-size plan
    peaks at the same memory either way)."""

    def __enter__(self) -> _JobsGC:
        self._enabled = gc.isenabled()
        gc.freeze()
        gc.disable()
        return self

    @staticmethod
    def job_done() -> None:
        gc.collect()
        gc.freeze()

    def __exit__(self, *exc: object) -> None:
        gc.unfreeze()
        if self._enabled:  # as it was: a caller that turned the collector off keeps it off
            gc.enable()


def plan_calls(config: dict[str, Any], workdir: Path, targets: Sequence[str] = (), *,
               progress: bool = True, keep_cache: bool = False) -> tuple[Path, dict[str, dict[str, Any]]]:
    """Enumerate the calls of a run of ``targets`` on stand-ins, in this process; return the plan
    log and the entries of the models asked that are no config judge (:attr:`PlanContext.models`).

    The DAG (:func:`dag_jobs`) is built on the stand-in config, with the jobs' role checks
    reading the real one (``ROLE_CONFIG_ENV``), as a real run's DAG would be checked.  Each job
    whose rule has a planner (:func:`judgelab.workflow.calls.rule_calls`) then runs it, in DAG order:
    the job's requests are built by the study's own builders and answered by the stand-ins
    through a cache in memory (written to ``workdir/plan-cache.sqlite`` with ``keep_cache``), and
    :func:`judgelab.judges.runner.run_requests` logs each distinct call.
    """
    from types import SimpleNamespace

    from judgelab.workflow.calls import PlanCache, PlanContext, rule_calls

    workdir = workdir.resolve()
    _scratch(workdir)
    stand_in, _ = stand_in_config(config)
    stand_in["cache"] = str(workdir / "plan-cache.sqlite")
    cfg_path = workdir / "plan-config.yaml"
    cfg_path.write_text(yaml.safe_dump(stand_in, sort_keys=False), encoding="utf-8")
    plan_log = workdir / "plan-calls.jsonl"
    plan_log.unlink(missing_ok=True)
    real_path = workdir / "plan-real-config.yaml"
    real_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    started = time.monotonic()
    _progress(f"reading the workflow's DAG for {' '.join(targets) or 'the default target'} ...", progress)
    with _Env(**{ROLE_CONFIG_ENV: str(real_path)}):
        jobs = dag_jobs(workdir, cfg_path, targets)
    planners = rule_calls()
    unplanned = sorted({j.rule.name for j in jobs if j.rule.name not in planners and _runs_a_model(j)})
    if unplanned:  # a call-making job nobody counts would be a silent hole in the plan
        raise UnplannedRule(f"cannot count the calls of rule{'s' if len(unplanned) > 1 else ''} "
                            f"{', '.join(unplanned)}: no planner for it, and it runs a judge or a model "
                            f"(a RULES entry in a judgelab/<study>/calls.py says what each rule asks)")
    made = {str(f): j for j in jobs for f in j.output}
    run = [j for j in jobs if j.rule.name in planners]
    for j in run:  # a planned job reads only what planned jobs write (or what exists already)
        for f in j.input:
            src = made.get(str(f))
            if src is not None and src.rule.name not in planners:
                raise UnplannedRule(f"cannot count the calls of {_describe(j)}: it reads {f}, which rule "
                                    f"{src.rule.name} writes and no planner makes (a RULES entry in a "
                                    f"judgelab/<study>/calls.py)")
    _progress(f"{len(jobs)} jobs in the DAG, {len(run)} make calls or write what calls are built from "
              f"({time.monotonic() - started:.1f} s)", progress)
    cwd = os.getcwd()
    with _Env(**{PLAN_LOG_ENV: str(plan_log), "JUDGELAB_PROGRESS": "0"}), PlanCache() as cache, _JobsGC():
        ctx = PlanContext(cache)
        try:
            os.chdir(workdir)  # the jobs' paths are relative to the workflow's directory, as in a run
            for i, job in enumerate(run, 1):
                _progress(f"[{i}/{len(run)}] {_describe(job)}", progress, step=True)
                cache.plan_rule = job.rule.name  # the plan log's study column
                planners[job.rule.name](SimpleNamespace(params=job.params, input=job.input, output=job.output,
                                                        wildcards=job.wildcards, rule=job.rule.name,
                                                        threads=job.threads), ctx)
                _JobsGC.job_done()
        finally:
            os.chdir(cwd)
            ctx.close()
    if keep_cache:
        cache.save(workdir / "plan-cache.sqlite")
    _progress(f"calls enumerated in {time.monotonic() - started:.1f} s", progress)
    return plan_log, ctx.models


def cached_payloads(cache_path: Path, judges: Sequence[str]) -> dict[str, set[str]]:
    """Payload hashes of the calls the real cache holds, per judge (empty if no cache)."""
    out: dict[str, set[str]] = {j: set() for j in judges}
    if not cache_path.exists():
        return out
    from judgelab.cache import CallCache

    with CallCache(cache_path) as cache:
        for j in judges:
            for call in cache.iter_calls(judge=j):
                req = cache.request(call.key)
                if req is not None:
                    out[j].add(sha256_hex(canonical_json(req)))
    return out


def _max_tokens(spec: JudgeSpec, task: str, param: Any) -> int:
    """The output limit a real request of this task gets (judgelab.judges.base.Judge.sampling_for)."""
    if param is not None and not pd.isna(param):  # (a log column mixing limits and None reads as NaN)
        return int(param)
    limit_key = "max_completion_tokens" if (spec.sampling.get("max_completion_tokens") is not None
                                            and spec.sampling.get("max_tokens") is None) else "max_tokens"
    if task in spec.output_limits or spec.sampling.get(limit_key) is None:
        return spec.output_limit(task)
    return int(spec.sampling[limit_key])


#: The ``study`` of a judge's total row: every distinct call of that judge, each counted once.
ALL_STUDIES = "(all studies)"


def _plan_row(judge: str, study: str, g: pd.DataFrame, spec: JudgeSpec, rules: set[str]) -> dict[str, Any]:
    """The counts, tokens and prices of the distinct calls ``g`` (one row per payload) that
    the rules ``rules`` need."""
    todo = g[~g["cached"]]
    t_in = int((todo["chars_in"] // 4).sum())
    t_out = int(todo["est_out"].sum())
    t_max = int(todo["limit"].sum())
    branching = sorted(rules & set(ANSWER_DEPENDENT_RULES))
    return {
        "judge": judge, "study": study, "backend": spec.backend, "model": spec.model, "calls": len(g),
        "cached": int(g["cached"].sum()), "to_call": len(todo), "est_tokens_in": t_in, "est_tokens_out": t_out,
        "max_tokens_out": t_max, "est_usd": round(spec.price.cost(t_in, t_out), 4),
        "max_usd": round(spec.price.cost(t_in, t_max), 4),
        "est_batch_usd": round(spec.price.batch_cost(t_in, t_out), 4),
        "max_batch_usd": round(spec.price.batch_cost(t_in, t_max), 4),
        "note": ("counts follow the stand-in's answers in " + ", ".join(branching)) if branching else "",
    }


def _read_log(plan_log: Path) -> pd.DataFrame:
    """The plan log (JSON lines, :func:`judgelab.judges.runner.run_requests`) as a table, read by
    pyarrow's JSON reader with the log's schema (a missing number reads as NaN)."""
    import pyarrow as pa
    import pyarrow.json as pj

    schema = pa.schema([("judge", pa.string()), ("rule", pa.string()), ("label", pa.string()),
                        ("payload_sha", pa.string()), ("task", pa.string()), ("max_tokens_param", pa.int64()),
                        ("chars_in", pa.int64()), ("tokens_out", pa.int64()), ("new", pa.bool_())])
    return pj.read_json(plan_log, parse_options=pj.ParseOptions(explicit_schema=schema)).to_pandas()


def summarise(plan_log: Path, originals: dict[str, dict[str, Any]], cache_path: Path) -> pd.DataFrame:
    """One row per judge and study (the rule's prefix), then one :data:`ALL_STUDIES` row per judge.

    A call two studies need (the same request payload, e.g. the LLMBar pairs the orders study and
    topk studies both ask) is counted under *each* study's row, although a run asks it once;
    the judge's :data:`ALL_STUDIES` row counts every distinct call once and is what a run pays.
    """
    if not plan_log.exists() or plan_log.stat().st_size == 0:
        return pd.DataFrame(columns=PLAN_COLUMNS)
    calls = _read_log(plan_log)
    calls["study"] = [r.split("_", 1)[0] or "(outside a rule)" for r in calls["rule"].tolist()]
    have = cached_payloads(cache_path, sorted(calls["judge"].unique()))
    # (the columns as lists: iterating the reader's Arrow-backed columns costs seconds on a paper-size log)
    calls["cached"] = [p in have.get(j, set()) for j, p in zip(calls["judge"].tolist(), calls["payload_sha"].tolist(),
                                                             strict=True)]
    out = []
    for key, jg in calls.groupby("judge", sort=True):
        judge = str(key)
        entry = originals.get(judge, {"name": judge, "backend": "unknown", "model": "?"})
        spec = JudgeSpec.from_dict(entry, where=f"judge {judge}")
        params = [None if pd.isna(p) else int(p) for p in jg["max_tokens_param"].tolist()]
        tasks = jg["task"].tolist()
        limits = {tp: _max_tokens(spec, *tp) for tp in set(zip(tasks, params, strict=True))}  # a few
        jg = jg.assign(limit=[limits[tp] for tp in zip(tasks, params, strict=True)])
        # a stand-in's answer may run longer than the real request allows; the real one stops there
        jg = jg.assign(est_out=np.minimum(jg["tokens_out"].fillna(0).to_numpy(), jg["limit"].to_numpy()))
        # (the rules as a set of the column's distinct values: iterating an Arrow-backed column row by
        # row costs seconds on a paper-size log)
        for study, g in jg.groupby("study", sort=True):
            out.append(_plan_row(judge, str(study), g.drop_duplicates("payload_sha"), spec, set(g["rule"].unique())))
        out.append(_plan_row(judge, ALL_STUDIES, jg.drop_duplicates("payload_sha"), spec, set(jg["rule"].unique())))
    return pd.DataFrame(out, columns=PLAN_COLUMNS)


def uncached_payloads(plan_log: Path, cache_path: Path) -> dict[str, list[str]]:
    """Per judge, the payload hashes of the planned calls the real cache lacks (a plan's
    ``to_call``), each once, in plan order: what ``--batch-dir`` exports."""
    if not plan_log.exists() or plan_log.stat().st_size == 0:
        return {}
    calls = _read_log(plan_log)[["judge", "payload_sha"]].drop_duplicates()
    have = cached_payloads(cache_path, sorted(calls["judge"].unique()))
    return {str(j): [s for s in g["payload_sha"] if s not in have.get(str(j), set())]
            for j, g in calls.groupby("judge", sort=True)}


def plan(configfiles: Sequence[str | os.PathLike[str]], *, targets: Sequence[str] = (), directory: str | None = None,
         scratch: str | None = None, progress: bool = True, batch_dir: str | os.PathLike[str] | None = None,
         keep_cache: bool | None = None) -> pd.DataFrame:
    """Plan a run of ``targets`` (default: everything) with the given config files.

    ``directory`` is the project directory whose call cache (``cache`` in the config,
    relative to it) counts as already asked; default: the current directory.  ``batch_dir``:
    also write the calls not yet cached as provider batch input files there
    (:func:`judgelab.batch.export.export_batches`; the stand-ins' cache is kept for it).
    ``scratch``: a folder kept after the plan, with its call log (``plan-calls.jsonl``) and, unless
    ``keep_cache`` is false, the stand-ins' answers (``plan-cache.sqlite``; writing every request
    of a paper-size plan there costs more than the plan itself, so a caller that reads only the
    log says ``keep_cache=False``).
    """
    paths = [*default_config_paths(), *[Path(p).resolve() for p in configfiles]]
    config = load_config(*paths)
    fill_output_limits(config)
    _, originals = stand_in_config(config)
    base = Path(directory or os.getcwd()).resolve()
    cache_path = Path(config["cache"])
    cache_path = cache_path if cache_path.is_absolute() else base / cache_path
    if batch_dir is not None:
        from judgelab.batch.export import check_batch_dir

        check_batch_dir(Path(batch_dir))  # refused before any work
    with tempfile.TemporaryDirectory(prefix="judgelab-plan-") as tmp:
        workdir = Path(scratch or tmp)  # a scratch folder is kept (plan-cache.sqlite: the stand-ins' answers)
        keep = bool(scratch) if keep_cache is None else keep_cache
        plan_log, models = plan_calls(config, workdir, targets, progress=progress,
                                      keep_cache=keep or batch_dir is not None)
        table = summarise(plan_log, {**models, **originals}, cache_path)
        if batch_dir is not None:
            from judgelab.batch.export import export_batches

            table.attrs["batch_export"] = export_batches(
                Path(batch_dir), uncached_payloads(plan_log, cache_path), workdir / "plan-cache.sqlite",
                {**models, **originals}, cache_path, progress=progress)
        return table


def format_plan(table: pd.DataFrame) -> str:
    """The plan as text: the per-study rows, each judge's :data:`ALL_STUDIES` row, and a
    TOTAL over those (so a call two studies share is paid once in the total)."""
    if table.empty:
        return "nothing to ask: every call of this run is already in the cache (or it asks no judge)\n"
    shown = table.drop(columns=["note"])
    per_judge = shown[shown["study"] == ALL_STUDIES]
    total: dict[str, str | int | float] = {"judge": "TOTAL", "study": ALL_STUDIES, "backend": "", "model": ""}
    for c in ("calls", "cached", "to_call", "est_tokens_in", "est_tokens_out", "max_tokens_out", "est_usd", "max_usd",
              "est_batch_usd", "max_batch_usd"):
        total[c] = round(float(per_judge[c].sum()), 4) if c.endswith("usd") else int(per_judge[c].sum())
    text = pd.concat([shown, pd.DataFrame([total])], ignore_index=True).to_string(index=False)
    batch = ("batch prices: the calls sent as provider batch jobs (judgelab plan --batch-dir), at the list price less "
             "the judge's price.batch_discount (none configured: the list price)")
    notes = sorted({n for n in table.loc[table["study"] != ALL_STUDIES, "note"] if n})
    shared = ("a call several studies need is counted under each study; a judge's "
              f"'{ALL_STUDIES}' row and TOTAL count it once (what a run asks and pays)")
    return text + "\n" + f"note: {shared}\n" + f"note: {batch}\n" + "".join(f"note: {n}\n" for n in notes)
