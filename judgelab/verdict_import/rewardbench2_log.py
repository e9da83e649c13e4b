"""Read RewardBench 2 per-prompt score files as one record per (chosen, rejected) pair.

RewardBench 2's ``scripts/run_v2.py`` (allenai/reward-bench) scores every completion of a prompt
with the reward model, rolls the rows back to one per prompt (``rewardbench.utils.
reroll_and_score_dataset``) and saves ``Dataset.to_dict()`` plus ``model``, ``model_type`` and
``chat_template`` with ``json.dumps(indent=4, sort_keys=True)`` as
``results/eval-set-scores/<model>.json`` (``save_to_hub``).  The file is one JSON object of
**columns**, not a list of records: ``id``, ``subset``, ``num_correct``, ``results``, ``scores`` (per
prompt, one reward per completion, the ``num_correct`` chosen completions first, then the rejected)
and ``text`` (the chat-templated conversation of each completion, as the reward model read it).

Each prompt becomes one record per chosen x rejected completion (a best-of-4 prompt: 1 x 3
pairs; a Ties prompt: every correct answer against every incorrect one), with keys ``model``,
``id``, ``subset``, ``chosen_index``, ``rejected_index``, ``scores`` (``[chosen, rejected]``),
``text_chosen``, ``text_rejected`` and ``result`` (the prompt's ``results`` entry: the benchmark's
own score of the prompt).  Why pairs: the card audits pairwise verdicts, and a reward model's
verdict on a pair is which of the two it scores higher (the benchmark's best-of-4 accuracy is the
prompt's chosen beating all three, so the pairs carry it).

Bad input raises :class:`~judgelab.io.InputError` naming the file, the column or the prompt.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judgelab.io import InputError
from judgelab.verdict_import.readers import load_json_object

#: the columns every scores file has (``text`` is read when present)
COLUMNS = ("id", "subset", "num_correct", "scores")


def _load(p: Path) -> dict[str, Any]:
    return load_json_object(p, "rewardbench2", "of columns id, subset, num_correct, scores, ...")


def iter_rewardbench2_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row, record)``: one record per chosen x rejected pair, rows counted from 0."""
    p = Path(path)
    doc = _load(p)
    for k in COLUMNS:
        if k not in doc:
            raise InputError(f"{p}: format 'rewardbench2' expects key {k!r}, missing (keys {sorted(doc)[:12]}); "
                             f"is this a RewardBench 2 eval-set-scores file?")
        if not isinstance(doc[k], list):
            raise InputError(f"{p}: key {k!r} should be a list (one entry per prompt), got {type(doc[k]).__name__}")
    n = len(doc["id"])
    cols = {k: doc[k] for k in (*COLUMNS, "text", "results") if isinstance(doc.get(k), list)}
    for k, v in cols.items():
        if len(v) != n:
            raise InputError(f"{p}: key {k!r} has {len(v)} entries, key 'id' has {n}; the columns must align")
    model = doc.get("model")
    row = 0
    for i in range(n):
        where = f"{p} prompt {i} (id {doc['id'][i]!r})"
        scores = cols["scores"][i]
        if not isinstance(scores, list) or not scores:
            raise InputError(f"{where}: key 'scores' should hold a list of rewards, got {scores!r:.60}")
        try:
            rewards = [float(s) for s in scores]
        except (TypeError, ValueError):
            raise InputError(f"{where}: key 'scores' holds a value that is no number: {scores!r:.80}") from None
        k = cols["num_correct"][i]
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not float(k).is_integer() \
                or not 1 <= k < len(rewards):
            raise InputError(f"{where}: key 'num_correct' is {k!r}; it must count the chosen completions "
                             f"(at least 1, fewer than the {len(rewards)} scores)")
        n_chosen = int(k)
        texts = cols["text"][i] if "text" in cols else None
        if texts is not None and (not isinstance(texts, list) or len(texts) != len(rewards)):
            raise InputError(f"{where}: key 'text' should hold one text per score ({len(rewards)})")
        for c in range(n_chosen):
            for r in range(n_chosen, len(rewards)):
                pair = [rewards[c], rewards[r]]
                yield row, {
                    "model": model, "id": doc["id"][i], "subset": cols["subset"][i],
                    "chosen_index": c, "rejected_index": r,
                    # a NaN reward (a failed forward pass) is no score: the verdict is unparsed
                    "scores": pair if all(math.isfinite(x) for x in pair) else None,
                    "text_chosen": texts[c] if texts else None, "text_rejected": texts[r] if texts else None,
                    "result": cols["results"][i] if "results" in cols else None,
                }
                row += 1
