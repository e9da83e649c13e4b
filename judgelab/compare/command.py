"""``judgelab compare``: two logs (``--before``/``--after``) or two judges of one log (``--judges``).

    judgelab compare --format llmbar --before old/result.json --after new/result.json --out cmp/
    judgelab compare --format llmbar a.json b.json --judges ChatGPT-Vanilla,GPT-4-Vanilla --out cmp/
"""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import pandas as pd


def _read(args: argparse.Namespace, files: list[str], *, texts: bool = False) -> pd.DataFrame:
    from judgelab.verdict_import.cli import verdicts_from_args

    ns = SimpleNamespace(files=files, format=args.format, mapping=args.mapping, table=args.table, judge=None,
                         family=args.family)
    return verdicts_from_args(ns, texts=texts)  # type: ignore[arg-type]


def _sides(args: argparse.Namespace, *, texts: bool) -> tuple[pd.DataFrame, pd.DataFrame, tuple[str, str]]:
    """The before and after verdicts and the two sides' names."""
    from judgelab.compare.paired import split_judges

    if args.judges:
        return split_judges(_read(args, args.files, texts=texts), args.judges)
    before, after = _read(args, args.before, texts=texts), _read(args, args.after, texts=texts)
    return before, after, (", ".join(sorted(before["judge"].astype(str).unique())),
                           ", ".join(sorted(after["judge"].astype(str).unique())))


def cmd_compare(args: argparse.Namespace) -> int:
    from judgelab.bias_card.card_settings import CardSettings
    from judgelab.bias_card.settings import from_args
    from judgelab.compare.board import board_note, compare_boards, skipped
    from judgelab.compare.paired import compare_cards, match
    from judgelab.compare.report import board_summary_lines, summary_lines, write_compare
    from judgelab.config import ConfigError
    from judgelab.gate.rules import compare_subject, evaluate, parse_rules, report

    settings = from_args(CardSettings, args)
    rules = parse_rules(args.fail_on)
    if args.pair_resamples < 20:
        raise ConfigError(f"--pair-resamples must be at least 20, got {args.pair_resamples}")
    if args.judges:
        if args.before or args.after:
            raise ConfigError("give either --judges OLD,NEW (two judges of one log) or --before/--after, not both")
        if not args.files:
            raise ConfigError("--judges needs the log's files")
    elif args.files or not (args.before and args.after):
        raise ConfigError("give --before FILE... and --after FILE... (two logs), or FILES --judges OLD,NEW")
    before, after, names = _sides(args, texts=False)  # the card reads features, not texts
    m = match(before, after)
    table = compare_cards(m, settings, resamples=args.pair_resamples, seed=settings.seed)
    note = board_note(m.before) or board_note(m.after)
    if note:
        board = skipped(note)
    else:  # the leaderboard measures the answers' lengths and styles: the logs again, with their texts
        tb, ta, _ = _sides(args, texts=True)
        board = compare_boards(match(tb, ta), settings, resamples=args.pair_resamples, seed=settings.seed)
    gate = evaluate(rules, compare_subject(table, board.table if board.compared else None, board.flips)
                    ) if rules else None
    write_compare(args.out, table, m, names, extra={"gate.json": gate.to_json()} if gate else None, board=board)
    print("\n".join(summary_lines(table, names, m) + board_summary_lines(board, names)))
    print(f"wrote {args.out}/compare.csv, "
          + ("compare_board.csv, compare_board_flips.csv, " if board.compared else "")
          + "compare.md, compare.png, unmatched.csv, report.html" + (", gate.json" if gate else ""))
    return report(gate)


def add_command(sub: argparse._SubParsersAction) -> None:
    from judgelab.bias_card.card_settings import CardSettings
    from judgelab.bias_card.settings import add_arguments as add_setting_arguments
    from judgelab.gate.cli import add_gate_argument
    from judgelab.io import add_out_folder

    p = sub.add_parser("compare", help="paired differences of every card row and leaderboard column between two judges "
                                          "on the same items")
    p.add_argument("files", nargs="*", help="with --judges: the log holding both judges")
    p.add_argument("--before", nargs="+", help="the earlier judge's log files or folders")
    p.add_argument("--after", nargs="+", help="the later judge's log files or folders")
    p.add_argument("--judges", help="OLD,NEW: two judges of one log")
    p.add_argument("--format", help="log format preset (both sides)")
    p.add_argument("--mapping", help="YAML mapping (both sides)")
    p.add_argument("--table", action="append", metavar="NAME=PATH", help="side table, as for audit")
    p.add_argument("--family", help="judge model family when it cannot be inferred")
    p.add_argument("--pair-resamples", type=int, default=200,
                   help="item-bootstrap resamples of the paired differences, each recomputing both cards "
                        "and both leaderboards (default 200)")
    add_out_folder(p, "output folder")
    add_setting_arguments(CardSettings, p)  # the card's settings, declared once
    add_gate_argument(p)
    p.set_defaults(fn=cmd_compare)
