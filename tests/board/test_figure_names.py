"""The leaderboard figure draws model names and the title literally: ``$`` is data, not mathtext."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from judgelab.board import figure as board_figure
from judgelab.board.table import COLUMNS

NAMES = ["x$^$y", "cost $5 vs $10", "a$b", r"\frac{1}{$", "$\\alpha$"]


def _table(names: list[str]) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    t = pd.DataFrame({c: np.nan for c in COLUMNS}, index=range(len(names)))
    t["model"] = names
    for col in ("win_rate", "lc_win_rate", "style_controlled", "bias_aware"):
        t[col] = rng.uniform(20, 80, len(names))
    for stem, lo, hi in (("win_rate", "win_rate_ci_low", "win_rate_ci_high"), ("lc_win_rate", "lc_ci_low", "lc_ci_high"),
                         ("style_controlled", "style_ci_low", "style_ci_high"),
                         ("bias_aware", "bias_aware_ci_low", "bias_aware_ci_high")):
        t[lo], t[hi] = t[stem] - 5, t[stem] + 5
    return t


def test_mathtext_characters_in_names_and_title_are_drawn_literally(tmp_path: Path, monkeypatch) -> None:
    kept = []
    monkeypatch.setattr(board_figure.plt, "close", lambda fig: kept.append(fig))
    out = tmp_path / "leaderboard.png"
    board_figure.leaderboard_figure(_table(NAMES), out, title="judge $gpt$^4", simulated=False)
    assert out.stat().st_size > 0
    fig = kept[0]
    drawn = [t for ax in fig.axes for t in ax.texts if t.get_text() in NAMES]
    assert sorted(t.get_text() for t in drawn) == sorted(NAMES * 3)  # every name in each of the three panels
    title = fig._suptitle
    for t in [*drawn, title]:
        text, is_math = t._preprocess_math(t.get_text())
        assert not is_math and text == t.get_text()  # no mathtext, no "\$" unescaping
    plt.close(fig)


@pytest.mark.parametrize("name", ["x$^$y", "$\\notacommand$"])
def test_a_name_that_is_invalid_mathtext_still_gives_a_figure(tmp_path: Path, name: str) -> None:
    out = tmp_path / "f.png"
    board_figure.leaderboard_figure(_table([name, "plain"]), out, title=name, simulated=False)
    assert out.stat().st_size > 0
