"""The rbd step functions' shortcuts give what each job would build alone.

In a plan every evaluator judges the same items, read once per context (``_items``), so
:func:`judgelab.rbd.calls._evaluator_requests` builds each item's evaluator request once and the
evaluators share it.  A request shared where it should differ (the ICL arm's system prompt, another
item) would ask a judge the wrong question and change every verdict after it: so the shared requests
are compared with :func:`judgelab.rbd.evaluate.evaluator_request` built for each item alone, and the
verdict tables of ``evaluate_items`` given them with those it builds itself.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pandas as pd
import pytest

from judgelab.cache import CallCache
from judgelab.rbd.calls import _evaluator_requests
from judgelab.rbd.evaluate import evaluate_items, evaluator_request
from judgelab.rbd.sets import RbdItem
from tests.rbd.test_loop import pair_items, sim


def _items() -> list[RbdItem]:
    choice = [RbdItem(set="sentiment", item_id=f"s{i}", base_id=str(i), variant=v, bias_type="sentiment",
                      answer_format="number", question=f"Q{i} — which? \"é\"", options=[f"opt {k} of {i}" for k in range(3)],
                      gold=i % 3, eval_template="science_mc", revision_template="science_mc", split="test")
              for i in range(6) for v in ("D", "D_bias")]
    bandwagon = [replace(i, set="bandwagon", bias_type="bandwagon", statement="90% believe that Output (a) is better")
                 for i in pair_items(4, set_name="bandwagon", bias="bandwagon") if i.variant == "D_bias"]
    return pair_items(8) + choice + bandwagon


@pytest.mark.parametrize("icl", [False, True])
def test_evaluators_share_the_request_each_item_has_alone(icl):
    items = _items()
    ctx = SimpleNamespace(memo={})
    first = _evaluator_requests(items, ctx, icl=icl)
    assert first == [evaluator_request(i, icl=icl) for i in items]  # messages, slots, truth, meta, kind, format
    again = _evaluator_requests(items[::-1], ctx, icl=icl)  # the next evaluator: the same objects, in its order
    assert all(a is b for a, b in zip(again, first[::-1], strict=True))
    other = _evaluator_requests(items, ctx, icl=not icl)  # the other arm is built on its own
    assert other == [evaluator_request(i, icl=not icl) for i in items]
    assert all(a.messages[0] != b.messages[0] for a, b in zip(first, other, strict=True))
    # an item equal in content but another object (another set file's) is not mistaken for a kept one
    copies = [replace(i, question=i.question + " (copy)") for i in items]
    assert _evaluator_requests(copies, ctx, icl=icl) == [evaluator_request(i, icl=icl) for i in copies]


def test_evaluate_items_given_the_shared_requests_writes_the_table_it_builds_alone(tmp_path):
    items = _items()
    ctx = SimpleNamespace(memo={})
    tables = []
    for name, reqs in (("alone", None), ("shared", _evaluator_requests(items, ctx)),
                       ("shared again", _evaluator_requests(items, ctx))):
        with CallCache(tmp_path / f"{name}.sqlite") as cache:
            tables.append(evaluate_items(sim("ev", competence=0.5), items, cache, label="t", requests=reqs))
    for t in tables[1:]:
        pd.testing.assert_frame_equal(tables[0], t)
    assert tables[0]["status"].isin(["ok", "fallback"]).all() and len(tables[0]) == len(items)
    with CallCache(tmp_path / "short.sqlite") as cache, pytest.raises(ValueError, match="3 requests for"):
        evaluate_items(sim("ev"), items, cache, requests=_evaluator_requests(items[:3], ctx))
