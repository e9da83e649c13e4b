"""Planning of the rbd study's DAG (rules/rbd.smk, rules/rbd_common.smk): what the rules
need that is derived from the config, importable and tested here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def trained_detector_entry(name: str, detector: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Any]:
    """The judge entry of a detector trained by a ``rbd.train.runs`` run: the ``transformers``
    backend for a generating detector (``kind: causal_lm``), the ``classifier`` pseudo-backend
    for the label-only baseline; its options are the device the job loads it on (the run's,
    unless the detector's own options name one, as :func:`judgelab.rbd.train.trained_detector_judge`
    does), so its GPUs and tier follow from the backend's traits like any judge's."""
    backend = "transformers" if run.get("kind", "causal_lm") == "causal_lm" else "classifier"
    return {"name": name, "backend": backend, "model": f"results/rbd/train/{detector['trained']}/model",
            "sampling": {"seed": run.get("seed", 0)},
            "options": {"device": run.get("device", "cpu"), **(detector.get("options") or {})}}


def is_label_only(detector: Mapping[str, Any]) -> bool:
    """A detector entry of the label-only classifier baseline (``prompting: classifier``): it
    gives labels and no reasoning, and makes no judge call."""
    return detector.get("prompting") == "classifier"
