"""Units of ``judgelab probe`` (judgelab.probe.command) on a tiny item set with the simulated panel and
few resamples, fast enough for a mutation run: the printed summary and notes, every output of the set
against the probe rebuilt and the effects recomputed from the written verdicts, the per-probe card with its
controlled probes, a rerun served by the cache, the --delta sizing and every refusal's exact line."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from judgelab.bias_card.card import CardSettings
from judgelab.cli import build_parser, main
from judgelab.config import ConfigError
from judgelab.probe.build import build_probe, load_items, select_items
from judgelab.probe.command import size_from_delta
from judgelab.probe.effects import effects_markdown, insertion_effects

JUDGE = "sim-gpt-4o"
PROBED = ("position", "length", "truncation", "bandwagon")  # the order of judgelab.probe.build.PROBES
CONTROLLED = ("The length and markdown probes' pairs differ only in their cue: their cue rows are read as controlled "
              "pairs (identified without gold); the other probes' cue rows rest on the items' gold, where they "
              "have it.")


def write_items(path: Path, golds: str) -> Path:
    """One item per letter of ``golds``: response A one sentence (no truncation), response B two sentences;
    the truncation probe rebuilds the gold side, so only the items with gold B can carry its cue."""
    rows = [{"pair_id": f"q{i}", "prompt": f"Question {i}?", "response_a": f"Answer one to question {i}.",
             "response_b": f"First part of answer {i}. Second part of it here.", "expected_verdict": g}
            for i, g in enumerate(golds)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run(*argv: str) -> tuple[int, str, list[str]]:
    """rc, stdout, and stderr's judgelab lines (the progress bar left out)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["probe", *argv])
    return rc, out.getvalue(), [ln for ln in err.getvalue().splitlines() if ln.startswith("judgelab:")]


PNG = b"\x89PNG\r\n\x1a\n"


def probed_runs(tmp: Path) -> dict:
    """Four runs of the command.  The card's figure (matplotlib: most of a run's time, drawn and checked by
    tests/probe/test_cli.py and the bias card's own tests) is replaced by a spy that records what the command
    hands it and writes a PNG signature where the figure goes, so the runs take a mutation run's time."""
    import judgelab.bias_card.report as report

    items = write_items(tmp / "items.jsonl", "AAAAAAB")
    cache = tmp / "calls.sqlite"
    figures: list[tuple[pd.DataFrame, str, str]] = []

    def spy(card: pd.DataFrame, path: Path, *, title: str) -> None:
        figures.append((card, Path(path).name, title))
        Path(path).write_bytes(PNG)

    import judgelab.judges.pairwise as pairwise

    asked: list[dict] = []
    real_judge_pairs = pairwise.judge_pairs

    def judge_pairs(*args, **kwargs):  # the real call, its keyword arguments recorded
        asked.append(kwargs)
        return real_judge_pairs(*args, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(report, "card_figure", spy)
    mp.setattr(pairwise, "judge_pairs", judge_pairs)
    try:
        first = run(str(items), "--judge", JUDGE, "--probes", "truncation,bandwagon,length,position", "--pairs", "9",
                    "--resamples", "20", "--cache", str(cache), "--out", str(tmp / "out"))
        second = run(str(items), "--judge", JUDGE, "--probes", "bandwagon,position", "--pairs", "3", "--resamples",
                     "20", "--cache", str(cache), "--out", str(tmp / "again"), "--title", "Second look", "--alpha",
                     "0.3")
        # the template and the cache a config names, and --template over the config's
        cfg = tmp / "cfg.yaml"
        cfg.write_text(f"cache: {tmp / 'config-cache.sqlite'}\norders:\n  template: ab_letter\n")
        third = run(str(items), "--judge", JUDGE, "--configfile", str(cfg), "--probes", "position,length", "--pairs",
                    "1", "--resamples", "20", "--out", str(tmp / "third"), "--max-error-rate", "0.25", "--seed", "5")
        fourth = run(str(items), "--judge", JUDGE, "--configfile", str(cfg), "--template", "json_verdict", "--probes",
                     "position", "--pairs", "1", "--resamples", "20", "--cache", str(cache), "--out", str(tmp / "fourth"))
    finally:
        mp.undo()
    return {"tmp": tmp, "items": items, "first": first, "second": second, "third": third, "fourth": fourth,
            "figures": figures, "asked": asked}


def test_four_runs_of_the_command(tmp_path: Path):
    """One test for the four runs and every check of them: the runs are shared, and a mutation run
    (scripts/mutation.sh) credits the code they reach to the test that makes them, so the checks live here."""
    probed = probed_runs(tmp_path)
    the_summary_notes_and_warning_are_exact(probed)
    the_printed_tables_are_the_cards_lenient_cue_rows_and_the_effects(probed)
    the_set_holds_the_probe_the_verdicts_and_their_effects(probed)
    the_card_has_one_judge_per_probe_and_reads_the_controlled_ones_as_such(probed)
    a_rerun_is_served_by_the_cache_under_its_title(probed)
    the_template_and_cache_come_from_the_config_unless_given(probed)


def the_summary_notes_and_warning_are_exact(probed: dict) -> None:
    rc, stdout, err = probed["first"]
    out, items = probed["tmp"] / "out", probed["items"]
    assert rc == 0
    assert err == [f"judgelab: warning: 9 items asked, {items} has 7: the probe uses all of them and may be "
                   "underpowered",
                   "judgelab: note: the truncation probe left out 6 item(s) that cannot carry its cue "
                   "(q0, q1, q2, q3, q4 ...)"]
    # 7 items: position, length, bandwagon 7 pairs each, truncation 1 (q6); both orders each
    assert stdout.splitlines()[-1] == (
        f"7 items, 22 probe pairs (position, length, truncation, bandwagon), 44 verdicts of {JUDGE}: 44 new calls, "
        f"0 from the cache; wrote {out}/probe.jsonl, verdicts.parquet, bias_card.csv, bias_card.md, bias_card.png, "
        "report.html, probe_effects.csv")


def the_printed_tables_are_the_cards_lenient_cue_rows_and_the_effects(probed: dict) -> None:
    _, stdout, _ = probed["first"]
    out = probed["tmp"] / "out"
    card = pd.read_csv(out / "bias_card.csv")
    metrics = ["position_preference", "length_preference", "markdown_preference", "accuracy_average"]
    want = card[(card["view"] == "lenient") & card["metric"].isin(metrics)]
    head, effects_part, _ = stdout.split("\n\n")
    numbers = re.findall(r"-?\d+\.\d+", head)
    assert numbers and all(len(x.split(".")[1]) <= 3 for x in numbers)  # rounded to 3 decimals
    assert any(len(x.split(".")[1]) == 3 for x in numbers)
    printed = [re.match(r"^\s*(\S+ \[\w+\])\s+(\w+)\s+(not estimable|not detected|detected|underpowered|"
                        r"not identified|descriptive)\s", ln).groups() for ln in head.splitlines()[1:]]
    assert printed == list(zip(want["judge"], want["metric"], want["status"], strict=True))
    assert head.splitlines()[0].split() == ["judge", "metric", "status", "estimate", "ci_low", "ci_high", "p_value"]
    effects = pd.read_csv(out / "probe_effects.csv")
    lines = effects_part.splitlines()
    assert lines[0].split() == ["judge", "probe", "status", "estimate", "ci_low", "ci_high", "p_value"]
    assert [ln.split()[:2] for ln in lines[1:]] == [[JUDGE, "bandwagon"]] == [[j, p] for j, p in
                                                                              zip(effects["judge"], effects["probe"],
                                                                                  strict=True)]
    assert f"{effects['estimate'].iloc[0]:.3f}" in lines[1]
    numbers = re.findall(r"-?\d+\.\d+", effects_part)
    assert numbers and all(len(x.split(".")[1]) <= 3 for x in numbers)  # rounded to 3 decimals too
    assert any(len(x.split(".")[1]) == 3 for x in numbers)


def the_set_holds_the_probe_the_verdicts_and_their_effects(probed: dict) -> None:
    out, items = probed["tmp"] / "out", probed["items"]
    assert {p.name for p in out.iterdir()} >= {"probe.jsonl", "verdicts.parquet", "bias_card.csv", "bias_card.md",
                                               "bias_card.png", "report.html", "probe_effects.csv"}
    probe = build_probe(load_items(items), PROBED, seed=0)
    written = [json.loads(ln) for ln in (out / "probe.jsonl").read_text().splitlines()]
    assert written == json.loads(probe.to_json(orient="records"))
    v = pd.read_parquet(out / "verdicts.parquet")
    assert len(v) == 2 * len(probe) == 44
    assert sorted(zip(v["pair_id"], v["order"], strict=True)) == sorted((p, o) for p in probe["pair_id"]
                                                                        for o in ("AB", "BA"))
    by_id = probe.set_index("pair_id")
    for col in ("item_id", "probe", "cue", "cue_side", "response_a", "response_b", "expected_verdict"):
        assert list(v[col]) == list(by_id.loc[v["pair_id"], col]), col
    assert set(v.loc[v["probe"] == "length", "expected_verdict"]) == {""}
    gold = v["expected_verdict"] != ""
    assert v.loc[~gold, "correct"].isna().all()
    assert list(v.loc[gold, "correct"].astype(bool)) == list(v.loc[gold, "verdict"] == v.loc[gold, "expected_verdict"])
    assert v.loc[gold, "correct"].notna().all() and (v["judge"] == JUDGE).all()
    assert str(v["correct"].dtype) == "boolean"  # true/false with <NA>, not a float column of 1/0/NaN
    effects = pd.read_csv(out / "probe_effects.csv", keep_default_na=False, na_values=[""])
    again = insertion_effects(v, CardSettings(n_resamples=20))
    assert list(effects["probe"]) == ["bandwagon"]
    for col in ("estimate", "se", "p_value", "n", "n_items", "cue_share", "base_share"):
        assert effects[col].iloc[0] == pytest.approx(again[col].iloc[0]), col


def the_card_has_one_judge_per_probe_and_reads_the_controlled_ones_as_such(probed: dict) -> None:
    out = probed["tmp"] / "out"
    card = pd.read_csv(out / "bias_card.csv")
    assert list(dict.fromkeys(card["judge"])) == [f"{JUDGE} [{p}]" for p in PROBED]
    lenient = card[card["view"] == "lenient"].set_index(["judge", "metric"])
    assert "controlled pairs" in lenient.loc[(f"{JUDGE} [length]", "length_preference"), "note"]
    for p in ("position", "truncation", "bandwagon"):
        assert "controlled pairs" not in str(lenient.loc[(f"{JUDGE} [{p}]", "length_preference"), "note"]), p
    md = (out / "bias_card.md").read_text()
    assert md.startswith(f"# Bias card: probe of {JUDGE}\n")
    v = pd.read_parquet(out / "verdicts.parquet")
    for p in PROBED:  # each probe's section counts its own verdicts
        n = int((v["probe"] == p).sum())
        assert re.search(rf"## {re.escape(JUDGE)} \\\[{p}\\\] \(family [^)]*, {n} verdicts\)", md), p
    effects = pd.read_csv(out / "probe_effects.csv", keep_default_na=False, na_values=[""])
    effects["reason"] = effects["reason"].astype(object).fillna("")
    assert CONTROLLED in md and md.endswith("\n\n" + effects_markdown(effects))
    assert md.split("\n")[2] == ("**SIMULATED JUDGES** - these verdicts come from the simulated panel, not a real "
                                  "model.")
    html = (out / "report.html").read_text()
    assert f"probe of {JUDGE}" in html and base64.b64encode(PNG).decode() in html  # the figure, embedded
    for p in PROBED:
        n = int((v["probe"] == p).sum())
        assert f"{JUDGE} [{p}] (family openai, {n} verdicts)" in html, p
    assert (out / "bias_card.png").read_bytes() == PNG
    # the figure is drawn from the written card, under the card's title, once per run
    (fig_card, name, title), (_, name2, title2) = probed["figures"][:2]
    assert (name, title, name2, title2) == ("bias_card.png", f"probe of {JUDGE}", "bias_card.png", "Second look")
    assert list(fig_card["judge"]) == list(card["judge"]) and list(fig_card["metric"]) == list(card["metric"])


def a_rerun_is_served_by_the_cache_under_its_title(probed: dict) -> None:
    rc, stdout, err = probed["second"]
    out = probed["tmp"] / "again"
    assert rc == 0 and err == []
    assert stdout.splitlines()[-1].startswith(
        f"3 items, 6 probe pairs (position, bandwagon), 12 verdicts of {JUDGE}: 0 new calls, 12 from the cache; "
        f"wrote {out}/probe.jsonl")
    assert (out / "bias_card.md").read_text().startswith("# Bias card: Second look\n")
    # the effects at the settings asked (--alpha 0.3: a 70 % interval), as recomputed from the written verdicts
    effects = pd.read_csv(out / "probe_effects.csv")
    want = insertion_effects(pd.read_parquet(out / "verdicts.parquet"), CardSettings(alpha=0.3))
    default = insertion_effects(pd.read_parquet(out / "verdicts.parquet"), CardSettings())
    assert effects["ci_low"].iloc[0] == pytest.approx(want["ci_low"].iloc[0])
    assert want["ci_low"].iloc[0] != pytest.approx(default["ci_low"].iloc[0])
    assert "Second look" in (out / "report.html").read_text()


def test_delta_prints_the_size_before_the_items_are_probed(tmp_path: Path):
    items = write_items(tmp_path / "items.jsonl", "AAAAA")  # no item can be truncated
    rc, stdout, err = run(str(items), "--judge", JUDGE, "--probes", "truncation", "--delta", "0.3",
                          "--assume", "accuracy=0.6", "--assume-items", "200", "--resamples", "20", "--out",
                          str(tmp_path / "out"))
    n, table = size_from_delta({"*": 0.3}, ("truncation",), CardSettings(n_resamples=20), assume={"accuracy": 0.6},
                               assume_items=200)
    default, _ = size_from_delta({"*": 0.3}, ("truncation",), CardSettings(n_resamples=20), assume={},
                                 assume_items=200)
    assert default != n  # the assumption moves the size
    assert list(table["metric"]) == ["accuracy_average"] and n == int(table["items_needed"].max()) > 5
    assert rc == 2
    assert stdout == f"power: {n} items detect the δ asked at alpha 0.05, power 0.8 (simulated pilot of 200 items)\n"
    assert err == [f"judgelab: warning: {n} items asked, {items} has 5: the probe uses all of them and may be "
                   "underpowered",
                   "judgelab: note: the truncation probe left out 5 item(s) that cannot carry its cue "
                   "(q0, q1, q2, q3, q4)",
                   f"judgelab: error: {items}: no item can carry any of the probes truncation"]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("flag", "value"), [("--delta", "big"), ("--assume", "accuracy=high")])
def test_a_bad_delta_or_assumption_is_one_line_naming_its_option(tmp_path: Path, flag: str, value: str):
    items = write_items(tmp_path / "items.jsonl", "AB")
    argv = [str(items), "--judge", JUDGE, "--out", str(tmp_path / "out"), flag, value]
    rc, stdout, err = run(*argv, *(["--delta", "0.3"] if flag == "--assume" else []))
    assert rc == 2 and stdout == ""
    assert err == [f"judgelab: error: {flag}: {value!r} is not NUMBER or NAME=NUMBER"]


def test_items_that_carry_none_of_the_probes_are_one_line(tmp_path: Path):
    items = tmp_path / "items.jsonl"  # the gold side is blank: nothing to pad or to cut
    items.write_text("".join(json.dumps({"pair_id": f"e{i}", "prompt": "q", "response_a": " ", "response_b": "b",
                                         "expected_verdict": "A"}) + "\n" for i in range(2)))
    rc, _, err = run(str(items), "--judge", JUDGE, "--probes", "truncation,length", "--pairs", "2", "--out",
                     str(tmp_path / "out"))
    assert rc == 2
    assert err[-1] == f"judgelab: error: {items}: no item can carry any of the probes length, truncation"


def test_as_many_items_as_asked_is_no_warning(tmp_path: Path):
    items = write_items(tmp_path / "items.jsonl", "AAAAA")  # 5 items, none can be truncated
    rc, stdout, err = run(str(items), "--judge", JUDGE, "--probes", "truncation", "--pairs", "5", "--out",
                          str(tmp_path / "out"))
    assert rc == 2 and stdout == ""
    assert err == ["judgelab: note: the truncation probe left out 5 item(s) that cannot carry its cue "
                   "(q0, q1, q2, q3, q4)",
                   f"judgelab: error: {items}: no item can carry any of the probes truncation"]


def test_delta_sizes_each_row_by_its_own_delta_and_takes_the_largest():
    s = CardSettings(n_resamples=20)
    n, table = size_from_delta({"*": 0.3, "markdown_preference": 0.5}, ("markdown", "bandwagon"), s, assume={},
                               assume_items=200)
    t = table.set_index("metric")
    # the insertion probes are sized by the position row; each row by its own delta, the rest by the default
    assert sorted(t.index) == ["markdown_preference", "position_preference"]
    assert t.loc["markdown_preference", "delta"] == 0.5 and t.loc["position_preference", "delta"] == 0.3
    assert n == int(t["items_needed"].max())
    one, _ = size_from_delta({"position_preference": 0.3}, ("sentiment",), s, assume={}, assume_items=200)
    assert one == int(t.loc["position_preference", "items_needed"])


def test_delta_sizes_on_the_pilot_the_settings_and_assumptions_describe():
    from judgelab.bias_card.power import assumed_pilot, probe_sizes

    s = CardSettings(n_resamples=20, alpha=0.1, seed=3)
    n, table = size_from_delta({"*": 0.3}, ("position",), s, assume={"accuracy": 0.7}, assume_items=150)

    def direct(settings: CardSettings, items: int, seed: int) -> pd.DataFrame:
        return probe_sizes(assumed_pilot({"accuracy": 0.7}, n_items=items, seed=seed),
                           {"position_preference": 0.3}, settings)

    want = direct(s, 150, 3)
    pd.testing.assert_frame_equal(table, want)
    assert n == int(want["items_needed"].max())
    # each of the three moves the size: the pilot's items, its seed (the card's), the card's settings
    others = [direct(s, 600, 3), direct(s, 150, 0), direct(CardSettings(), 150, 3)]
    assert all(not o.equals(want) for o in others)


def test_delta_on_a_pilot_too_small_for_any_mde_is_one_line():
    with pytest.raises(ConfigError) as err:  # two items: no clustered interval, no finite MDE
        size_from_delta({"*": 0.3}, ("position", "markdown"), CardSettings(n_resamples=20), assume={},
                        assume_items=2)
    assert str(err.value) == ("--delta: the simulated pilot has no finite MDE for markdown_preference, "
                              "position_preference; give --pairs N instead")


@pytest.mark.parametrize(("deltas", "probes", "rows"), [
    ({"length_preference": 0.2}, ("position", "bandwagon"), "position_preference"),
    ({"position_preference": 0.2}, ("truncation", "markdown"), "accuracy_average, markdown_preference"),
])
def test_delta_for_no_sized_row_is_one_line(deltas: dict, probes: tuple, rows: str):
    with pytest.raises(ConfigError) as err:
        size_from_delta(deltas, probes, CardSettings(), assume={}, assume_items=200)
    assert str(err.value) == f"--delta: give one δ (0.1) or one for a sized row ({rows})"


@pytest.mark.parametrize(("argv", "message"), [
    (["--pairs", "3", "--controlled-pairs"],
     "--controlled-pairs: the probe decides it per probe (the length and markdown probes' pairs are controlled, the "
     "others are your items); leave it out"),
    ([], "give the probe's size: --pairs N (items) or --delta D (sized by power), one of them"),
    (["--pairs", "3", "--delta", "0.2"], "give the probe's size: --pairs N (items) or --delta D (sized by power), "
                                         "one of them"),
    (["--pairs", "0"], "--pairs must be at least 1, got 0"),
    (["--pairs", "-2"], "--pairs must be at least 1, got -2"),
    (["--pairs", "2", "--probes", "lenght"], "--probes: unknown probe 'lenght'; did you mean 'length'?"),
])
def test_refusals_are_one_exact_line_before_anything_is_read(tmp_path: Path, argv: list[str], message: str):
    rc, stdout, err = run(str(tmp_path / "absent.jsonl"), "--judge", JUDGE, "--out", str(tmp_path / "out"), *argv)
    assert rc == 2 and stdout == "" and err == [f"judgelab: error: {message}"]


def test_the_options_defaults():
    args = build_parser().parse_args(["probe", "items.jsonl", "--judge", "j", "--out", "o"])
    assert (args.probes, args.n_pairs, args.delta, args.assume, args.assume_items) == ("all", None, None, None, 600)
    assert (args.template, args.cache, args.max_error_rate, args.title) == (None, None, None, None)
    args = build_parser().parse_args(["probe", "i", "--judge", "j", "--out", "o", "--delta", "0.1", "--delta",
                                      "length_preference=0.2", "--assume", "accuracy=0.8", "--pairs", "4"])
    assert args.delta == ["0.1", "length_preference=0.2"] and args.assume == ["accuracy=0.8"] and args.n_pairs == 4


def the_template_and_cache_come_from_the_config_unless_given(probed: dict) -> None:
    tmp = probed["tmp"]
    rc, stdout, _ = probed["third"]
    assert rc == 0 and " 4 verdicts of sim-gpt-4o: 4 new calls, 0 from the cache;" in stdout
    # --seed is the sample's and the probe's seed too (the length probe's slot is a seeded coin)
    built = build_probe(select_items(load_items(probed["items"]), 1, 5), ("position", "length"), seed=5)
    written = [json.loads(ln) for ln in (tmp / "third" / "probe.jsonl").read_text().splitlines()]
    assert written == json.loads(built.to_json(orient="records"))
    assert not built.equals(build_probe(select_items(load_items(probed["items"]), 1, 5), ("position", "length"), seed=0))
    assert len(stdout.split("\n\n")) == 2  # the card's rows and the summary: no insertion probe, no effects table
    assert set(pd.read_parquet(tmp / "third" / "verdicts.parquet")["template"]) == {"ab_letter"}
    assert (tmp / "config-cache.sqlite").is_file()
    rc, stdout, _ = probed["fourth"]  # --template json_verdict: the first run's calls, from its cache
    assert rc == 0 and " 2 verdicts of sim-gpt-4o: 0 new calls, 2 from the cache;" in stdout
    assert set(pd.read_parquet(tmp / "fourth" / "verdicts.parquet")["template"]) == {"json_verdict"}
    assert set(pd.read_parquet(tmp / "out" / "verdicts.parquet")["template"]) == {"json_verdict"}  # config.yaml's
    # --max-error-rate goes to the judge as given; without it None (report the errors and continue)
    assert [(a["template"], a["max_error_rate"]) for a in probed["asked"]] == [
        ("json_verdict", None), ("json_verdict", None), ("ab_letter", 0.25), ("json_verdict", None)]


def test_help_texts():
    """The options' help (the command's only documentation of its defaults): each default it names is the
    parser's, and --probes lists the probes there are."""
    from judgelab.probe.build import PROBES

    sub = next(a for a in build_parser()._actions if a.dest == "cmd")
    assert {a.dest: a.help for a in sub._choices_actions}["probe"] == (
        "build a probe set from your own items, run a judge on it, and audit it")
    parser = sub.choices["probe"]
    helps = {a.dest: a.help for a in parser._actions}
    assert {k: helps[k] for k in ("items", "configfile", "judge", "probes", "n_pairs", "delta", "assume",
                                  "assume_items", "template", "cache", "max_error_rate", "title")} == {
        "items": "your items: JSONL, CSV or parquet with prompt, response_a, response_b (optional pair_id, "
                 "expected_verdict)",
        "configfile": "extra config file(s), merged in order",
        "judge": "judge name from the config",
        "probes": "comma-separated, default all: " + ",".join(PROBES),
        "n_pairs": "items to probe (a seeded sample; all when more than the file has)",
        "delta": "size the probe by power instead: the effect to detect, NUMBER or METRIC=NUMBER (repeatable)",
        "assume": "the simulated pilot's judge rates for --delta (as for judgelab power), e.g. accuracy=0.8,tie=0.05",
        "assume_items": "items of the simulated pilot (default 600)",
        "template": "pairwise prompt template (default: the config's orders template (orders.template))",
        "cache": "SQLite call cache (default: the config's)",
        "max_error_rate": "fail if more than this share of calls errors (default: report and continue)",
        "title": "title of the card (default: probe of JUDGE)",
    }
    assert helps["out"].startswith("output folder")
    assert parser.get_default("assume_items") == 600 and parser.get_default("probes") == "all"
    assert {a.dest: a.required for a in parser._actions}["judge"] is True
