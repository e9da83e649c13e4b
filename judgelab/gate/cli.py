"""The ``--fail-on`` option, declared once for every command that gates (audit, leaderboard, compare)."""

from __future__ import annotations

import argparse


def add_gate_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fail-on", action="append", metavar="RULE",
        help="exit 1 when RULE trips (repeatable; written to gate.json): any-detected, detected:METRIC, "
             "NAME.COLUMN>NUMBER (or <, <=, >=, ==, !=), rank-flip:CORRECTION, compare:NAME.COLUMN>NUMBER; "
             "NAME[KEY=VALUE,...] filters "
             "rows (docs/ci.md). Exit 2 for a rule that names no row")
