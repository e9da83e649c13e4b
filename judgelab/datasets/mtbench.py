"""MT-Bench human judgments as pairs, and seeded samples of public pair sets (paper 003, Sec. 3.4).

MT-Bench.  Each human vote (``human_judgments_turn1.jsonl``: question_id, judge, model_a,
model_b, winner) becomes one pair: the turn-1 question, the two models' turn-1 answers (in
the order the annotator saw them) and gold ``A`` / ``B`` / ``tie``.  Votes involving a model
whose answers are not available cannot be joined and are left out (in the shared copy that is
every vote on ``vicuna-13b-v1.2``: 558 of 1,689, leaving 1,131), and so are votes on an
empty recorded answer (llama-13b's turn-1 answer to question 127 is empty: 8 votes), leaving
1,123.  The paper samples 400 of
MT-Bench's 3,355 comparisons with ``numpy.random.default_rng(seed=42).choice`` without
stratification; we draw from the *joinable* votes with the same call, so with a different
population the same seed picks different votes.  When fewer joinable votes exist than asked
for, all of them are used and :func:`sample_indices` says so in the log (``n_available`` is
kept in the pairs table).

Columns added to the pairs table: ``question_id``, ``model_a``, ``model_b``, ``annotator``,
``source_line`` (line in the votes file), ``reference`` (the GPT-4 reference answer for the
math / reasoning / coding questions, used by reference-guided strategies; else empty),
``n_available``.

LLMBar.  :func:`llmbar_sample` concatenates the named LLMBar subsets in a fixed order and
draws ``n`` of them with ``default_rng(seed).choice`` (paper 003 uses 200 of LLMBar's 419;
its selection is not published, ours is this seeded draw).

Download for users without the shared copy: the GitHub files are pinned in
:data:`judgelab.datasets.sources.SOURCES`; :func:`fetch_human_judgments_from_hf` builds the
same compact file from the Hugging Face dataset ``lmsys/mt_bench_human_judgments``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from judgelab.datasets.pairs import Pair, load_llmbar, pair_from_row, pairs_frame
from judgelab.io import InputError, iter_jsonl, table_rows, write_jsonl

log = logging.getLogger(__name__)

WINNER_TO_GOLD = {"model_a": "A", "model_b": "B", "tie": "tie"}
MTBENCH_EXTRA = ["question_id", "model_a", "model_b", "annotator", "source_line", "reference", "n_available"]
LLMBAR_SUBSETS = ("Natural", "Adversarial/Neighbor", "Adversarial/GPTInst", "Adversarial/GPTOut", "Adversarial/Manual")


def sample_indices(n_available: int, n: int | None, seed: int, *, what: str) -> list[int]:
    """Indices drawn with ``default_rng(seed).choice(n_available, n, replace=False)`` (paper 003).

    ``n=None`` or ``n >= n_available`` keeps everything, in file order.
    """
    if n is None or n >= n_available:
        if n is not None and n > n_available:
            log.warning("%s: %d instances asked for, only %d available: using all of them", what, n, n_available)
        return list(range(n_available))
    return [int(i) for i in np.random.default_rng(seed=seed).choice(n_available, size=n, replace=False)]


def _first_turn_answers(path: Path) -> dict[int, str]:
    out = {}
    for n, row in iter_jsonl(path):
        try:
            out[int(row["question_id"])] = str(row["choices"][0]["turns"][0])
        except (KeyError, IndexError, TypeError, ValueError):
            raise InputError(f"{path}:{n}: expected question_id and choices[0].turns[0]") from None
    return out


def load_mtbench_human(judgments: str | Path, questions: str | Path, answers: Mapping[str, str | Path],
                       references: str | Path | None = None) -> pd.DataFrame:
    """Every joinable turn-1 human vote as a pair (columns: pairs table + :data:`MTBENCH_EXTRA`)."""
    qpath = Path(questions)
    qs: dict[int, dict] = {}
    for n, row in iter_jsonl(qpath):
        try:
            qs[int(row["question_id"])] = {"text": str(row["turns"][0]), "category": str(row["category"])}
        except (KeyError, IndexError, TypeError, ValueError):
            raise InputError(f"{qpath}:{n}: expected question_id, category and turns[0]") from None
    ans = {model: _first_turn_answers(Path(p)) for model, p in answers.items()}
    refs = _first_turn_answers(Path(references)) if references else {}
    rows = []
    n_empty = 0
    jpath = Path(judgments)
    for n, v in iter_jsonl(jpath):
        where = f"{jpath}:{n}"
        for k in ("question_id", "model_a", "model_b", "winner"):
            if k not in v:
                raise InputError(f"{where}: missing key {k!r}")
        if v["winner"] not in WINNER_TO_GOLD:
            raise InputError(f"{where}: key 'winner' = {v['winner']!r} is not one of {sorted(WINNER_TO_GOLD)}")
        qid = int(v["question_id"])
        if qid not in qs:
            raise InputError(f"{where}: question_id {qid} is not in {qpath}")
        a, b = ans.get(v["model_a"], {}).get(qid), ans.get(v["model_b"], {}).get(qid)
        if a is None or b is None:
            continue  # no answer text for one of the models: not joinable
        if not a.strip() or not b.strip():
            n_empty += 1
            continue  # an empty recorded answer (llama-13b on question 127) cannot be shown as a response
        pair = pair_from_row({
            "pair_id": f"mtb-{n:04d}", "prompt": qs[qid]["text"], "response_a": a, "response_b": b,
            "expected_verdict": WINNER_TO_GOLD[v["winner"]], "bias_type": "none", "category": qs[qid]["category"],
            "source": "MT-Bench human judgments (turn 1)",
            "construction_notes": f"vote by {v.get('judge', '?')}: {v['model_a']} (A) vs {v['model_b']} (B)",
        }, where=where)
        rows.append({**pair.to_dict(), "question_id": qid, "model_a": v["model_a"], "model_b": v["model_b"],
                     "annotator": str(v.get("judge", "")), "source_line": n, "reference": refs.get(qid, "")})
    if not rows:
        raise InputError(f"{jpath}: no vote could be joined to the model answers given ({sorted(answers)})")
    if n_empty:
        log.warning("%s: %d votes on an empty recorded answer left out", jpath, n_empty)
    df = pd.DataFrame(rows)
    df["n_available"] = len(df)
    return df


def sample_frame(df: pd.DataFrame, n: int | None, seed: int, *, what: str) -> pd.DataFrame:
    return df.iloc[sample_indices(len(df), n, seed, what=what)].reset_index(drop=True)


def llmbar_sample(paths: Mapping[str, str | Path], n: int | None, seed: int) -> pd.DataFrame:
    """``n`` LLMBar pairs drawn with ``default_rng(seed).choice`` from the subsets (in the given order)."""
    pairs: list[Pair] = []
    for subset, path in paths.items():
        pairs.extend(load_llmbar(path, subset=subset.replace("/", "-")))
    df = pairs_frame(pairs)
    df["n_available"] = len(df)
    return sample_frame(df, n, seed, what="LLMBar")


# ---------------------------------------------------------------------------------
# download from Hugging Face (for users without the shared copy)

HF_REPO = "lmsys/mt_bench_human_judgments"


def fetch_human_judgments_from_hf(dest: str | Path, *, split: str = "human", turn: int = 1,
                                  repo_id: str = HF_REPO, revision: str | None = None) -> Path:
    """Build the compact votes file (question_id, judge, model_a, model_b, winner) from the
    Hugging Face dataset's parquet files of ``split``, keeping ``turn``; needs huggingface_hub."""
    try:
        from huggingface_hub import HfApi, hf_hub_download
    except ImportError as exc:  # pragma: no cover - depends on the environment
        from judgelab.datasets.sources import DataMissing

        raise DataMissing("huggingface_hub is needed to download from the Hub (pip install huggingface_hub)") from exc
    files = [f for f in HfApi().list_repo_files(repo_id, repo_type="dataset", revision=revision)
             if f.endswith(".parquet") and f.split("/")[-1].startswith(split)]
    if not files:
        raise InputError(f"{repo_id}: no parquet file for split {split!r}")
    frames = [pd.read_parquet(hf_hub_download(repo_id, f, repo_type="dataset", revision=revision)) for f in sorted(files)]
    return compact_votes(pd.concat(frames, ignore_index=True), dest, turn=turn, where=f"{repo_id}:{split}")


def compact_votes(df: pd.DataFrame, dest: str | Path, *, turn: int, where: str) -> Path:
    """Keep one turn and the five vote fields, write JSONL (the shared copy's layout)."""
    need = ["question_id", "model_a", "model_b", "winner", "judge", "turn"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise InputError(f"{where}: missing column(s) {missing}")
    keep = df[df["turn"] == turn]
    rows = [{"question_id": int(r["question_id"]), "judge": str(r["judge"]), "model_a": str(r["model_a"]),
             "model_b": str(r["model_b"]), "winner": str(r["winner"])} for r in table_rows(keep)]
    write_jsonl(dest, rows)
    return Path(dest)
