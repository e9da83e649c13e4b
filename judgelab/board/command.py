"""``judgelab leaderboard``: a corrected leaderboard from recorded judge logs (no judge call).

    judgelab leaderboard --format alpaca_eval results/ --out board/
    judgelab leaderboard --format arena_hard_v2 model_judgment/gpt-4.1/ --table answers=model_answer/ \\
        --table questions=question.jsonl --out board/
    judgelab leaderboard --mapping battles.yaml battles.csv --out board/          # free battles (model_a/model_b)

Reads the logs exactly as ``judgelab audit`` does (same presets, ``--mapping``, folders, side
tables and one-line errors).  Writes into ``--out``, as one set (staged beside it, then renamed):
``leaderboard.csv`` (:mod:`judgelab.board.table`), ``rank_flips.csv``, ``judges.csv`` (leave-one-
judge-out Kendall tau when the log holds several judges), ``style_coefficients.json`` (the
standardisation and style coefficients, reusable as ``--style-reference``), ``leaderboard.json``
(what was estimated from what), ``leaderboard.png`` and ``report.html`` (the tables and the
figure on one self-contained page, :mod:`judgelab.plots.html_report`).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import pandas as pd


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from judgelab.bias_card.settings import from_args
    from judgelab.board.battles import battles_from_table, read_answer_metadata
    from judgelab.board.figure import leaderboard_figure
    from judgelab.board.html import write_board_html
    from judgelab.board.length_controlled import read_gamed_csv, read_lc_weights
    from judgelab.board.table import CORRECTION_NAMES, BoardSettings, leaderboard
    from judgelab.config import ConfigError
    from judgelab.gate.rules import board_subject, evaluate, parse_rules, report
    from judgelab.io import formula_safe, staged_folder
    from judgelab.verdict_import.cli import display_names_from_args, side_tables, verdicts_from_args

    rules = parse_rules(args.fail_on)  # a malformed rule stops before any log is read
    names = display_names_from_args(args)  # and a malformed names file
    options = from_args(BoardSettings, args, "judgelab leaderboard")  # and an option out of its range
    reference = None
    if args.style_reference:
        try:
            from judgelab.board.style_control import read_reference
        except ImportError:
            raise ConfigError("--style-reference freezes Arena-Hard's style control, which needs torch "
                              "(pip install 'judgelab[train]')") from None
        reference = read_reference(args.style_reference)
    corrections = tuple(c.strip() for c in args.corrections.split(",") if c.strip())
    if not corrections or any(c not in CORRECTION_NAMES for c in corrections):
        bad = next((c for c in corrections if c not in CORRECTION_NAMES), "")
        raise ConfigError(f"--corrections: {'unknown correction ' + repr(bad) if bad else 'name at least one'} "
                          f"(a comma-separated list of {', '.join(CORRECTION_NAMES)})")
    settings = replace(options, corrections=corrections, style_reference=reference,
                       gamed=read_gamed_csv(args.gamed_csv) if args.gamed_csv else None,
                       lc_weights=read_lc_weights(args.lc_weights) if args.lc_weights else None)
    table = verdicts_from_args(args)
    answers = side_tables(args.table).get("answers", [])
    battles = battles_from_table(table, metadata=read_answer_metadata(answers) if answers else None,
                                 baseline=args.baseline)
    board = leaderboard(battles, settings)
    title = args.title or (args.format or Path(args.mapping).stem)
    meta = dict(board.meta, title=title, inputs=[str(f) for f in args.files])
    notes = [f"{meta['games']} games, {meta['models']} models, design: {meta['design']}, "
             f"scores against {meta['baseline']!r}"]
    if meta["lc_difficulty"]:
        notes.append(f"LC instruction difficulty: {meta['lc_difficulty']}")
    notes.append(f"style features from {meta['style_source']}"
                 + (" (frozen from --style-reference)" if meta["style_frozen"] else ""))
    if meta["bias_aware_note"]:
        notes.append(f"bias-aware: {meta['bias_aware_note']}")
    bad = {c: board.table[c].ne("ok").sum() for c in ("lc_status", "style_status", "bias_aware_status")}
    for c, k in bad.items():
        if k:
            first = board.table.loc[board.table[c].ne("ok"), c].iloc[0]
            notes.append(f"{c}: {k} model(s) without a number ({first})")
    gate = evaluate(rules, board_subject(board.table, board.flips)) if rules else None
    with staged_folder(args.out) as tmp:
        if gate is not None:
            (tmp / "gate.json").write_text(gate.to_json(), encoding="utf-8")
        # model and judge names from the logs: a cell a spreadsheet would run as a formula is quoted
        formula_safe(board.table).to_csv(tmp / "leaderboard.csv", index=False)
        formula_safe(board.flips).to_csv(tmp / "rank_flips.csv", index=False)
        formula_safe(board.judges).to_csv(tmp / "judges.csv", index=False)
        if board.style is not None:
            from judgelab.board.style_control import reference_dict

            (tmp / "style_coefficients.json").write_text(
                json.dumps(reference_dict(board.style, battles.style_source), indent=2) + "\n", encoding="utf-8")
        (tmp / "leaderboard.json").write_text(json.dumps(meta, indent=2, default=str) + "\n", encoding="utf-8")
        leaderboard_figure(board.table, tmp / "leaderboard.png", title=title, simulated=battles.simulated,
                           names=names)
        write_board_html(tmp / "report.html", board, title=title, notes=notes, simulated=battles.simulated,
                         figure=tmp / "leaderboard.png", names=names)
    show = board.table[["model", "n", "win_rate", "lc_win_rate", "style_controlled", "bias_aware"]]
    if names:
        from judgelab.board.html import with_display_names

        show = with_display_names(show, names)
    with pd.option_context("display.width", 160, "display.max_rows", 60):
        print(show.round(2).to_string(index=False))
    print("\n" + "\n".join(notes))
    print(f"{len(board.flips)} rank flips; wrote {args.out}/leaderboard.csv, rank_flips.csv, judges.csv, "
          + ("style_coefficients.json, " if board.style is not None else "")
          + "leaderboard.json, leaderboard.png, report.html" + (", gate.json" if gate else ""))
    return report(gate)


def add_command(sub: argparse._SubParsersAction) -> None:
    from judgelab.bias_card.settings import add_arguments as add_setting_arguments
    from judgelab.board.settings import BoardSettings
    from judgelab.gate.cli import add_gate_argument
    from judgelab.io import add_out_folder
    from judgelab.verdict_import.cli import add_log_arguments, add_names_argument

    p = sub.add_parser("leaderboard", help="raw and bias-corrected leaderboard from recorded verdicts (no judge call)")
    add_log_arguments(p)
    add_out_folder(p, "output folder (replaced whole)")
    p.add_argument("--title", help="title of the figure")
    add_names_argument(p)
    p.add_argument("--baseline", help="score against this model (default: the one in every game, else the most "
                                      "frequent)")
    p.add_argument("--gamed-csv", help="AlpacaEval's df_gamed.csv: instruction difficulty and gamed-baseline rows "
                                       "for the LC win rate (default: difficulty estimated from the logs)")
    p.add_argument("--lc-weights", help="AlpacaEval's published length_controlled_v1 weights CSV: adds "
                                        "lc_from_published_weights for the models it lists")
    p.add_argument("--style-reference", help="style_coefficients.json of an earlier run: freeze the style "
                                             "coefficients so adding a model does not move the others")
    p.add_argument("--corrections", default="lc,style,bias_aware",
                   help="comma-separated corrections to compute (default lc,style,bias_aware); the others' columns "
                        "stay empty with the status 'not computed'. The bias-aware fit's memory grows with the "
                        "models compared with one another beyond a baseline: a log that would exceed "
                        "$JUDGELAB_MEMORY_GIB (default: the machine's memory) is refused before it starts")
    add_setting_arguments(BoardSettings, p)  # --alpha, --resamples, --seed: declared with BoardSettings
    add_gate_argument(p)
    p.set_defaults(fn=cmd_leaderboard)
