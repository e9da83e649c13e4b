"""``judgelab probe``: build a probe set from your own items, run a judge on it, and audit it.

    judgelab probe items.jsonl --judge sim-gpt-4o --pairs 8 --out probe/
    judgelab probe items.csv --configfile config/judges/local-cpu.yaml --judge smollm2-gen --delta 0.2 --out probe/

The items (JSONL, CSV or parquet: prompt, response_a, response_b, optional pair_id and
expected_verdict) become one pair per probe (:mod:`judgelab.probe.build`), each shown in both
orders to the judge the config names, every call through the persistent call cache (a rerun asks
nothing new).  The verdicts are audited per probe: the card of each probe's verdicts (judge
``NAME [probe]``; the length and markdown probes' pairs differ only in the cue, so their cue rows
are read as controlled pairs), and the bandwagon and sentiment shifts the card has no row for
(:mod:`judgelab.probe.effects`).  One set is written: ``probe.jsonl`` (the built probe),
``verdicts.parquet``, ``bias_card.csv``/``.md``/``.png``, ``report.html`` and ``probe_effects.csv``.

``--pairs N`` takes N items (a seeded sample); ``--delta`` sizes N with :mod:`judgelab.bias_card.power`
from a simulated pilot (``--assume`` rates, as ``judgelab power`` takes them): the most items any
chosen probe's card row needs to detect δ at the card's alpha and power.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace as dc_replace

import pandas as pd

from judgelab.bias_card.card_settings import CardSettings

#: the card row each probe is sized for (``--delta``); the insertion probes have none and are read
#: against the position probe, whose size they share
SIZED_ROWS = {"position": "position_preference", "length": "length_preference", "truncation": "accuracy_average",
              "markdown": "markdown_preference"}


def size_from_delta(deltas: dict[str, float], probes: tuple[str, ...], settings: CardSettings, *,
                    assume: dict[str, float], assume_items: int) -> tuple[int, pd.DataFrame]:
    """(items needed, the power table): the largest ``items_needed`` of the chosen probes' rows
    (:data:`SIZED_ROWS`) on a simulated pilot (:func:`judgelab.bias_card.power.assumed_pilot`)."""
    from judgelab.bias_card.power import assumed_pilot, probe_sizes
    from judgelab.config import ConfigError

    default = deltas.get("*")
    rows = sorted({SIZED_ROWS.get(p, "position_preference") for p in probes})
    wanted = {m: d for m in rows if (d := deltas.get(m, default)) is not None}
    if not wanted:
        raise ConfigError(f"--delta: give one δ (0.1) or one for a sized row ({', '.join(rows)})")
    pilot = assumed_pilot(assume, n_items=assume_items, seed=settings.seed)
    table = probe_sizes(pilot, wanted, settings)
    need = table["items_needed"].dropna()
    if need.empty:
        raise ConfigError(f"--delta: the simulated pilot has no finite MDE for {', '.join(wanted)}; "
                          f"give --pairs N instead")
    return int(need.max()), table


def _judge(args: argparse.Namespace, probe: pd.DataFrame) -> tuple[pd.DataFrame, str, dict[str, int]]:
    """The verdict table of the probe (both orders), the judge's name, and the calls new / from the cache."""
    from judgelab.cache import CallCache
    from judgelab.config import config_with_files, find_judge
    from judgelab.judges import make_judge
    from judgelab.judges.pairwise import judge_pairs
    from judgelab.probe.build import probe_pairs

    config = config_with_files(args.configfile)
    spec = find_judge(config, args.judge)
    template = args.template or config["orders"]["template"]  # config/config.yaml, always loaded, sets it
    judge = make_judge(spec)

    def counts(cache: CallCache) -> dict[str, int]:
        row = next((r for r in cache.stats() if r["judge"] == spec.name), {})
        return {k: int(row.get(k, 0)) for k in ("hits", "new_calls")}

    try:
        with CallCache(args.cache or config["cache"]) as cache:
            before = counts(cache)
            table = judge_pairs(judge, probe_pairs(probe), cache, template=template,
                                max_error_rate=args.max_error_rate)
            after = counts(cache)
    finally:
        judge.close()
    cols = ["pair_id", "item_id", "probe", "cue", "cue_side", "response_a", "response_b"]
    table = table.merge(probe[cols], on="pair_id", how="left", validate="many_to_one")
    gold = table["pair_id"].map(probe.set_index("pair_id")["expected_verdict"])
    table["expected_verdict"] = gold  # "" where the probe pair has none (it was asked as a tie)
    table["correct"] = (table["verdict"] == gold).astype("boolean").where(gold != "")  # else NA
    return table, spec.name, {k: after[k] - before[k] for k in after}


def probe_card(table: pd.DataFrame, settings: CardSettings) -> pd.DataFrame:
    """The card of each probe's verdicts, as judge ``NAME [probe]``; the controlled probes
    (:data:`~judgelab.probe.build.CONTROLLED_PROBES`) with ``controlled_pairs`` set."""
    from judgelab.bias_card.card import bias_card
    from judgelab.probe.build import CONTROLLED_PROBES, PROBES

    cards = []
    for probe in [p for p in PROBES if p in set(table["probe"])]:
        sub = table[table["probe"] == probe].copy()
        sub["judge"] = sub["judge"].astype(str) + f" [{probe}]"
        s = dc_replace(settings, controlled_pairs=probe in CONTROLLED_PROBES)
        cards.append(bias_card(sub, s))
    return pd.concat(cards, ignore_index=True)


def write_probe_set(out: str, probe: pd.DataFrame, table: pd.DataFrame, card: pd.DataFrame,
                    effects: pd.DataFrame, *, title: str, settings: CardSettings) -> None:
    """Every output into ``out`` as one set (:func:`judgelab.io.staged_folder`): the audit's files
    (:func:`judgelab.bias_card.report.write_audit`'s, with the per-probe card) and the probe's own."""
    from judgelab.bias_card.html import write_card_html
    from judgelab.bias_card.report import card_figure, card_markdown, headline
    from judgelab.io import any_true, staged_folder, table_rows, write_jsonl, write_table, write_text
    from judgelab.probe.build import CONTROLLED_PROBES
    from judgelab.probe.effects import effects_markdown

    sizes = table.groupby(["judge", "probe"], observed=True).size()
    n = {f"{j} [{p}]": int(c) for (j, p), c in zip(sizes.index.to_list(), sizes.to_list(), strict=True)}
    md = card_markdown(card, title=title, settings=settings, n_verdicts=n, simulated=any_true(card))
    md += (f"\nThe {' and '.join(CONTROLLED_PROBES)} probes' pairs differ only in their cue: their cue rows are "
           "read as controlled pairs (identified without gold); the other probes' cue rows rest on the items' "
           "gold, where they have it.\n\n" + effects_markdown(effects))
    with staged_folder(out) as stage:
        write_jsonl(stage / "probe.jsonl", table_rows(probe))
        write_table(table, stage / "verdicts.parquet")
        write_table(card, stage / "bias_card.csv")
        write_table(effects, stage / "probe_effects.csv")
        write_text(stage / "bias_card.md", md)
        card_figure(card, stage / "bias_card.png", title=title)
        write_card_html(card, stage / "report.html", title=title, settings=settings, n_verdicts=n,
                        headline=headline, figure=stage / "bias_card.png")


def cmd_probe(args: argparse.Namespace) -> int:
    from judgelab.bias_card.power import _pairs
    from judgelab.bias_card.settings import from_args
    from judgelab.config import ConfigError
    from judgelab.io import InputError
    from judgelab.probe.build import build_probe, load_items, parse_probes, select_items
    from judgelab.probe.effects import insertion_effects

    settings = from_args(CardSettings, args)  # bad options stop before any item is read
    probes = parse_probes(args.probes)
    if settings.controlled_pairs:
        raise ConfigError("--controlled-pairs: the probe decides it per probe (the length and markdown probes' "
                          "pairs are controlled, the others are your items); leave it out")
    if (args.n_pairs is None) == (not args.delta):
        raise ConfigError("give the probe's size: --pairs N (items) or --delta D (sized by power), one of them")
    if args.n_pairs is not None and args.n_pairs < 1:
        raise ConfigError(f"--pairs must be at least 1, got {args.n_pairs}")
    items = load_items(args.items)
    if args.delta:
        n, _ = size_from_delta(_pairs(args.delta, "--delta"), probes, settings,
                               assume=_pairs(args.assume, "--assume"), assume_items=args.assume_items)
        print(f"power: {n} items detect the δ asked at alpha {settings.alpha}, power {settings.power} "
              f"(simulated pilot of {args.assume_items} items)")
    else:
        n = args.n_pairs
    if n > len(items):
        print(f"judgelab: warning: {n} items asked, {args.items} has {len(items)}: the probe uses all of them "
              "and may be underpowered", file=sys.stderr)
    chosen = select_items(items, n, settings.seed)
    probe = build_probe(chosen, probes, seed=settings.seed)
    for name, ids in probe.attrs.get("skipped", {}).items():
        print(f"judgelab: note: the {name} probe left out {len(ids)} item(s) that cannot carry its cue "
              f"({', '.join(ids[:5])}{' ...' if len(ids) > 5 else ''})", file=sys.stderr)
    if probe.empty:
        raise InputError(f"{args.items}: no item can carry any of the probes {', '.join(probes)}")
    table, judge, calls = _judge(args, probe)
    card = probe_card(table, settings)
    effects = insertion_effects(table, settings)
    title = args.title or f"probe of {judge}"
    write_probe_set(args.out, probe, table, card, effects, title=title, settings=settings)
    show = card[(card["view"] == "lenient") & card["metric"].isin(
        ["position_preference", "length_preference", "markdown_preference", "accuracy_average"])]
    # to_string prints every row on one line each, whatever pandas' display options
    print(show[["judge", "metric", "status", "estimate", "ci_low", "ci_high", "p_value"]].round(3)
          .to_string(index=False))
    if not effects.empty:
        print()
        print(effects[["judge", "probe", "status", "estimate", "ci_low", "ci_high", "p_value"]].round(3)
              .to_string(index=False))
    print(f"\n{len(chosen)} items, {len(probe)} probe pairs ({', '.join(probes)}), {len(table)} verdicts of {judge}: "
          f"{calls['new_calls']} new calls, {calls['hits']} from the cache; wrote {args.out}/probe.jsonl, "
          "verdicts.parquet, bias_card.csv, bias_card.md, bias_card.png, report.html, probe_effects.csv")
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    from judgelab.bias_card.settings import add_arguments as add_setting_arguments
    from judgelab.io import add_out_folder
    from judgelab.probe.build import PROBES

    p = sub.add_parser("probe", help="build a probe set from your own items, run a judge on it, and audit it")
    p.add_argument("items", help="your items: JSONL, CSV or parquet with prompt, response_a, response_b "
                                 "(optional pair_id, expected_verdict)")
    p.add_argument("--configfile", action="append", help="extra config file(s), merged in order")
    p.add_argument("--judge", required=True, help="judge name from the config")
    p.add_argument("--probes", default="all", help=f"comma-separated, default all: {','.join(PROBES)}")
    p.add_argument("--pairs", type=int, dest="n_pairs", help="items to probe (a seeded sample; all when more than the file has)")
    p.add_argument("--delta", action="append",
                   help="size the probe by power instead: the effect to detect, NUMBER or METRIC=NUMBER (repeatable)")
    p.add_argument("--assume", action="append", help="the simulated pilot's judge rates for --delta "
                                                     "(as for judgelab power), e.g. accuracy=0.8,tie=0.05")
    p.add_argument("--assume-items", type=int, default=600, help="items of the simulated pilot (default 600)")
    p.add_argument("--template", help="pairwise prompt template (default: the config's orders template (orders.template))")
    p.add_argument("--cache", help="SQLite call cache (default: the config's)")
    p.add_argument("--max-error-rate", type=float, default=None,
                   help="fail if more than this share of calls errors (default: report and continue)")
    p.add_argument("--title", help="title of the card (default: probe of JUDGE)")
    add_out_folder(p, "output folder")
    add_setting_arguments(CardSettings, p)  # the card's settings, declared once (seed: the probe's too)
    p.set_defaults(fn=cmd_probe)
