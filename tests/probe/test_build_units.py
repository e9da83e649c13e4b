"""Units of the probe set's construction (judgelab.probe.build): every field of every probe's row for
hand-written items, the seeded coins against the generator the module documents (a generator per
step and item: ``default_rng([seed, crc32(name)])``), the exact one-line errors of the item loader
and of ``--probes``, and the text transforms' exact output."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgelab.bias_card.card import CardSettings
from judgelab.config import ConfigError
from judgelab.datasets.controlled import md_to_prose, truncate_at_sentences
from judgelab.datasets.features import markdown_score, word_count
from judgelab.datasets.pairs import EmptyResponseWarning, Pair
from judgelab.io import InputError
from judgelab.probe.build import (
    PAD_SENTENCES,
    PROBE_COLUMNS,
    PROBES,
    build_probe,
    load_items,
    pad_response,
    parse_probes,
    probe_pairs,
    probe_row,
    prose_to_markdown,
    select_items,
    with_tone,
)

ALL = "position, length, truncation, markdown, bandwagon, sentiment"


def coin(seed: int, name: str) -> str:
    """The documented coin: A when the step's generator's first uniform draw is below one half."""
    return "A" if np.random.default_rng([seed, zlib.crc32(name.encode())]).random() < 0.5 else "B"


def other(side: str) -> str:
    return {"A": "B", "B": "A"}[side]


GOLD_A = Pair("g2", "Is 7 prime?", "Yes. It has no divisor but 1 and 7.", "No, it is even.", "A")
GOLD = Pair("g1", "Why is the sky blue?", "Rayleigh scattering. Short waves scatter more. So blue wins.",
            "Because of the ocean.", "B", category="science", source="mine")
#: seeds under which every coin of the two items falls both ways (test_the_coins_fall_both_ways_over_seeds)
SEEDS = (0, 1, 2, 4, 8)
NOGOLD = Pair("n1", "Name a colour.", "Red is one. Blue is another.", "Green. Also yellow. And more.", "")


# ---------------------------------------------------------------------------------------------
# --probes


def test_probes_default_to_all_and_keep_the_module_order():
    for text in (None, "", "all", "  all  "):
        assert parse_probes(text) == PROBES
    assert parse_probes(" sentiment , length,length ") == ("length", "sentiment")


@pytest.mark.parametrize(("text", "message"), [
    ("pos", "--probes: unknown probe 'pos'; did you mean 'position'?"),  # difflib ratio 0.55: cutoff 0.5 finds it
    ("length,sentimnet", "--probes: unknown probe 'sentimnet'; did you mean 'sentiment'?"),
    ("zzz", f"--probes: unknown probe 'zzz'; known: {ALL}"),
    (" , ,", f"--probes: no probe named; known: {ALL}"),
])
def test_a_bad_probes_value_is_one_exact_line(text: str, message: str):
    with pytest.raises(ConfigError) as err:
        parse_probes(text)
    assert str(err.value) == message


# ---------------------------------------------------------------------------------------------
# the items


def test_items_from_each_format_with_ids_and_gold_filled_in(tmp_path: Path):
    rows = [{"prompt": "q0", "response_a": "a0", "response_b": "b0", "expected_verdict": "A"},
            {"pair_id": "", "prompt": "q1", "response_a": "a1", "response_b": "b1", "expected_verdict": "  "},
            {"pair_id": "mine", "prompt": "q2", "response_a": "a2", "response_b": "b2"}]
    (tmp_path / "i.jsonl").write_text("".join(pd.Series([r]).to_json(orient="records")[1:-1] + "\n" for r in rows))
    want = [("item-0000", "A"), ("item-0001", ""), ("mine", "")]
    got = load_items(tmp_path / "i.jsonl")
    assert [(i.pair_id, i.expected_verdict) for i in got] == want
    assert [(i.prompt, i.response_a, i.response_b) for i in got] == [("q0", "a0", "b0"), ("q1", "a1", "b1"),
                                                                      ("q2", "a2", "b2")]
    df = pd.DataFrame(rows)
    df.to_csv(tmp_path / "i.tsv", sep="\t", index=False)
    df.to_parquet(tmp_path / "i.parquet")  # a missing pair_id / gold is None or NaN there
    for name in ("i.tsv", "i.parquet"):
        assert [(i.pair_id, i.expected_verdict) for i in load_items(tmp_path / name)] == want, name


def test_csv_cells_are_read_as_written(tmp_path: Path):
    # numbers and pandas' missing-value words are text in an items file: an id "007", an answer "NA" or "42"
    (tmp_path / "i.csv").write_text("pair_id,prompt,response_a,response_b,expected_verdict\n"
                                    "007,What is 6 x 7?,42,NA,A\n008,Is it null?,null,None,\n")
    got = load_items(tmp_path / "i.csv")
    assert [(i.pair_id, i.response_a, i.response_b, i.expected_verdict) for i in got] == [
        ("007", "42", "NA", "A"), ("008", "null", "None", "")]


def test_item_errors_name_the_line_editors_show_or_the_parquet_row(tmp_path: Path):
    df = pd.DataFrame({"prompt": ["q", ""], "response_a": ["a", "a"], "response_b": ["b", "b"]})
    df.to_csv(tmp_path / "x.tsv", sep="\t", index=False)
    with pytest.raises(InputError, match=r"^" + str(tmp_path / "x.tsv") + r" line 3: field 'prompt' is empty"):
        load_items(tmp_path / "x.tsv")
    df.to_parquet(tmp_path / "x.parquet")
    with pytest.raises(InputError, match=r"^" + str(tmp_path / "x.parquet") + r" row 2: field 'prompt' is empty"):
        load_items(tmp_path / "x.parquet")
    dup = pd.DataFrame({"pair_id": ["p", "p"], "prompt": ["q", "q"], "response_a": ["a", "a"],
                        "response_b": ["b", "b"]})
    dup.to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(InputError) as err:
        load_items(tmp_path / "d.csv")
    assert str(err.value) == f"{tmp_path / 'd.csv'} line 3: duplicate pair_id 'p'"


def test_damaged_files_are_exact_one_liners(tmp_path: Path):
    def message(name: str, body: bytes) -> str:
        (tmp_path / name).write_bytes(body)
        with pytest.raises(InputError) as err:
            load_items(tmp_path / name)
        return str(err.value)

    assert message("e.csv", b"") == f"{tmp_path / 'e.csv'}: not a readable CSV file (No columns to parse from file)"
    assert message("e.tsv", b"") == f"{tmp_path / 'e.tsv'}: not a readable TSV file (No columns to parse from file)"
    assert message("u.csv", b"prompt\n\xff\xfe\n").startswith(f"{tmp_path / 'u.csv'}: not a readable CSV file (")
    assert message("u.jsonl", b'{"a": 1}\n\xff\n') == (f"{tmp_path / 'u.jsonl'}: not UTF-8 text (byte 9); items are "
                                                      "JSONL, CSV or parquet")
    assert message("p.parquet", b"PAR1 not really").startswith(f"{tmp_path / 'p.parquet'}: cannot be read as parquet (")
    (tmp_path / "dir").mkdir()  # an OSError of the JSONL reader: no suffix, read as JSONL
    with pytest.raises(InputError) as err:
        load_items(tmp_path / "dir")
    assert str(err.value) == f"{tmp_path / 'dir'}: cannot be read as JSONL ([Errno 21] Is a directory: '{tmp_path / 'dir'}')"
    assert message("none.jsonl", b"\n") == f"{tmp_path / 'none.jsonl'}: no items"
    with pytest.raises(InputError) as err:
        load_items(tmp_path / "absent.csv")
    assert str(err.value) == f"{tmp_path / 'absent.csv'}: no such items file"


def test_empty_responses_are_kept_with_one_warning(tmp_path: Path):
    p = tmp_path / "i.csv"
    pd.DataFrame({"prompt": ["q", "q"], "response_a": ["a", " "], "response_b": ["b", "b"]}).to_csv(p, index=False)
    with pytest.warns(EmptyResponseWarning, match=r"i\.csv: 1 empty or whitespace-only response\(s\) kept "
                                                  r"\(item-0001:response_a\)"):
        got = load_items(p)
    assert len(got) == 2


def test_select_items_draws_the_documented_seeded_sample():
    items = [Pair(f"p{i}", "q", "a", "b", "") for i in range(10)]
    want = np.sort(np.random.default_rng([7, zlib.crc32(b"items")]).choice(10, size=4, replace=False))
    assert [i.pair_id for i in select_items(items, 4, seed=7)] == [f"p{k}" for k in want]
    assert select_items(items, 10, seed=7) == items and select_items(items, None, seed=7) == items
    assert len(select_items(items, 1, seed=7)) == 1
    with pytest.raises(ConfigError) as err:
        select_items(items, 0, seed=7)
    assert str(err.value) == "--pairs must be at least 1, got 0"


# ---------------------------------------------------------------------------------------------
# text transforms


def test_padding_cycles_from_its_start_and_stops_at_the_factor():
    text = "One two three four five six seven eight nine ten."  # 10 words
    assert [word_count(s) for s in PAD_SENTENCES[:2]] == [13, 13] and word_count(PAD_SENTENCES[5]) == 15
    out = pad_response(text + "  ", 2.0, start=5)
    # PAD_SENTENCES[5] has 15 words (25 in all, >= 20): one sentence is enough
    assert out == f"{text} {PAD_SENTENCES[5]}"
    # exactly the target (10 + 13 = 2.3 x 10): reached, so no second sentence
    assert pad_response(text, 2.3) == f"{text} {PAD_SENTENCES[0]}"
    # an empty text counts as one word: 14 x 1 needs two sentences (26 words), not three
    assert pad_response("", 14.0) == f" {PAD_SENTENCES[0]} {PAD_SENTENCES[1]}"
    out = pad_response(text, 3.0, start=5)
    assert out == f"{text} {PAD_SENTENCES[5]} {PAD_SENTENCES[0]}"
    assert word_count(out) >= 30 > word_count(f"{text} {PAD_SENTENCES[5]}")
    assert pad_response("", 2.0) == f" {PAD_SENTENCES[0]}"  # an empty text counts as one word
    assert pad_response("Yes.", 1.5) == f"Yes. {PAD_SENTENCES[0]}"
    for bad in (1.0, 0.5):
        with pytest.raises(ValueError, match=f"padding factor must exceed 1, got {bad}"):
            pad_response(text, bad)


def test_restyling_and_tones_are_exact():
    assert prose_to_markdown("One. Two! Three?") == "- One.\n- Two!\n- Three?"
    assert with_tone("  x  ", "positive") == ("Fortunately, this is a wonderful answer. x Absolutely, a delightful "
                                              "testament to steady progress and real improvement!")
    assert with_tone("y", "negative") == ("Regrettably, this is merely an answer. y Sadly, it reveals the dull "
                                          "facts that cannot be changed.")


# ---------------------------------------------------------------------------------------------
# the probe rows


def common(item: Pair, probe: str, a: str, b: str) -> dict:
    return {"pair_id": f"{probe}-{item.pair_id}", "prompt": item.prompt, "response_a": a, "response_b": b,
            "bias_type": probe, "category": item.category, "source": item.source or "user items",
            "item_id": item.pair_id, "probe": probe, "words_a": word_count(a), "words_b": word_count(b),
            "markdown_a": markdown_score(a), "markdown_b": markdown_score(b)}


def check(row: dict, want: dict) -> None:
    assert set(row) == set(PROBE_COLUMNS)
    assert {k: row[k] for k in want} == want
    assert set(want) | {"context"} >= set(PROBE_COLUMNS) - {"context"}


@pytest.mark.parametrize("seed", SEEDS)
def test_position_and_length_rows(seed: int):
    for item in (GOLD, NOGOLD):
        row = probe_row(item, "position", seed)
        check(row, common(item, "position", item.response_a, item.response_b) | {
            "expected_verdict": item.expected_verdict, "cue": "presentation order (both orders)", "cue_side": "",
            "construction_notes": "the item as it is", "context": ""})
        side = item.expected_verdict or coin(seed, f"length:source:{item.pair_id}")
        slot = coin(seed, f"length:slot:{item.pair_id}")
        x = (item.response_a if side == "A" else item.response_b).strip()
        start = int(np.random.default_rng([seed, zlib.crc32(f"pad:{item.pair_id}".encode())]).integers(6))
        padded = pad_response(x, start=start)
        a, b = (padded, x) if slot == "A" else (x, padded)
        check(probe_row(item, "length", seed), common(item, "length", a, b) | {
            "expected_verdict": "", "cue": "padded to >= 2x the words", "cue_side": slot, "context": "",
            "construction_notes": f"response {side} of the item vs itself padded with content-free restatements "
                                  f"(slot {slot}); no gold: the content is the same"})


@pytest.mark.parametrize("seed", SEEDS)
def test_truncation_and_markdown_rows(seed: int):
    for item in (GOLD, NOGOLD):
        side = item.expected_verdict or coin(seed, f"truncation:source:{item.pair_id}")
        slot = coin(seed, f"truncation:slot:{item.pair_id}")
        x = (item.response_a if side == "A" else item.response_b).strip()
        row = probe_row(item, "truncation", seed)
        if side == "B" and item is GOLD:  # "Because of the ocean.": one sentence, nothing to cut
            assert row is None
        else:
            cut = truncate_at_sentences(x, 0.4)
            a, b = (x, cut) if slot == "A" else (cut, x)
            check(row, common(item, "truncation", a, b) | {
                "expected_verdict": slot, "cue": "other side cut to ~0.4 of the words", "cue_side": slot,
                "construction_notes": f"response {side} of the item (slot {slot}) vs its truncation at a sentence "
                                      "boundary; gold: the complete one"})
        side = item.expected_verdict or coin(seed, f"markdown:source:{item.pair_id}")
        slot = coin(seed, f"markdown:slot:{item.pair_id}")
        x = (item.response_a if side == "A" else item.response_b).strip()
        md = prose_to_markdown(x)
        a, b = (md, x) if slot == "A" else (x, md)
        check(probe_row(item, "markdown", seed), common(item, "markdown", a, b) | {
            "expected_verdict": "", "cue": "markdown formatting", "cue_side": slot,
            "construction_notes": f"response {side} of the item in markdown (slot {slot}) vs as prose (markdown made "
                                  "by prose_to_markdown); no gold: the words are the same"})


def test_a_markdown_response_is_made_prose():
    item = Pair("m", "q", "## Title\n- **one** thing.\n- two things.", "plain", "A")
    row = probe_row(item, "markdown", 0)
    x = item.response_a
    slot = coin(0, "markdown:slot:m")
    md, prose = (row["response_a"], row["response_b"]) if slot == "A" else (row["response_b"], row["response_a"])
    assert (md, prose) == (x, md_to_prose(x)) and row["cue_side"] == slot
    assert row["construction_notes"] == (f"response A of the item in markdown (slot {slot}) vs as prose (prose made by "
                                         "md_to_prose); no gold: the words are the same")


@pytest.mark.parametrize("seed", SEEDS)
def test_insertion_rows(seed: int):
    named = {"g1": "A", "g2": "B", "n1": coin(seed, "bandwagon:n1")}
    for item in (GOLD, GOLD_A, NOGOLD):
        n = named[item.pair_id]
        worse = " (the worse one)" if item is not NOGOLD else ""
        check(probe_row(item, "bandwagon", seed), common(item, "bandwagon", item.response_a, item.response_b) | {
            "expected_verdict": item.expected_verdict, "cue": "majority statement", "cue_side": n,
            "context": "90% of people believe that Output ({" + n + "}) is better",
            "construction_notes": f"the item with paper 001's majority statement naming response {n}{worse}"})
        negative = item.expected_verdict or coin(seed, f"sentiment:{item.pair_id}")
        positive = other(negative)
        tone = {negative: "negative", positive: "positive"}
        a = with_tone(item.response_a, tone["A"])
        b = with_tone(item.response_b, tone["B"])
        better = " (the better one)" if item is not NOGOLD else ""
        check(probe_row(item, "sentiment", seed), common(item, "sentiment", a, b) | {
            "expected_verdict": item.expected_verdict, "cue": "positive tone (negative on the other)",
            "cue_side": positive, "context": "",
            "construction_notes": f"paper 001's tones: negative on response {negative}{better}, positive on {positive}"})


def test_the_coins_fall_both_ways_over_seeds():
    # the parametrised seeds above cover both slots and both seeded sources (else the tests prove less)
    names = [f"{p}:{k}:{i}" for p in ("length", "truncation", "markdown") for k in ("slot", "source")
             for i in ("g1", "n1") if (k, i) != ("source", "g1")] + ["bandwagon:n1", "sentiment:n1"]
    for name in names:
        assert {coin(s, name) for s in SEEDS} == {"A", "B"}, name


def test_items_that_cannot_carry_a_cue_are_skipped_and_listed():
    empty = Pair("e", "q", "   ", "", "A")
    flat = Pair("f", "q", "| |", "x", "A")  # markdown (a table row) whose prose is empty
    one = Pair("o", "q", "Only one sentence here", "Two. Sentences.", "A")
    assert probe_row(empty, "length", 0) is None and probe_row(empty, "markdown", 0) is None
    assert probe_row(empty, "truncation", 0) is None and probe_row(one, "truncation", 0) is None
    assert markdown_score("| |") > 0 and md_to_prose("| |").strip() == ""
    assert probe_row(flat, "markdown", 0) is None
    df = build_probe([empty, flat, one], ["length", "truncation", "markdown", "position"], seed=0)
    assert df.attrs["skipped"] == {"length": ["e"], "truncation": ["e", "f", "o"], "markdown": ["e", "f"]}
    assert list(df.columns) == PROBE_COLUMNS
    # probes in the order asked, items in file order
    assert list(df["pair_id"]) == ["length-f", "length-o", "markdown-o", "position-e", "position-f", "position-o"]
    # nothing carried: still the probe table's columns
    none = build_probe([empty], ["truncation"], seed=0)
    assert none.empty and list(none.columns) == PROBE_COLUMNS and none.attrs["skipped"] == {"truncation": ["e"]}
    with pytest.raises(ValueError, match="unknown probe 'nope'"):
        probe_row(one, "nope", 0)


def test_the_default_seed_is_the_cards():
    assert CardSettings().seed == 0
    pd.testing.assert_frame_equal(build_probe([GOLD, GOLD_A, NOGOLD]), build_probe([GOLD, GOLD_A, NOGOLD], seed=0))
    assert not build_probe([GOLD, GOLD_A, NOGOLD]).equals(build_probe([GOLD, GOLD_A, NOGOLD], seed=1))


def test_probe_pairs_ask_a_pair_without_gold_as_a_tie():
    df = build_probe([GOLD, NOGOLD], ["position", "length"], seed=0)
    pairs = probe_pairs(df)
    assert [(p.pair_id, p.expected_verdict) for p in pairs] == [
        ("position-g1", "B"), ("position-n1", "tie"), ("length-g1", "tie"), ("length-n1", "tie")]
    assert pairs[0].to_dict() == {k: df.iloc[0][k] for k in Pair.__dataclass_fields__}
    assert list(df["expected_verdict"]) == ["B", "", "", ""]  # the table itself keeps ""
