"""CLI subcommands ``judgelab audit`` and ``judgelab leaderboard-length`` (registered by judgelab.cli).

    judgelab audit --format arena_hard judgments/*.jsonl --table answers=model_answer/ --out audit/
    judgelab audit --mapping my_log.yaml logs/*.csv --out audit/
    judgelab leaderboard-length leaderboard.csv [--score-col win_rate --length-col avg_length] [--out t.csv]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from judgelab.config import ConfigError, load_yaml


def _tables(specs: list[str] | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s in specs or []:
        name, sep, path = s.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--table wants NAME=PATH, got {s!r}")
        out.setdefault(name, []).append(path)
    return out


def cmd_audit(args: argparse.Namespace) -> int:
    from judgelab.bias_card.card import CardSettings
    from judgelab.bias_card.report import write_audit
    from judgelab.verdict_import import import_verdicts, mapping_from_config

    if bool(args.format) == bool(args.mapping):
        raise ConfigError("give exactly one of --format PRESET or --mapping FILE")
    if args.mapping:
        mapping = mapping_from_config(load_yaml(Path(args.mapping)), where=str(args.mapping))
    else:
        mapping = mapping_from_config(args.format)
    table = import_verdicts(args.files, mapping, tables=_tables(args.table), judge=args.judge, family=args.family)
    if table.empty:
        raise ConfigError(f"no verdicts in {', '.join(args.files)}")
    settings = CardSettings(length_margin=args.length_margin, markdown_margin=args.markdown_margin,
                            n_resamples=args.resamples, seed=args.seed)
    card = write_audit(table, args.out, title=args.title or (args.format or Path(args.mapping).stem),
                       settings=settings)
    show = card[["judge", "metric", "estimate", "ci_low", "ci_high", "p_value", "mde", "underpowered"]]
    with pd.option_context("display.width", 160, "display.max_rows", 500):
        print(show.round(3).to_string(index=False))
    empty = table.attrs.get("empty_responses", 0)
    print(f"\n{len(table)} verdicts of {table['judge'].nunique()} judge(s); "
          f"{empty} empty responses kept; wrote {args.out}/bias_card.csv, bias_card.md, bias_card.png")
    return 0


def cmd_leaderboard_length(args: argparse.Namespace) -> int:
    from judgelab.io import write_table
    from judgelab.leaderboard import length_correlation, read_leaderboard

    board = read_leaderboard(args.file, model_col=args.model_col, score_col=args.score_col,
                             length_col=args.length_col)
    table = length_correlation(board, log_length=args.log_length, seed=args.seed)
    if args.out:
        write_table(table, args.out)
    with pd.option_context("display.width", 160):
        print(table.round(4).to_string(index=False))
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    from judgelab.verdict_import import PRESETS

    a = sub.add_parser("audit", help="bias card per judge from recorded verdicts (no judge call)")
    a.add_argument("files", nargs="+", help="recorded-verdict files (JSON/JSONL/CSV/TSV/parquet) or folders")
    a.add_argument("--format", help=f"log format preset: {', '.join(PRESETS.names())}")
    a.add_argument("--mapping", help="YAML file with a custom column mapping (or {preset: NAME, ...overrides})")
    a.add_argument("--table", action="append", metavar="NAME=PATH",
                   help="side table of the mapping, e.g. answers=model_answer/ questions=question.jsonl")
    a.add_argument("--out", required=True, help="output folder")
    a.add_argument("--judge", help="judge name when the log does not name it (default: file stem)")
    a.add_argument("--family", help="judge model family when it cannot be inferred (for self-preference)")
    a.add_argument("--title", help="title of the card and figure")
    a.add_argument("--length-margin", type=float, default=0.2,
                   help="length preference counts pairs whose word counts differ by >= 1+margin (default 0.2)")
    a.add_argument("--markdown-margin", type=float, default=0.25,
                   help="markdown preference counts pairs whose markdown scores differ by >= this (default 0.25)")
    a.add_argument("--resamples", type=int, default=1000, help="cluster-bootstrap resamples (default 1000)")
    a.add_argument("--seed", type=int, default=0)
    a.set_defaults(fn=cmd_audit)

    lb = sub.add_parser("leaderboard-length", help="correlation of leaderboard score with answer length, with CIs")
    lb.add_argument("file", help="leaderboard (CSV/TSV/JSON/JSONL/parquet): model, score, length")
    lb.add_argument("--model-col")
    lb.add_argument("--score-col")
    lb.add_argument("--length-col")
    lb.add_argument("--log-length", action="store_true", help="correlate with log length")
    lb.add_argument("--seed", type=int, default=0)
    lb.add_argument("--out", help="write the table here (.csv or .parquet)")
    lb.set_defaults(fn=cmd_leaderboard_length)
