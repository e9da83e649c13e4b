"""Paper 001's Table 4 (baselines against the evaluator with the detector) from hand-counted worlds,
and the in-context debiasing request its prompt arm sends."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from judgelab.rbd.evaluate import evaluator_request
from judgelab.rbd.prompts import BIAS_DEFINITIONS
from judgelab.rbd.tables import TABLE4_COLUMNS, table4, wide
from tests.rbd.test_loop import pair_items

N = 20


def _final(set_name: str, bias: str, wrong_before: set[int], wrong_after: set[int]) -> pd.DataFrame:
    """The loop's items of one set as final_verdicts gives them: pairs with gold alternating; for
    position both rounds (D order, swapped order), a wrong item wrong in its swapped round."""
    rows = []
    for k in range(N):
        g = k % 2
        gold = [g, 1 - g] if bias == "position" else [g]

        def verdict(wrong: set[int], k: int = k, gold: list[int] = gold) -> list[int]:
            v = list(gold)
            if k in wrong:
                v[-1] = 1 - v[-1]
            return v

        rows.append({"judge": "ev", "detector": "det", "set": set_name, "item_id": f"{set_name}-{k}",
                     "bias_type": bias, "verdict_D": g, "gold_D": g, "initial": verdict(wrong_before),
                     "final": verdict(wrong_after), "gold": gold})
    return pd.DataFrame(rows)


def _verdicts(judge: str, set_name: str, wrong_bias: set[int], wrong_d: set[int], *, missing: int | None = None):
    rows = []
    for k in range(N):
        g = k % 2
        for variant, wrong in (("D", wrong_d), ("D_bias", wrong_bias)):
            gold = g if variant == "D" else (g if not set_name.startswith("position") else 1 - g)
            v = -1 if (k == missing and variant == "D_bias") else (1 - gold if k in wrong else gold)
            rows.append({"judge": judge, "set": set_name, "item_id": f"{set_name}-{k}", "variant": variant,
                         "verdict": v, "gold": gold, "simulated": True})
    return pd.DataFrame(rows)


def _t_interval(d: np.ndarray) -> tuple[float, float]:
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return d.mean() - half, d.mean() + half


def test_table4_hand_counts_and_paired_differences():
    final = pd.concat([_final("verbosity", "verbosity", set(range(10)), {0, 1}),
                       _final("position", "position", set(range(8)), {0})], ignore_index=True)
    ft = pd.concat([_verdicts("ft", "verbosity", set(range(5)), set()),
                    # position: consistency needs D and the swapped order right (D wrong on 3..5 too)
                    _verdicts("ft", "position", {0, 1, 2}, {3, 4, 5})], ignore_index=True)
    icl = _verdicts("ev", "verbosity", set(range(9)), set(), missing=19)  # a missing verdict is wrong
    t4 = table4(final, evaluator="ev", detector="det", bias_sets={},
                baselines={"icl-prompt": ("prompt", icl), "ft": ("fine_tuned", ft)},
                sim_flags={("ev", "det"): True}, verdict_flags={"ev": True})
    assert list(t4.columns) == TABLE4_COLUMNS
    v = t4[t4["set"] == "verbosity"].set_index("method")
    assert list(v.index) == ["Vanilla", "icl-prompt", "ft", "Ours"]
    assert (v["metric"] == "accuracy").all()
    assert v.loc["Vanilla", "value"] == pytest.approx(0.5) and v.loc["Ours", "value"] == pytest.approx(0.9)
    assert v.loc["icl-prompt", "value"] == pytest.approx(0.5) and v.loc["ft", "value"] == pytest.approx(0.75)
    assert v.loc["Ours", "judge"] == "ev + det" and math.isnan(v.loc["Ours", "ours_minus"])
    ours = np.array([k not in {0, 1} for k in range(N)], dtype=float)
    ft_ok = np.array([k >= 5 for k in range(N)], dtype=float)
    assert v.loc["ft", "ours_minus"] == pytest.approx(0.15)
    assert (v.loc["ft", "ours_minus_ci_low"], v.loc["ft", "ours_minus_ci_high"]) == pytest.approx(
        _t_interval(ours - ft_ok))
    p = t4[t4["set"] == "position"].set_index("method")
    assert (p["metric"] == "consistency").all()
    assert p.loc["Vanilla", "value"] == pytest.approx(0.6) and p.loc["Ours", "value"] == pytest.approx(0.95)
    assert p.loc["ft", "value"] == pytest.approx(14 / 20)  # wrong on 0-2 (swapped) and 3-5 (D)
    assert "icl-prompt" in p.index and p.loc["icl-prompt", "n"] == 0 and "no verdicts" in p.loc["icl-prompt", "reason"]
    assert t4["simulated"].all()


def test_table4_names_a_left_out_stand_in_and_keeps_it_in_the_wide_layout():
    final = _final("bandwagon", "bandwagon", set(range(4)), set())
    t4 = table4(final, evaluator="ev", detector="det", bias_sets={}, baselines={}, sim_flags={}, verdict_flags={},
                left_out={"sim-prometheus": "rbd.tables.baselines.judges[0]"})
    row = t4.set_index("method").loc["sim-prometheus"]
    assert math.isnan(row["value"]) and "rbd.tables.baselines.judges[0]" in row["reason"]
    w = wide(t4, ["bias_type", "metric"], "method", "value")
    assert list(w.columns) == ["bias_type", "metric", "Vanilla", "Ours", "sim-prometheus"]
    assert w.iloc[0][["Vanilla", "Ours", "sim-prometheus"]].tolist() == ["0.800", "1.000", ""]


def test_icl_request_adds_the_bias_rule_to_the_system_prompt_only():
    item = next(i for i in pair_items(1, set_name="bandwagon", bias="bandwagon") if i.variant == "D_bias")
    plain, icl = evaluator_request(item), evaluator_request(item, icl=True)
    assert icl.messages[1] == plain.messages[1] and icl.slots == plain.slots and icl.truth == plain.truth
    assert icl.messages[0].content.startswith(plain.messages[0].content)
    for definition in BIAS_DEFINITIONS.values():
        assert definition in icl.messages[0].content and definition not in plain.messages[0].content
