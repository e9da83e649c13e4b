"""Planning of the rbd study's DAG (rules/rbd.smk, rules/rbd_common.smk): what the rules
need that is derived from the config, importable and tested here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The wildcard of Table 4's in-context-learning arm (the baseline evaluator under the debiasing prompt).
ICL_BASELINE = "icl-prompt"


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


class RbdPlan:
    """The rbd study's DAG shapes, derived once from the config (rules/rbd_common.smk reads
    them); a bad key raises ConfigError naming it, which :func:`judgelab.workflow.planning.plan_study`
    defers to this study's own targets."""

    def __init__(self, config: Mapping[str, Any], judge_specs: Mapping[str, Any]) -> None:
        from judgelab.config import ConfigError
        from judgelab.rbd.detector import DetectorSpec
        from judgelab.rbd.prompts import BIAS_TYPES
        from judgelab.rbd.sets import SET_BUILDERS

        self.config = config
        self.cfg = rbd = config["rbd"]
        self.sets = list(rbd["sets"])
        for s in self.sets:
            SET_BUILDERS.get(s, where="config rbd.sets")
        # which set carries each bias type's supervision and detector test cases: the constructed set
        # of that name by default, or e.g. the authors' own (rbd.bias_sets: {verbosity: authors_verbosity})
        self.bias_sets = {b: (rbd.get("bias_sets") or {}).get(b, b) for b in BIAS_TYPES}
        for b, s in self.bias_sets.items():
            if s not in self.sets:
                raise ConfigError(f"config rbd.sets must include the {b} bias set {s!r} (rbd.bias_sets.{b})")
        for s in rbd["loop_sets"]:
            if s not in self.sets:
                raise ConfigError(f"config rbd.loop_sets: {s!r} is not in rbd.sets")
        self.generated_sets = [s for s in self.sets if SET_BUILDERS.get(s).needs_generator]
        self.plain_sets = [s for s in self.sets if s not in self.generated_sets]
        for s in self.generated_sets:
            if s not in rbd["generators"]:
                raise ConfigError(f"config rbd.generators: set {s!r} needs a generator judge entry")
        self.evaluators = list(rbd["evaluators"]) or list(judge_specs)
        for j in self.evaluators:
            if j not in judge_specs:
                raise ConfigError(f"config rbd.evaluators: no judge named {j!r}; known: {', '.join(judge_specs)}")
        self.sup_evaluators = list(rbd["supervision_evaluators"]) or self.evaluators
        self.runs = dict(rbd["train"]["runs"])
        self.detectors: dict[str, Any] = {}
        for i, e in enumerate(rbd["detectors"]):
            d = DetectorSpec.from_entry(e, where=f"config rbd.detectors[{i}]")
            if d.trained and d.trained not in self.runs:
                raise ConfigError(f"config rbd.detectors[{i}]: unknown train run {d.trained!r}; known: "
                                  f"{', '.join(self.runs) or '(none)'}")
            if d.name in self.detectors:
                raise ConfigError(f"config rbd.detectors[{i}]: duplicate detector name {d.name!r}")
            self.detectors[d.name] = e
        self.loop_detectors = list(rbd["loop"]["detectors"])
        if not self.loop_detectors:
            raise ConfigError("config rbd.loop.detectors: name at least one detector to run Algorithm 1 with")
        for n in self.loop_detectors:
            if n not in self.detectors:
                raise ConfigError(f"config rbd.loop.detectors: unknown detector {n!r}; known: "
                                  f"{', '.join(self.detectors)}")
        self.loop_runs = [self.detectors[n]["trained"] for n in self.loop_detectors if self.detectors[n].get("trained")]
        self.main_detector = self.loop_detectors[0]
        self._plan_log_audit()
        self._plan_tables()

    def _plan_tables(self) -> None:
        """Paper 001's Tables 3-5 and Fig. 6 (rbd.tables; judgelab/rbd/tables.py).

        Defaults follow the judge set, so a judge file that does not know the tables still plans
        them: Fig. 6's sizes are the loop detectors whose entry has a ``size``; Table 3 reports those
        (every generating loop detector when none has one); Tables 4 and 5 take the first rbd
        evaluator and the first loop detector.  A name given explicitly must exist.  A simulated
        fine-tuned judge of Table 4 is left out of a real run unless ``allow_simulated_roles``
        allows its key (``baselines_left_out`` says which; Table 4 prints a row saying so)."""
        from judgelab.config import ConfigError
        from judgelab.registry import is_simulated
        from judgelab.workflow.roles import allows_simulated

        t = self.cfg.get("tables") or {}
        generating = [d for d in self.loop_detectors if not is_label_only(self.detectors[d])]

        def loop_detector(name: Any, key: str) -> str:
            if name not in generating:
                raise ConfigError(f"config rbd.tables.{key}: {name!r} is not a generating rbd.loop.detectors name; "
                                  f"known: {', '.join(generating)}")
            return str(name)

        def evaluator(name: Any, key: str) -> str:
            if name not in self.evaluators:
                raise ConfigError(f"config rbd.tables.{key}: {name!r} is not an rbd evaluator; known: "
                                  f"{', '.join(self.evaluators)}")
            return str(name)

        first = self.evaluators[0] if self.evaluators else None
        self.size_detectors = {str(self.detectors[d]["size"]): d for d in generating if self.detectors[d].get("size")}
        ext = t.get("external_detectors")
        self.external_detectors = [loop_detector(d, "external_detectors") for d in ext] if ext is not None \
            else (list(self.size_detectors.values()) or generating)
        b = t.get("baselines") or {}
        self.baseline_evaluator = evaluator(b["evaluator"], "baselines.evaluator") if b.get("evaluator") else first
        self.baseline_detector = loop_detector(b.get("detector") or generating[0], "baselines.detector") \
            if generating else None
        #: Table 4's baselines: name -> (kind, judge entry; None: the evaluator itself under the ICL prompt)
        self.baselines: dict[str, tuple[str, Any]] = {}
        self.baselines_left_out: dict[str, str] = {}
        if self.baseline_evaluator and self.baseline_detector:
            if b.get("prompt", True):
                self.baselines[ICL_BASELINE] = ("prompt", None)
            for i, e in enumerate(b.get("judges") or []):
                key = f"rbd.tables.baselines.judges[{i}]"
                name = str(e.get("name", "")) if isinstance(e, Mapping) else ""
                if not name or name in self.baselines or name in self.baselines_left_out:
                    raise ConfigError(f"config {key}: a judge entry with a name of its own")
                if is_simulated(e) and not allows_simulated(self.config, key):
                    self.baselines_left_out[name] = key
                else:
                    self.baselines[name] = ("fine_tuned", e)
        f = t.get("feedback") or {}
        fe = f.get("evaluators")
        self.feedback_evaluators = [evaluator(j, "feedback.evaluators") for j in fe] if fe is not None \
            else ([first] if first and generating else [])
        self.feedback_detector = loop_detector(f.get("detector") or generating[0], "feedback.detector") \
            if generating else None

    def _plan_log_audit(self) -> None:
        """A detector over the user's recorded verdict logs (rbd.log_audit; off while files is empty)."""
        from judgelab.config import ConfigError

        self.log_audit = self.cfg["log_audit"]
        self.log_audit_files: list[str] = []
        self.log_audit_detector = self.main_detector
        if not self.log_audit["files"]:
            return
        from judgelab.verdict_import import mapping_from_config
        from judgelab.verdict_import.importer import expand_patterns

        mapping_from_config(self.log_audit["format"], where="config rbd.log_audit.format")
        self.log_audit_files = expand_patterns(self.log_audit["files"], where="config rbd.log_audit.files")
        self.log_audit_detector = self.log_audit["detector"] or self.main_detector
        if self.log_audit_detector not in self.detectors:
            raise ConfigError(f"config rbd.log_audit.detector: unknown detector {self.log_audit_detector!r}; "
                              f"known: {', '.join(self.detectors)}")
        if is_label_only(self.detectors[self.log_audit_detector]):
            raise ConfigError("config rbd.log_audit.detector: the label-only classifier gives no reasoning; "
                              "name a generating detector")

    # -- judge entries and input functions of the rules ---------------------------------
    def detector_entry(self, name: str) -> dict[str, Any]:
        """The judge entry of a detector (a pseudo entry for a trained run), for provenance
        and resources."""
        e = self.detectors[name]
        if e.get("judge"):
            return e["judge"]
        return trained_detector_entry(name, e, self.runs[e["trained"]])

    def loop_entries(self, judge_entry: Any, judge: str) -> list[Any]:
        """The judge entries a loop job loads: the judge and every loop detector."""
        return [judge_entry(judge)] + [self.detector_entry(d) for d in self.loop_detectors]

    def feedback_entries(self, judge_entry: Any, judge: str) -> list[Any]:
        """The judge entries a Table 5 feedback job loads: the judge and the feedback detector
        (feedback jobs exist only when the judge set has a generating loop detector)."""
        assert self.feedback_detector is not None, "no feedback detector: rbd_feedback has no jobs"
        return [judge_entry(judge), self.detector_entry(self.feedback_detector)]

    def baseline_judge(self, judge_entry: Any, baseline: str) -> Any:
        """The judge entry of a Table 4 baseline: its own entry, or the baseline evaluator's
        for the in-context debiasing prompt."""
        _kind, entry = self.baselines[baseline]
        return judge_entry(self.baseline_evaluator) if entry is None else entry

    def run_gpus(self, run: str) -> int:
        """GPUs of a training run: one when its device is CUDA."""
        return 1 if str(self.runs[run].get("device", "cpu")).startswith("cuda") else 0

    def detector_keys(self, names: list[str]) -> list[str]:
        """Config keys of these detectors' roles (``rbd.detectors[i]``), for needs_roles."""
        order = list(self.detectors)
        return [f"rbd.detectors[{order.index(n)}]" for n in names]

    def detect_input(self, wildcards: Any) -> dict[str, str]:
        e = self.detectors[wildcards.detector]
        out = {"cases": "results/rbd/detectors/cases.parquet", "traces": "results/rbd/supervision/traces.parquet"}
        if e.get("trained"):
            out["model"] = f"results/rbd/train/{e['trained']}/model"
        return out

    def log_audit_input(self, wildcards: Any = None) -> dict[str, Any]:
        import os

        from judgelab.rbd.prompts import DETECTOR_PROMPTS

        e = self.detectors[self.log_audit_detector]
        out: dict[str, Any] = {
            "logs": [f for f in self.log_audit_files if os.path.isabs(f)],
            "tables": [p for ps in self.log_audit["tables"].values() for p in ps if os.path.exists(p)]}
        if e.get("trained"):
            out["model"] = f"results/rbd/train/{e['trained']}/model"
        if DETECTOR_PROMPTS.get(e.get("prompting", "rbd")).shots:
            out["traces"] = "results/rbd/supervision/traces.parquet"
        return out


def plan_rbd(config: Mapping[str, Any], judge_specs: Mapping[str, Any]) -> RbdPlan:
    return RbdPlan(config, judge_specs)
