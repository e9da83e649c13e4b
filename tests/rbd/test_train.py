"""Fine-tuning the detector with LoRA on a tiny causal LM built offline (the CPU path of rule rbd_train).

The loss on the detector traces decreases; the saved adapter reloads on its base and
generates, token for token as the merged checkpoint does; the merged checkpoint works as a
``transformers`` judge through the cache (its model id pinned to the weights' digest); CPU
training is reproducible bit for bit; the label-only classifier trains and predicts.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from judgelab.cache import CallCache  # noqa: E402
from judgelab.config import ConfigError  # noqa: E402
from judgelab.judges.runner import run_requests  # noqa: E402
from judgelab.rbd.detector import DetectorCase, DetectorSpec, cases_frame, detector_request  # noqa: E402
from judgelab.rbd.train import (  # noqa: E402
    TrainConfig,
    causal_examples,
    classifier_examples,
    classify,
    generate,
    load_adapter_model,
    prompt_ids,
    train_into,
    trained_detector_judge,
)
from judgelab.records import CallStatus  # noqa: E402

BIASES = ("verbosity", "position", "bandwagon", "sentiment")


def traces(n: int = 48) -> pd.DataFrame:
    cases = []
    for i in range(n):
        bias = BIASES[i % 4]
        yes = i % 3 == 0
        cases.append(DetectorCase(
            case_id=f"e|{bias}-{i}", subset="train", set=bias, item_id=f"{bias}-{i}", evaluator="e",
            evaluator_model="sim/e", bias_type=bias, answer_format="number" if bias == "sentiment" else "output_ab",
            question=f"Question {i} about item {i % 7}", options=[f"short answer {i}", f"a longer answer {i} " * 3],
            swapped_options=[], statement="", verdict=[1 if yes else 0], truth="yes" if yes else "no"))
    df = cases_frame(cases)
    df["reasoning"] = [f"Bias type: {b} bias. The judge chose the {'longer' if t == 'yes' else 'correct'} option."
                       for b, t in zip(df["bias_type"], df["truth"], strict=True)]
    df["kept"] = True
    df["simulated"] = True
    return df


CFG = dict(max_steps=25, learning_rate=0.03, target_modules=["q_proj", "v_proj"], modules_to_save=["lm_head"],
           max_words=12, seed=3, tiny={"vocab_size": 400, "hidden_size": 32, "intermediate_size": 64,
                                       "num_hidden_layers": 2, "num_attention_heads": 4,
                                       "max_position_embeddings": 1024})


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    cfg = TrainConfig.from_dict(CFG, where="test")
    run = tmp_path_factory.mktemp("rbd_train") / "model"
    res = train_into(causal_examples(traces(), cfg.max_words), cfg, run)
    return cfg, res


def test_lora_loss_decreases_and_only_adapters_train(trained):
    cfg, res = trained
    loss = res.losses["loss"].to_numpy()
    assert len(loss) == cfg.max_steps and all(map(lambda x: x == x, loss))
    assert loss[-5:].mean() < loss[:5].mean() - 1.0, loss
    assert (res.losses["n_tokens"] > 0).all()
    meta = json.loads((res.run_dir / "meta.json").read_text())
    assert meta["merged_sha256"] == res.merged_sha256 and meta["n_examples"] == 48
    adapter_cfg = json.loads((res.run_dir / "adapter" / "adapter_config.json").read_text())
    assert adapter_cfg["r"] == cfg.lora_r and set(adapter_cfg["target_modules"]) == {"q_proj", "v_proj"}


def test_saved_adapter_reloads_and_generates_like_the_merged_model(trained):
    cfg, res = trained
    from transformers import AutoModelForCausalLM

    model, tok = load_adapter_model(res.run_dir)
    prompt = causal_examples(traces(8), cfg.max_words)[1].prompt
    text = generate(model, tok, prompt, max_new_tokens=12)
    assert "<think>" in text  # the format of the traces was learned
    merged = AutoModelForCausalLM.from_pretrained(res.run_dir / "merged").eval()
    assert generate(merged, tok, prompt, max_new_tokens=12) == text
    ids = torch.tensor([prompt_ids(tok, prompt)])
    with torch.inference_mode():
        a, b = model(input_ids=ids).logits, merged(input_ids=ids).logits
    assert torch.allclose(a, b, atol=1e-4)


def test_merged_checkpoint_is_a_judge_through_the_cache(trained, tmp_path):
    cfg, res = trained
    judge = trained_detector_judge(res.run_dir, "rbd-tiny", sampling={"max_tokens": 8})
    assert judge.spec.model.endswith(f"#sha256={res.merged_sha256[:16]}")
    case = DetectorCase(case_id="c", subset="test", set="verbosity", item_id="v", evaluator="e",
                        evaluator_model="sim/e", bias_type="verbosity", answer_format="output_ab", question="Q 1",
                        options=["short answer 1", "a longer answer 1"], swapped_options=[], statement="",
                        verdict=[1], truth="yes")
    req = detector_request(case, DetectorSpec(name="rbd-tiny", trained="rbd-tiny", max_words=cfg.max_words))
    with CallCache(tmp_path / "c.sqlite") as cache:
        first = run_requests(judge, [req], cache)[0]
        again = run_requests(judge, [req], cache)[0]
    assert first.status is not CallStatus.ERROR and first.tokens_out > 0 and first.raw_text
    assert again.cached and again.raw_text == first.raw_text


def test_cpu_training_is_reproducible(trained, tmp_path):
    cfg, res = trained
    again = train_into(causal_examples(traces(), cfg.max_words), cfg, tmp_path / "again")
    pd.testing.assert_frame_equal(again.losses, res.losses, check_exact=True)
    assert again.merged_sha256 == res.merged_sha256


def test_label_only_classifier_trains_and_predicts(tmp_path):
    cfg = TrainConfig.from_dict({**CFG, "kind": "classifier", "modules_to_save": [], "max_steps": 15},
                                where="test")
    ex = classifier_examples(traces(), cfg.max_words)
    res = train_into(ex, cfg, tmp_path / "cls")
    assert len(res.losses) == 15 and res.losses["loss"].notna().all()
    preds = classify(res.run_dir / "merged", [e.prompt for e in ex[:10]])
    assert len(preds) == 10 and set(preds) <= {"yes", "no"}


def test_only_kept_traces_become_training_examples():
    """D_train = {... | b_hat_i = b_i} (paper 001, Sec. 4): a trace the teacher filter dropped trains
    neither the detector nor the label-only classifier."""
    tr = traces(12)
    tr["kept"] = [i % 3 != 1 for i in range(12)]
    tr["reasoning"] = [f"trace {i}" for i in range(12)]
    kept = tr[tr["kept"]]
    causal = causal_examples(tr, 12)
    assert [e.target for e in causal] == [f"<think> trace {i} </think>\n{t.capitalize()}"
                                          for i, t in zip(kept.index, kept["truth"], strict=True)]
    assert all(f"Question {i} about" in e.prompt for i, e in zip(kept.index, causal, strict=True))
    labels = classifier_examples(tr, 12)
    assert [e.target for e in labels] == list(kept["truth"])
    assert all(f"Question {i} about" in e.prompt for i, e in zip(kept.index, labels, strict=True))


def test_training_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="unknown training key"):
        TrainConfig.from_dict({"learning_rat": 0.1}, where="rbd.train.runs.x")
    with pytest.raises(ConfigError, match="kind must be"):
        TrainConfig.from_dict({"kind": "seq2seq"}, where="rbd.train.runs.x")


def test_full_fine_tuning_trains_every_weight_and_keeps_the_best_eval_checkpoint(tmp_path):
    """method: full (paper 001 fine-tunes all weights) with a validation split: every weight moves,
    the loss table records the eval loss, and the saved model is the lowest-eval-loss step's,
    not the last one's."""
    from safetensors.torch import load_file

    from judgelab.rbd.train import split_validation

    # a learning rate that warms up over the whole run to a too-high peak: late steps get worse on
    # held-out traces, so the best checkpoint is not the last step
    cfg = TrainConfig.from_dict({**CFG, "method": "full", "modules_to_save": [], "max_steps": 24,
                                 "learning_rate": 1.0, "warmup_ratio": 1.0, "val_fraction": 0.25, "eval_every": 2},
                                where="test")
    ex = causal_examples(traces(), cfg.max_words)
    res = train_into(ex, cfg, tmp_path / "full")
    assert not (res.run_dir / "adapter").exists()
    ev = res.losses.dropna(subset=["eval_loss"])
    assert list(ev["step"]) == list(range(2, 25, 2))
    best = ev.loc[ev["eval_loss"].idxmin()]
    assert int(best["step"]) < 24 and ev["eval_loss"].iloc[-1] > best["eval_loss"] + 0.1
    assert res.meta["best_step"] == int(best["step"]) and res.meta["best_eval_loss"] == pytest.approx(best["eval_loss"])
    tr, val = split_validation(len(ex), 0.25, cfg.seed)
    assert res.meta["n_validation"] == len(val) == 12 and res.meta["n_examples"] == len(tr)
    assert not set(tr) & set(val)
    base = load_file(str(res.run_dir / "base" / "model.safetensors"))
    merged = load_file(str(res.run_dir / "merged" / "model.safetensors"))
    moved = [k for k in base if k in merged and not torch.equal(base[k], merged[k])]
    assert len(moved) >= 0.9 * len([k for k in base if k in merged])  # every weight trained, not adapters only
    # the saved weights are the best step's: their eval loss is the recorded minimum
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from judgelab.rbd.train import encode_causal

    model = AutoModelForCausalLM.from_pretrained(res.run_dir / "merged").eval()
    tok = AutoTokenizer.from_pretrained(res.run_dir / "merged")
    losses = []
    with torch.no_grad():
        for i in val:
            ids, labels = encode_causal(tok, ex[i], cfg.max_seq_len)
            out = model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels]))
            losses.append(float(out.loss))
    assert sum(losses) / len(losses) == pytest.approx(best["eval_loss"], rel=1e-4)


def test_method_and_validation_keys_are_checked():
    with pytest.raises(ConfigError, match="method must be one of"):
        TrainConfig.from_dict({"method": "qlora"}, where="rbd.train.runs.x")
    with pytest.raises(ConfigError, match="val_fraction"):
        TrainConfig.from_dict({"val_fraction": 1.0}, where="rbd.train.runs.x")
