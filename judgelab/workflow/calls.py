"""The calls each judge-calling rule of the workflow makes, enumerated in-process for ``judgelab plan``.

Why this module.  A plan must count exactly the requests a run sends, and most requests are
built from tables that earlier rules write (pair sets, generated texts, teacher traces).  The
requests are therefore built by the same library functions the rule scripts call (the study's
own request and prompt builders: :func:`judgelab.judges.pairwise.judge_pairs`,
``judgelab.strategies.run.query_strategies``, ...), in this process, one job of the Snakemake
DAG after another, with the job's own params -- no Snakemake run, no job process, no model
training, statistics or figures.  Only the jobs that make calls, or write a table a call is
built from, are run (:func:`rule_calls` says which).

Each study declares its rules in ``judgelab/<study>/calls.py`` as ``RULES``: rule name ->
function ``(job, ctx)``, where ``job`` has the attributes a rule script's ``snakemake`` object
has (``params``, ``input``, ``output``, ``wildcards``, ``rule``) and ``ctx`` is the
:class:`PlanContext` (the judges, built once per entry, and one call cache).  A function does
what its rule script does, minus provenance and logging, and writes the tables later jobs read.
This module holds the backbone's own rules (the pairwise audit) and finds the studies' modules
by name (:func:`rule_calls`), so the backbone names no study (``tests/test_layering.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgelab.cache import CachedCall, CallCache
from judgelab.config import JudgeSpec
from judgelab.judges.base import Judge
from judgelab.records import canonical_json

#: A rule's planner: ``fn(job, ctx)`` makes the job's calls through ``ctx`` and writes its tables.
RuleCalls = Callable[[Any, "PlanContext"], None]


class PlanCache:
    """The stand-ins' answers of one plan, in memory: the part of :class:`~judgelab.cache.CallCache`
    that :func:`judgelab.judges.runner.run_requests` uses, without SQLite writes or compressing every
    request (a plan answers tens of thousands of calls it never reads back from disk).
    :meth:`save` writes them to a cache file where a caller keeps them."""

    def __init__(self) -> None:
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
    """What a planned job runs with: one call cache, and each judge entry built once."""

    cache: PlanCache
    #: what several jobs of one plan read alike (a study's parsed input files), kept once
    memo: dict[Any, Any] = field(default_factory=dict)
    #: entries of the models a run asks that are no config judge (a detector the run trains), by
    #: name: a planner that asks a stand-in for one names here what the run would ask, so the plan
    #: prices it and takes its output limit (the worst case) from it
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    _judges: dict[str, Judge] = field(default_factory=dict)

    def judge(self, entry: Mapping[str, Any]) -> Judge:
        """The judge of a config entry (as the rule's script builds it), built once per entry."""
        from judgelab.judges import make_judge

        key = canonical_json(dict(entry))
        if key not in self._judges:
            self._judges[key] = make_judge(JudgeSpec.from_dict(dict(entry), where=f"judge {entry.get('name')}"))
        return self._judges[key]

    def close(self) -> None:
        for j in self._judges.values():
            j.close()
        self._judges.clear()


def no_calls(job: Any, ctx: PlanContext) -> None:
    """The planner of a rule that loads a model but asks no judge (embeddings, training)."""


# -- the backbone's own rules: the pairwise audit (rules/audit.smk) ----------------------------------
def audit_pairs(job: Any, ctx: PlanContext) -> None:
    """``workflow_scripts/build_pairs.py``: the public pair set, sampled as the rule samples it."""
    from judgelab.datasets.pairs import load_pairset, pairs_frame
    from judgelab.io import write_table

    spec, prov = job.params.spec, job.params.provenance
    table = pairs_frame(load_pairset(spec["loader"], spec["source"], name=job.wildcards.dataset))
    n = spec.get("n_pairs")
    if n and n < len(table):
        table = table.sample(n=int(n), random_state=int(prov["seed"])).sort_index().reset_index(drop=True)
    write_table(table, job.output[0])


def audit_query(job: Any, ctx: PlanContext) -> None:
    """``workflow_scripts/query_pairs.py``: one judge, every pair, each order."""
    from judgelab.datasets.pairs import load_pairs
    from judgelab.judges.pairwise import judge_pairs

    q = job.params.q
    judge_pairs(ctx.judge(q["judge"]), load_pairs(job.input[0]), ctx.cache, template=q["template"],
                orders=q["orders"], label=job.wildcards.dataset, max_error_rate=q["max_error_rate"])


RULES: dict[str, RuleCalls] = {"audit_pairs": audit_pairs, "audit_query": audit_query}


def rule_calls() -> dict[str, RuleCalls]:
    """Every rule's planner: this module's and each ``judgelab.<package>.calls`` module's ``RULES``.

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
                raise ValueError(f"rule {rule!r} has two planners ({name} and another)")
            out[rule] = fn
    return out
