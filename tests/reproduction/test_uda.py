"""Paper 000's held-out transfer rows (``judgelab/reproduction/uda.py``): where the run splits the
Arena-Hard prompts and applies the adapter zero-shot to the held-out part (the paper config's
``arena_hard_heldout``), the std reduction and the Pearson with the baseline consensus on those
prompts, from tables the study's own functions write (checked by hand); never comparable (the
paper's transfer set is another one); and without a split, no value and why."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab.config import default_config_paths, load_config
from judgelab.io import write_table
from judgelab.reproduction import reproduce
from judgelab.reproduction.uda import PAPER_JUDGES, heldout_split, heldout_tables
from judgelab.uda import metrics as M
from judgelab.workflow import provenance
from tests.conftest import REPO

STD = "held-out Arena-Hard prompts: std reduction of UDA, zero-shot (%)"
PEARSON = "held-out Arena-Hard prompts: mean Pearson with the baseline consensus, UDA zero-shot"
HELD, SOURCE = "arena_hard_heldout", "arena_hard"
REAL = [{"name": j, "backend": "openai", "model": j, "options": {"api_key_env": None}} for j in PAPER_JUDGES]


def _scores(rng: np.random.Generator) -> pd.DataFrame:
    """The ten judges scoring the ten answer models: baseline Elo, and the transferred adapter's
    (trained on arena_hard) with smaller spread; an in-domain 'uda' row too, which must not be read."""
    rows = []
    quality = {m: 1200 + 80 * k for k, m in enumerate(PAPER_JUDGES)}
    for method, src, spread in (("baseline", "", 120.0), ("uda", SOURCE, 40.0), ("uda", HELD, 5.0)):
        for j in PAPER_JUDGES:
            for m in PAPER_JUDGES:
                rows.append({"method": method, "trained_on": src, "judge": j, "model": m,
                             "score": quality[m] + spread * rng.standard_normal()})
    return pd.DataFrame(rows)


def _folder(root: Path, scores: pd.DataFrame, judges: list[dict]) -> list[str]:
    models = js = list(PAPER_JUDGES)
    out = []
    for name, df in (("std", M.std_table(scores, HELD, models, js)),
                     ("methods", M.methods_table(scores, HELD, models, js, None, "none")),
                     ("alignment", M.alignment_table(scores, HELD, models, js))):
        path = root / HELD / "tables" / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_table(df, path, provenance=provenance("h", 0, judges))
        out.append(str(path))
    return out


def test_the_held_out_rows_read_the_transferred_adapter_on_the_held_out_prompts(tmp_path):
    root = tmp_path / "uda"
    scores = _scores(np.random.default_rng(3))
    files = _folder(root, scores, REAL)
    split = {"set": HELD, "source": SOURCE}
    assert sorted(files) == sorted(str(root / t) for t in heldout_tables(split))
    t = reproduce("uda", root, files, {e["name"]: e for e in REAL}, {"heldout": split}).set_index("cell")
    # by hand: the mean over models of the std across judges, baseline against the transferred adapter
    wide = {src: scores[(scores["method"] == m) & (scores["trained_on"] == src)].pivot(
        index="judge", columns="model", values="score") for m, src in (("baseline", ""), ("uda", SOURCE))}
    base, new = (float(wide[s].std(ddof=1).mean()) for s in ("", SOURCE))
    std = t.loc[STD]
    assert std["run_value"] == pytest.approx(100 * (base - new) / base)
    consensus = wide[""].mean(axis=0)
    pearson = np.mean([np.corrcoef(wide[SOURCE].loc[j], consensus)[0, 1] for j in PAPER_JUDGES])
    assert t.loc[PEARSON, "run_value"] == pytest.approx(pearson)
    # the paper's ten judges, real: still another prompt set than the paper's transfer set
    for cell in (STD, PEARSON):
        row = t.loc[cell]
        assert row["provenance"] == "real" and row["verdict"] == "not comparable"
        assert row["reason"].startswith(f"{HELD}: held-out prompts the adapter never saw stand in for the paper's "
                                        "human-annotated transfer set"), row["reason"]
    # simulated judges: simulated, not planted
    sim = [{**e, "name": e["name"], "backend": "simulated", "options": {"profile": {"competence": 2.0}}} for e in REAL]
    files = _folder(root, scores, sim)
    t = reproduce("uda", root, files, {e["name"]: e for e in sim}, {"heldout": split}).set_index("cell")
    assert (t.loc[[STD, PEARSON], "provenance"] == "simulated").all()


def test_without_a_held_out_split_the_rows_have_no_value_and_say_why(tmp_path):
    root = tmp_path / "uda"
    files = _folder(root, _scores(np.random.default_rng(0)), REAL)
    entries = {e["name"]: e for e in REAL}
    for options in ({}, {"heldout": None}):
        t = reproduce("uda", root, files, entries, options).set_index("cell")
        for cell in (STD, PEARSON):
            assert pd.isna(t.loc[cell, "run_value"]) and t.loc[cell, "verdict"] == "not comparable"
            assert "this run has no held-out Arena-Hard split" in t.loc[cell, "reason"]
    # a transferred adapter no judge had a usable verdict for: the table's empty cell and its reason
    empty = pd.DataFrame([{"judge": "Average", "method": f"uda [from {SOURCE}]", "pearson_consensus": np.nan,
                           "mse_consensus": np.nan, "reason": "no judge with a usable verdict"}])
    write_table(empty, root / HELD / "tables" / "alignment.csv", provenance=provenance("h", 0, REAL))
    t = reproduce("uda", root, files, entries, {"heldout": {"set": HELD, "source": SOURCE}}).set_index("cell")
    assert pd.isna(t.loc[PEARSON, "run_value"])
    assert t.loc[PEARSON, "reason"] == "this run has no value: no judge with a usable verdict"
    # a split whose tables this run did not write: named
    t = reproduce("uda", root, [], entries, {"heldout": {"set": HELD, "source": SOURCE}}).set_index("cell")
    assert f"{HELD}/tables/std.csv is not among this run's outputs" in t.loc[STD, "reason"]


def test_the_split_is_found_in_the_paper_config_and_not_in_the_default(data_root: Path):
    default = load_config(*default_config_paths())["uda"]
    assert heldout_split(default, list(default["datasets"])) is None
    assert heldout_tables(None) == []
    paper = load_config(*default_config_paths(), REPO / "config/judges/paper-uda.yaml")["uda"]
    assert heldout_split(paper, paper["run_datasets"]) == {"set": HELD, "source": SOURCE}
    # a held-out part no transfer applies the adapter to, or one the run leaves out, is no split
    assert heldout_split({**paper, "transfer": [{"train": SOURCE, "apply": "mt_bench"}]}, paper["run_datasets"]) is None
    assert heldout_split(paper, [SOURCE, "mt_bench"]) is None
