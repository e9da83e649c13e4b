"""Glue for the thin rule scripts in ``workflow_scripts/``: logging and provenance.

A rule script does three things: read ``snakemake.input``/``params``, call the
library, write ``snakemake.output``.  The boilerplate around that (log file, the
provenance record every table carries, a clear one-line error instead of a
traceback for bad input) lives here.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from judgelab.config import ConfigError
from judgelab.io import InputError


def setup_logging(log_path: str | None = None, level: int = logging.INFO) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        handlers.append(logging.FileHandler(log_path, mode="w", encoding="utf-8"))
    logging.basicConfig(level=level, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # HTTP client libraries log full request lines at INFO; keep them quiet.
    for noisy in ("httpx", "httpcore", "openai", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run_script(snakemake: Any, main: Callable[[Any], None]) -> None:
    """Run a rule script's ``main(snakemake)`` with logging and clean error exits.

    Expected user errors (bad config, malformed input, missing data, an unavailable
    backend) end the job with one readable line and exit status 1; anything else
    keeps its traceback.
    """
    from judgelab.datasets.sources import DataMissing
    from judgelab.judges.base import BackendUnavailable
    from judgelab.registry import UnknownEntryError
    from judgelab.runner import TooManyErrors

    log_path = snakemake.log[0] if len(snakemake.log) else None
    setup_logging(log_path)
    try:
        main(snakemake)
    except (ConfigError, InputError, DataMissing, BackendUnavailable, UnknownEntryError, TooManyErrors) as exc:
        logging.getLogger("judgelab").error("%s: %s", type(exc).__name__, exc)
        print(f"judgelab error ({snakemake.rule}): {exc}", file=sys.stderr)
        sys.exit(1)


def provenance(config_hash: str, seed: int, judges: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The provenance columns of a table: config hash, pipeline seed, judge ids/seeds."""
    prov: dict[str, Any] = {"config_hash": config_hash, "pipeline_seed": int(seed)}
    if judges is not None:
        prov["judge_ids"] = ",".join(sorted(j["name"] for j in judges))
        prov["judge_seeds"] = ",".join(
            f"{j['name']}={(j.get('sampling') or {}).get('seed', 0)}" for j in sorted(judges, key=lambda j: j["name"])
        )
        prov["simulated"] = any(j["backend"] == "simulated" for j in judges)
    return prov
