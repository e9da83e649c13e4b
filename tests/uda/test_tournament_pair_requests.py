"""A judge's pair requests share their prompt's truth dict where the tournament has no latent
quality; each request's truth is still the per-pair one (the skeleton's truth and the judge's own
answer of the pair's prompt), with and without quality, and a prompt the judge did not answer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgelab.uda.tournament import pair_requests, pair_skeletons


def tournament(quality: bool) -> pd.DataFrame:
    rows = []
    for p in ("p1", "p2", "p3"):
        for i, m in enumerate(("m1", "m2", "m3")):
            rows.append({"dataset": "d", "prompt_id": p, "prompt": f"question {p}", "category": "c", "model": m,
                         "family": "f", "answer": f"answer of {m} to {p}", "model_quality": float(i) if quality else np.nan,
                         "quality": float(i) + 0.25 * len(p) if quality else np.nan})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("quality", [False, True], ids=["no quality", "quality"])
def test_each_pair_requests_truth_is_its_skeletons_with_the_judges_own_answer(quality):
    table = tournament(quality)
    own = {"p1": "my answer to p1", "p3": "my answer to p3"}  # (no answer to p2: "")
    skeletons = pair_skeletons(table)
    got = pair_requests(table, own, "fam", skeletons=skeletons)
    assert len(got) == len(skeletons) == 3 * 3 * 2
    for r, s in zip(got, skeletons, strict=True):
        want = {**s.truth, "own_answers": {"fam": own.get(s.meta["prompt_id"], "")}}
        assert r.truth == want
        assert r.meta == s.meta and r.meta is not s.meta
        assert r.messages is s.messages and r.slots == s.slots
    assert all(s.truth == {"own_answers": {"fam": own.get(s.meta["prompt_id"], "")}} or quality for s in got)
    # skeletons are left as they were
    assert all("own_answers" not in s.truth for s in skeletons)


def test_a_judges_requests_of_one_prompt_share_its_truth_without_quality():
    table = tournament(False)
    got = pair_requests(table, {"p1": "x"}, "fam")
    by_prompt = {}
    for r in got:
        by_prompt.setdefault(r.meta["prompt_id"], set()).add(id(r.truth))
    assert {p: len(ids) for p, ids in by_prompt.items()} == {"p1": 1, "p2": 1, "p3": 1}
