"""The study's data: question bank, markdown -> prose, truncation, the 375-pair controlled set,
MT-Bench human votes joined to answers (seeded sample), LLMBar sample, the HF download path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgelab.cache import CallCache
from judgelab.config import JudgeSpec
from judgelab.datasets.controlled import (
    DOMAINS,
    EXPECTED_COUNTS,
    ControlledSpec,
    controlled_summary,
    load_bank,
    md_to_prose,
    strip_inline,
    truncate_at_sentences,
)
from judgelab.datasets.features import markdown_score, word_count
from judgelab.datasets.mtbench import compact_votes, sample_indices
from judgelab.io import InputError
from judgelab.judges import make_judge
from judgelab.strategies.build import assemble_controlled, generate_texts
from judgelab.strategies.datasets import load_study_pairs
from tests.conftest import REPO

BANK = REPO / "data/strategies/question_bank.jsonl"
_WORDS = re.compile(r"[A-Za-z0-9]+")


def test_bank_has_fifty_questions_ten_per_domain():
    bank = load_bank(BANK)
    assert len(bank) == 50
    assert {d: sum(q.domain == d for q in bank) for d in DOMAINS} == dict.fromkeys(DOMAINS, 10)
    assert all(markdown_score(q.base_answer) == 0 for q in bank)


def test_bank_errors_name_file_line_and_key(tmp_path: Path):
    rows = [json.loads(x) for x in BANK.read_text().splitlines()[:2]]
    rows[1]["domain"] = "poetry"
    p = tmp_path / "bank.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(InputError, match=r"bank\.jsonl:2: key 'domain'"):
        load_bank(p)
    rows[1]["domain"] = "math"
    rows[1]["base_answer"] = ""
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(InputError, match=r"bank\.jsonl:2: key 'base_answer' is missing or empty"):
        load_bank(p)


_MARKERS = re.compile(r"^\s*(?:#{1,6}|[-*+>]|\d+[.)])\s+", re.MULTILINE)


def _content_words(md: str) -> list[str]:
    """The words of a markdown text without its markup (line markers, emphasis, code spans)."""
    md = re.sub(r"^\s*```.*$", "", md, flags=re.MULTILINE)  # fences and their language tags
    return _WORDS.findall(_MARKERS.sub("", strip_inline(md)).lower())


@pytest.mark.parametrize("q", load_bank(BANK), ids=lambda q: q.question_id)
def test_prose_of_every_bank_answer_has_no_markdown_and_keeps_every_word(q):
    prose = md_to_prose(q.comprehensive_answer)
    assert markdown_score(q.comprehensive_answer) == 1.0
    assert markdown_score(prose) == 0.0
    have = set(_WORDS.findall(prose.lower()))
    missing = [w for w in _content_words(q.comprehensive_answer) if w not in have]
    assert not missing, missing[:10]
    # and adds little: only connectives ("first", "second", ...), never new content
    extra = set(_WORDS.findall(prose.lower())) - set(_content_words(q.comprehensive_answer))
    assert extra <= {"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
                     "and", "in", "order", "for", "is", "step"}, extra


def test_md_to_prose_constructs():
    md = ("# Title\n\n## Why it matters\n\n- **Speed:** it is fast.\n- It is *cheap*.\n\n"
          "Steps to follow:\n\n1. Open the `file`.\n2. Read each line.\n\n"
          "Things to pack:\n\n- tent\n- stove\n- map\n\n"
          "| item | cost |\n|---|---|\n| tea | 2 |\n\n```python\nx = 1\n```\n\n> quoted [link](http://x.y)\n\n---\n")
    prose = md_to_prose(md)
    assert prose.startswith("Title")
    assert "Why it matters: Speed: it is fast. It is cheap." in prose
    assert "First, open the file. Second, read each line." in prose
    assert "Things to pack: tent, stove, and map." in prose
    assert "For tea, cost is 2." in prose
    assert "x = 1" in prose and "```" not in prose and "quoted link" in prose and "---" not in prose
    assert markdown_score(prose) == 0.0
    plain = "Just one plain paragraph.\nWith a second line."
    assert md_to_prose(plain) == plain  # plain text is a fixed point


_word = st.text(alphabet="abcdefghij", min_size=2, max_size=7)
_sentence = st.lists(_word, min_size=2, max_size=6).map(lambda ws: " ".join(ws).capitalize() + ".")


@st.composite
def _markdown(draw) -> str:
    blocks = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["header", "bullets", "numbered", "para", "bold"]))
        if kind == "header":
            blocks.append("## " + " ".join(draw(st.lists(_word, min_size=1, max_size=3))))
        elif kind in ("bullets", "numbered"):
            items = draw(st.lists(_sentence, min_size=1, max_size=4))
            blocks.append("\n".join(("- " if kind == "bullets" else f"{i + 1}. ") + it for i, it in enumerate(items)))
        elif kind == "bold":
            blocks.append(f"The **{draw(_word)}** is {draw(_word)}.")
        else:
            blocks.append(draw(_sentence))
    return "\n\n".join(blocks)


@settings(max_examples=60, deadline=None)
@given(_markdown())
def test_md_to_prose_property_no_markdown_same_words(md):
    prose = md_to_prose(md)
    assert markdown_score(prose) == 0.0
    have = set(_WORDS.findall(prose.lower()))
    assert set(_content_words(md)) <= have


def test_truncation_cuts_at_a_sentence_near_the_ratio():
    text = " ".join(f"Sentence number {i} has exactly seven words." for i in range(20))
    cut = truncate_at_sentences(text, 0.4)
    assert text.startswith(cut) and cut.endswith(".")
    assert abs(word_count(cut) / word_count(text) - 0.4) <= 7 / word_count(text)
    with pytest.raises(ValueError):
        truncate_at_sentences("One sentence only.", 0.4)


def _sim(name: str, family: str, seed: int) -> object:
    return make_judge(JudgeSpec.from_dict({"name": name, "backend": "simulated", "model": "m", "family": family,
                                           "sampling": {"seed": seed}}))


def build_controlled(tmp_path: Path, seed: int = 7) -> pd.DataFrame:
    """The controlled set built with simulated generators (one per family), as the DAG does."""
    bank = load_bank(BANK)
    spec = ControlledSpec(seed=seed)
    gens = []
    with CallCache(tmp_path / f"gen{seed}.sqlite") as cache:
        for i, fam in enumerate(["google", "anthropic", "meta", "openai"]):
            gens.append(generate_texts(_sim(f"gen-{fam}", fam, i), bank, spec, cache, expansion=fam == "google",
                                       families=[fam]))
    g = pd.concat(gens, ignore_index=True)
    return assemble_controlled(bank, g, spec, {f: f"gen-{f}" for f in ["google", "anthropic", "meta", "openai"]})


def test_controlled_set_has_375_pairs_as_in_appendix_a(tmp_path: Path):
    df = build_controlled(tmp_path)
    assert len(df) == 375 and df["pair_id"].is_unique
    summ = controlled_summary(df).set_index(["bias_type", "subset"])
    for key, n in EXPECTED_COUNTS.items():
        assert summ.loc[key, "n_pairs"] == n, key
    assert set(df.loc[df["subset"] != "truncation", "expected_verdict"]) == {"tie"}
    assert set(df.loc[df["subset"] == "truncation", "expected_verdict"]) == {"A"}
    # expansions ~2.8x longer (paper 003), truncations ~40% of the complete answer
    exp = df[df["subset"] == "expansion"]
    ratio = np.maximum(exp["words_a"], exp["words_b"]) / np.minimum(exp["words_a"], exp["words_b"])
    assert 2.5 < ratio.mean() < 3.1
    assert 0.2 < (exp["target_side"] == "A").mean() < 0.8  # slot of the expansion drawn at random
    tr = df[df["subset"] == "truncation"]
    assert 0.33 < (tr["words_b"] / tr["words_a"]).mean() < 0.47
    assert all(a.startswith(b) for a, b in zip(tr["response_a"], tr["response_b"], strict=True))
    # POSITION identical; STYLE markdown vs prose of the same text; STYLE_BA is the mirror
    pos = df[df["bias_type"] == "POSITION"]
    assert (pos["response_a"] == pos["response_b"]).all()
    sty = df[df["bias_type"] == "STYLE"].set_index("question_id")
    mir = df[df["bias_type"] == "STYLE_BA"].set_index("question_id")
    assert (sty["response_a"] == mir["response_b"]).all() and (sty["response_b"] == mir["response_a"]).all()
    assert (sty["markdown_a"] == 1).all() and (sty["markdown_b"] == 0).all()
    # MODEL_ORIGIN: the original pairs put google in A; round robin slots vary, 25 per pairing
    mo = df[df["bias_type"] == "MODEL_ORIGIN"]
    orig = mo[mo["subset"] == "original"]
    assert (orig["origin_a"] == "google").all() and (orig["origin_b"] == "anthropic").all()
    rr = mo[mo["subset"] == "round_robin"]
    pairs = rr.apply(lambda r: tuple(sorted((r.origin_a, r.origin_b))), axis=1).value_counts()
    assert set(pairs) == {25} and len(pairs) == 4
    assert 0.25 < (rr["origin_a"].isin(["meta", "openai"])).mean() < 0.75
    # every family generated its own side's text (the simulated writer signs it)
    assert all("[simulated text]" in t for t in mo["response_a"])


def test_controlled_set_is_seeded(tmp_path: Path):
    a, b, c = build_controlled(tmp_path, 7), build_controlled(tmp_path, 7), build_controlled(tmp_path, 8)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_failed_generation_leaves_pairs_out_never_placeholders(tmp_path: Path):
    bank = load_bank(BANK)
    spec = ControlledSpec(seed=1)
    with CallCache(tmp_path / "c.sqlite") as cache:
        g = generate_texts(_sim("gen-google", "google", 0), bank, spec, cache, expansion=True, families=["google"])
    g.loc[g["task"] == "expansion", "text"] = ""
    df = assemble_controlled(bank, g, spec, {"google": "gen-google"})
    assert (df["subset"] == "expansion").sum() == 0
    assert (df["bias_type"] == "MODEL_ORIGIN").sum() == 0  # no anthropic / meta / openai generator
    assert len(df) == 25 + 50 + 50 + 50


@pytest.mark.shared_data
def test_mtbench_votes_join_and_paper_sampling(data_root):
    full = load_study_pairs("m", {"loader": "mtbench", "n": None})
    # 1,689 votes; 558 on vicuna-13b-v1.2 (no answers) and 8 on llama-13b's empty answer to q127
    assert len(full) == 1123 and full["n_available"].iloc[0] == 1123
    assert full["expected_verdict"].value_counts().to_dict() == {"A": 443, "B": 426, "tie": 254}
    assert set(full.loc[full["reference"] != "", "category"]) == {"math", "reasoning", "coding"}
    s = load_study_pairs("m", {"loader": "mtbench", "n": 400, "seed": 42})
    idx = np.random.default_rng(seed=42).choice(1123, size=400, replace=False)
    assert s["pair_id"].tolist() == full["pair_id"].iloc[idx].tolist()
    # texts are the turn-1 answers of the models named in the vote
    row = s.iloc[0]
    qid, model = int(row["question_id"]), row["model_a"]
    ans = {json.loads(x)["question_id"]: json.loads(x)["choices"][0]["turns"][0]
           for x in (data_root / f"mt_bench/model_answer/{model}.jsonl").read_text().splitlines()}
    assert row["response_a"] == ans[qid]


def test_sample_uses_everything_when_fewer_are_available(caplog):
    assert sample_indices(10, 400, 42, what="x") == list(range(10))
    assert "only 10 available" in caplog.text
    assert sample_indices(10, None, 42, what="x") == list(range(10))


@pytest.mark.shared_data
def test_llmbar_sample_of_200_from_419(data_root):
    df = load_study_pairs("l", {"loader": "llmbar", "n": 200, "seed": 42})
    assert len(df) == 200 and df["n_available"].iloc[0] == 419 and df["pair_id"].is_unique
    assert df["category"].nunique() == 5
    again = load_study_pairs("l", {"loader": "llmbar", "n": 200, "seed": 42})
    assert df["pair_id"].tolist() == again["pair_id"].tolist()


def test_hf_votes_are_compacted_to_the_shared_layout(tmp_path: Path):
    hf = pd.DataFrame({"question_id": [81, 81, 82], "model_a": ["gpt-4", "gpt-4", "llama-13b"],
                       "model_b": ["claude-v1"] * 3, "winner": ["model_a", "tie", "model_b"],
                       "judge": ["expert_1", "author_2", "expert_3"], "turn": [1, 2, 1],
                       "conversation_a": ["..."] * 3, "conversation_b": ["..."] * 3})
    out = compact_votes(hf, tmp_path / "votes.jsonl", turn=1, where="hf")
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows == [{"question_id": 81, "judge": "expert_1", "model_a": "gpt-4", "model_b": "claude-v1",
                     "winner": "model_a"},
                    {"question_id": 82, "judge": "expert_3", "model_a": "llama-13b", "model_b": "claude-v1",
                     "winner": "model_b"}]
    with pytest.raises(InputError, match="missing column"):
        compact_votes(hf.drop(columns=["turn"]), tmp_path / "x.jsonl", turn=1, where="hf")


@pytest.mark.shared_data
def test_sources_are_pinned_and_resolve_to_the_shared_copies(data_root):
    from judgelab.datasets.sources import SOURCES, source_path

    names = ["mt_bench/human_judgments_turn1", "mt_bench/reference_answer/gpt-4", "mt_bench/question",
             *[f"mt_bench/model_answer/{m}" for m in ("alpaca-13b", "claude-v1", "gpt-3.5-turbo", "gpt-4", "llama-13b")],
             *[f"llmbar/{s}" for s in ("Natural", "Adversarial/Neighbor", "Adversarial/GPTInst", "Adversarial/GPTOut",
                                       "Adversarial/Manual")]]
    for name in names:
        assert re.search(r"/[0-9a-f]{40}/", SOURCES[name].url), name  # pinned to a commit
        assert source_path(name, download=False) == data_root / SOURCES[name].rel
