"""Lines of the card no test guarded before: the strict view's between-judge kappa with its fallback mask
(hand count), the design-effect binomial's successes rounded (scipy's binomtest on a non-integer share),
the position note saying only what the log has, and names with mathtext characters drawn literally."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from judgelab.bias_card import CardSettings, bias_card
from judgelab.bias_card.card import card_view
from judgelab.bias_card.rows_share import _share_row
from judgelab.stats.clustered import DEFF_FLOOR
from tests.helpers.bias_card_logs import Call, table

S = CardSettings(n_resamples=50)


def _two_judges() -> pd.DataFrame:
    """60 presentations; judge y's verdict on the last 20 is a fallback reading that disagrees with x."""
    truth = ["A", "B", "tie"] * 20
    x = table([Call(f"q{i}", f"p{i}", "AB", truth[i], gold="") for i in range(60)], judge="x")
    ys = [Call(f"q{i}", f"p{i}", "AB", truth[i] if i < 40 else {"A": "B", "B": "tie", "tie": "A"}[truth[i]],
               status="ok" if i < 40 else "fallback", gold="") for i in range(60)]
    return pd.concat([x, table(ys, judge="y")], ignore_index=True)


def _cohen_by_hand(a: list[str], b: list[str]) -> float:
    cats = sorted(set(a) | set(b))
    n = len(a)
    po = sum(u == v for u, v in zip(a, b, strict=True)) / n
    pe = sum((a.count(c) / n) * (b.count(c) / n) for c in cats)
    return (po - pe) / (1 - pe)


def test_strict_between_judge_kappa_leaves_fallback_verdicts_out():
    t = _two_judges()
    card = bias_card(t, S)
    panel = card[card["metric"] == "judges_kappa"].set_index("view")
    # strict: the 20 fallback verdicts count as none, so 40 presentations, all agreeing
    assert panel.loc["strict", "n"] == 40
    assert panel.loc["strict", "estimate"] == pytest.approx(1.0)
    # lenient: all 60, kappa by hand from the two label lists
    vx = t[t.judge == "x"]["verdict"].tolist()
    vy = t[t.judge == "y"]["verdict"].tolist()
    assert panel.loc["lenient", "n"] == 60
    assert panel.loc["lenient", "estimate"] == pytest.approx(_cohen_by_hand(vx, vy))
    assert _cohen_by_hand(vx, vy) < 0.6


def test_binomial_successes_are_rounded_not_floored():
    """Items of unequal size make the effective n fractional; the successes are the share times the rounded
    effective n, rounded -- here with a fractional part of at least 0.5, where flooring would differ."""
    rng = np.random.default_rng(0)
    found = False
    for seed in range(200):
        rng = np.random.default_rng(seed)
        items = np.repeat(np.arange(14), rng.integers(1, 5, 14))
        y = rng.random(len(items)) < 0.7
        n = len(y)
        est = y.mean()
        # the design effect by hand: CR0 variance of the mean from per-item residual sums over the binomial one
        u = np.array([(y[items == k] - est).sum() for k in range(14)])
        deff = max(DEFF_FLOOR, (u @ u / n**2) / (est * (1 - est) / n))
        n_int = max(1, round(n / deff))
        x = est * n_int
        if x - math.floor(x) < 0.5:
            continue
        found = True
        row = _share_row("accuracy_AB", np.ones(n, bool), y, items, S, null=0.5, share_of=n)
        assert row.statistic == round(x) == math.floor(x) + 1
        assert row.p_value == pytest.approx(binomtest(round(x), n_int, 0.5).pvalue)
        assert row.p_value != pytest.approx(binomtest(math.floor(x), n_int, 0.5).pvalue)
        break
    assert found


def test_position_note_says_only_what_the_log_has():
    one = [Call(f"q{i}", f"p{i}", "AB", "A" if i % 4 else "B", gold="") for i in range(30)]
    c = card_view(bias_card(table(one), S))
    note = c.loc["position_preference", "note"]
    assert note.startswith("only one presentation order recorded")
    assert "gold" not in note and "answer quality" in note
    with_gold = [Call(f"q{i}", f"p{i}", "AB", "A" if i % 4 else "B", gold="A") for i in range(30)]
    note_g = card_view(bias_card(table(with_gold), S)).loc["position_preference", "note"]
    assert "mixes position with gold" in note_g


NAMES = ["a$b", "$x$", "^_{}", "$x^$", "$_$", "$\\foo$"]  # the last three are not valid mathtext


def test_mathtext_characters_in_names_are_drawn_literally(tmp_path, monkeypatch):
    stamp_mod = importlib.import_module("judgelab.plots.stamp")  # (the package exports a function "stamp")
    from judgelab.bias_card.report import card_figure
    from judgelab.plots.orders import accuracy_figure

    drawn = []
    save = stamp_mod.save_figure

    def keep_texts(fig, path, **kw):  # the texts as drawn: each as written, none parsed as math
        fig.canvas.draw()
        drawn.extend((t.get_text(), t.get_parse_math()) for t in fig.findobj(lambda o: hasattr(o, "get_parse_math"))
                     if t.get_text())
        save(fig, path, **kw)

    monkeypatch.setattr(stamp_mod, "save_figure", keep_texts)
    monkeypatch.setattr(importlib.import_module("judgelab.plots.orders"), "save_figure", keep_texts)
    calls = [Call(f"q{i}", f"p{i}", "AB", "A" if i % 3 else "B") for i in range(20)]
    one = CardSettings(n_resamples=50, views=("lenient",))
    card = bias_card(pd.concat([table(calls, judge=n) for n in NAMES], ignore_index=True), one)
    card_figure(card, tmp_path / "card.png", title="set $x^$")
    assert (tmp_path / "card.png").stat().st_size > 0
    texts = dict(drawn)
    assert all(n in texts for n in NAMES) and not any(texts.values())
    drawn.clear()
    summary = pd.DataFrame({"dataset": "set $_$", "judge": NAMES, "acc_AB": 0.6, "acc_BA": 0.5,
                            "acc_average": 0.55, "acc_ci_low": 0.4, "acc_ci_high": 0.7})
    accuracy_figure(summary, str(tmp_path / "acc.png"))
    assert (tmp_path / "acc.png").stat().st_size > 0
    texts = dict(drawn)
    assert all(n in texts for n in NAMES) and not any(texts.values())
