"""Each study's DAG is planned by one function in its package (``judgelab/<study>/plan.py``);
the workflow calls it through :func:`plan_study`, which defers a bad config to that study's
own targets.

Why: one Snakemake workflow holds every study, and a config error raised while the workflow
is parsed stops every target, including another study's.  With the error deferred, the
study's rules are not included (Snakefile) and one catch-all rule owns its output folder
(rules/config_errors.smk): a target of that study stops there, naming the config key, and the
targets of every other study plan as if it were not there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from judgelab.config import ConfigError
from judgelab.datasets.sources import DataMissing
from judgelab.io import InputError
from judgelab.registry import UnknownEntryError

#: What a study's planning raises for a bad config or missing input (anything else is a bug).
PLAN_ERRORS = (ConfigError, InputError, UnknownEntryError, DataMissing)
#: The studies the workflow plans, each with its output folder ``results/<study>/``.
STUDIES = ("orders", "audit_logs", "strategies", "scoring", "topk", "uda", "rbd")


@dataclass
class StudyPlan:
    """A study's plan (whatever its planning function returns), or the error that stopped it."""

    study: str
    plan: Any = None
    error: Exception | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def failed_outputs(self) -> list[str]:
        """What ``rule all`` asks of a study whose planning failed: one file of its output
        folder, which only the study's catch-all rule makes (and that rule raises the error);
        nothing when it planned (the study's rules then give its outputs)."""
        return [] if self.ok else [f"results/{self.study}/config_error"]

    def raise_error(self, wildcards: Any = None) -> list[str]:
        """Input function of the study's catch-all rule: raise the planning error."""
        assert self.error is not None
        raise self.error


def plan_study(study: str, planner: Callable[..., Any], *args: Any, **kwargs: Any) -> StudyPlan:
    """Run one study's planning function; a config error is kept, not raised."""
    try:
        return StudyPlan(study, planner(*args, **kwargs))
    except PLAN_ERRORS as e:
        return StudyPlan(study, error=e)


def check_template(name: str, where: str, entries: Mapping[str, Mapping[str, Any]]) -> None:
    """An unknown prompt template, the study's or any judge entry's own, is a config error."""
    from judgelab.prompts import PAIRWISE_TEMPLATES

    PAIRWISE_TEMPLATES.get(name, where=where)
    for n, d in entries.items():
        t = (d.get("options") or {}).get("prompt_template")
        if t is not None:
            PAIRWISE_TEMPLATES.get(t, where=f"judge {n!r} options/prompt_template")
