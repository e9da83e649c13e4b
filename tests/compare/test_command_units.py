"""``judgelab compare``'s command line unit by unit: the options, their checks, the two ways to name the
sides, and what the command hands to the comparison, the gate and the writer.

The log reader, the card comparison, the board comparison and the writer are stand-ins that record
their arguments (the real ones: tests/compare/test_compare.py and tests/compare/test_board.py), so each
check here is about the command's own wiring.
"""

from __future__ import annotations

import argparse
import json
import re

import numpy as np
import pandas as pd
import pytest

from judgelab.bias_card.card import CardSettings
from judgelab.compare import board as board_module
from judgelab.compare import command
from judgelab.compare import paired as paired_module
from judgelab.compare import report as report_module
from judgelab.compare.board import BOARD_COLUMNS, FLIP_COLUMNS, BoardComparison
from judgelab.compare.paired import COLUMNS
from judgelab.config import ConfigError
from judgelab.gate.rules import GateError
from judgelab.verdict_import import cli as import_cli


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="judgelab")
    command.add_command(p.add_subparsers(dest="cmd"))
    return p


def _log(judge: str, items=("a", "b"), models: bool = False) -> pd.DataFrame:
    rows = [{"judge": judge, "item_id": i, "pair_id": f"{i}|m", "order": o, "repeat": 0,
             "model_a": "base" if models else None, "model_b": (f"m{k % 3}" if models else None), "x": k}
            for k, (i, o) in enumerate((i, o) for i in items for o in ("AB", "BA"))]
    return pd.DataFrame(rows)


class Stubs:
    """The reader, both comparisons and the writer, recording what the command gives them."""

    def __init__(self, monkeypatch, logs: dict[str, pd.DataFrame], table: pd.DataFrame | None = None,
                 board: BoardComparison | None = None):
        self.logs, self.reads, self.cards, self.boards, self.written = logs, [], [], [], []
        self.table = table if table is not None else pd.DataFrame(
            [{c: None for c in COLUMNS} | {"view": "lenient", "metric": "position_preference", "before": 0.1,
                                             "after": 0.3, "diff": 0.2, "ci_low": 0.1, "ci_high": 0.3,
                                             "p_adjusted": 0.01, "significant": True, "flip": "",
                                             "underpowered": False}], columns=COLUMNS)
        self.board = board
        monkeypatch.setattr(import_cli, "verdicts_from_args", self.read)
        monkeypatch.setattr(paired_module, "compare_cards", self.compare_cards)
        monkeypatch.setattr(board_module, "compare_boards", self.compare_boards)
        monkeypatch.setattr(report_module, "write_compare", self.write)

    def read(self, ns, *, texts):
        self.reads.append((ns, texts))
        return pd.concat([self.logs[f] for f in ns.files], ignore_index=True).assign(texts=texts)

    def compare_cards(self, m, s, *, resamples, seed):
        self.cards.append((m, s, resamples, seed))
        return self.table

    def compare_boards(self, m, s, *, resamples, seed):
        self.boards.append((m, s, resamples, seed))
        return self.board

    def write(self, out, table, m, names, *, extra, board):
        self.written.append({"out": out, "table": table, "m": m, "names": names, "extra": extra, "board": board})


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return args.fn(args)


def test_the_options_and_their_defaults():
    args = _parser().parse_args(["compare", "--before", "b1", "b2", "--after", "a1", "--out", "o"])
    assert (args.files, args.before, args.after, args.judges, args.format, args.mapping, args.table,
            args.family, args.pair_resamples, args.fail_on, args.out, args.force) == (
        [], ["b1", "b2"], ["a1"], None, None, None, None, None, 200, None, "o", False)
    assert args.fn is command.cmd_compare and args.out_folder is True
    full = _parser().parse_args(["compare", "f1", "f2", "--judges", "x,y", "--format", "llmbar", "--mapping", "m.yaml",
                                 "--table", "t=p.csv", "--table", "u=q.csv", "--family", "gpt", "--pair-resamples",
                                 "40", "--fail-on", "any-detected", "--out", "o", "--alpha", "0.1", "--seed", "3"])
    assert (full.files, full.judges, full.format, full.mapping, full.table, full.family, full.pair_resamples,
            full.fail_on) == (["f1", "f2"], "x,y", "llmbar", "m.yaml", ["t=p.csv", "u=q.csv"], "gpt", 40,
                              ["any-detected"])
    sub = _parser()._subparsers._group_actions[0]
    help_of = {a.dest: a.help for a in sub.choices["compare"]._actions}
    assert sub.choices["compare"].description is None
    assert [c.help for c in sub._choices_actions] == [
        "paired differences of every card row and leaderboard column between two judges on the same items"]
    assert help_of["files"] == "with --judges: the log holding both judges"
    assert help_of["before"] == "the earlier judge's log files or folders"
    assert help_of["after"] == "the later judge's log files or folders"
    assert help_of["judges"] == "OLD,NEW: two judges of one log"
    assert help_of["format"] == "log format preset (both sides)"
    assert help_of["mapping"] == "YAML mapping (both sides)"
    assert help_of["table"] == "side table, as for audit"
    assert help_of["family"] == "judge model family when it cannot be inferred"
    assert help_of["pair_resamples"] == ("item-bootstrap resamples of the paired differences, each recomputing both "
                                         "cards and both leaderboards (default 200)")
    assert help_of["out"] == "output folder"
    table_action = next(a for a in sub.choices["compare"]._actions if a.dest == "table")
    assert table_action.metavar == "NAME=PATH"


@pytest.mark.parametrize("argv,message", [
    (["--before", "b", "--after", "a", "--pair-resamples", "19"], "--pair-resamples must be at least 20, got 19"),
    (["f", "--judges", "x,y", "--before", "b"],
     "give either --judges OLD,NEW (two judges of one log) or --before/--after, not both"),
    (["f", "--judges", "x,y", "--after", "a"],
     "give either --judges OLD,NEW (two judges of one log) or --before/--after, not both"),
    (["--judges", "x,y"], "--judges needs the log's files"),
    (["f", "--before", "b", "--after", "a"],
     "give --before FILE... and --after FILE... (two logs), or FILES --judges OLD,NEW"),
    (["--before", "b"], "give --before FILE... and --after FILE... (two logs), or FILES --judges OLD,NEW"),
    (["--after", "a"], "give --before FILE... and --after FILE... (two logs), or FILES --judges OLD,NEW"),
])
def test_bad_combinations_are_one_error_before_any_log_is_read(monkeypatch, tmp_path, argv, message):
    s = Stubs(monkeypatch, {})
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}$"):
        _run(["compare", *argv, "--format", "llmbar", "--out", str(tmp_path / "o")])
    assert s.reads == []


def test_a_malformed_rule_stops_before_any_log_is_read(monkeypatch, tmp_path):
    s = Stubs(monkeypatch, {})
    with pytest.raises(GateError, match=re.escape("--fail-on 'x.y>>1'")):
        _run(["compare", "--before", "b", "--after", "a", "--fail-on", "x.y>>1", "--out", str(tmp_path)])
    assert s.reads == []


def test_two_logs_without_models(monkeypatch, tmp_path, capsys):
    logs = {"b1": _log("old-2"), "b2": _log("old-1", items=("c",)), "a1": _log("new", items=("a", "b", "d"))}
    s = Stubs(monkeypatch, logs)
    out = str(tmp_path / "o")
    code = _run(["compare", "--format", "llmbar", "--table", "t=p.csv", "--family", "fam", "--before", "b1", "b2",
                 "--after", "a1", "--pair-resamples", "20", "--seed", "5", "--alpha", "0.1", "--out", out])
    assert code == 0
    # the reader: each side once, features only (no texts), the shared options, no judge override
    assert [(ns.files, ns.format, ns.mapping, ns.table, ns.judge, ns.family, texts) for ns, texts in s.reads] == [
        (["b1", "b2"], "llmbar", None, ["t=p.csv"], None, "fam", False),
        (["a1"], "llmbar", None, ["t=p.csv"], None, "fam", False)]
    (m, settings, resamples, seed), = s.cards
    assert isinstance(settings, CardSettings) and (settings.alpha, settings.seed) == (0.1, 5)
    assert (resamples, seed) == (20, 5)
    assert sorted(m.before["item_id"].unique()) == ["a", "b"] and len(m.unmatched) == 4  # c before, d after
    assert s.boards == []
    (w,) = s.written
    assert w["out"] == out and w["table"] is s.table and w["m"] is m and w["extra"] is None
    assert w["names"] == ("old-1, old-2", "new")
    assert (w["board"].compared, w["board"].note) == (
        False, "the log names no models (model_a is empty): there is no leaderboard to compare")
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "2 items matched (4 presentations); 4 presentations recorded by one side only (unmatched.csv).",
        "position_preference: new minus old-1, old-2 = +0.200 [+0.100, +0.300], Holm p = 0.01.",
        "Leaderboard: not compared (the log names no models (model_a is empty): there is no leaderboard to "
        "compare).",
        f"wrote {out}/compare.csv, compare.md, compare.png, unmatched.csv, report.html"]


def test_two_judges_of_one_log_with_a_leaderboard_and_a_gate(monkeypatch, tmp_path, capsys):
    log = pd.concat([_log("old", models=True), _log("new", models=True)], ignore_index=True)
    board_table = pd.DataFrame([{c: None for c in BOARD_COLUMNS} | {
        "model": "m1", "score": "win_rate", "diff": -3.0, "significant": False}], columns=BOARD_COLUMNS)
    flips = pd.DataFrame([{"correction": "win_rate", "model_1": "m1", "model_2": "m2", "before_1": 60.0,
                           "before_2": 50.0, "after_1": 40.0, "after_2": 55.0}], columns=FLIP_COLUMNS)
    s = Stubs(monkeypatch, {"log": log}, board=BoardComparison(board_table, flips, baseline="base"))
    out = str(tmp_path / "o")
    code = _run(["compare", "log", "--judges", "old,new", "--format", "llmbar", "--pair-resamples", "30",
                 "--fail-on", "rank-flip:win_rate", "--fail-on", "m1.diff<0", "--out", out])
    assert code == 1
    # features for the card, then the texts for the leaderboard
    assert [(ns.files, texts) for ns, texts in s.reads] == [(["log"], False), (["log"], True)]
    (m_card, _, _, _), = s.cards
    (m_board, settings, resamples, seed), = s.boards
    assert (resamples, seed, settings.seed) == (30, 0, 0)
    assert m_card.before["texts"].eq(False).all() and m_board.before["texts"].eq(True).all()
    assert set(m_board.before["judge"]) == {"old"} and set(m_board.after["judge"]) == {"new"}
    (w,) = s.written
    assert w["names"] == ("old", "new") and w["board"] is s.board
    gate = json.loads(w["extra"]["gate.json"])
    assert gate["rules"] == ["rank-flip:win_rate", "m1.diff<0"] and gate["exit_code"] == 1
    assert [t["rule"] for t in gate["tripped"]] == ["rank-flip:win_rate", "m1.diff<0"]
    out_lines, err = capsys.readouterr()
    assert out_lines.splitlines()[-1] == (f"wrote {out}/compare.csv, compare_board.csv, compare_board_flips.csv, "
                                          "compare.md, compare.png, unmatched.csv, report.html, gate.json")
    assert "Leaderboard: 1 models against 'base'; 1 pairs of models change order" in out_lines
    assert err.splitlines()[0] == ("judgelab: gate tripped: rank-flip:win_rate: correction=win_rate, model_1=m1, "
                                   "model_2=m2, before_1=60, before_2=50, after_1=40, after_2=55")


def test_the_after_side_without_models_skips_the_board(monkeypatch, tmp_path):
    s = Stubs(monkeypatch, {"b": _log("old", models=True), "a": _log("new")})
    assert _run(["compare", "--before", "b", "--after", "a", "--format", "x", "--out", str(tmp_path / "o")]) == 0
    assert s.boards == [] and s.written[0]["board"].note.startswith("the log names no models (model_a")
    assert [texts for _, texts in s.reads] == [False, False]


def test_a_skipped_board_leaves_leaderboard_rules_refused(monkeypatch, tmp_path):
    Stubs(monkeypatch, {"b": _log("old"), "a": _log("new")})
    with pytest.raises(GateError, match="has no rank-flip rule"):
        _run(["compare", "--before", "b", "--after", "a", "--format", "x", "--fail-on", "rank-flip:win_rate",
              "--out", str(tmp_path / "o")])


def test_a_gate_that_passes_writes_gate_json_and_exits_0(monkeypatch, tmp_path, capsys):
    s = Stubs(monkeypatch, {"b": _log("old"), "a": _log("new")})
    assert _run(["compare", "--before", "b", "--after", "a", "--format", "x", "--fail-on",
                 "position_preference.diff>1", "--out", str(tmp_path / "o")]) == 0
    gate = json.loads(s.written[0]["extra"]["gate.json"])
    assert gate["tripped"] == [] and gate["exit_code"] == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("report.html, gate.json")


def test_read_passes_the_options_through(monkeypatch):
    seen = []
    monkeypatch.setattr(import_cli, "verdicts_from_args", lambda ns, *, texts: seen.append((ns, texts)) or "t")
    args = argparse.Namespace(format="f", mapping="m", table=["x=y"], family="fam", judge="ignored")
    assert command._read(args, ["p"]) == "t"
    assert command._read(args, ["q"], texts=True) == "t"
    assert [(vars(ns), texts) for ns, texts in seen] == [
        ({"files": ["p"], "format": "f", "mapping": "m", "table": ["x=y"], "judge": None, "family": "fam"}, False),
        ({"files": ["q"], "format": "f", "mapping": "m", "table": ["x=y"], "judge": None, "family": "fam"}, True)]


def test_sides_name_each_log_by_its_sorted_judges(monkeypatch):
    logs = {"b": pd.concat([_log("z"), _log("a"), _log(np.int64(3))]), "a": pd.concat([_log("r"), _log("q")])}
    Stubs(monkeypatch, logs)
    args = argparse.Namespace(judges=None, before=["b"], after=["a"], files=[], format="x", mapping=None, table=None,
                              family=None)
    before, after, names = command._sides(args, texts=True)
    assert names == ("3, a, z", "q, r") and len(before) == 12 and len(after) == 8
    assert before["texts"].all() and after["texts"].all()
