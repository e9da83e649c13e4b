"""The command-line arguments every command reading recorded verdicts shares (``judgelab audit``,
``judgelab detect-bias``): the files, the format (a preset or a mapping file), side tables, and
the judge's name and family when the log does not say them."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from judgelab.config import ConfigError, load_yaml


def add_log_arguments(p: argparse.ArgumentParser) -> None:
    from judgelab.verdict_import.presets import PRESETS

    p.add_argument("files", nargs="+", help="recorded-verdict files (JSON/JSONL/CSV/TSV/parquet) or folders")
    p.add_argument("--format", help=f"log format preset: {', '.join(PRESETS.names())}")
    p.add_argument("--mapping", help="YAML file with a custom column mapping (or {preset: NAME, ...overrides})")
    p.add_argument("--table", action="append", metavar="NAME=PATH",
                   help="side table of the mapping, e.g. answers=model_answer/ questions=question.jsonl")
    p.add_argument("--judge", help="judge name when the log does not name it (default: file stem)")
    p.add_argument("--family", help="judge model family when it cannot be inferred (for self-preference)")


def add_names_argument(p: argparse.ArgumentParser) -> None:
    """``--names CSV``, declared once for the commands whose reports name models or judges
    (``judgelab audit``, ``judgelab leaderboard``); read by :func:`display_names_from_args`."""
    p.add_argument("--names", metavar="CSV",
                   help="display names for the reports: a CSV with columns name,display_name, or AlpacaEval's "
                        "published leaderboard CSV (its results folder -> its name); unlisted names stay as they "
                        "are in the logs")


def display_names_from_args(args: argparse.Namespace) -> dict[str, str]:
    """{name in the logs: display name} of ``--names`` ({} without it); a malformed file stops
    with one line naming it (InputError)."""
    from judgelab.verdict_import.names import read_display_names

    return read_display_names(args.names) if getattr(args, "names", None) else {}


def side_tables(specs: list[str] | None) -> dict[str, list[str]]:
    """``--table NAME=PATH`` options as {name: [paths]}."""
    out: dict[str, list[str]] = {}
    for s in specs or []:
        name, sep, path = s.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--table wants NAME=PATH, got {s!r}")
        out.setdefault(name, []).append(path)
    return out


def verdicts_from_args(args: argparse.Namespace, *, texts: bool = True) -> pd.DataFrame:
    """The recorded verdict table the arguments of :func:`add_log_arguments` name (never empty);
    ``texts=False``: the responses as their features only (what the bias card reads)."""
    from judgelab.verdict_import.importer import import_verdicts
    from judgelab.verdict_import.presets import mapping_from_config

    if bool(args.format) == bool(args.mapping):
        raise ConfigError("give exactly one of --format PRESET or --mapping FILE")
    mapping = (mapping_from_config(load_yaml(Path(args.mapping)), where=str(args.mapping)) if args.mapping
               else mapping_from_config(args.format))
    table = import_verdicts(args.files, mapping, tables=side_tables(args.table), judge=args.judge,
                            family=args.family, texts=texts)
    if table.empty:
        raise ConfigError(f"no verdicts in {', '.join(args.files)}")
    return table
