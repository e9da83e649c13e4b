"""The step functions of the judge-calling rules, and the context ``judgelab plan`` runs them in.

Why one function per step.  A rule's script and ``judgelab plan`` run the same function: a plan
must count exactly the requests a run sends, and the surest way is that nothing is written
twice.  Each study declares its steps in ``judgelab/<study>/calls.py`` as ``RULES``: rule name ->
step function ``(job, ctx)``.  ``job`` has the attributes of a rule script's ``snakemake``
object (``params``, ``input``, ``output``, ``wildcards``, ``rule``); ``ctx`` is a
:class:`StepContext`.  The step reads its inputs, builds its requests with the study's own
builders (:func:`judgelab.judges.pairwise.judge_pairs`, ``judgelab.strategies.run.query_strategies``,
...), asks its judges through ``ctx.cache``, and writes every output of the rule through
``ctx.write_table``.  The rule's script is one line, ``run_step(snakemake, <step>)``
(:func:`judgelab.workflow.run_step`; ``tests/workflow/test_steps.py`` checks each script names
its rule's step).

The context decides what differs between the two:

* in a rule's job (:class:`judgelab.workflow.RunContext`) the cache is the configured call cache,
  the judges are the configured ones, tables carry the job's provenance, and models are trained
  and loaded;
* in a plan (:class:`PlanContext`) one in-memory cache answers through simulated stand-ins,
  tables are written plainly to the plan's scratch folder, and nothing is trained or loaded
  (``ctx.loads_models`` is false: a step that trains a model does nothing, a trained detector
  is asked through a stand-in of the same name).

A plan runs the DAG's jobs one after another in this process, with each job's own params -- no
Snakemake run, no job process -- and only the jobs that make calls or write a table a call is
built from (:func:`rule_calls` says which).  This module holds the backbone's own steps (the
both-orders study) and finds the studies' modules by name (:func:`rule_calls`), so the backbone
names no study (``tests/project/test_layering.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from judgelab.cache import CachedCall, CallCache, CallStore
from judgelab.config import JudgeSpec
from judgelab.judges.base import Judge
from judgelab.records import canonical_json

if TYPE_CHECKING:
    import pandas as pd


class StepContext(Protocol):
    """What a step function runs with: the one thing that differs between a rule's job and a plan.

    A step asks its judges only through :attr:`cache` and :meth:`judge`, and writes only through
    :meth:`write_table` / :meth:`write_jsonl`, so the same function runs in both."""

    #: whether the job trains and loads models of its own (a detector's fine-tuning, the
    #: embedder, the adapters): a rule's job does; a plan, which counts calls, trains nothing
    loads_models: bool
    #: what several reads of one context share (a study's parsed input files), kept once
    memo: dict[Any, Any]
    #: entries of the models asked that are no config judge (a detector the run trains), by name
    models: dict[str, dict[str, Any]]

    @property
    def cache(self) -> CallStore:
        """The call cache the job's requests go through."""
        ...

    def judge(self, entry: Mapping[str, Any], where: str | None = None) -> Judge:
        """The judge of a config entry, built once per entry and closed with the context;
        ``where`` names the entry in an error (default: ``judge <name>``)."""
        ...

    def own(self, judge: Judge) -> Judge:
        """Close ``judge`` (built by the step itself, e.g. a trained detector) with the context."""
        ...

    def write_table(self, df: pd.DataFrame, path: str | os.PathLike[str], *, names_judges: bool = True) -> None:
        """Write one output table of the job.  ``names_judges=False``: the table is built from
        data alone (a pair set, a tournament), so its provenance names no judge."""
        ...

    def write_jsonl(self, path: str | os.PathLike[str], rows: list[dict[str, Any]]) -> None:
        """Write one output JSON-lines file of the job."""
        ...


#: A rule's step function: ``fn(job, ctx)`` makes the job's calls through ``ctx`` and writes its outputs.
RuleCalls = Callable[[Any, StepContext], None]


class PlanCache:
    """The stand-ins' answers of one plan, in memory: the part of :class:`~judgelab.cache.CallCache`
    that :func:`judgelab.judges.runner.run_requests` uses, without SQLite writes or compressing every
    request (a plan answers tens of thousands of calls it never reads back from disk).
    :meth:`save` writes them to a cache file where a caller keeps them.

    ``plan_rule``: the rule of the job being planned, set by :func:`judgelab.workflow.plan.plan_calls`
    before each job; :func:`judgelab.judges.runner.run_requests` logs each call under it."""

    def __init__(self) -> None:
        self.plan_rule = ""
        self._calls: dict[str, CachedCall] = {}
        self._requests: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> CachedCall | None:
        return self._calls.get(key)

    def get_many(self, keys: Sequence[str]) -> dict[str, CachedCall]:
        return {k: self._calls[k] for k in keys if k in self._calls}

    def __contains__(self, key: str) -> bool:
        return key in self._calls

    def __len__(self) -> int:
        return len(self._calls)

    def iter_calls(self, judge: str | None = None) -> Iterator[CachedCall]:
        return (c for c in list(self._calls.values()) if judge is None or c.judge == judge)

    def request(self, key: str) -> dict[str, Any] | None:
        return self._requests.get(key)

    def put_many(self, calls: Iterable[tuple[CachedCall, dict[str, Any]]]) -> int:
        n = 0
        for c, req in calls:  # first answer wins, as in the cache
            if c.key not in self._calls:
                self._calls[c.key], self._requests[c.key] = c, req
                n += 1
        return n

    def record_failures(self, failures: Iterable[tuple[str, str, str, str, str]]) -> None:
        """A stand-in does not fail; a failure would be asked again, so nothing is kept."""

    def record_run(self, **kwargs: Any) -> None:
        """Runs are not recorded in a plan."""

    def save(self, path: str | os.PathLike[str]) -> None:
        with CallCache(Path(path)) as cache:
            cache.put_many((c, self._requests[k]) for k, c in self._calls.items())

    def close(self) -> None:
        pass

    def __enter__(self) -> PlanCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class PlanContext:
    """What a planned job runs with (:class:`StepContext`): one call cache in memory for the whole
    plan, each judge entry built once, plain tables in the plan's scratch folder, no model loaded."""

    cache: PlanCache
    #: what several jobs of one plan read alike (a study's parsed input files), kept once
    memo: dict[Any, Any] = field(default_factory=dict)
    #: entries of the models a run asks that are no config judge (a detector the run trains), by
    #: name: a step that asks a stand-in for one names here what the run would ask, so the plan
    #: prices it and takes its output limit (the worst case) from it
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: a plan trains and loads no model: a trained detector answers through a stand-in
    loads_models: bool = False
    _judges: dict[str, Judge] = field(default_factory=dict)
    _owned: list[Judge] = field(default_factory=list)

    def judge(self, entry: Mapping[str, Any], where: str | None = None) -> Judge:
        """The judge of a config entry (as the rule's job builds it), built once per entry."""
        return build_judge(self._judges, entry, where)

    def own(self, judge: Judge) -> Judge:
        self._owned.append(judge)
        return judge

    def write_table(self, df: pd.DataFrame, path: str | os.PathLike[str], *, names_judges: bool = True) -> None:
        from judgelab.io import write_table

        write_table(df, path)

    def write_jsonl(self, path: str | os.PathLike[str], rows: list[dict[str, Any]]) -> None:
        from judgelab.io import write_jsonl

        write_jsonl(path, rows)

    def close(self) -> None:
        for j in [*self._judges.values(), *self._owned]:
            j.close()
        self._judges.clear()
        self._owned.clear()


def build_judge(built: dict[str, Judge], entry: Mapping[str, Any], where: str | None = None) -> Judge:
    """The judge of ``entry`` from ``built`` (a context's judges by entry), built there once."""
    from judgelab.judges import make_judge

    key = canonical_json(dict(entry))
    if key not in built:
        built[key] = make_judge(JudgeSpec.from_dict(dict(entry), where=where or f"judge {entry.get('name')}"))
    return built[key]


# -- the backbone's own rules: the both-orders study (rules/orders.smk) ----------------------------------
def orders_pairs(job: Any, ctx: StepContext) -> None:
    """orders_pairs: a public pair set into the pairs table, sampled as config ``orders.n_pairs`` says
    (a seeded sample, kept in stored order)."""
    from judgelab.datasets.pairs import load_pairset, pairs_frame

    spec, prov = job.params.spec, job.params.provenance
    table = pairs_frame(load_pairset(spec["loader"], spec["source"], name=job.wildcards.dataset))
    n = spec.get("n_pairs")
    if n and n < len(table):
        table = table.sample(n=int(n), random_state=int(prov["seed"])).sort_index().reset_index(drop=True)
    ctx.write_table(table, job.output[0], names_judges=False)


def orders_query(job: Any, ctx: StepContext) -> None:
    """orders_query: one judge answers every pair of a pair set, in the configured orders."""
    from judgelab.datasets.pairs import load_pairs
    from judgelab.judges.pairwise import judge_pairs

    q = job.params.q
    table = judge_pairs(ctx.judge(q["judge"], where=f"judge {job.wildcards.judge}"), load_pairs(job.input[0]),
                        ctx.cache, template=q["template"], orders=q["orders"], label=job.wildcards.dataset,
                        max_error_rate=q["max_error_rate"])
    ctx.write_table(table, job.output[0])


RULES: dict[str, RuleCalls] = {"orders_pairs": orders_pairs, "orders_query": orders_query}


def rule_calls() -> dict[str, RuleCalls]:
    """Every rule's step function: this module's and each ``judgelab.<package>.calls`` module's ``RULES``.

    The study modules are found by walking the package, not imported by name: the backbone
    stays below the studies, and a new study plugs in by adding its ``calls.py``."""
    import judgelab

    out = dict(RULES)
    for info in sorted(pkgutil.iter_modules(judgelab.__path__), key=lambda i: i.name):
        name = f"judgelab.{info.name}.calls"
        if name == __name__:  # this module: its RULES are in already
            continue
        # looked up as a file first: find_spec would import every package (plots, board, ...) to ask
        folder = getattr(info.module_finder, "path", None)  # a FileFinder's folder
        if not info.ispkg or (folder is not None and not (Path(folder) / info.name / "calls.py").is_file()) \
                or importlib.util.find_spec(name) is None:
            continue
        rules = getattr(importlib.import_module(name), "RULES", {})
        for rule, fn in rules.items():
            if rule in out:
                raise ValueError(f"rule {rule!r} has two step functions ({name} and another)")
            out[rule] = fn
    return out
