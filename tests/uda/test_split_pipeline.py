"""Paper 000's protocol in miniature, in the Snakemake DAG (scratch copy): the judges answer a prompts
file themselves, the file is split into a training tournament and a held-out one (``prompt_split``,
as ``config/judges/paper-uda.yaml`` splits the 500 Arena-Hard prompts 400 / 100), the adapters train
on the first only and are applied zero-shot to the second (``train: false``, ``uda.transfer``)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.workflow.test_pipeline import run_sm, workdir  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow

JUDGES = "[sim-gpt-4o, sim-gemini-2.5-flash, sim-llama-3.3-70b]"
SPLIT = f"""
uda:
  judges: {JUDGES}
  run_datasets: [own, own_heldout]
  embedding: {{backend: hashing, dim: 64}}
  training: {{epochs: 3, hidden: [16, 8]}}
  transfer:
    - {{train: own, apply: own_heldout}}
  datasets:
    own: &own
      loader: generated
      prompts: data/uda/own_prompts.jsonl
      models: {JUDGES}
      reference: none
      prompt_split: {{heldout: 0.5, part: train}}
    own_heldout:
      <<: *own
      train: false
      prompt_split: {{heldout: 0.5, part: heldout}}
"""


def test_adapters_train_on_one_part_and_transfer_to_the_other(workdir):  # noqa: F811
    (workdir / "split.yaml").write_text(SPLIT)
    run_sm(workdir, "results/uda/summary.csv", "results/uda/reproduction.csv", "-q", "--configfile", "split.yaml")
    train = pd.read_parquet(workdir / "results/uda/own/tournament.parquet")
    held = pd.read_parquet(workdir / "results/uda/own_heldout/tournament.parquet")
    assert train["prompt_id"].nunique() == held["prompt_id"].nunique() == 4
    assert not set(train["prompt_id"]) & set(held["prompt_id"])
    # adapters only where the tournament trains; the held-out one gets them zero-shot
    assert (workdir / "results/uda/own/adapters/full.pt").exists()
    assert not (workdir / "results/uda/own_heldout/adapters").exists()
    methods = pd.read_csv(workdir / "results/uda/own_heldout/tables/methods.csv")
    assert set(methods["method"]) == {"baseline", "label_smoothing [from own]", "uda_untrained [from own]",
                                      "uda [from own]", "uda_ablated [from own]"}
    transferred = methods[methods["method"].isin(["uda [from own]", "uda_ablated [from own]"])]
    assert len(transferred) == 2 and transferred["trained_on"].eq("own").all()
    assert transferred["std_reduction_pct"].notna().all()
    summary = pd.read_csv(workdir / "results/uda/summary.csv")
    assert set(summary["dataset"]) == {"own", "own_heldout"}
    # each answerer answered each prompt once: the held-out part's answers are not the training part's
    answers = {p: set(pd.read_parquet(workdir / f"results/uda/{p}/model_answer/sim-gpt-4o.parquet")["prompt_id"])
               for p in ("own", "own_heldout")}
    assert answers["own"] == set(train["prompt_id"]) and answers["own_heldout"] == set(held["prompt_id"])
    # paper 000's held-out transfer rows read the held-out tournament (judgelab/reproduction/uda.py)
    repro = pd.read_csv(workdir / "results/uda/reproduction.csv").set_index("cell")
    held_std = repro.loc["held-out Arena-Hard prompts: std reduction of UDA, zero-shot (%)"]
    uda = methods.set_index("method").loc["uda [from own]"]
    assert held_std["run_value"] == pytest.approx(uda["std_reduction_pct"])
    assert held_std["provenance"] == "simulated" and held_std["verdict"] == "not comparable"
    alignment = pd.read_csv(workdir / "results/uda/own_heldout/tables/alignment.csv")
    avg = alignment[(alignment["judge"] == "Average") & (alignment["method"] == "uda [from own]")]
    held_r = repro.loc["held-out Arena-Hard prompts: mean Pearson with the baseline consensus, UDA zero-shot"]
    assert held_r["run_value"] == pytest.approx(float(avg["pearson_consensus"].iloc[0]))
