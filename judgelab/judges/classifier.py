"""The ``classifier`` pseudo-backend: a trained sequence classifier (a detector of the rbd
study, ``rbd.train.runs.<run>.kind: classifier``) that labels detector cases.

It is declared here, as a backend, so that its judge entries (provenance of the detector
rules, the ``backend`` column of its prediction rows) carry traits like any other: it loads
weights into the job, and its GPUs follow its ``device`` option.  It answers no judge request
(it emits labels, not verdict text), so a config's ``judges`` may not name it
(``configurable = False``); the labels come from :func:`judgelab.rbd.train.classify`.
"""

from __future__ import annotations

from collections.abc import Sequence

from judgelab.judges import BACKENDS
from judgelab.judges.base import BackendUnavailable, Judge
from judgelab.records import JudgeRequest, RawAnswer


@BACKENDS.register("classifier")
class ClassifierDetector(Judge):
    loads_weights = True
    configurable = False

    def answer(self, requests: Sequence[JudgeRequest]) -> list[RawAnswer]:
        raise BackendUnavailable(f"judge {self.name!r}: the classifier backend labels rbd detector cases "
                                 "(judgelab.rbd.train.classify); it answers no judge request")
