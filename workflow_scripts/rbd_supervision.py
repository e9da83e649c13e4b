"""Rule rbd_supervision: the teacher writes <think>...</think> Yes/No traces; those matching b_i are kept."""

import logging
from pathlib import Path

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.io import write_table
from judgelab.judges import make_judge
from judgelab.rbd.detector import cases_from_frame
from judgelab.rbd.supervision import collect_traces
from judgelab.workflow import provenance, run_script

log = logging.getLogger("rbd_supervision")


def main(sm):
    p = sm.params
    if p.supervision_data:  # the authors' released supervision: no teacher call
        from judgelab.datasets.sources import resolve_data_path
        from judgelab.rbd.released import load_supervision_csv

        path = Path(p.supervision_data)
        traces = load_supervision_csv(path if path.exists() else resolve_data_path(str(p.supervision_data)))
        log.info("rbd supervision from %s: %d traces, %d kept", p.supervision_data, len(traces),
                 int(traces["kept"].sum()))
    else:
        cases = cases_from_frame(pd.read_parquet(sm.input[0]))
        teacher = make_judge(JudgeSpec.from_dict(p.teacher, where="rbd.teacher"))
        try:
            with CallCache(p.cache) as cache:
                traces = collect_traces(teacher, cases, cache, label="rbd teacher", max_error_rate=p.max_error_rate)
        finally:
            teacher.close()
    prov = p.provenance
    write_table(traces, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
