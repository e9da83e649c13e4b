"""CLI subcommands ``judgelab audit`` and ``judgelab leaderboard-length`` (registered by judgelab.cli).

    judgelab audit --format arena_hard judgments/*.jsonl --table answers=model_answer/ --out audit/
    judgelab audit --mapping my_log.yaml logs/*.csv --out audit/
    judgelab leaderboard-length leaderboard.csv [--score-col win_rate --length-col avg_length] [--out t.csv]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from judgelab.io import InputError


def cmd_audit(args: argparse.Namespace) -> int:
    from judgelab.bias_card.card_settings import CardSettings
    from judgelab.bias_card.report import write_audit
    from judgelab.bias_card.settings import from_args
    from judgelab.gate.rules import card_subject, evaluate, parse_rules, report
    from judgelab.verdict_import.cli import display_names_from_args, verdicts_from_args

    settings = from_args(CardSettings, args)  # before reading any log: a bad option stops at once
    rules = parse_rules(args.fail_on)  # a malformed rule too
    names = display_names_from_args(args)  # and a malformed names file
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise InputError(f"{args.out}: exists and is a file; --out needs a folder (a new or an existing one)")
    table = verdicts_from_args(args, texts=False)  # the card reads features, not texts: memory follows verdicts
    gate = None

    def gate_file(card: pd.DataFrame) -> dict[str, str]:
        nonlocal gate
        gate = evaluate(rules, card_subject(card))  # a rule naming no row stops before anything is written
        return {"gate.json": gate.to_json()}

    card = write_audit(table, args.out, title=args.title or (args.format or Path(args.mapping).stem),
                       settings=settings, extra_files=gate_file if rules else None, names=names)
    show = card[["judge", "view", "metric", "status", "estimate", "ci_low", "ci_high", "p_value", "mde"]]
    with pd.option_context("display.width", 160, "display.max_rows", 500):
        print(show.round(3).to_string(index=False))
    empty = table.attrs.get("empty_responses", 0)
    print(f"\n{len(table)} verdicts of {table['judge'].nunique()} judge(s); "
          f"{empty} empty responses kept; wrote {args.out}/bias_card.csv, bias_card.md, bias_card.png, report.html"
          + (", gate.json" if gate else ""))
    return report(gate)


def cmd_leaderboard_length(args: argparse.Namespace) -> int:
    from judgelab.board.length_check import length_correlation, read_leaderboard
    from judgelab.io import write_table

    board = read_leaderboard(args.file, model_col=args.model_col, score_col=args.score_col,
                             length_col=args.length_col, on_duplicate=args.on_duplicate)
    # say which columns were read: a leaderboard often has several scores (AlpacaEval 2: win_rate,
    # length_controlled_winrate), and the correlation means something different for each
    print(f"{board.path}: {len(board.table)} models; {board.columns.describe()}")
    table = length_correlation(board.table, log_length=args.log_length, seed=args.seed)
    if args.out:
        write_table(table, args.out)
    with pd.option_context("display.width", 160):
        print(table.round(4).to_string(index=False))
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    from judgelab.bias_card.card_settings import CardSettings
    from judgelab.bias_card.settings import add_arguments as add_setting_arguments
    from judgelab.gate.cli import add_gate_argument
    from judgelab.io import add_out_file, add_out_folder
    from judgelab.verdict_import.cli import add_log_arguments, add_names_argument

    a = sub.add_parser("audit", help="bias card per judge from recorded verdicts (no judge call)")
    add_log_arguments(a)
    add_out_folder(a, "output folder")
    a.add_argument("--title", help="title of the card and figure")
    add_names_argument(a)
    # every card setting, with its range, from its one declaration (judgelab.bias_card.card.CardSettings)
    add_setting_arguments(CardSettings, a)
    add_gate_argument(a)
    a.set_defaults(fn=cmd_audit)

    lb = sub.add_parser("leaderboard-length", help="correlation of leaderboard score with answer length, with CIs")
    lb.add_argument("file", help="leaderboard (CSV/TSV/JSON/JSONL/parquet): model, score, length")
    lb.add_argument("--model-col")
    lb.add_argument("--score-col")
    lb.add_argument("--length-col")
    lb.add_argument("--log-length", action="store_true", help="correlate with log length")
    lb.add_argument("--on-duplicate", choices=("error", "first", "mean"), default="error",
                    help="a model name on several rows: error (default), keep the first row, or the mean of its rows")
    lb.add_argument("--seed", type=int, default=0)
    add_out_file(lb, "write the table here")
    lb.set_defaults(fn=cmd_leaderboard_length)
