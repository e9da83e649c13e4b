"""The MT-Bench human anchor: a judge on the pairs humans voted on, corrected with a few votes.

    python -m judgelab.bias_card.mtbench_humans --out out/mtbench_humans --max-pairs 80

The human votes (``mt_bench/human_judgments_turn1.jsonl``, turn 1) are joined to the models'
turn-1 answers (:func:`judgelab.datasets.mtbench.load_mtbench_human`; votes on
``vicuna-13b-v1.2``, whose answers are not shared, and on an empty answer cannot be joined).
Each distinct (question, model pair) becomes one pair, stored in sorted model order, and the
judge (default: the real CPU judge, SmolLM2-135M through the ``transformers`` backend, next-token
verdicts) answers it in both orders through the call cache, so a rerun asks nothing twice.

Per model, the estimand is the human win rate: the mean, over the votes that involve the model,
of 1 (the human picked it), 0.5 (tie) or 0.  Three estimates sit side by side:

* ``human_all``: every vote (the answer the corrected estimate is checked against);
* ``judge``: the judge's win rate on the same votes (its preference, averaged over the two
  orders; a pair without a verdict in either order counts 0.5), no human label used;
* ``ppi``: PPI++ (:func:`judgelab.bias_card.humans.ppi_mean`) from a seeded ``--label-share``
  of the votes (default 20 %) plus the judge on all of them, with its CI; ``classical``: the
  same labelled votes alone (the CI PPI has to beat).

Votes are the unit (several votes on one pair are correlated: the CIs treat them as
independent, as PPI's i.i.d. sampling does).  Outputs, written together: ``ppi_by_model.csv``
(the table above, one row per model), ``verdicts_all_labels.csv`` (the judge's recorded verdict
table with a ``human`` column, the pair's majority vote, for ``judgelab audit --format judgelab``),
``verdicts_some_labels.csv`` (the same with the label kept on a seeded ``--label-share`` of the
pairs only: the card's PPI rows) and
``summary.json`` (sizes, seed, timing).

The files appear as one set (:func:`judgelab.io.staged_folder`: a failed or killed run leaves the
previous set whole, modes follow the umask).  The call cache ``calls.sqlite`` is opened in the
final ``--out`` folder while the judge works, so the calls of a run that fails later are kept
there, and a consistent copy (SQLite's backup API) goes into the new set before it replaces the
old: a rerun asks nothing twice.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from judgelab.bias_card.humans import ppi_mean
from judgelab.io import table_tuples
from judgelab.stats.intervals import DEFAULT_ALPHA

VOTE_PREF = {"A": 0.0, "tie": 0.5, "B": 1.0}


def canonical_pairs(votes: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per (question, unordered model pair): texts in sorted model order, the votes' majority.

    ``votes`` is :func:`load_mtbench_human`'s table (one row per vote, A/B in the annotator's
    order).  Adds to each vote ``pair_id`` and ``human_pref``: P(the pair's stored B preferred)
    by that vote (1, 0.5, 0).
    """
    first = np.where(votes["model_a"] <= votes["model_b"], votes["model_a"], votes["model_b"])
    swapped = votes["model_a"].to_numpy() != first
    votes = votes.assign(
        m1=first, m2=np.where(swapped, votes["model_a"], votes["model_b"]),
        pair_id=[f"mtb-q{q}-{a}-vs-{b}" for q, a, b in zip(votes["question_id"], first,
                                                          np.where(swapped, votes["model_a"], votes["model_b"]),
                                                          strict=True)])
    pref = votes["expected_verdict"].map(VOTE_PREF).to_numpy(float)
    votes["human_pref"] = np.where(swapped, 1 - pref, pref)
    g = votes.groupby("pair_id", sort=True)
    pairs = g.agg(question_id=("question_id", "first"), prompt=("prompt", "first"), model_a=("m1", "first"),
                  model_b=("m2", "first"), category=("category", "first"), n_votes=("human_pref", "size"),
                  human_mean=("human_pref", "mean")).reset_index()
    ra = {}
    for r in table_tuples(votes):
        a, b = (r.response_b, r.response_a) if r.model_a != r.m1 else (r.response_a, r.response_b)
        ra[r.pair_id] = (a, b)
    pairs["response_a"] = [ra[p][0] for p in pairs["pair_id"]]
    pairs["response_b"] = [ra[p][1] for p in pairs["pair_id"]]
    pairs["human"] = np.where(pairs["human_mean"] > 0.5, "B", np.where(pairs["human_mean"] < 0.5, "A", "tie"))
    return pairs, votes


def judge_preference(verdicts: pd.DataFrame) -> pd.Series:
    """P(stored B preferred) per pair: the mean over the orders with a verdict, 0.5 when none."""
    p = verdicts["verdict"].map(VOTE_PREF)
    return p.groupby(verdicts["pair_id"]).mean().fillna(0.5)


def ppi_by_model(votes: pd.DataFrame, judge_pref: pd.Series, *, label_share: float, seed: int,
                 alpha: float = DEFAULT_ALPHA) -> pd.DataFrame:
    """Per model: human win rate from every vote, the judge's, PPI++ from ``label_share`` of the votes."""
    rng = np.random.default_rng(seed)
    labelled = rng.random(len(votes)) < label_share
    yhat_b = votes["pair_id"].map(judge_pref).to_numpy(float)
    rows = []
    for m in sorted(set(votes["m1"]) | set(votes["m2"])):
        on = (votes["m1"] == m).to_numpy() | (votes["m2"] == m).to_numpy()
        as_b = (votes["m2"] == m).to_numpy()[on]
        y = np.where(as_b, votes["human_pref"].to_numpy(float)[on], 1 - votes["human_pref"].to_numpy(float)[on])
        yh = np.where(as_b, yhat_b[on], 1 - yhat_b[on])
        lab = labelled[on]
        r = ppi_mean(y[lab], yh[lab], yh[~lab], alpha=alpha)
        n_l = int(lab.sum())
        se_c = float(np.std(y[lab], ddof=1) / np.sqrt(n_l)) if n_l > 1 else float("nan")
        z = float(__import__("scipy.stats").stats.norm.ppf(1 - alpha / 2))
        truth = float(y.mean())
        rows.append({"model": m, "n_votes": int(on.sum()), "n_labelled": n_l, "human_all": truth,
                     "judge": float(yh.mean()), "ppi": r.estimate, "ppi_ci_low": r.ci_low, "ppi_ci_high": r.ci_high,
                     "classical": float(y[lab].mean()) if n_l else float("nan"),
                     "classical_ci_low": float(y[lab].mean()) - z * se_c if n_l else float("nan"),
                     "classical_ci_high": float(y[lab].mean()) + z * se_c if n_l else float("nan"),
                     "ppi_covers_human_all": bool(r.ci_low <= truth <= r.ci_high)})
    return pd.DataFrame(rows)


#: the call cache this command keeps in ``--out`` while the judge works (SQLite's file and its
#: write-ahead log): judgelab's own, so a folder holding them is not a user's (``staged_folder``)
CACHE_FILES = ("calls.sqlite", "calls.sqlite-wal", "calls.sqlite-shm")


def carry_cache(source: Path, dest: Path) -> None:
    """Copy the (closed) call cache at ``source`` to ``dest`` with SQLite's online backup: a
    consistent copy whatever a WAL file still holds, the new file with the umask's mode."""
    import sqlite3

    src, target = sqlite3.connect(source), sqlite3.connect(dest)
    try:
        src.backup(target)
    finally:
        target.close()
        src.close()


def main(argv: list[str] | None = None) -> int:
    from judgelab.cache import CallCache
    from judgelab.config import JudgeSpec
    from judgelab.datasets.mtbench import load_mtbench_human
    from judgelab.datasets.pairs import Pair
    from judgelab.datasets.sources import data_root
    from judgelab.io import InputError, check_out, staged_folder, write_table, write_text
    from judgelab.judges import make_judge
    from judgelab.judges.local_server import SMOLLM2_GGUF, SMOLLM2_MODEL
    from judgelab.judges.pairwise import judge_pairs

    ap = argparse.ArgumentParser(prog="python -m judgelab.bias_card.mtbench_humans", description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-pairs", type=int, default=None, help="seeded sample of the voted pairs (default: all)")
    ap.add_argument("--label-share", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verdict-mode", choices=["logits", "generate"], default="logits")
    ap.add_argument("--template", default="ab_letter")
    args = ap.parse_args(argv)
    root = data_root()
    if root is None:
        raise SystemExit("set JUDGELAB_DATA to the shared data folder (MT-Bench votes and answers)")
    mt = root / "mt_bench"
    answers = {p.stem: p for p in sorted((mt / "model_answer").glob("*.jsonl"))}
    votes = load_mtbench_human(mt / "human_judgments_turn1.jsonl", mt / "question.jsonl", answers)
    pairs, votes = canonical_pairs(votes)
    n_all_pairs, n_all_votes = len(pairs), len(votes)
    if args.max_pairs is not None and args.max_pairs < len(pairs):
        keep = np.sort(np.random.default_rng(args.seed).choice(len(pairs), args.max_pairs, replace=False))
        pairs = pairs.iloc[keep].reset_index(drop=True)
        votes = votes[votes["pair_id"].isin(set(pairs["pair_id"]))].reset_index(drop=True)
    spec = JudgeSpec(name=f"smollm2-{args.verdict_mode}", backend="transformers", model=SMOLLM2_MODEL,
                     family="smollm", sampling={"temperature": 0.0, "seed": 0}, output_limits={"verdict": 8},
                     options={"gguf_file": SMOLLM2_GGUF, "device": "cpu", "num_threads": 1, "batch_size": 8,
                              "verdict_mode": args.verdict_mode})
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise SystemExit(f"{out}: exists and is a file; --out needs a folder (a new or an existing one)")
    try:  # before the cache is opened in it: a folder of the user's files is refused, untouched
        check_out(out, ours=CACHE_FILES)
    except InputError as exc:
        raise SystemExit(f"judgelab: error: {exc}") from None
    cache = CallCache(out / "calls.sqlite")  # in the live folder: outside the staging swap, kept by a failed run
    judge = make_judge(spec)
    objs = [Pair(pair_id=r.pair_id, prompt=r.prompt, response_a=r.response_a, response_b=r.response_b,
                 expected_verdict=r.human, category=r.category, source="MT-Bench human judgments (turn 1)")
            for r in table_tuples(pairs)]
    t0 = time.time()
    try:
        verdicts = judge_pairs(judge, objs, cache, template=args.template, max_error_rate=None)
    finally:
        cache.close()  # every answer is on disk (WAL checkpointed) before anything is written
    judge_s = time.time() - t0
    table = ppi_by_model(votes, judge_preference(verdicts), label_share=args.label_share, seed=args.seed)
    info = pairs.set_index("pair_id")
    # the recorded verdict table: the votes' majority as ``human`` (not as gold: expected_verdict blank)
    rec = verdicts.assign(
        item_id=verdicts["pair_id"].map(info["question_id"]).astype(str),
        instruction=verdicts["pair_id"].map(info["prompt"]), response_a=verdicts["pair_id"].map(info["response_a"]),
        response_b=verdicts["pair_id"].map(info["response_b"]), model_a=verdicts["pair_id"].map(info["model_a"]),
        model_b=verdicts["pair_id"].map(info["model_b"]), human=verdicts["pair_id"].map(info["human"]),
        expected_verdict="")
    rec["correct"] = pd.NA
    some = set(pairs["pair_id"][np.random.default_rng(args.seed + 1).random(len(pairs)) < args.label_share])
    rec_some = rec.assign(human=np.where(rec["pair_id"].isin(some), rec["human"], ""))
    summary = {"pairs_available": n_all_pairs, "votes_available": n_all_votes, "pairs_judged": len(pairs),
               "votes_used": len(votes), "calls": len(verdicts), "label_share": args.label_share, "seed": args.seed,
               "judge": spec.name, "template": args.template, "judge_seconds": round(judge_s, 1),
               "parsed_share": float((verdicts["verdict"] != "").mean()),
               "ppi_coverage_of_human_all": float(table["ppi_covers_human_all"].mean())}
    with staged_folder(out, command="mtbench_humans", ours=CACHE_FILES) as stage:  # the set appears whole, replacing the old one (and its cache copy)
        write_table(table, stage / "ppi_by_model.csv")
        write_table(rec, stage / "verdicts_all_labels.csv")
        write_table(rec_some, stage / "verdicts_some_labels.csv")
        write_text(stage / "summary.json", json.dumps(summary, indent=2) + "\n")
        carry_cache(cache.path, stage / "calls.sqlite")
    with pd.option_context("display.width", 200):
        print(table.round(3).to_string(index=False))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
