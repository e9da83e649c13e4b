# Study `rbd`: configuration checks, path lists and helpers of rules/rbd.smk (no rules here).

from judgelab.config import ConfigError as _RbdConfigError
from judgelab.rbd.detector import DetectorSpec as _RbdDetectorSpec
from judgelab.rbd.prompts import BIAS_TYPES as _RBD_BIAS_TYPES
from judgelab.rbd.sets import SET_BUILDERS as _RBD_SET_BUILDERS
from judgelab.rbd.plan import is_label_only, trained_detector_entry

RBD = config["rbd"]
RBD_SETS = list(RBD["sets"])
for _s in RBD_SETS:
    _RBD_SET_BUILDERS.get(_s, where="config rbd.sets")
# which set carries each bias type's supervision and detector test cases: the constructed set
# of that name by default, or e.g. the authors' own (rbd.bias_sets: {verbosity: authors_verbosity})
RBD_BIAS_SETS = {b: (RBD.get("bias_sets") or {}).get(b, b) for b in _RBD_BIAS_TYPES}
for _b, _s in RBD_BIAS_SETS.items():
    if _s not in RBD_SETS:
        raise _RbdConfigError(f"config rbd.sets must include the {_b} bias set {_s!r} (rbd.bias_sets.{_b})")
for _s in RBD["loop_sets"]:
    if _s not in RBD_SETS:
        raise _RbdConfigError(f"config rbd.loop_sets: {_s!r} is not in rbd.sets")
RBD_GENERATED_SETS = [s for s in RBD_SETS if _RBD_SET_BUILDERS.get(s).needs_generator]
RBD_PLAIN_SETS = [s for s in RBD_SETS if s not in RBD_GENERATED_SETS]
for _s in RBD_GENERATED_SETS:
    if _s not in RBD["generators"]:
        raise _RbdConfigError(f"config rbd.generators: set {_s!r} needs a generator judge entry")

RBD_EVALUATORS = list(RBD["evaluators"]) or list(JUDGE_SPECS)
for _j in RBD_EVALUATORS:
    if _j not in JUDGE_SPECS:
        raise _RbdConfigError(f"config rbd.evaluators: no judge named {_j!r}; known: {', '.join(JUDGE_SPECS)}")
RBD_SUP_EVALUATORS = list(RBD["supervision_evaluators"]) or RBD_EVALUATORS
RBD_RUNS = dict(RBD["train"]["runs"])
RBD_DETECTORS = {}
for _i, _e in enumerate(RBD["detectors"]):
    _d = _RbdDetectorSpec.from_entry(_e, where=f"config rbd.detectors[{_i}]")
    if _d.trained and _d.trained not in RBD_RUNS:
        raise _RbdConfigError(f"config rbd.detectors[{_i}]: unknown train run {_d.trained!r}; known: "
                              f"{', '.join(RBD_RUNS) or '(none)'}")
    if _d.name in RBD_DETECTORS:
        raise _RbdConfigError(f"config rbd.detectors[{_i}]: duplicate detector name {_d.name!r}")
    RBD_DETECTORS[_d.name] = _e
RBD_LOOP_DETECTORS = list(RBD["loop"]["detectors"])
if not RBD_LOOP_DETECTORS:
    raise _RbdConfigError("config rbd.loop.detectors: name at least one detector to run Algorithm 1 with")
for _n in RBD_LOOP_DETECTORS:
    if _n not in RBD_DETECTORS:
        raise _RbdConfigError(f"config rbd.loop.detectors: unknown detector {_n!r}; known: {', '.join(RBD_DETECTORS)}")
RBD_LOOP_RUNS = [RBD_DETECTORS[n]["trained"] for n in RBD_LOOP_DETECTORS if RBD_DETECTORS[n].get("trained")]
RBD_MAIN_DETECTOR = RBD_LOOP_DETECTORS[0]


def rbd_detector_entry(name):
    """The judge entry of a detector (a pseudo entry for a trained run), for provenance."""
    e = RBD_DETECTORS[name]
    if e.get("judge"):
        return e["judge"]
    return trained_detector_entry(name, e, RBD_RUNS[e["trained"]])


def rbd_prov(entries):
    """Provenance params; simulated writer / teacher / detector roles are named as inputs."""
    prov = {"config_hash": CONFIG_HASH, "seed": config["seed"], "judges": list(entries)}
    return with_roles(prov, SIMULATED_ROLES, "rbd", RBD_EVALUATORS)


def rbd_run_gpus(run):
    return 1 if str(RBD_RUNS[run].get("device", "cpu")).startswith("cuda") else 0


RBD_SET_FILES = [f"results/rbd/sets/{s}.parquet" for s in RBD_SETS]
RBD_VERDICTS = [f"results/rbd/verdicts/{j}.parquet" for j in RBD_EVALUATORS]
RBD_PREDICTIONS = [f"results/rbd/detectors/predictions/{d}.parquet" for d in RBD_DETECTORS]
RBD_LOOP_FILES = {k: [f"results/rbd/loop/{j}/{k}.parquet" for j in RBD_EVALUATORS]
                  for k in ("trajectory", "items", "calls")}
RBD_LOSSES = [f"results/rbd/train/{r}/loss.csv" for r in RBD_RUNS]

VERDICT_TABLES.extend(
    [f"results/rbd/generation/{s}.parquet" for s in RBD_GENERATED_SETS]
    + RBD_VERDICTS
    + ["results/rbd/supervision/traces.parquet"]
    + [f"results/rbd/detectors/predictions/{d}.parquet" for d, e in RBD_DETECTORS.items()
       if not is_label_only(e)]
    + RBD_LOOP_FILES["calls"]
)
RBD_OUTPUTS = [
    "results/rbd/sets/comparison.csv",
    "results/rbd/evaluation.csv",
    "results/rbd/figures/bias_existence.png",
    "results/rbd/detectors/metrics.csv",
    "results/rbd/figures/detectors.png",
    *RBD_LOSSES,
    "results/rbd/loop/table2.csv",
    "results/rbd/loop/table2_wide.csv",
    "results/rbd/loop/behaviour.csv",
    "results/rbd/loop/efficiency.csv",
    "results/rbd/figures/loop.png",
    "results/rbd/figures/behaviour.png",
]

# a detector over the user's recorded verdict logs (rbd.log_audit; off while files is empty)
import os as _rbd_os

from judgelab.rbd.prompts import DETECTOR_PROMPTS as _RBD_DETECTOR_PROMPTS

RBD_LOG_AUDIT = RBD["log_audit"]
RBD_LOG_AUDIT_FILES = []
RBD_LOG_AUDIT_DETECTOR = RBD_MAIN_DETECTOR
if RBD_LOG_AUDIT["files"]:
    from judgelab.verdict_import import mapping_from_config as _rbd_mapping
    from judgelab.verdict_import.importer import expand_patterns as _rbd_expand

    _rbd_mapping(RBD_LOG_AUDIT["format"], where="config rbd.log_audit.format")
    RBD_LOG_AUDIT_FILES = _rbd_expand(RBD_LOG_AUDIT["files"], where="config rbd.log_audit.files")
    RBD_LOG_AUDIT_DETECTOR = RBD_LOG_AUDIT["detector"] or RBD_MAIN_DETECTOR
    if RBD_LOG_AUDIT_DETECTOR not in RBD_DETECTORS:
        raise _RbdConfigError(f"config rbd.log_audit.detector: unknown detector {RBD_LOG_AUDIT_DETECTOR!r}; "
                              f"known: {', '.join(RBD_DETECTORS)}")
    if is_label_only(RBD_DETECTORS[RBD_LOG_AUDIT_DETECTOR]):
        raise _RbdConfigError("config rbd.log_audit.detector: the label-only classifier gives no reasoning; "
                              "name a generating detector")
    RBD_OUTPUTS += [f"results/rbd/log_audit/{f}" for f in ("calls.parquet", "summary.csv", "skipped.csv")]
    VERDICT_TABLES.append("results/rbd/log_audit/calls.parquet")


def _rbd_log_audit_input(w):
    e = RBD_DETECTORS[RBD_LOG_AUDIT_DETECTOR]
    out = {"logs": [f for f in RBD_LOG_AUDIT_FILES if _rbd_os.path.isabs(f)],
           "tables": [p for ps in RBD_LOG_AUDIT["tables"].values() for p in ps if _rbd_os.path.exists(p)]}
    if e.get("trained"):
        out["model"] = f"results/rbd/train/{e['trained']}/model"
    if _RBD_DETECTOR_PROMPTS.get(e.get("prompting", "rbd")).shots:
        out["traces"] = "results/rbd/supervision/traces.parquet"
    return out


def _rbd_detect_input(w):
    e = RBD_DETECTORS[w.detector]
    out = {"cases": "results/rbd/detectors/cases.parquet", "traces": "results/rbd/supervision/traces.parquet"}
    if e.get("trained"):
        out["model"] = f"results/rbd/train/{e['trained']}/model"
    return out


def _rbd_loop_entries(judge):
    return [judge_entry(judge)] + [rbd_detector_entry(d) for d in RBD_LOOP_DETECTORS]


_RBD_EVALUATE = dict(
    input=RBD_SET_FILES,
    output="results/rbd/verdicts/{judge}.parquet",
    log="results/logs/rbd_evaluate/{judge}.log",
)


_RBD_LOOP = dict(
    input=dict(
        sets=[f"results/rbd/sets/{s}.parquet" for s in RBD["loop_sets"]],
        verdicts="results/rbd/verdicts/{judge}.parquet",
        traces="results/rbd/supervision/traces.parquet",
        models=[f"results/rbd/train/{r}/model" for r in RBD_LOOP_RUNS],
    ),
    output=dict(
        trajectory="results/rbd/loop/{judge}/trajectory.parquet",
        loop_items="results/rbd/loop/{judge}/items.parquet",
        calls="results/rbd/loop/{judge}/calls.parquet",
    ),
    log="results/logs/rbd_loop/{judge}.log",
)


def _rbd_detector_keys(names):
    """Config keys of these detectors' roles (``rbd.detectors[i]``), for needs_roles."""
    order = list(RBD_DETECTORS)
    return [f"rbd.detectors[{order.index(n)}]" for n in names]
