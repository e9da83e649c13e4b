"""Simulated writer for the scoring study: texts written to a target rubric level.

The generation-review pipeline (:mod:`judgelab.scoring.generation`) asks a writer for
a response that deserves score k on a rubric.  The simulated writer hits the target
with probability ``hit_rate`` (from the request's ``truth.gen``, set by the study's
config) and otherwise writes one level off, and says in the text which level it
really wrote (``[simulated text: level 3]``): that is the experimenter's ground truth
for the reviewer's label and for the true score of a synthesised response.  A retry
(another ``params.seed``) is a new draw, as a new sample from a real model is.
"""

from __future__ import annotations

import hashlib
import re
import struct

from judgelab.judges.simulated import GENERATORS, SIMULATED_TEXT_NOTE, _topic_words
from judgelab.records import JudgeRequest

SIM_LEVEL_TASK = "scoring_level"
_MARK = re.compile(r"\[simulated text: level ([1-5])\]")

_QUALITY = {
    1: "This attempt misses the point of the instruction.",
    2: "This attempt addresses part of the instruction with clear gaps.",
    3: "This attempt covers the instruction adequately but without depth.",
    4: "This attempt answers the instruction well with minor omissions.",
    5: "This attempt answers the instruction fully and precisely.",
}


def simulated_level(text: str) -> int | None:
    """The level a simulated writer really wrote at (None for any other text)."""
    m = _MARK.search(text or "")
    return int(m.group(1)) if m else None


def _uniforms(*parts: object) -> tuple[float, float, float]:
    digest = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=16).digest()
    a, b, c, _ = struct.unpack("<4I", digest)
    return tuple((v + 0.5) / 2**32 for v in (a, b, c))


@GENERATORS.register(SIM_LEVEL_TASK)
def _gen_scoring_level(req: JudgeRequest, judge, d) -> str:
    gen = req.truth.get("gen", {})
    target = int(gen.get("target", 3))
    hit = float(gen.get("hit_rate", 0.75))
    u_hit, u_dir, u_word = _uniforms(d[3], d[4], req.params.get("seed", 0), req.params.get("temperature", 0))
    level = target
    if u_hit >= hit:
        step = -1 if u_dir < 0.5 else 1
        level = target + step if 1 <= target + step <= 5 else target - step
    topic = _topic_words(req.messages[-1].content.split("###Score Rubric", 1)[0], n=8)
    desc = str(gen.get("description", "")).strip()
    w = topic[int(u_word * len(topic)) % len(topic)]
    return (f"{_QUALITY[level]} It discusses {w} and {topic[(int(u_word * 97) + 1) % len(topic)]}. "
            f"{desc[:160]} {SIMULATED_TEXT_NOTE} [simulated text: level {level}]")
