"""Simulated writer task of study ``uda``: a judge's own answer to a tournament prompt.

``uda_answer`` (paper 000's answer prompt).  ``truth["gen"]``:

* ``family_answer`` -- the answer of the judge's own model in this tournament, when there is
  one (paper 000's judges are its answer models): the judge answers with a near copy of it;
* otherwise a family-signed answer from :func:`judgelab.uda.simulate.write_answer`
  (``sentences``, ``markdown`` optional).
"""

from __future__ import annotations

from judgelab.judges.simulated import GENERATORS
from judgelab.uda.simulate import near_copy, write_answer


@GENERATORS.register("uda_answer")
def _gen_uda_answer(req, judge, d) -> str:
    gen = req.truth.get("gen", {})
    seed = int(d[3] * 2**31)
    own = gen.get("family_answer")
    if own:
        return near_copy(str(own), drop=float(gen.get("drop", 0.25)), seed=seed)
    prompt = req.messages[-1].content
    return write_answer(prompt, judge.spec.family, sentences=int(gen.get("sentences", 5)),
                        markdown=bool(gen.get("markdown", False)), seed=seed)
