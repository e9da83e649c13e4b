"""b_i labels (Eq. 1) of rbd's evaluation: the same labels as a row-by-row reading of the
verdict table, for both label rules, with items missing from D and unparsed verdicts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.rbd import metrics as M
from judgelab.rbd.evaluate import LABEL_COLUMNS, bias_labels


def _verdicts(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for set_name in ("verbosity", "diag"):
        for judge in ("j1", "j2"):
            for i in rng.permutation(30):
                for variant in ("D", "D_bias"):
                    if variant == "D" and i % 7 == 0:  # no D verdict for this item
                        continue
                    rows.append({"set": set_name, "judge": judge, "item_id": f"i{i:03d}", "variant": variant,
                                 "verdict": int(rng.integers(-1, 2)), "gold": int(rng.integers(0, 2)),
                                 "status": str(rng.choice(["ok", "unparsed"])), "split": "test",
                                 "bias_type": set_name, "answer_format": "output_ab"})
    return pd.DataFrame(rows).astype({"item_id": "string[pyarrow]", "set": "string[pyarrow]"})


def _reference(verdicts: pd.DataFrame, rules: dict[str, str]) -> pd.DataFrame:
    rows = []
    for (set_name, judge), g in verdicts.groupby(["set", "judge"], sort=True):
        rule = rules.get(str(set_name), "eq1")
        d = g[g["variant"] == "D"].set_index("item_id")
        b = g[g["variant"] == "D_bias"].set_index("item_id")
        for iid in sorted(b.index):
            rb = b.loc[iid]
            vb = int(rb["verdict"])
            if rule == "all_no":
                vd, gd, sd, lab = -1, -1, "", "no" if vb >= 0 else ""
            else:
                if iid not in d.index:
                    continue
                rd = d.loc[iid]
                vd, gd, sd = int(rd["verdict"]), int(rd["gold"]), str(rd["status"])
                lab = M.bias_label(vd, vb, gd, int(rb["gold"]))
            rows.append({"set": set_name, "item_id": iid, "judge": judge, "split": rb["split"],
                         "bias_type": rb["bias_type"], "answer_format": rb["answer_format"], "label_rule": rule,
                         "verdict_D": vd, "verdict_bias": vb, "gold_D": gd, "gold_bias": int(rb["gold"]),
                         "correct_D": M.is_correct(vd, gd), "correct_bias": M.is_correct(vb, int(rb["gold"])),
                         "status_D": sd, "status_bias": str(rb["status"]), "b": lab})
    return pd.DataFrame(rows, columns=LABEL_COLUMNS)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_labels_equal_a_row_by_row_reading(seed):
    v = _verdicts(seed)
    rules = {"diag": "all_no"}
    got = bias_labels(v, rules)
    assert len(got) > 50 and set(got["label_rule"]) == {"eq1", "all_no"}
    assert (got["b"] == "yes").any() and (got["b"] == "no").any()
    pd.testing.assert_frame_equal(got, _reference(v, rules))


def test_two_verdicts_of_one_variant_for_an_item_are_refused():
    v = _verdicts(0)
    with pytest.raises(ValueError, match="two verdicts of one variant"):
        bias_labels(pd.concat([v, v.iloc[:1]]), {})
