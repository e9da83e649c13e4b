"""``judgelab compare``: matching, the paired item-clustered differences, flips, and the output set."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab import cli
from judgelab.bias_card.card import CardSettings
from judgelab.bias_card.planted import PlantedJudge, planted_log
from judgelab.compare.paired import MIN_MATCHED_ITEMS, compare_cards, item_draws, match, split_judges
from judgelab.io import InputError

LENIENT = CardSettings(views=("lenient",))


@pytest.fixture(scope="module")
def llmbar(data_root: Path) -> pd.DataFrame:
    from judgelab.verdict_import.importer import import_verdicts
    from judgelab.verdict_import.presets import mapping_from_config

    d = data_root / "llmbar_judge_outputs" / "Natural" / "evaluators"
    return import_verdicts([str(d / j / "Vanilla" / "result.json") for j in ("ChatGPT", "GPT-4")],
                           mapping_from_config("llmbar"), texts=False)


def _position(t: pd.DataFrame) -> float:
    """Independent of the card: +1 for the slot shown first, -1 for the second, 0 for a tie, over
    verdicts with a value."""
    shown = t["verdict_shown"].astype(str)
    score = np.where(shown == "A", 1.0, np.where(shown == "B", -1.0, np.where(shown == "tie", 0.0, np.nan)))
    return float(np.nanmean(score))


def test_llmbar_chatgpt_vs_gpt4_position_difference_matches_an_independent_paired_bootstrap(llmbar):
    before, after, _names = split_judges(llmbar, "GPT-4-Vanilla,ChatGPT-Vanilla")
    m = match(before, after)
    assert m.n_items == 100 and len(m.unmatched) == 0
    res = compare_cards(m, LENIENT, resamples=60, seed=7).set_index("metric")
    row = res.loc["position_preference"]
    assert row["before"] == pytest.approx(0.010, abs=1e-3) and row["after"] == pytest.approx(0.210, abs=1e-3)
    # the same item draws, replayed by hand: whole items, both judges at once
    items = np.sort(m.before["item_id"].astype(str).unique())
    diffs = []
    for draw in item_draws(len(items), 60, 7):
        picked = pd.Series(items[draw])
        b = m.before.merge(picked.rename("item_id").to_frame(), on="item_id")  # duplicates kept
        a = m.after.merge(picked.rename("item_id").to_frame(), on="item_id")
        diffs.append(_position(a) - _position(b))
    lo, hi = np.quantile(diffs, [0.025, 0.975])
    assert row["diff"] == pytest.approx(0.200, abs=1e-3)
    assert abs(row["ci_low"] - lo) < 0.01 and abs(row["ci_high"] - hi) < 0.01
    assert row["ci_low"] > 0 and row["significant"]
    assert row["flip"] == "not detected -> detected"
    acc = res.loc["accuracy_average"]
    assert acc["diff"] == pytest.approx(-0.140, abs=1e-3) and acc["ci_high"] < 0
    # positional agreement pairs the two orders of each pair: a drawn item twice is two pairs
    agree = res.loc["positional_agreement"]
    pdiffs = []
    for draw in item_draws(len(items), 60, 7):
        picked = pd.Series(items[draw]).rename("item_id").to_frame().reset_index(names="copy")
        pdiffs.append(_agreement(m.after.merge(picked, on="item_id")) - _agreement(m.before.merge(picked, on="item_id")))
    plo, phi = np.quantile(pdiffs, [0.025, 0.975])
    assert agree["diff"] == pytest.approx(-0.240, abs=1e-3)
    assert abs(agree["ci_low"] - plo) < 0.01 and abs(agree["ci_high"] - phi) < 0.01
    # Holm within the view, over the rows with a test
    from statsmodels.stats.multitest import multipletests

    tested = res[res["p_value"].notna()]
    assert (tested["p_value"] < 0.01).sum() >= 3  # several small p-values: Holm differs from Bonferroni
    assert np.allclose(tested["p_adjusted"], multipletests(tested["p_value"], method="holm")[1])


def _agreement(t: pd.DataFrame) -> float:
    """Independent of the card: per (copy, pair), the stored-frame verdicts of AB and BA agree,
    over pairs with a verdict (A, B or tie) in both orders."""
    v = t[t["verdict"].astype(str).isin(["A", "B", "tie"])]
    w = v.pivot_table(index=["copy", "pair_id"], columns="order", values="verdict", aggfunc="first",
                      observed=True).dropna()
    return float((w["AB"] == w["BA"]).mean())


def test_unmatched_presentations_are_counted_and_listed_never_compared():
    a = planted_log(PlantedJudge(), n_items=30, seed=1, judge="old")
    b = planted_log(PlantedJudge(position=0.3), n_items=30, seed=1, judge="new")
    b = b[~((b["item_id"] == b["item_id"].iloc[0]) & (b["order"] == "BA"))]  # one item shown once only
    extra = a[a["item_id"] == a["item_id"].iloc[-1]].assign(item_id="only-old", pair_id=lambda d: d["pair_id"] + "x")
    m = match(pd.concat([a, extra], ignore_index=True), b)
    assert set(m.unmatched["side"]) == {"before"}
    assert (m.unmatched["item_id"] == "only-old").sum() == len(extra)
    assert len(m.unmatched) == len(extra) + int((a["item_id"] == a["item_id"].iloc[0]).sum() / 2)
    assert len(m.before) == len(m.after) == len(b)
    keys = ["item_id", "pair_id", "order"]
    assert (m.before[keys].astype(str).to_numpy() == m.after[keys].astype(str).to_numpy()).all()


def test_the_after_side_is_paired_by_key_not_by_row_order():
    a = planted_log(PlantedJudge(), n_items=25, seed=8, judge="old")
    b = planted_log(PlantedJudge(position=0.3), n_items=25, seed=8, judge="new")
    shuffled = b.sample(frac=1.0, random_state=1).reset_index(drop=True)
    m1, m2 = match(a, b), match(a, shuffled)
    pd.testing.assert_frame_equal(m1.after, m2.after)
    pd.testing.assert_frame_equal(compare_cards(m1, LENIENT, resamples=20), compare_cards(m2, LENIENT, resamples=20))


def test_a_presentation_recorded_twice_is_an_error():
    a = planted_log(PlantedJudge(), n_items=5, seed=1)
    with pytest.raises(InputError, match="records one presentation twice"):
        match(pd.concat([a, a.iloc[:1]], ignore_index=True), a)


def test_identical_judges_differ_by_nothing_and_have_no_test():
    a = planted_log(PlantedJudge(), n_items=30, seed=2, judge="old")
    res = compare_cards(match(a, a.assign(judge="new")), LENIENT, resamples=30)
    tested = res[res["diff"].notna()]
    assert (tested["diff"] == 0).all() and (tested["flip"] == "").all()
    assert tested["p_value"].isna().all() and not tested["significant"].any()
    assert tested["test_reason"].str.contains("no variance").all()


def test_few_matched_items_say_underpowered():
    a = planted_log(PlantedJudge(), n_items=MIN_MATCHED_ITEMS - 1, seed=3, judge="old")
    b = planted_log(PlantedJudge(), n_items=MIN_MATCHED_ITEMS - 1, seed=3, judge="new")
    assert compare_cards(match(a, b), LENIENT, resamples=20)["underpowered"].all()
    c = planted_log(PlantedJudge(), n_items=MIN_MATCHED_ITEMS, seed=3)
    assert not compare_cards(match(c, c.assign(judge="x")), LENIENT, resamples=20)["underpowered"].any()


def test_a_planted_position_change_is_found_and_a_planted_null_is_not():
    old = planted_log(PlantedJudge(), n_items=80, seed=11, judge="old")
    new = planted_log(PlantedJudge(position=0.4), n_items=80, seed=11, judge="new")
    res = compare_cards(match(old, new), LENIENT, resamples=40).set_index("metric")
    assert res.loc["position_preference", "significant"] and res.loc["position_preference", "diff"] > 0.2
    same = planted_log(PlantedJudge(), n_items=80, seed=12, judge="new")
    null = compare_cards(match(old, same), LENIENT, resamples=40).set_index("metric")
    assert not null.loc["position_preference", "significant"]


def test_holm_adjusts_within_a_view():
    old = planted_log(PlantedJudge(), n_items=40, seed=5, judge="old")
    new = planted_log(PlantedJudge(position=0.2), n_items=40, seed=5, judge="new")
    res = compare_cards(match(old, new), CardSettings(), resamples=30)
    from statsmodels.stats.multitest import multipletests

    for _, g in res[res["p_value"].notna()].groupby("view"):
        assert np.allclose(g["p_adjusted"], multipletests(g["p_value"], method="holm")[1])
    assert set(res["view"]) == {"lenient", "strict"}


# ---- the command ------------------------------------------------------------------------------------------
def _logs(tmp_path: Path) -> tuple[Path, Path]:
    old = planted_log(PlantedJudge(), n_items=30, seed=21, judge="old")
    new = planted_log(PlantedJudge(position=0.4), n_items=30, seed=21, judge="new")
    old.to_csv(tmp_path / "old.csv", index=False)
    new.to_csv(tmp_path / "new.csv", index=False)
    return tmp_path / "old.csv", tmp_path / "new.csv"


@pytest.fixture(scope="module")
def one_set(tmp_path_factory) -> tuple[Path, Path, str]:
    """``judgelab compare --before --after`` run once on :func:`_logs`: the logs' folder, the set and what
    the command printed (read by the command's test and the report's)."""
    tmp = tmp_path_factory.mktemp("one_set")
    old, new = _logs(tmp)
    out = tmp / "cmp"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        rc = cli.main(["compare", "--format", "judgelab", "--before", str(old), "--after", str(new), "--out", str(out),
                       "--pair-resamples", "20", "--views", "lenient"])
    assert rc == 0
    return tmp, out, printed.getvalue()


def test_the_command_writes_one_set(one_set, tmp_path):
    logs, out, text = one_set
    old, new = logs / "old.csv", logs / "new.csv"
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "compare.csv", "compare.md", "compare.png", "report.html", "unmatched.csv"]
    table = pd.read_csv(out / "compare.csv")
    assert "position_preference" in set(table["metric"]) and table["simulated"].all() is not False
    assert "30 items matched" in text and "position_preference" in text
    assert "new vs old" in (out / "compare.md").read_text().splitlines()[0]
    # two judges of one log give the same table as two logs
    both = tmp_path / "both.csv"
    pd.concat([pd.read_csv(old), pd.read_csv(new)]).to_csv(both, index=False)
    assert cli.main(["compare", "--format", "judgelab", str(both), "--judges", "old,new", "--out",
                     str(tmp_path / "cmp2"), "--pair-resamples", "20", "--views", "lenient"]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "cmp2" / "compare.csv"), table)


@pytest.mark.parametrize("argv,msg", [
    (["--judges", "old,nwe"], "did you mean 'new'"),
    (["--judges", "old"], "two judge names"),
    (["--judges", "old,new", "--before", "x.csv"], "not both"),
    (["--pair-resamples", "5", "--judges", "old,new"], "at least 20"),
])
def test_bad_invocations_are_one_line(tmp_path, capsys, argv, msg):
    old, new = _logs(tmp_path)
    both = tmp_path / "both.csv"
    pd.concat([pd.read_csv(old), pd.read_csv(new)]).to_csv(both, index=False)
    assert cli.main(["compare", "--format", "judgelab", str(both), *argv, "--out", str(tmp_path / "o"),
                     "--views", "lenient"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0]
    assert not (tmp_path / "o").exists()


def test_the_report_renders_in_headless_chromium(one_set, tmp_path):
    from tests.plots.test_html_report import _not_blank, chromium, render

    if chromium() is None:
        pytest.skip("chromium is not installed (scripts/install-services.sh)")
    page = one_set[1] / "report.html"
    r = render(page, tmp_path / "run")
    assert r.console == [], r.console
    assert "data:image/png;base64," in page.read_text() and "SIMULATED" in page.read_text()
    assert "position_preference" in r.dom
    assert _not_blank(r.screenshot) > 0.02


def test_compare_gate_trips_on_a_significant_worsening_only(tmp_path, capsys):
    old, new = _logs(tmp_path)
    base = ["compare", "--format", "judgelab", "--before", str(old), "--after", str(new), "--pair-resamples", "20",
            "--views", "lenient"]
    assert cli.main([*base, "--out", str(tmp_path / "w"), "--fail-on", "compare:position_preference.diff>0"]) == 1
    assert "gate tripped: compare:position_preference.diff>0: view=lenient, metric=position_preference" in \
        capsys.readouterr().err
    assert (tmp_path / "w" / "gate.json").exists()
    # the reverse direction is a significant improvement, not a worsening
    assert cli.main([*base, "--out", str(tmp_path / "b"), "--fail-on", "compare:position_preference.diff<0"]) == 0
    # a difference that is not significant does not trip compare:, a plain threshold does
    table = pd.read_csv(tmp_path / "b" / "compare.csv").set_index("metric")
    quiet = table[(~table["significant"]) & table["diff"].notna() & (table["diff"] != 0)].index[0]
    sign = ">" if table.loc[quiet, "diff"] > 0 else "<"
    assert cli.main([*base, "--out", str(tmp_path / "q"), "--fail-on", f"compare:{quiet}.diff{sign}0"]) == 0
    assert cli.main([*base, "--out", str(tmp_path / "t"), "--fail-on", f"{quiet}.diff{sign}0"]) == 1
    assert cli.main([*base, "--out", str(tmp_path / "x"), "--fail-on", "compare:position_bias.diff>0"]) == 2
    assert not (tmp_path / "x").exists()


def test_compare_never_writes_over_its_inputs_or_a_users_folder(tmp_path, capsys):
    old, new = _logs(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    base = ["compare", "--format", "judgelab", "--before", str(old), "--after", str(new), "--pair-resamples", "20",
            "--views", "lenient"]
    assert cli.main([*base, "--out", str(tmp_path)]) == 2  # the folder holding both logs
    assert "contains the input" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert cli.main([*base, "--out", str(mine)]) == 2
    assert (mine / "notes.txt").read_text() == "keep me" and "--force" in capsys.readouterr().err
