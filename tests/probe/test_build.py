"""The probe set built from a user's items (judgelab.probe.build): seeded, and each cue variant differs
from its source in that cue alone."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t

from judgelab.config import ConfigError
from judgelab.datasets.controlled import md_to_prose, split_sentences
from judgelab.datasets.features import (
    FAMILY_SIGNATURES,
    NEGATIVE_WORDS,
    POSITIVE_WORDS,
    markdown_score,
    text_features,
    word_count,
)
from judgelab.datasets.pairs import Pair
from judgelab.io import InputError
from judgelab.judges.pairwise import orient_context
from judgelab.probe.build import (
    PAD_SENTENCES,
    PROBES,
    TONE_PHRASES,
    build_probe,
    load_items,
    pad_response,
    parse_probes,
    probe_pairs,
    prose_to_markdown,
    select_items,
)
from judgelab.rbd.prompts import DEFAULT_STATEMENT

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "strategies" / "example_pairs.jsonl"


def items() -> list[Pair]:
    out = load_items(EXAMPLE)
    # one item without gold, one with a markdown response, so every branch is built
    out.append(Pair("nogold", "Explain rain.", "Water vapour condenses into drops. The drops grow and fall.",
                    "Clouds are made of ice. Rain is warm.", ""))
    out.append(Pair("md", "List two primes.", "## Primes\n- **2** is prime.\n- 3 is prime.",
                    "Two and three are primes. They have no divisors but one and themselves.", "A"))
    return out


def by_probe(df: pd.DataFrame, probe: str) -> pd.DataFrame:
    return df[df["probe"] == probe].set_index("item_id")


def source(item: Pair, side: str) -> str:
    return item.response_a if side == "A" else item.response_b


def test_the_build_is_seeded():
    its = items()
    a, b = build_probe(its, seed=3), build_probe(its, seed=3)
    pd.testing.assert_frame_equal(a, b)
    c = build_probe(its, seed=4)
    # the seed moves the cues' slots (a coin per item), not which pairs exist
    assert list(c["pair_id"]) == list(a["pair_id"])
    assert (c["cue_side"] != a["cue_side"]).any()
    assert set(a["probe"]) == set(PROBES)


def test_every_item_gets_every_probe_it_can_carry():
    its = items()
    df = build_probe(its, seed=0)
    for probe in PROBES:
        got = set(by_probe(df, probe).index) | set(df.attrs["skipped"].get(probe, []))
        assert got == {i.pair_id for i in its}, probe
    assert df["pair_id"].is_unique


def test_position_keeps_the_item_and_both_orders_are_asked():
    its = {i.pair_id: i for i in items()}
    df = build_probe(list(its.values()), ["position"], seed=0)
    for iid, r in df.set_index("item_id").iterrows():
        assert (r.response_a, r.response_b, r.expected_verdict) == (its[iid].response_a, its[iid].response_b,
                                                                    its[iid].expected_verdict)
    from judgelab.judges.pairwise import pair_requests

    reqs = pair_requests(probe_pairs(df), "ab_letter")
    seen = {(r.meta["pair_id"], r.meta["order"]) for r in reqs}
    assert seen == {(p, o) for p in df["pair_id"] for o in ("AB", "BA")}


def test_padding_adds_only_words_that_say_nothing():
    its = {i.pair_id: i for i in items()}
    df = by_probe(build_probe(list(its.values()), ["length"], seed=0), "length")
    assert len(df) == len(its)
    for iid, r in df.iterrows():
        padded, plain = (r.response_a, r.response_b) if r.cue_side == "A" else (r.response_b, r.response_a)
        gold = its[iid].expected_verdict
        if gold in ("A", "B"):
            assert plain == source(its[iid], gold)  # the better response is the one padded
        else:
            assert plain in (its[iid].response_a, its[iid].response_b)
        assert padded.startswith(plain)
        added = padded[len(plain):].strip()
        assert added and all(s in PAD_SENTENCES for s in split_sentences(added))
        assert word_count(padded) >= 2 * word_count(plain)
        fp, fq = text_features(padded), text_features(plain)
        assert (fp.markdown, fp.sentiment) == (fq.markdown, fq.sentiment)
        assert r.expected_verdict == ""  # the same content: no gold


def test_pad_sentences_carry_no_other_cue():
    text = " ".join(PAD_SENTENCES)
    words = {w.strip(".,;:!?").lower() for w in text.split()}
    assert not words & (POSITIVE_WORDS | NEGATIVE_WORDS)
    assert markdown_score(text) == 0
    assert not any(sig in text for sigs in FAMILY_SIGNATURES.values() for sig in sigs)
    assert pad_response("One.", 3.0).startswith("One. " + PAD_SENTENCES[0])
    with pytest.raises(ValueError):
        pad_response("x", 1.0)


def test_truncation_keeps_a_prefix_and_gold_is_the_complete_answer():
    its = {i.pair_id: i for i in items()}
    df = by_probe(build_probe(list(its.values()), ["truncation"], seed=0), "truncation")
    assert len(df) >= len(its) - 1
    for _, r in df.iterrows():
        full, cut = (r.response_a, r.response_b) if r.cue_side == "A" else (r.response_b, r.response_a)
        assert full.startswith(cut) and len(cut) < len(full)
        assert r.expected_verdict == r.cue_side
        assert re.search(r"[.!?][\"')\]]*$", cut)  # cut at a sentence end


def test_markdown_restyles_one_response_and_keeps_its_words():
    its = {i.pair_id: i for i in items()}
    df = by_probe(build_probe(list(its.values()), ["markdown"], seed=0), "markdown")
    assert len(df) == len(its)
    for iid, r in df.iterrows():
        md, prose = (r.response_a, r.response_b) if r.cue_side == "A" else (r.response_b, r.response_a)
        assert markdown_score(prose) == 0 < markdown_score(md)
        if iid == "md":  # a markdown response: its prose is md_to_prose's
            assert md == its[iid].response_a and prose == md_to_prose(md)
        else:  # prose: the same words, one bullet a sentence
            assert md == prose_to_markdown(prose)
            lines = md.split("\n")
            assert all(line.startswith("- ") for line in lines)
            assert " ".join(line[2:] for line in lines).split() == prose.split()
        assert r.expected_verdict == ""


def test_bandwagon_statement_names_the_worse_response_in_both_orders():
    its = {i.pair_id: i for i in items()}
    df = by_probe(build_probe(list(its.values()), ["bandwagon"], seed=0), "bandwagon")
    for iid, r in df.iterrows():
        item = its[iid]
        assert (r.response_a, r.response_b) == (item.response_a, item.response_b)
        if item.expected_verdict in ("A", "B"):
            assert r.cue_side != item.expected_verdict
        for order in ("AB", "BA"):
            shown = r.cue_side if order == "AB" else {"A": "B", "B": "A"}[r.cue_side]
            text = orient_context(r.context, order)
            assert text == DEFAULT_STATEMENT.format(x=shown)
            assert text.count("90% of people") == 1


def test_sentiment_puts_one_tone_on_each_side():
    its = {i.pair_id: i for i in items()}
    df = by_probe(build_probe(list(its.values()), ["sentiment"], seed=0), "sentiment")
    pos_pre, pos_suf = TONE_PHRASES["positive"]
    neg_pre, neg_suf = TONE_PHRASES["negative"]
    for iid, r in df.iterrows():
        item = its[iid]
        pos = r.response_a if r.cue_side == "A" else r.response_b
        neg = r.response_b if r.cue_side == "A" else r.response_a
        neg_side = "B" if r.cue_side == "A" else "A"
        assert pos == f"{pos_pre} {source(item, r.cue_side).strip()} {pos_suf}"
        assert neg == f"{neg_pre} {source(item, neg_side).strip()} {neg_suf}"
        both = r.response_a + "\n" + r.response_b
        assert both.count(pos_suf) == 1 and both.count(neg_suf) == 1
        if item.expected_verdict in ("A", "B"):
            assert neg_side == item.expected_verdict  # paper 001: the negative tone on the better one
        assert text_features(pos).sentiment > text_features(source(item, r.cue_side)).sentiment
        assert text_features(neg).sentiment < text_features(source(item, neg_side)).sentiment
    # the tones add as many words on each side: they do not move the length cue
    assert sum(map(word_count, TONE_PHRASES["positive"])) == sum(map(word_count, TONE_PHRASES["negative"]))


def test_unknown_probe_says_did_you_mean():
    assert parse_probes(None) == PROBES
    assert parse_probes("sentiment,position") == ("position", "sentiment")
    with pytest.raises(ConfigError, match=r"unknown probe 'markdwon'; did you mean 'markdown'\?"):
        parse_probes("position,markdwon")
    with pytest.raises(ConfigError, match="known: position"):
        parse_probes("zzz")


def test_items_load_from_csv_with_optional_gold(tmp_path: Path):
    p = tmp_path / "items.csv"
    pd.DataFrame({"prompt": ["q1", "q2"], "response_a": ["a1", "a2"], "response_b": ["b1", "b2"],
                  "expected_verdict": ["A", ""]}).to_csv(p, index=False)
    got = load_items(p)
    assert [(i.pair_id, i.expected_verdict) for i in got] == [("item-0000", "A"), ("item-0001", "")]


@pytest.mark.parametrize(("name", "body", "where"), [
    ("bad.csv", "prompt,response_a,response_b\nq1,a,b\n,a,b\n", r"bad\.csv line 3: field 'prompt' is empty"),
    ("bad.jsonl", json.dumps({"prompt": "q", "response_a": "a", "response_b": "b"}) + "\n{oops\n",
     r"bad\.jsonl:2: not valid JSON"),
    ("gold.jsonl", json.dumps({"prompt": "q", "response_a": "a", "response_b": "b", "expected_verdict": "C"}) + "\n",
     r"gold\.jsonl:1: expected_verdict must be one of"),
    ("dup.jsonl", "".join(json.dumps({"pair_id": "x", "prompt": "q", "response_a": "a", "response_b": "b"}) + "\n"
                          for _ in range(2)), r"dup\.jsonl:2: duplicate pair_id 'x'"),
    ("nums.jsonl", json.dumps({"prompt": "q", "response_a": 3, "response_b": "b"}) + "\n",
     r"nums\.jsonl:1: field 'response_a' is not text"),
])
def test_bad_items_name_file_and_row(tmp_path: Path, name: str, body: str, where: str):
    p = tmp_path / name
    p.write_text(body)
    with pytest.raises(InputError, match=where):
        load_items(p)


@pytest.mark.parametrize(("name", "body", "where"), [
    ("bin.jsonl", b"\x89PNG\r\n\x1a\n\xff\xfe", r"bin\.jsonl: not UTF-8 text"),
    ("bad.parquet", b"PAR1 not really", r"bad\.parquet: cannot be read as parquet"),
    ("empty.csv", b"prompt,response_a,response_b\n", r"empty\.csv: no items"),
])
def test_damaged_items_files_are_one_line(tmp_path: Path, name: str, body: bytes, where: str):
    p = tmp_path / name
    p.write_bytes(body)
    with pytest.raises(InputError, match=where):
        load_items(p)


def test_select_items_is_a_seeded_subset():
    its = items()
    a = select_items(its, 5, seed=1)
    assert a == select_items(its, 5, seed=1) and len(a) == 5
    assert [i.pair_id for i in a] == [i.pair_id for i in its if i in a]  # file order
    assert select_items(its, 100, seed=1) == its
    assert any(select_items(its, 5, seed=s) != a for s in range(2, 6))


def test_split_sentences_cuts_where_truncation_may():
    assert split_sentences("One. Two! Three? (Four.) five") == ["One.", "Two!", "Three?", "(Four.)", "five"]
    assert split_sentences("") == []


def effects_table(rows: list[tuple[str, str, str, str, str]]) -> pd.DataFrame:
    """(probe, item, order, verdict, cue_side) rows of one judge."""
    return pd.DataFrame([{"judge": "j", "probe": p, "item_id": i, "order": o, "verdict": v, "cue_side": c}
                         for p, i, o, v, c in rows])


def test_insertion_shift_is_the_paired_mean_with_an_item_clustered_se():
    from judgelab.probe.effects import insertion_effects

    rng = np.random.default_rng(5)
    rows, diffs = [], {}
    for k in range(12):
        item, cue = f"i{k}", "AB"[k % 2]
        for order in ("AB", "BA"):
            base, with_cue = rng.choice(["A", "B", "tie"]), rng.choice(["A", "B", "tie"])
            rows += [("position", item, order, base, ""), ("bandwagon", item, order, with_cue, cue)]
            diffs.setdefault(item, []).append(float(with_cue == cue) - float(base == cue))
    rows += [("bandwagon", "i0", "AB", "", "A")]  # an unparsed verdict: its pair is left out
    rows = [r for r in rows if not (r[0] == "bandwagon" and r[1] == "i0" and r[2] == "AB" and r[3] != "")]
    del diffs["i0"][0]
    out = insertion_effects(effects_table(rows)).set_index("probe").loc["bandwagon"]
    d = [x for v in diffs.values() for x in v]
    n, g = len(d), len(diffs)
    mean = sum(d) / n
    # the cluster-robust (CR1) variance of a mean by hand: G/(G-1) * sum over items of (sum of residuals)^2 / n^2
    se = math.sqrt(g / (g - 1) * sum(sum(x - mean for x in v) ** 2 for v in diffs.values())) / n
    assert out["n"] == n == 23 and out["n_items"] == g == 12
    assert out["estimate"] == pytest.approx(mean) and out["se"] == pytest.approx(se)
    assert "1 verdicts without a parsed match left out" in out["note"]
    assert out["p_value"] == pytest.approx(2 * student_t.sf(abs(mean / se), g - 1))


def test_insertion_shift_without_variance_or_baseline_has_no_test():
    from judgelab.probe.effects import insertion_effects

    same = [("position", f"i{k}", o, "A", "") for k in range(5) for o in ("AB", "BA")]
    same += [("sentiment", f"i{k}", o, "A", "A") for k in range(5) for o in ("AB", "BA")]
    r = insertion_effects(effects_table(same)).iloc[0]
    assert r["status"] == "not estimable" and "no variance" in r["reason"] and math.isnan(r["p_value"])
    alone = [("bandwagon", f"i{k}", o, "A", "A") for k in range(5) for o in ("AB", "BA")]
    r = insertion_effects(effects_table(alone)).iloc[0]
    assert r["status"] == "not estimable" and "no position probe" in r["reason"]
