"""``judgelab`` command line: use the judge layer outside Snakemake.

    judgelab judge --judge sim-gpt-4o --pairs pairs.jsonl --out verdicts.csv
    judgelab cache-stats [--cache results/cache/calls.sqlite]   (relative to the current directory)
    judgelab check-config [--configfile config/judges/api.yaml]
    judgelab backends
    judgelab audit --format llmbar result.json ... --out audit/
    judgelab leaderboard --format alpaca_eval results/ --out board/
    judgelab leaderboard-length leaderboard.csv
    judgelab compare --format llmbar a/result.json b/result.json --judges A,B --out cmp/
    judgelab power --format llmbar result.json --delta position_preference=0.1
    judgelab probe items.jsonl --judge sim-gpt-4o --pairs 8 --out probe/
    judgelab detect-bias --format judgelab log.csv --detector sim-rbd-8b --bias position verbosity --out dir/
    judgelab plan --configfile config/judges/api.yaml --out plan.csv
    judgelab plan --batch-dir batch/ ...  then  judgelab batch-import batch/

Config files are merged like Snakemake does (judge set first, then
``config/config.yaml``, then each ``--configfile``).  Errors in input or config
print one line naming the file, line or key, and exit with status 2.
"""

from __future__ import annotations

import argparse
import errno
import sys
from pathlib import Path
from typing import NoReturn

import pandas as pd

from judgelab.config import ConfigError, check_judge_envs, config_with_files, find_judge

#: The call cache a run started in the current directory writes (``cache`` in config/config.yaml).
#: Relative on purpose: the installed package's checkout is not the project a user stands in,
#: so ``cache-stats`` must not read another checkout's cache.
DEFAULT_CACHE = "results/cache/calls.sqlite"


def _config(args: argparse.Namespace, *, references: bool = False) -> dict:
    return config_with_files(args.configfile, references=references)


def cmd_judge(args: argparse.Namespace) -> int:
    from judgelab.cache import CallCache
    from judgelab.datasets.pairs import load_pairs
    from judgelab.io import write_table
    from judgelab.judges import make_judge
    from judgelab.judges.pairwise import judge_pairs
    from judgelab.stats.agreement import call_summary, order_summary

    config = _config(args)
    spec = find_judge(config, args.judge)
    pairs = load_pairs(args.pairs)
    judge = make_judge(spec)
    try:
        with CallCache(args.cache or config["cache"]) as cache:
            table = judge_pairs(judge, pairs, cache, template=args.template, orders=args.orders.split(","),
                                max_error_rate=args.max_error_rate)
    finally:
        judge.close()
    if args.out:
        write_table(table, args.out)
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        print(call_summary(table).to_string(index=False))
        if {"AB", "BA"} <= set(table["order"]):
            print()
            print(order_summary(table).to_string(index=False))
        else:
            print(f"\naccuracy: {table['correct'].mean():.3f} over {len(table)} verdicts")
    return 0


def cmd_cache_stats(args: argparse.Namespace) -> int:
    from judgelab.cache import CallCache

    location = str(args.cache)  # a SQLite path or a server URL (postgresql://...)
    if "://" not in location:
        location = str(Path(location).resolve())  # relative to the current directory
        if not Path(location).exists():
            raise ConfigError(f"no cache at {location}")
    with CallCache(location) as cache:
        stats = pd.DataFrame(cache.stats())
    if stats.empty:
        print(f"{location}: empty")
        return 0
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        print(stats.to_string(index=False))
    tot = stats[["stored_calls", "failures", "requested", "hits", "new_calls", "tokens_in", "tokens_out", "cost_usd"]].sum()
    print(f"\ntotal: {int(tot.stored_calls)} stored calls, {int(tot.hits)} hits / {int(tot.requested)} requested,"
          f" {int(tot.failures)} failures, {int(tot.tokens_in)} tokens in, {int(tot.tokens_out)} out,"
          f" ${tot.cost_usd:.4f}")
    return 0


def cmd_check_config(args: argparse.Namespace) -> int:
    from judgelab.workflow.roles import check_log_formats, check_roles, missing_key_lines

    config = _config(args, references=True)  # every name that must name a judge, set, run or detector
    check_judge_envs(config)  # a judge's conda env file (its backend's `conda_env` trait)
    check_log_formats(config)
    simulated_roles = check_roles(config)  # a real run with a simulated role fails here, as in the DAG
    missing = [] if args.offline else missing_key_lines(config)
    if missing:
        for line in missing:
            print(f"judgelab: error: {line}", file=sys.stderr)
        return 2
    names = [d["name"] for d in config["judges"]]
    print(f"config OK: {len(names)} judges ({', '.join(names)})")
    if simulated_roles:
        print("simulated auxiliary roles: " + "; ".join(r.label() for r in simulated_roles))
    return 0


def cmd_backends(args: argparse.Namespace) -> int:
    import dataclasses

    import pandas as pd

    from judgelab.judges import BACKENDS
    from judgelab.prompts import PAIRWISE_TEMPLATES
    from judgelab.registry import backend_traits

    print("backends:", ", ".join(BACKENDS.names()))
    print("pairwise templates:", ", ".join(PAIRWISE_TEMPLATES.names()))
    # each backend's declared traits, under its default options (a judge entry's options may change
    # GPUs or whether weights load: judgelab.registry.backend_traits(entry))
    rows = [dataclasses.asdict(backend_traits(name)) for name in BACKENDS.names()]
    print("\ntraits (default options):")
    print(pd.DataFrame(rows).set_index("backend").to_string())
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """Enumerate the run's calls offline on stand-ins and price what is not yet cached (judgelab.workflow.plan).

    A call several studies need is listed under each of them; each judge's ``(all studies)``
    row, and the TOTAL over those rows, count it once (what the run asks and pays)."""
    from judgelab.io import write_table
    from judgelab.workflow.plan import format_plan, plan

    table = plan(args.configfile or [], targets=args.targets, directory=args.directory, progress=not args.quiet,
                 batch_dir=args.batch_dir)
    print(format_plan(table), end="")
    if args.batch_dir:
        from judgelab.batch.export import format_export

        print(format_export(table.attrs["batch_export"], Path(args.batch_dir)), end="")
    if args.out:
        write_table(table, args.out)
    return 0


class Parser(argparse.ArgumentParser):
    """argparse with a did-you-mean for a misspelt subcommand or choice (Python 3.11's argparse
    has none), on one line."""

    def error(self, message: str) -> NoReturn:
        import difflib
        import re

        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            known = re.findall(r"'([^']*)'", m.group(2))
            close = difflib.get_close_matches(m.group(1), known, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known)}"
            self.exit(2, f"{self.prog}: error: invalid choice {m.group(1)!r}; {hint}\n")
        super().error(message)


def _unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> NoReturn:
    """One line for arguments no option of the subcommand takes, with the closest option for each."""
    import difflib

    sub = _subcommands(parser).get(getattr(args, "cmd", None) or "", parser)
    options = [s for a in sub._actions for s in a.option_strings]
    parts = []
    for token in extra:
        close = difflib.get_close_matches(token.split("=", 1)[0], options, n=1, cutoff=0.6) \
            if token.startswith("-") else []
        parts.append(f"{token} (did you mean {close[0]}?)" if close else token)
    sub.exit(2, f"{sub.prog}: error: unrecognized argument{'s' if len(extra) > 1 else ''}: {', '.join(parts)}\n")


def refuse_renamed_options(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Exit 2 with one line for a subcommand or option judgelab renamed
    (:data:`judgelab.config.RENAMED_OPTIONS`), before argparse reads it as an abbreviation, an
    unknown argument or, worse, a value: ``judgelab <cmd>: error: --old was renamed to --new``."""
    from judgelab.config import RENAMED_OPTIONS

    subs = _subcommands(parser)
    name = next((t for t in argv if not t.startswith("-")), None)
    if name is not None and name not in subs and ("", name) in RENAMED_OPTIONS:
        parser.exit(2, f"{parser.prog}: error: command {name} was renamed to {RENAMED_OPTIONS['', name]}\n")
    if name not in subs:
        return
    for token in argv[argv.index(name) + 1:]:
        if token == "--":
            return
        flag = token.split("=", 1)[0]
        new = RENAMED_OPTIONS.get((name, flag)) or RENAMED_OPTIONS.get(("*", flag))
        if flag.startswith("--") and new:
            subs[name].exit(2, f"{subs[name].prog}: error: {flag} was renamed to {new}\n")


def _misspelt_flag(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Exit with one did-you-mean line for a ``--flag`` the subcommand does not have (and that
    abbreviates none of its flags), before argparse parses: argparse would otherwise report a
    required option as missing first (``--outt`` for ``--out``), or print its usage."""
    import difflib

    subs = _subcommands(parser)
    name = next((t for t in argv if t in subs), None)
    if name is None:
        return
    sub = subs[name]
    options = [s for a in sub._actions for s in a.option_strings]
    for token in argv[argv.index(name) + 1:]:
        if token == "--":
            return
        flag = token.split("=", 1)[0]
        if not flag.startswith("--") or any(o.startswith(flag) for o in options):
            continue
        close = difflib.get_close_matches(flag, options, n=1, cutoff=0.6)
        if close:
            sub.exit(2, f"{sub.prog}: error: unrecognized argument {flag}; did you mean {close[0]}?\n")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


#: Options of the commands that name files or folders to read: ``--out`` may not be, hold or lie
#: inside any of them (:func:`judgelab.io.check_out`).
INPUT_OPTIONS = ("file", "files", "before", "after", "mapping", "gamed_csv", "lc_weights", "style_reference", "configfile",
                 "cache", "traces", "model_dir", "pairs", "items")


def input_paths(args: argparse.Namespace) -> list[str]:
    """Every input path the arguments name (``--table NAME=PATH`` by its path)."""
    out: list[str] = []
    for name in INPUT_OPTIONS:
        value = getattr(args, name, None)
        if value:
            out.extend(str(v) for v in (value if isinstance(value, list) else [value]))
    for spec in getattr(args, "table", None) or []:
        _, sep, path = str(spec).partition("=")
        if sep and path:
            out.append(path)
    return [p for p in out if "://" not in p]  # a server URL (postgresql://) is no path


def absolute_data_root() -> None:
    """Make ``$JUDGELAB_DATA`` absolute once, at start: a command that runs elsewhere (``plan``
    works in a scratch folder) reads the folder the user named, relative to where they stood."""
    import os

    from judgelab.datasets.sources import ENV_VAR

    value = os.environ.get(ENV_VAR)
    if value and not Path(value).expanduser().is_absolute():
        os.environ[ENV_VAR] = str(Path(value).expanduser().resolve())


def build_parser() -> argparse.ArgumentParser:
    from judgelab.io import add_out_file

    p = Parser(prog="judgelab", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def with_config(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--configfile", action="append", help="extra config file(s), merged in order")

    j = sub.add_parser("judge", help="run one judge on a pairs file (JSONL or parquet)")
    with_config(j)
    j.add_argument("--judge", required=True, help="judge name from the config")
    j.add_argument("--pairs", required=True, help="pairs file: pair_id, prompt, response_a, response_b, expected_verdict")
    j.add_argument("--template", default="json_verdict", help="pairwise prompt template")
    j.add_argument("--orders", default="AB,BA", help="presentation orders, comma-separated")
    j.add_argument("--cache", help="SQLite call cache (default: the config's)")
    add_out_file(j, "write the verdict table here")
    j.add_argument("--max-error-rate", type=float, default=None,
                   help="fail if more than this share of calls errors (default: report and continue)")
    j.set_defaults(fn=cmd_judge)

    c = sub.add_parser("cache-stats", help="calls, hits, failures, tokens and cost per judge")
    c.add_argument("--cache", default=DEFAULT_CACHE,
                   help=f"SQLite file or postgresql:// URL (default: {DEFAULT_CACHE} under the current directory, "
                        "where a run from this directory writes it)")
    c.set_defaults(fn=cmd_cache_stats)

    v = sub.add_parser("check-config", help="validate the merged config (and that the judges' API keys are set)")
    with_config(v)
    v.add_argument("--offline", action="store_true",
                   help="skip the check that every API key variable the judges need is set")
    v.set_defaults(fn=cmd_check_config)

    b = sub.add_parser("backends", help="list registered backends (with their traits) and prompt templates")
    b.set_defaults(fn=cmd_backends)

    pl = sub.add_parser("plan", help="calls not yet cached, tokens and USD per judge and study, before a run "
                                     "(a shared call under each study; per-judge totals count it once)")
    with_config(pl)
    pl.add_argument("targets", nargs="*", help="Snakemake targets (default: the whole DAG)")
    pl.add_argument("--directory", help="project directory whose call cache counts as asked (default: cwd)")
    pl.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    pl.add_argument("--batch-dir", help="also write the calls not yet cached as OpenAI Batch API and Anthropic Message "
                                        "Batches input files in this new folder (then: judgelab batch-import)")
    add_out_file(pl, "also write the plan table here")
    pl.set_defaults(fn=cmd_plan)

    from judgelab.bias_card.command import add_commands  # audit, leaderboard-length

    add_commands(sub)
    from judgelab.rbd.audit_log import add_command as add_detect_bias  # detect-bias

    add_detect_bias(sub)
    from judgelab.board.command import add_command as add_leaderboard  # leaderboard

    add_leaderboard(sub)
    from judgelab.compare.command import add_command as add_compare  # compare

    add_compare(sub)
    from judgelab.bias_card.power import add_command as add_power  # power

    add_power(sub)
    from judgelab.probe.command import add_command as add_probe  # probe

    add_probe(sub)
    from judgelab.batch.import_ import add_command as add_batch_import  # batch-import

    add_batch_import(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    from judgelab.datasets.sources import DataMissing
    from judgelab.io import InputError, check_out_file, out_guard, record_written
    from judgelab.judges.base import BackendUnavailable
    from judgelab.judges.runner import TooManyErrors
    from judgelab.registry import UnknownEntryError
    from judgelab.workflow.plan import UnplannedRule

    absolute_data_root()
    parser = build_parser()
    refuse_renamed_options(parser, list(sys.argv[1:] if argv is None else argv))
    _misspelt_flag(parser, list(sys.argv[1:] if argv is None else argv))
    args, extra = parser.parse_known_args(argv)
    if extra:
        _unrecognized(parser, args, extra)
    try:
        if getattr(args, "out_folder", False):  # a set replacing a folder: refused or locked before any work
            with out_guard(args.out, inputs=input_paths(args), force=args.force, command=args.cmd):
                return int(args.fn(args))
        if getattr(args, "out_file", False) and args.out:  # one table: refused before any work, owned after
            check_out_file(args.out, inputs=input_paths(args), force=args.force)
            code = int(args.fn(args))
            if Path(args.out).is_file():
                record_written(args.out)
            return code
        return int(args.fn(args))
    except KeyboardInterrupt:
        print("judgelab: interrupted; nothing was replaced", file=sys.stderr)
        return 130
    except (ConfigError, InputError, DataMissing, BackendUnavailable, UnknownEntryError, TooManyErrors,
            UnplannedRule, FileNotFoundError) as exc:
        print(f"judgelab: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR):
            where = exc.filename or getattr(args, "out", None) or "the output"
            print(f"judgelab: error: {where}: {exc.strerror}; nothing was replaced (write elsewhere, or fix the "
                  f"permissions)", file=sys.stderr)
            return 2
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        where = exc.filename or getattr(args, "out", None) or "the output"
        print(f"judgelab: error: {where}: no space left on the device ({exc.strerror}); free space or write "
              f"elsewhere, then rerun (nothing was renamed into place)", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
