"""Table 9 from human annotations, and the study's figures (stamped when simulated)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab.io import InputError
from judgelab.plots import strategies as figs
from judgelab.plots.stamp import STAMP_TEXT
from judgelab.strategies.human import human_gap_table, load_annotations
from tests.conftest import REPO

ANN = REPO / "data/strategies/human_style_annotations.csv"


def _style_pairs(ids: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"pair_id": ids, "target_side": ["A" if i.startswith("STYLE-") else "B" for i in ids]})


def test_table9_human_rates_exclusion_and_judge_gap():
    ann = load_annotations(ANN)
    ids = sorted(ann["pair_id"].unique())
    pairs = _style_pairs(ids)
    # a judge choosing markdown on 29 of 30 pairs (Gemini Pro's 0.97 in the paper)
    sv = pd.DataFrame({"pair_id": ids, "judge": "j", "strategy": "B0", "simulated": True,
                       "verdict": ["A"] * 29 + ["B"]})
    t = human_gap_table(ann, sv, pairs).set_index("who")
    # the shipped illustrative file carries the paper's published marginals (Table 9)
    assert round(t.loc["annotator_A", "markdown_rate"], 2) == 0.63
    assert round(t.loc["annotator_B", "markdown_rate"], 2) == 0.50
    assert bool(t.loc["annotator_C", "excluded"])  # "Response 1" on every pair: excluded
    agg = t.loc["annotator_A+annotator_B"]
    assert round(agg["markdown_rate"], 2) == 0.57 and round(agg["inter_annotator_agreement"], 2) == 0.53
    assert agg["ci_low"] < 0.57 < agg["ci_high"] and agg["ci_high"] - agg["ci_low"] < 0.27  # paper: about +-0.13
    assert round(t.loc["j", "markdown_rate"], 2) == 0.97 and round(t.loc["j", "gap_vs_human"], 2) == 0.40
    # keeping the constant-slot annotator changes the aggregate
    t2 = human_gap_table(ann, sv, pairs, exclude_constant_slot=False).set_index("row")
    assert t2.loc["human_aggregate", "n"] == 90
    # the input's "illustrative" marker reaches every row of Table 9; real annotations carry none
    assert t["illustrative"].all() and t["annotation_source"].str.contains("not real annotations").all()
    real = ann.assign(source="annotation study 2026, three trained annotators")
    t3 = human_gap_table(real, sv, pairs)
    assert not t3["illustrative"].any() and (t3["annotation_source"] == "annotation study 2026, three trained annotators").all()


def test_annotation_errors_name_file_and_row(tmp_path: Path):
    src = ANN.read_text().splitlines()
    bad = [*src[:3], "annotator_A,STYLE-math-09,3,1,2,x", *src[4:]]  # row 4 of the file: markdown_slot 3
    p = tmp_path / "ann.csv"
    p.write_text("\n".join(bad) + "\n")
    with pytest.raises(InputError, match=r"ann\.csv row 4: column 'markdown_slot' must be 1 or 2, got '3'"):
        load_annotations(p)
    p.write_text("annotator,pair_id,choice\nx,STYLE-math-01,1\n")
    with pytest.raises(InputError, match=r"missing column\(s\) \['markdown_slot'\]"):
        load_annotations(p)
    ann = load_annotations(ANN)
    with pytest.raises(InputError, match="not in the controlled set"):
        human_gap_table(ann, pd.DataFrame(columns=["pair_id", "judge", "strategy", "verdict", "simulated"]),
                        _style_pairs(["STYLE-math-01"]))


def _capture(monkeypatch) -> list:
    figures = []
    monkeypatch.setattr(figs, "save_figure", lambda fig, path: figures.append(fig))
    return figures


def test_figures_are_stamped_when_simulated(monkeypatch):
    figures = _capture(monkeypatch)
    rng = np.random.default_rng(0)
    judges, strategies = ["j1", "j2"], ["B0", "S1", "S5"]
    agr = pd.DataFrame([{"dataset": "mtbench", "judge": j, "strategy": s, "simulated": True, "agreement": a,
                         "ci_low": a - 0.05, "ci_high": a + 0.05, "kappa": 0.4, "cost_per_instance": c,
                         "calls_per_instance": 1, "config_hash": "abc"}
                        for j in judges for s in strategies for a, c in [(rng.random(), rng.random() / 100)]])
    figs.agreement_figure(agr, "a.png")
    from judgelab.strategies.selection import pareto_table

    figs.pareto_figure(pareto_table(agr, "mtbench").assign(config_hash="abc"), "p.png")
    bias = pd.DataFrame([{"judge": j, "strategy": s, "measure": m, "value": rng.uniform(-1, 1), "simulated": True}
                         for j in judges for s in strategies for m in ("position", "verbosity", "style", "self_preference")])
    figs.bias_heatmap(bias, "b.png")
    from judgelab.strategies.analysis import cross_bias_table

    figs.cross_bias_heatmap(cross_bias_table(bias), "c.png")
    cats = agr.assign(category="writing", n=10)
    figs.category_figure(cats, "k.png", dataset="mtbench")
    assert len(figures) == 5
    for f in figures:
        assert STAMP_TEXT in [t.get_text() for t in f.texts]
    figures.clear()
    figs.agreement_figure(agr.assign(simulated=False), "a.png")
    assert STAMP_TEXT not in [t.get_text() for t in figures[0].texts]


def test_bias_heatmap_uses_rdbu_centred_at_zero(monkeypatch):
    figures = _capture(monkeypatch)
    bias = pd.DataFrame([{"judge": "j", "strategy": "B0", "measure": "style", "value": 0.7, "simulated": False}])
    figs.bias_heatmap(bias, "b.png")
    im = figures[0].axes[0].images[0]
    assert im.get_cmap().name == "RdBu" and im.norm.vcenter == 0 and im.norm.vmin == -1 and im.norm.vmax == 1
