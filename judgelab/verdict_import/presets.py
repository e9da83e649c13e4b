"""Named mappings for published judge-log formats (one registry, :data:`PRESETS`).

Each preset is a mapping dict (see :mod:`judgelab.verdict_import.mapping`) written from
the format's published files (the fixtures under ``tests/fixtures/verdict_logs/`` are real
records of each, their source named in the README there).  ``require`` lists the keys every
record of the format has: a file of another format stops at its first record with the file,
row and key named.

``alpaca_eval``
    AlpacaEval ``annotations.json``: ``instruction``, ``output_1``/``generator_1``,
    ``output_2``/``generator_2``, ``preference`` (1 = output_1, 2 = output_2, 1.5 = tie,
    0 = identical outputs, null = failure; weighted annotators give a float in [1, 2],
    kept as ``preference`` = P(output_2)), ``annotator``, ``raw_completion``.  One game
    per pair: AlpacaEval un-swaps its randomised order before writing, so position
    statistics are not identified from these files (the card says so).
``fastchat_pairwise``
    FastChat MT-Bench pairwise judgments JSONL: ``question_id``, ``model_1``, ``model_2``,
    ``g1_winner``/``g2_winner`` (``model_1``/``model_2``/``tie``/``error``, already in the
    stored order; g2 is the swapped game), ``g1_judgment``/``g2_judgment``, ``judge``
    (``[judge model, prompt name]``), ``turn``.  The file has no texts: side tables
    ``answers`` (FastChat ``model_answer/*.jsonl``) and ``questions`` (``question.jsonl``)
    fill them; turn 2 shows both turns.
``arena_hard``
    Arena-Hard judgment JSONL: ``question_id``, ``model``, ``judge``, ``games`` (game 1:
    baseline shown as A, the model as B; game 2 swapped), each with ``judgment`` and
    ``score`` in ``A>>B`` .. ``B>>A`` (letters of that game, null = unparsed).  The
    stored order is (baseline, model); the baseline is ``gpt-4-0314`` (v0.1).  Side
    tables ``answers`` / ``questions`` as for FastChat.
``judgebench``
    JudgeBench ``outputs/*.jsonl`` (ScalerLab/JudgeBench): ``pair_id``, ``original_id``,
    ``source``, ``question``, ``response_model``, ``response_A``, ``response_B``, ``label``
    (gold ``A>B``/``B>A``), ``judge_name`` (the prompt: ``arena_hard``, ``reward_model``,
    ...) and ``judgments``: two games, the second swapped, each ``{"judgment": {"judge_model",
    "prompt", "response"[, "scores"]}, "decision"}`` with ``decision`` in that game's letters
    (``A>B``/``B>A``/``A=B``, null when unparsable).  The judge model lives inside each game
    and again in the file name (``...,judge_name=arena_hard,judge_model=o1-mini-2024-09-12.jsonl``,
    ``/`` written as ``_``); the judge is named ``judge_name/judge_model``
    (``arena_hard/o1-mini-2024-09-12``, ``reward_model/internlm/internlm2-20b-reward``), so
    a folder of output files is one audit with one judge per file.  Reward-model games carry
    ``scores`` (A, B as shown) and an empty ``response``: the verdict is the higher score and
    ``preference`` = sigmoid(score B - score A).  The pair-level accuracy of JudgeBench's
    ``utils/metrics.py`` is the card's (it needs ``pair_id``/``order``/``verdict``/
    ``expected_verdict``).
``llmbar``
    LLMBar ``evaluators/<judge>/<strategy>/result.json``: ``input``, ``output_1``,
    ``output_2``, ``label`` (gold 1/2), ``results[0]["swap = False"|"swap = True"]`` with
    ``completion[0]`` (raw text) and ``winner`` ("1"/"2", stored order; null when the
    authors' parser found none).  The verdict is the recorded winner, so the card
    reproduces the authors' ``statistics.json``; the replay backend serves the raw text.
``inspect_ai``
    inspect_ai eval logs, ``.eval`` (a zip of ``header.json`` and ``samples/*.json``) or ``.json``
    (one object with ``eval``, ``results``, ``samples``), read by :mod:`~.inspect_log` (with
    inspect_ai's ``read_eval_log`` when installed) as one record per sample and scorer.  A
    model-graded score (``model_graded_qa``/``model_graded_fact``: ``value`` C/P/I, ``answer``,
    ``explanation``) is a pointwise grade of the submission against the target: one game of the
    pair (target, submission), the order the grading template shows them (``[Expert]`` then
    ``[Submission]``), C = B (the submission holds), I = A, P = tie; any other value (a number, N)
    is unparsed with its value kept in ``label``.  The judge is ``scorer/grader``, the grader being
    the scorer's ``model`` parameter in ``results.scores`` or else the evaluated model (the
    scorers' default); every scorer in the log is read (a deterministic ``match`` too, named so
    in the judge).  The pair is ``task/sample id/epoch/run id`` (two runs grade two answers),
    the item ``task/sample id``.  One game per pair: position is not identified.
``rewardbench2``
    RewardBench 2 ``results/eval-set-scores/<model>.json`` as ``scripts/run_v2.py`` writes it
    (one object of columns: ``id``, ``subset``, ``num_correct``, ``scores``, ``text``,
    ``results``, ``model``), read by :mod:`~.rewardbench2_log` as one record per chosen x rejected
    completion of a prompt.  Stored A is the chosen completion (the gold), B the rejected; the
    verdict is the higher reward (equal = tie), ``preference`` = sigmoid(reward B - reward A); a
    NaN reward is unparsed.  The reward model is the judge.  One game per pair: a reward model
    scores each completion alone, so position does not apply.
``promptfoo``
    promptfoo ``output.json`` (``promptfoo eval -o``; ``results.results[]``, one per test case,
    prompt and provider), read by :mod:`~.promptfoo_log` as one record per model-graded
    assertion result in ``gradingResult.componentResults`` (``llm-rubric``,
    ``model-graded-closedqa``, ``factuality``, ``select-best``, ``g-eval``; checks such as
    ``contains``, ``cost``, ``latency`` are no judgment and are not read).  A grade is pointwise:
    one game of the pair (nothing, the output), ``pass`` true = B, false = A; ``select-best`` is
    read the same way (this output was or was not picked), not as pairs.  A call that failed before
    grading (no component results) gives one ``error`` row per model-graded assertion its test
    asked for.  The judge is ``assertion type/grader`` (``testCase.options.provider``, else
    ``default``), the graded model the provider, the category the rubric.
``judgelab``
    judgelab's verdict tables (``pairwise.VERDICT_COLUMNS``) and recorded verdict tables
    (``importer.RECORDED_COLUMNS``), parquet or CSV; a verdict table gets its texts from
    the side table ``pairs`` (a judgelab pairs table).
"""

from __future__ import annotations

import copy
from typing import Any

from judgelab.config import ConfigError, refuse_renamed_keys
from judgelab.registry import Registry
from judgelab.verdict_import.mapping import VerdictMapping, build_mapping

PRESETS: Registry[dict[str, Any]] = Registry("verdict-log format")

_AB = {"A": "A", "B": "B", "tie": "tie"}
_ARENA = {"A>>B": "A", "A>B": "A", "A=B": "tie", "B>A": "B", "B>>A": "B"}
_FASTCHAT = {"model_1": "A", "model_2": "B", "tie": "tie", "error": "unparsed"}
_FASTCHAT_TABLES = {
    "answers": {"key": ["question_id", "model_id"], "file_type": "jsonl"},
    "questions": {"key": ["question_id"], "file_type": "jsonl"},
}

PRESETS.add("alpaca_eval", {
    "file_type": "json",
    "judge": {"first_of": ["annotator", {"const": "alpaca_eval_annotator"}]},
    "pair_id": {"concat": ["instruction", "generator_1", "generator_2"]},
    "item_id": "instruction",
    "instruction": "instruction", "response_a": "output_1", "response_b": "output_2",
    "model_a": "generator_1", "model_b": "generator_2", "category": "dataset",
    "verdict": {"text": "raw_completion", "weight": "preference", "weight_range": [1, 2],
                "values": {"0": "tie"}, "frame": "stored"},
    "require": ["instruction", "output_1", "output_2", "preference"],
    "optional": ["category", "model_a", "model_b"],
})

PRESETS.add("fastchat_pairwise", {
    "file_type": "jsonl",
    "judge": {"concat": ["judge.0", "judge.1"], "sep": "/"}, "model": "judge.0",
    "pair_id": {"concat": ["question_id", "model_1", "model_2", "turn"]},
    "item_id": "question_id",
    "instruction": {"table": "questions", "key": ["question_id"], "value": "turns", "upto": "turn"},
    "response_a": {"table": "answers", "key": ["question_id", "model_1"], "value": "choices.0.turns", "upto": "turn"},
    "response_b": {"table": "answers", "key": ["question_id", "model_2"], "value": "choices.0.turns", "upto": "turn"},
    "model_a": "model_1", "model_b": "model_2",
    "games": [
        {"order": "AB", "verdict": {"text": "g1_judgment", "label": "g1_winner", "values": _FASTCHAT, "frame": "stored"}},
        {"order": "BA", "verdict": {"text": "g2_judgment", "label": "g2_winner", "values": _FASTCHAT, "frame": "stored"}},
    ],
    "tables": _FASTCHAT_TABLES,
    "require": ["question_id", "model_1", "model_2", "g1_winner", "g2_winner", "judge"],
    "optional": ["pair_id"],
})

PRESETS.add("arena_hard", {
    "file_type": "jsonl",
    "judge": "judge",
    "pair_id": {"concat": ["question_id", "model"]},
    "item_id": "question_id",
    "instruction": {"table": "questions", "key": ["question_id"], "value": "turns"},
    "response_a": {"table": "answers", "key": ["question_id", {"const": "gpt-4-0314"}], "value": "choices.0.turns"},
    "response_b": {"table": "answers", "key": ["question_id", "model"], "value": "choices.0.turns"},
    "model_a": {"const": "gpt-4-0314"}, "model_b": "model",
    "games": [
        {"order": "AB", "verdict": {"text": "games.0.judgment", "label": "games.0.score", "values": _ARENA}},
        {"order": "BA", "verdict": {"text": "games.1.judgment", "label": "games.1.score", "values": _ARENA}},
    ],
    "tables": _FASTCHAT_TABLES,
    "require": ["question_id", "model", "judge", "games"],
})

# ``arena_hard_v2``: the layout of the current lmarena/arena-hard-auto (v2.0 code, ``gen_judgment.py``
# / ``show_result.py``): judgment records ``uid, category, judge, model, baseline, games`` with each
# game ``{score, judgment: {answer}, prompt}`` (game 1: the baseline shown as A; game 2 swapped; a
# failed call leaves the game null).  The baseline is per record (one per category in
# ``utils/judge_utils.py``), so stored A is ``baseline`` and its text comes from the answers table.
# Answers are ``{uid, ans_id, model, messages, tstamp, metadata}`` with the text at
# ``messages[-1].content.answer``; files written by older answer code hold the text as
# ``messages[-1].content`` itself, hence the fallback.  Questions are ``{uid, category, prompt}``.
PRESETS.add("arena_hard_v2", {
    "file_type": "jsonl",
    "judge": "judge",
    "pair_id": {"concat": ["uid", "baseline", "model"]},
    "item_id": "uid",
    "category": "category",
    "instruction": {"table": "questions", "key": ["uid"], "value": "prompt"},
    "response_a": {"first_of": [
        {"table": "answers", "key": ["uid", "baseline"], "value": "messages.-1.content.answer"},
        {"table": "answers", "key": ["uid", "baseline"], "value": "messages.-1.content"}]},
    "response_b": {"first_of": [
        {"table": "answers", "key": ["uid", "model"], "value": "messages.-1.content.answer"},
        {"table": "answers", "key": ["uid", "model"], "value": "messages.-1.content"}]},
    "model_a": "baseline", "model_b": "model",
    "games": [
        {"order": "AB", "verdict": {"text": "games.0.judgment.answer", "label": "games.0.score", "values": _ARENA}},
        {"order": "BA", "verdict": {"text": "games.1.judgment.answer", "label": "games.1.score", "values": _ARENA}},
    ],
    "tables": {"answers": {"key": ["uid", "model"], "file_type": "jsonl"},
               "questions": {"key": ["uid"], "file_type": "jsonl"}},
    "require": ["uid", "category", "judge", "model", "baseline", "games"],
})

_JB_MODEL = {"first_of": [["judgments", 0, "judgment", "judge_model"], ["judgments", 1, "judgment", "judge_model"],
                          {"file_key": "judge_model"}]}


def _judgebench_game(i: int, order: str) -> dict[str, Any]:
    return {"order": order, "verdict": {
        "text": ["judgments", i, "judgment", "response"], "label": ["judgments", i, "decision"],
        "values": {**_ARENA, "B=A": "tie"}, "scores": ["judgments", i, "judgment", "scores"]}}


PRESETS.add("judgebench", {
    "file_type": "jsonl",
    "require": ["pair_id", "question", "response_A", "response_B", "label", "judgments"],
    "judge": {"concat": [{"first_of": ["judge_name", {"file_key": "judge_name"}]}, _JB_MODEL], "sep": "/"},
    "model": _JB_MODEL,
    "pair_id": "pair_id", "item_id": {"first_of": [{"concat": ["source", "original_id"], "sep": "/"}, "pair_id"]},
    "instruction": "question", "response_a": "response_A", "response_b": "response_B",
    "model_a": "response_model", "model_b": "response_model", "category": "source",
    "optional": ["category", "item_id"],
    "gold": {"label": "label", "values": {"A>B": "A", "B>A": "B", "A=B": "tie"}},
    "games": [_judgebench_game(0, "AB"), _judgebench_game(1, "BA")],
})


def _llmbar_game(flag: str, order: str) -> dict[str, Any]:
    return {"order": order, "verdict": {
        "text": ["results", 0, flag, "completion", 0], "label": ["results", 0, flag, "winner"],
        "values": {"1": "A", "2": "B"}, "frame": "stored"}}


PRESETS.add("llmbar", {
    "file_type": "json",
    "judge": {"concat": [{"path_part": -3}, {"path_part": -2}], "sep": "-"}, "model": {"path_part": -3},
    "pair_id": {"concat": [{"path_part": -5}, {"row": True, "width": 4}], "sep": "-"},
    "instruction": "input", "response_a": "output_1", "response_b": "output_2",
    "category": {"path_part": -5},
    "gold": {"label": "label", "values": {"1": "A", "2": "B"}},
    "games": [_llmbar_game("swap = False", "AB"), _llmbar_game("swap = True", "BA")],
    "require": ["input", "output_1", "output_2", "results"],
})

# ``inspect_ai``: records flattened by :mod:`judgelab.verdict_import.inspect_log` (one per sample and
# scorer).  A model-graded score is a pointwise grade of the submission against the target, recorded
# as one game of the pair (target, submission) in that order, the order of the grading template's
# ``[Expert]`` / ``[Submission]``: C (correct) = the submission holds (B), I (incorrect) = it does
# not (A), P (partial) = tie.  Any other value (a numeric score, N for no answer) is no verdict:
# kept as unparsed with its label.  A scorer stating "A"/"B" is not in a published log, so not mapped.
_INSPECT_GRADES = {"C": "B", "I": "A", "P": "tie"}

PRESETS.add("inspect_ai", {
    "file_type": "inspect_ai",
    "judge": {"concat": ["scorer", "grader"], "sep": "/"}, "model": "grader",
    "pair_id": {"concat": ["task", "sample_id", "epoch", {"first_of": ["run_id", {"const": "-"}]}], "sep": "/"},
    "item_id": {"concat": ["task", "sample_id"], "sep": "/"},
    "instruction": "input", "response_a": "target", "response_b": "answer",
    "model_b": "eval_model", "category": "task",
    "verdict": {"label": "value", "text": "explanation", "values": _INSPECT_GRADES, "frame": "stored"},
    "require": ["task", "scorer", "sample_id", "value"],
    "optional": ["response_a"],
})

# ``rewardbench2``: records expanded by :mod:`judgelab.verdict_import.rewardbench2_log` (one per chosen x
# rejected completion of a prompt).  Stored A is the chosen completion, B the rejected one; the reward
# model scores each completion alone, so the one game is AB and the verdict is the higher reward
# (``scores``, A then B: preference = sigmoid(reward B - reward A)); the gold is A, the chosen one.
PRESETS.add("rewardbench2", {
    "file_type": "rewardbench2",
    "judge": "model", "model": "model",
    "pair_id": {"concat": ["id", "chosen_index", "rejected_index"], "sep": "/"},
    "item_id": "id", "category": "subset",
    "response_a": "text_chosen", "response_b": "text_rejected",
    "verdict": {"scores": "scores"},
    "gold": {"label": {"const": "chosen"}, "values": {"chosen": "A"}},
    "require": ["id", "subset", "chosen_index", "rejected_index", "scores"],
    "optional": ["response_a", "response_b", "category"],
})

# ``promptfoo``: records flattened by :mod:`judgelab.verdict_import.promptfoo_log` (one per model-graded
# assertion result).  A grade is pointwise (the rubric holds for the output or not; select-best: this
# output was picked), stored as one game of the pair (nothing, output) like inspect_ai's grades:
# pass = B, fail = A, a call that failed before grading (pass null) = error.
PRESETS.add("promptfoo", {
    "file_type": "promptfoo",
    "judge": {"concat": ["assertion_type", "grader"], "sep": "/"}, "model": "grader",
    "pair_id": {"concat": ["eval_id", "test_idx", "prompt_idx", "provider", "component_idx"], "sep": "/"},
    "item_id": {"concat": ["eval_id", "test_idx"], "sep": "/"},
    "instruction": "prompt", "response_b": "output", "model_b": "provider", "category": "rubric",
    "verdict": {"label": "pass", "text": "reason", "values": {"true": "B", "false": "A", "null": "error"},
                "frame": "stored"},
    "require": ["test_idx", "prompt_idx", "provider", "assertion_type", "pass"],
    "optional": ["category", "instruction"],
})

PRESETS.add("judgelab", {
    "judge": "judge", "model": "model", "family": "family", "simulated": "simulated",
    "source_file": "source_file", "source_row": "source_row", "label": "label", "preference": "preference",
    "pair_id": "pair_id", "item_id": {"first_of": ["item_id", "pair_id"]},
    "instruction": {"first_of": ["instruction", {"table": "pairs", "key": ["pair_id"], "value": "prompt"}]},
    "response_a": {"first_of": ["response_a", {"table": "pairs", "key": ["pair_id"], "value": "response_a"}]},
    "response_b": {"first_of": ["response_b", {"table": "pairs", "key": ["pair_id"], "value": "response_b"}]},
    "model_a": "model_a", "model_b": "model_b",
    "category": {"first_of": ["category", {"table": "pairs", "key": ["pair_id"], "value": "category"}]},
    "games": [{"order": {"path": "order", "values": {"AB": "AB", "BA": "BA"}},
               "verdict": {"label": "verdict", "values": _AB, "frame": "stored", "text": "raw_text",
                           "status": "status", "parse_method": "parse_method"}}],
    "gold": {"label": "expected_verdict", "values": _AB},
    "human": {"label": "human", "values": _AB}, "repeat": "repeat",
    "tables": {"pairs": {"key": ["pair_id"]}},
    "require": ["pair_id", "order", "verdict"],
    "optional": ["family", "model", "simulated", "source_file", "source_row", "label", "preference", "item_id",
                 "instruction", "response_a", "response_b", "model_a", "model_b", "category", "repeat"],
})


#: files a format's published folders hold beside its logs, by file name, with what they are: a folder
#: given to ``judgelab audit`` skips them (and says so) instead of stopping at their first record.  From
#: the published layouts: LLMBar's ``Dataset/LLMBar/Natural/`` holds ``dataset.json`` (the pairs and
#: gold labels) and ``evaluators/<judge>/<strategy>/{result,statistics}.json``; AlpacaEval's
#: ``results/<model>/`` holds ``model_outputs.json`` beside ``<annotator>/annotations.json``.
NON_LOG_FILES: dict[str, dict[str, str]] = {
    "llmbar": {"dataset.json": "LLMBar's pairs and gold labels, no judge verdicts",
               "statistics.json": "LLMBar's own summary of a judge's result.json, no verdicts"},
    "alpaca_eval": {"model_outputs.json": "AlpacaEval's model outputs, no judge verdicts"},
}


def preset_mapping(name: str, overrides: dict[str, Any] | None = None) -> VerdictMapping:
    """Compile a preset, optionally with keys replaced (e.g. another Arena-Hard baseline)."""
    raw = copy.deepcopy(PRESETS.get(name, where="--format / format"))
    raw.update(overrides or {})
    return build_mapping(raw, name=name, where=f"preset {name!r}")


def mapping_from_config(spec: str | dict[str, Any], *, where: str = "mapping") -> VerdictMapping:
    """A preset name, ``{preset: name, ...overrides}`` or a full custom mapping dict."""
    if isinstance(spec, str):
        return preset_mapping(spec)
    if not isinstance(spec, dict) or not spec:  # an empty YAML file reads as {} (or None)
        what = "empty" if not spec else f"a {type(spec).__name__}, not a mapping"
        raise ConfigError(f"{where}: the verdict mapping is {what}; give a preset name, {{preset: NAME, ...}} "
                          f"or the fields of a custom mapping (docs/audit.md)")
    spec = dict(spec)
    refuse_renamed_keys(spec, scope="verdict_mapping", source=where)  # an override names the file, not the preset
    if "preset" in spec:
        name = spec.pop("preset")
        return preset_mapping(name, spec)
    return build_mapping(spec, name="custom", where=where)
