"""Rule rbd_log_audit: one detector over the recorded verdict logs of rbd.log_audit."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)

from judgelab.cache import CallCache
from judgelab.io import write_table
from judgelab.rbd.audit_log import detector_examples, detector_judge, run_log_audit
from judgelab.rbd.detector import DetectorSpec
from judgelab.verdict_import import import_verdicts, mapping_from_config
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    spec = DetectorSpec.from_entry(p.detector, where="rbd.log_audit.detector")
    cfg = p.spec
    table = import_verdicts(p.files, mapping_from_config(cfg["format"], where="rbd.log_audit.format"),
                            tables=cfg.get("tables") or None, judge=cfg.get("judge"))
    examples = detector_examples(spec, sm.input.get("traces"), int(p.seed))
    judge = detector_judge(spec, model_dir=sm.input.get("model"))
    try:
        with CallCache(p.cache) as cache:
            calls, summary, skipped = run_log_audit(table, cfg["bias_types"], spec, judge, cache, examples=examples,
                                                    max_error_rate=p.max_error_rate)
    finally:
        judge.close()
    prov = provenance(p.provenance["config_hash"], p.provenance["seed"], p.provenance["judges"])
    write_table(calls, sm.output.calls, provenance=prov)
    write_table(summary, sm.output.summary, provenance=prov)
    write_table(skipped, sm.output.skipped, provenance=prov)


run_script(snakemake, main)
