"""Rules rbd_set / rbd_set_generated: build one biased set (D and D_bias) and, if it needs one, its generator calls."""

import _repo  # noqa: F401  (this checkout's judgelab on sys.path)
import pandas as pd

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.io import write_table
from judgelab.judges import make_judge
from judgelab.judges.runner import run_requests
from judgelab.rbd.evaluate import CALL_COLUMNS, call_fields
from judgelab.rbd.sets import SET_BUILDERS, BuildContext, items_frame
from judgelab.workflow import provenance, run_script


def main(sm):
    p = sm.params
    name = sm.wildcards.set
    spec = SET_BUILDERS.get(name, where="config rbd.sets")
    calls = []
    generator = None
    if spec.needs_generator:
        if not p.generator:
            from judgelab.config import ConfigError

            raise ConfigError(f"rbd.generators.{name}: set {name!r} needs a generator judge entry")
        generator = make_judge(JudgeSpec.from_dict(p.generator, where=f"rbd.generators.{name}"))
    cache = CallCache(p.cache) if generator is not None else None

    def generate(reqs):
        resp = run_requests(generator, reqs, cache, label=f"rbd {name} construction", max_error_rate=p.max_error_rate)
        for r, q in zip(resp, reqs, strict=True):
            calls.append({"set": name, "base_id": q.meta.get("base_id", ""), "purpose": q.meta.get("purpose", ""),
                          **call_fields(generator, r, r.status.value, r.parse_method)})
        return resp

    ctx = BuildContext(name=name, seed=int(p.seed), n_items=p.rbd["n_items"], train_fraction=p.rbd["train_fraction"],
                       statement=p.rbd["statement"], pair_base=p.rbd["pair_base"],
                       inputs={s: path for s, path in zip(spec.needs_sets, sm.input, strict=True)},
                       generate=generate if generator is not None else None)
    try:
        items = spec.build(ctx)
    finally:
        if cache is not None:
            cache.close()
        if generator is not None:
            generator.close()
    df = items_frame(items)
    note = "; ".join(f"dropped {n}: {why}" for why, n in sorted(ctx.notes.items()))
    if generator is not None:
        note = f"options written by {generator.name} ({'simulated' if generator.simulated else generator.spec.model})" \
               + (f"; {note}" if note else "")
    if note:
        df["construction_notes"] = df["construction_notes"] + " [" + note + "]"
    prov = p.provenance
    write_table(df, sm.output[0], provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))
    if len(sm.output) > 1:
        write_table(pd.DataFrame(calls, columns=["set", "base_id", "purpose", *CALL_COLUMNS]), sm.output[1],
                    provenance=provenance(prov["config_hash"], prov["seed"], prov["judges"]))


run_script(snakemake, main)
