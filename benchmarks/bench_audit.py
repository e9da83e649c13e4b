"""``judgelab audit`` at scale: CPU time and peak memory of import + card per log size, beside a plain pass.

    python benchmarks/bench_audit.py --pairs 1000 10000 100000 [--shape real] [--data-root DIR] [--resamples 1000]
    python benchmarks/bench_audit.py --pairs 10000 100000 1000000 --shape short [--judges 2]
    python benchmarks/bench_audit.py --pairs 100000 --text-scale 1 10     # memory vs text volume

For each size a synthetic log in the published JudgeBench layout (``outputs/*.jsonl``: the judge
model inside each game, the second game swapped; half the judges reward models with ``scores``)
is written to a temporary folder, and the real command ``judgelab audit --format judgebench
FOLDER`` runs on it in a child process.  Printed per size: pairs, verdict rows, input size,
wall and CPU seconds and the child's peak RSS (``os.wait4``: that child only), the same for the
*plain pass* on the same files (:func:`plain_pass`: pyarrow reads every field, numpy computes the
first-shown share with a 1,000-resample item-cluster bootstrap and the positional agreement; the
floor any audit of these files pays), the audit's CPU over the plain pass's, then the growth
exponents (log-log slopes of CPU time and peak memory against pairs between consecutive sizes;
1.0 = linear).  ``--text-scale 1 10`` runs each size with responses 1x and 10x as long (same
pairs, same verdicts) and prints the peak-memory ratio: the audit keeps features, not texts.

The judges carry a planted position bias (first slot preferred with probability 0.6) and prefer
the longer response, so the card has something to find.  Two shapes of log:

``--shape real`` (the default)
    shaped like the published logs (:func:`measure_shape`): question, response and judge-text
    lengths drawn from the lengths measured in the public files under ``--data-root`` /
    ``$JUDGELAB_DATA`` (AlpacaEval's annotations; JudgeBench's ``outputs/`` when the root holds
    them), or from the JudgeBench measurements in :data:`JUDGEBENCH_SHAPE` when it holds neither;
    the pairs split into logs of the measured items per log, each item judged by the measured
    number of judges (one judge file per log, the judges of a group sharing items and texts, as
    every JudgeBench file judges the same pairs).  About 7 KB a pair on disk.
``--shape short``
    the first benchmark's shape, kept for comparison: ``--judges`` files with pairs of their own,
    questions ~150 and responses 60-400 characters, a two-line judge text (about 1.1 KB a pair,
    ~1 GB for a million pairs).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

WORDS = ("the answer follows from the premise because each step is checked against the question and "
         "the result is stated clearly with a short justification that the reader can verify").split()


CHUNK = 100_000  # pairs built per block of the vectorised writer


#: longer and shorter words, mixed into :data:`WORDS` so a text's characters per word match the
#: measured ratio (real answers carry longer words than the short-shape sentence, instructions shorter)
LONG_WORDS = ("consequently implementation considerations particularly significantly demonstrates "
              "approximately established determining corresponding alternatively representation").split()
SHORT_WORDS = "a of to is in it on by as at an or be we if so do".split()

#: the quantile levels a measured length distribution is kept at (sampling interpolates between them):
#: every 5 %, and 98 %, 99.5 % so the long tail keeps its mean (with 95 % -> 100 % alone, a sampled
#: AlpacaEval response averaged 263 words against the real 245)
LEVELS = np.array([*np.linspace(0.0, 0.95, 20), 0.98, 0.995, 1.0])


@dataclass(frozen=True)
class TextShape:
    """Lengths of one kind of text: word counts at the quantile levels of :data:`LEVELS`, and the
    characters per word (spaces included) of all such texts together."""

    words: tuple[int, ...]
    chars_per_word: float

    def sample_words(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` word counts drawn from the distribution (inverse CDF, linear between the levels)."""
        return np.maximum(np.rint(np.interp(rng.random(n), LEVELS, self.words)).astype(np.int64), 1)


@dataclass(frozen=True)
class Shape:
    """What a real log looks like: text lengths, items per log, judges per item, and where each came from."""

    question: TextShape
    response: TextShape
    judge_prompt: TextShape
    judge_response: TextShape
    items_per_log: int
    judges_per_item: int
    sources: dict[str, str] = field(default_factory=dict, compare=False)


#: Measured on the published JudgeBench logs, ``ScalerLab/JudgeBench`` commit
#: ``e2c52c284e735e139b3daa61c206ee208f36c461``, ``outputs/``: the 7 of its 38 files the stored
#: snapshot holds (``gpt-4o-2024-05-13`` responses judged by ``arena_hard/o1-mini-2024-09-12`` and
#: five reward models, 350 pairs each, all six on the same 350 ``pair_id``; ``claude-3-5-sonnet``
#: responses judged by ``arena_hard/claude-3-haiku-20240307``, 270 pairs).  Questions and responses
#: from the two arena_hard files (620 questions, 1,240 responses: the reward files repeat the gpt-4o
#: file's texts); judge prompt and response per game from the 1,240 arena_hard games (reward-model
#: games have empty texts and ``scores``).  Means: questions 1,007 characters, responses 1,643
#: (median 204 words; gpt-4o's 364, claude's 177), judge prompts 2,134, judge responses 1,509
#: (o1-mini 1,287, haiku 1,797); 5.9-14.1 KB a pair on disk (reward files 5.9 KB, o1-mini 11.1 KB,
#: haiku 14.1 KB).  Items per log: the median file's 350; judges per item: 6 (the median item's
#: files among those stored; JudgeBench's published ``outputs/`` has every gpt-4o judge on them).
#: The fallback of :func:`measure_shape` for a data root that holds no log, and the judge texts'
#: shape when the root holds no judge text (AlpacaEval's annotations keep only the judge's
#: one-token answer and its log-probabilities).
JUDGEBENCH_SHAPE = Shape(
    question=TextShape((14, 32, 70, 77, 88, 96, 105, 112, 123, 136, 148, 159, 181, 199, 222, 242, 264, 300, 330,
                        387, 457, 517, 683), 5.678),
    response=TextShape((30, 74, 119, 146, 158, 167, 178, 191, 204, 220, 242, 269, 301, 329, 355, 380, 402, 427,
                        458, 511, 566, 625, 771), 6.018),
    judge_prompt=TextShape((1, 10, 10, 10, 11, 133, 190, 234, 272, 307, 358, 403, 437, 468, 493, 517, 553, 601,
                            659, 758, 935, 1062, 1181), 6.133),
    judge_response=TextShape((2, 10, 10, 10, 12, 129, 175, 197, 216, 234, 245, 264, 278, 294, 306, 326, 355, 385,
                              422, 493, 600, 745, 998), 6.389),
    items_per_log=350, judges_per_item=6,
    sources={"all": "JudgeBench outputs/ (ScalerLab/JudgeBench e2c52c2), measured constants"})


def text_shape(texts: list[str]) -> TextShape:
    """The :class:`TextShape` of ``texts`` (words split on whitespace, as the importer counts them)."""
    words = np.array([len(t.split()) for t in texts], dtype=np.int64)
    chars = sum(len(t) for t in texts)
    return TextShape(tuple(round(float(x)) for x in np.quantile(words, LEVELS)), chars / max(int(words.sum()), 1))


def _median_count(counts: Iterable[int]) -> int:
    return round(float(np.median(np.fromiter(counts, dtype=np.int64))))


def measure_shape(data_root: Path | None) -> Shape:
    """The shape of the real logs under ``data_root`` (the shared public data), measured.

    Reads, where the root holds them, JudgeBench's ``outputs/*.jsonl`` (any
    ``judgebench/**/dataset=judgebench,*.jsonl``: questions, responses, the arena_hard games'
    judge prompts and responses, records per file, files per ``pair_id``) and else AlpacaEval's
    ``alpaca_eval/results/*/*/annotations.json`` (instructions, both outputs, records per file,
    files per instruction: the five shared files judge the same 805 instructions).  What the
    root does not hold comes from :data:`JUDGEBENCH_SHAPE`, the measured JudgeBench constants:
    the judge texts for AlpacaEval (its annotations keep a one-token answer), everything for a
    missing root.  ``Shape.sources`` names where each part came from.
    """
    if data_root is None or not Path(data_root).is_dir():
        return JUDGEBENCH_SHAPE
    root = Path(data_root)
    jb = sorted(root.glob("judgebench/**/dataset=judgebench,*.jsonl"))
    if jb:
        logs = [[json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()] for f in jb]
        seen: set[str] = set()
        questions, responses, prompts, answers = [], [], [], []
        for recs in logs:
            for r in recs:
                if r["pair_id"] not in seen:  # each pair's texts once (every judge's file repeats them)
                    seen.add(r["pair_id"])
                    questions.append(r["question"])
                    responses += [r["response_A"], r["response_B"]]
                for g in r["judgments"]:
                    j = g.get("judgment") or {}
                    if j.get("prompt"):
                        prompts.append(j["prompt"])
                    if j.get("response"):
                        answers.append(j["response"])
        per_item = Counter(r["pair_id"] for recs in logs for r in {x["pair_id"]: x for x in recs}.values())
        where = f"{root / 'judgebench'} ({len(jb)} files)"
        return Shape(text_shape(questions), text_shape(responses),
                     text_shape(prompts) if prompts else JUDGEBENCH_SHAPE.judge_prompt,
                     text_shape(answers) if answers else JUDGEBENCH_SHAPE.judge_response,
                     _median_count(len(recs) for recs in logs), _median_count(per_item.values()),
                     {"texts, items": where, "judge texts": where if answers else "JUDGEBENCH_SHAPE"})
    ae = sorted(root.glob("alpaca_eval/results/*/*/annotations.json"))
    if ae:
        logs = [json.loads(f.read_text(encoding="utf-8")) for f in ae]
        questions = list({r["instruction"]: None for recs in logs for r in recs})
        responses = [r[k] or "" for recs in logs for r in recs for k in ("output_1", "output_2")]
        per_item = Counter(i for recs in logs for i in {r["instruction"] for r in recs})
        return Shape(text_shape(questions), text_shape(responses), JUDGEBENCH_SHAPE.judge_prompt,
                     JUDGEBENCH_SHAPE.judge_response, _median_count(len(recs) for recs in logs),
                     _median_count(per_item.values()),
                     {"texts, items": f"{root / 'alpaca_eval/results'} ({len(ae)} annotation files)",
                      "judge texts": "JUDGEBENCH_SHAPE (AlpacaEval keeps no judge text)"})
    return JUDGEBENCH_SHAPE


def _vocab_mix(chars_per_word: float) -> float:
    """The ``mix`` of :func:`_texts` whose texts have ``chars_per_word`` characters per word (the
    space after each word included) on average: the share of :data:`LONG_WORDS` (positive) or
    of :data:`SHORT_WORDS` (negative) that moves :data:`WORDS`' average to it."""
    def per_word(words: list[str]) -> float:
        return float(np.mean([len(w) + 1 for w in words]))

    base = per_word(WORDS)
    other = per_word(LONG_WORDS if chars_per_word >= base else SHORT_WORDS)
    share = float(np.clip((chars_per_word - base) / (other - base), 0.0, 1.0))
    return share if chars_per_word >= base else -share


def _texts(rng: np.random.Generator, n_words: np.ndarray, mix: float = 0.0) -> Any:
    """Arrow strings of ``len(n_words)`` texts, each ``n_words[i]`` random words joined by spaces
    (ASCII letters only: nothing to escape in JSON), built in Arrow's C++ kernels: words of
    :data:`WORDS`, each replaced with probability ``|mix|`` by one of :data:`LONG_WORDS` (``mix``
    > 0) or of :data:`SHORT_WORDS` (``mix`` < 0)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    offsets = np.zeros(len(n_words) + 1, np.int64)
    np.cumsum(n_words, out=offsets[1:])
    total = int(offsets[-1])
    pick = rng.integers(0, len(WORDS), total)
    if mix > 0:
        pick = np.where(rng.random(total) < mix, len(WORDS) + rng.integers(0, len(LONG_WORDS), total), pick)
    elif mix < 0:
        pick = np.where(rng.random(total) < -mix, len(WORDS) + len(LONG_WORDS)
                        + rng.integers(0, len(SHORT_WORDS), total), pick)
    tokens = pa.array(WORDS + LONG_WORDS + SHORT_WORDS).take(pa.array(pick))
    return pc.binary_join(pa.LargeListArray.from_arrays(pa.array(offsets), tokens), " ")


def _games(model: str, reward: bool) -> list[str]:
    """The two JSON texts a game can take (index 1: the slot shown first wins), as ``json.dumps`` writes them."""
    out = []
    for a_wins in (False, True):
        dec = "A>B" if a_wins else "B>A"
        if reward:
            sa, sb = (1.5, 0.5) if a_wins else (0.5, 1.5)
            j = {"judge_model": model, "prompt": "", "response": "", "scores": [sa, sb]}
        else:
            j = {"judge_model": model, "prompt": "...", "response": f"My final verdict: [[{dec}]]"}
        out.append(json.dumps({"judgment": j, "decision": dec}, ensure_ascii=False))
    return out


def write_log(folder: Path, n_pairs: int, n_judges: int, seed: int = 0, text_scale: int = 1) -> int:
    """JudgeBench-layout files, ``n_pairs`` pairs in all split over ``n_judges`` judge files; bytes written.

    Each line is what ``json.dumps(record, ensure_ascii=False)`` writes for the pair's record,
    assembled from pre-encoded pieces by Arrow's string kernels a block of :data:`CHUNK` pairs at
    a time (a Python ``json.dumps`` per pair wrote ~2 MB/s: over an hour for ten million pairs).
    The texts of a pair with ``text_scale`` > 1 are drawn after its word counts, so the
    verdicts are the same pairs' at every scale."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    size = 0
    per = [n_pairs // n_judges + (k < n_pairs % n_judges) for k in range(n_judges)]
    for k, n in enumerate(per):
        reward = k % 2 == 1
        jname, model = ("reward_model", f"org/reward-{k}") if reward else ("arena_hard", f"gpt-judge-{k}")
        path = folder / (f"dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name={jname},"
                         f"judge_model={model.replace('/', '_')}.jsonl")
        games = pa.array(_games(model, reward))
        labels = pa.array(['"A>B"', '"B>A"'])
        with path.open("wb") as fh:
            for lo in range(0, n, CHUNK):
                m = min(CHUNK, n - lo)
                # the verdicts first, from their own stream: the same at every text scale
                vr = np.random.default_rng([seed, k, lo])
                la, lb = vr.integers(10, 70, m), vr.integers(10, 70, m)
                gold_b = vr.random(m) < 0.5
                first = vr.random((m, 2)) < 0.6  # position bias: the slot shown first wins
                wins = [np.where(sa == sb, first[:, g], first[:, g] | (sa > sb))
                        for g, (sa, sb) in enumerate(((la, lb), (lb, la)))]
                idx = pc.cast(pa.array(np.arange(lo, lo + m)), pa.string())
                q = _texts(rng, np.full(m, 20))
                a, b = _texts(rng, la * text_scale), _texts(rng, lb * text_scale)
                line = pc.binary_join_element_wise(
                    f'{{"pair_id": "{k}-', idx, '", "original_id": ', idx,
                    f', "source": "synthetic", "question": "Question {k}-', idx, ": ", q,
                    '", "response_model": "gpt-4o-2024-05-13", "response_A": "', a, '", "response_B": "', b,
                    '", "label": ', labels.take(pa.array(gold_b.astype(np.int8))),
                    f', "judge_name": "{jname}", "judgments": [', games.take(pa.array(wins[0].astype(np.int8))),
                    ", ", games.take(pa.array(wins[1].astype(np.int8))), "]}\n", "")
                size += _write_lines(fh, line)
    return size


def _write_lines(fh: Any, line: Any) -> int:
    """Write an Arrow string array's bytes (its lines, each ending in a newline) to ``fh``; bytes written."""
    import pyarrow as pa

    line = line.cast(pa.large_string()) if line.type != pa.large_string() else line
    offs = np.frombuffer(line.buffers()[1], np.int64, len(line) + 1, line.offset * 8)
    fh.write(memoryview(line.buffers()[2])[int(offs[0]):int(offs[-1])])
    return int(offs[-1] - offs[0])


def log_sizes(n_pairs: int, shape: Shape) -> list[int]:
    """Records per judge file of a ``shape`` log of ``n_pairs`` pairs: full logs of
    ``shape.items_per_log`` items, the last one holding the rest."""
    full, rest = divmod(n_pairs, shape.items_per_log)
    return [shape.items_per_log] * full + ([rest] if rest else [])


def write_real_log(folder: Path, n_pairs: int, shape: Shape, seed: int = 0, text_scale: int = 1) -> int:
    """JudgeBench-layout files shaped like ``shape``, ``n_pairs`` pairs in all; bytes written.

    The pairs split into judge files of :func:`log_sizes`; judges ``g*J .. g*J+J-1`` (``J`` =
    ``shape.judges_per_item``) judge the same items, with the same question and responses (one
    ``pair_id``, ``source`` and ``original_id`` per item), as JudgeBench's judges share its pairs.
    Word counts are drawn from the shape's distributions and the texts' words mixed from
    :data:`WORDS` and :data:`LONG_WORDS` to its characters per word.  Even-numbered judges are
    ``arena_hard`` LLM judges, each game with a judge prompt and response drawn from the shape
    (the response ending in the verdict); odd ones reward models (empty texts, ``scores``).
    Verdicts as :func:`write_log`'s: the longer response wins, else the position bias; drawn
    from their own stream, so the same at every ``text_scale``.  Lines are ``json.dumps(record,
    ensure_ascii=False)``, assembled by Arrow's string kernels a block of :data:`CHUNK` items at a time.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    sizes = log_sizes(n_pairs, shape)
    per_group = shape.judges_per_item
    mix = {name: _vocab_mix(getattr(shape, name).chars_per_word)
           for name in ("question", "response", "judge_prompt", "judge_response")}
    labels, decisions = pa.array(['"A>B"', '"B>A"']), pa.array(["B>A", "A>B"])  # decisions[1]: A wins
    size = 0
    for g in range(0, len(sizes), per_group):
        judges = range(g, min(g + per_group, len(sizes)))
        group = g // per_group
        paths = {}
        for k in judges:
            reward = k % 2 == 1
            jname, model = ("reward_model", f"org/reward-{k}") if reward else ("arena_hard", f"gpt-judge-{k}")
            paths[k] = (folder / (f"dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name={jname},"
                                  f"judge_model={model.replace('/', '_')}.jsonl"), jname, model, reward)
        handles = {k: paths[k][0].open("wb") for k in judges}
        try:
            for lo in range(0, max(sizes[k] for k in judges), CHUNK):
                m = min(CHUNK, max(sizes[k] for k in judges) - lo)
                lr = np.random.default_rng([seed, group, lo, 1])  # the item's lengths: the same at every scale
                qw = shape.question.sample_words(lr, m)
                la, lb = shape.response.sample_words(lr, m), shape.response.sample_words(lr, m)
                tr = np.random.default_rng([seed, group, lo, 2])
                q = _texts(tr, qw, mix["question"])
                a = _texts(tr, la * text_scale, mix["response"])
                b = _texts(tr, lb * text_scale, mix["response"])
                idx = pc.cast(pa.array(np.arange(lo, lo + m)), pa.string())
                for k in judges:
                    n = min(m, sizes[k] - lo)
                    if n <= 0:
                        continue
                    _, jname, model, reward = paths[k]
                    vr = np.random.default_rng([seed, k, lo])
                    gold_b = vr.random(n) < 0.5
                    first = vr.random((n, 2)) < 0.6  # position bias: the slot shown first wins
                    wins = [np.where(sa == sb, first[:, i], first[:, i] | (sa > sb)).astype(np.int8)
                            for i, (sa, sb) in enumerate(((la[:n], lb[:n]), (lb[:n], la[:n])))]
                    if reward:
                        two = pa.array(_games(model, True))
                        games = [two.take(pa.array(w)) for w in wins]
                    else:
                        jr = np.random.default_rng([seed, k, lo, 3])
                        games = []
                        for w in wins:
                            dec = decisions.take(pa.array(w))
                            games.append(pc.binary_join_element_wise(
                                f'{{"judgment": {{"judge_model": "{model}", "prompt": "',
                                _texts(jr, shape.judge_prompt.sample_words(jr, n), mix["judge_prompt"]),
                                '", "response": "',
                                _texts(jr, shape.judge_response.sample_words(jr, n), mix["judge_response"]),
                                " My final verdict: [[", dec, ']]"}, "decision": "', dec, '"}', ""))
                    i = idx.slice(0, n)
                    line = pc.binary_join_element_wise(
                        f'{{"pair_id": "{group}-', i, '", "original_id": ', i, f', "source": "synthetic-{group}", '
                        '"question": "', q.slice(0, n), '", "response_model": "gpt-4o-2024-05-13", "response_A": "',
                        a.slice(0, n), '", "response_B": "', b.slice(0, n),
                        '", "label": ', labels.take(pa.array(gold_b.astype(np.int8))),
                        f', "judge_name": "{jname}", "judgments": [', games[0], ", ", games[1], "]}\n", "")
                    size += _write_lines(handles[k], line)
        finally:
            for fh in handles.values():
                fh.close()
    return size


#: run in the child: the command (``-m module`` or a script, with its arguments), then the child's
#: own peak resident memory (``VmHWM`` of /proc/self/status) written to the file named first
_PEAK_WRAPPER = """
import runpy, sys
out, args = sys.argv[1], sys.argv[2:]
try:
    if args[0] == "-m":
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")
finally:
    with open("/proc/self/status") as fh:
        hwm = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
    with open(out, "w") as fh:
        fh.write(hwm)
"""


def run_child(cmd: list[str]) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MiB, return code) of a child process (CPU seconds =
    user + system: the figure to compare on a shared machine).

    The peak is the child's own ``VmHWM``, read by the child as it ends (on Linux): ``ru_maxrss``
    from ``wait4`` also counts the memory of this process at the moment it started the child (the
    high-water mark of the address space the child replaced at exec), which after writing a
    log of long texts is larger than the audit's own peak.  Where /proc is missing, ``ru_maxrss``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    linux = Path("/proc/self/status").exists()
    with tempfile.TemporaryDirectory() as d:
        peak_file = Path(d) / "peak"
        if linux:
            cmd = [cmd[0], "-c", _PEAK_WRAPPER, str(peak_file), *cmd[1:]]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status)
        if rc != 0 and proc.stderr is not None:
            sys.stderr.write(proc.stderr.read().decode(errors="replace")[-3000:])
        peak = int(peak_file.read_text()) / 1024 if linux and peak_file.exists() else usage.ru_maxrss / 1024
    return wall, usage.ru_utime + usage.ru_stime, peak, rc


def run_audit(folder: Path, out: Path, resamples: int) -> tuple[float, float, float, int]:
    """:func:`run_child` of ``judgelab audit --format judgebench FOLDER``."""
    return run_child([sys.executable, "-m", "judgelab.cli", "audit", "--format", "judgebench", str(folder),
                      "--out", str(out), "--resamples", str(resamples)])


def plain_pass(folder: Path, resamples: int, seed: int = 0) -> dict[str, float]:
    """The floor: every field parsed by pyarrow, the headline numbers in numpy.

    Reads each JudgeBench file whole with ``pyarrow.json`` (every field, texts included), takes
    the two games' decisions, and computes the first-shown share (P(the slot shown first wins)
    among decisive verdicts) with a ``resamples``-draw item-cluster bootstrap, and the positional
    agreement (same stored verdict in both orders).  The audit's card gives the same two numbers.
    """
    import pyarrow.compute as pc
    import pyarrow.json as pj

    out: dict[str, float] = {}
    for f in sorted(folder.glob("*.jsonl")):
        t = pj.read_json(f, read_options=pj.ReadOptions(block_size=1 << 24))
        games = t.column("judgments")
        shown = [pc.struct_field(pc.list_element(games, g), "decision").to_numpy(zero_copy_only=False)
                 for g in (0, 1)]
        item = pc.binary_join_element_wise(t.column("source"), pc.cast(t.column("original_id"), "string"), "/")
        codes = np.asarray(item.dictionary_encode().combine_chunks().indices)
        first = np.concatenate([shown[0] == "A>B", shown[1] == "A>B"]).astype(float)
        dec = np.concatenate([np.isin(s, ("A>B", "B>A")) for s in shown]).astype(float)
        cl = np.concatenate([codes, codes])
        k = int(cl.max()) + 1
        cn, cd = np.bincount(cl, first * dec, k), np.bincount(cl, dec, k)
        rng = np.random.default_rng(seed)
        boot = np.empty(resamples)
        for r in range(resamples):
            idx = rng.integers(0, k, k)
            boot[r] = cn[idx].sum() / cd[idx].sum()
        stored = [shown[0], np.where(shown[1] == "A>B", "B>A", np.where(shown[1] == "B>A", "A>B", shown[1]))]
        out[f.name] = float(cn.sum() / cd.sum())
        out[f.name + ":ci"] = float(np.quantile(boot, 0.025))
        out[f.name + ":agreement"] = float(np.mean(stored[0] == stored[1]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--shape", choices=("real", "short"), default="real",
                    help="real: lengths, items per log and judges per item measured on the public logs "
                         "(default); short: the first benchmark's short texts, for comparison")
    ap.add_argument("--data-root", type=Path,
                    help="the public data the real shape is measured on (default: $JUDGELAB_DATA or ../shared/data; "
                         "without one, the JudgeBench measurements in JUDGEBENCH_SHAPE)")
    ap.add_argument("--judges", type=int, default=2,
                    help="--shape short: judge files the pairs are split over (default 2); the real shape has "
                         "one judge per log of the measured items per log")
    ap.add_argument("--resamples", type=int, default=1000, help="card bootstrap resamples (default 1000)")
    ap.add_argument("--text-scale", type=int, nargs="+", default=[1],
                    help="response lengths x these factors, same pairs (default 1; '1 10' for the memory check)")
    ap.add_argument("--no-plain", action="store_true", help="skip the plain pass")
    ap.add_argument("--tmp", help="folder for the synthetic logs (default: the system temp folder)")
    ap.add_argument("--plain-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.plain_child:  # the plain pass, run in its own process so its peak memory is its own
        print(json.dumps(plain_pass(Path(args.plain_child), args.resamples)))
        return
    shape = None
    if args.shape == "real":
        from judgelab.datasets.sources import data_root

        shape = measure_shape(args.data_root or data_root())
        print(f"real shape: {shape.items_per_log} items per log, {shape.judges_per_item} judges per item; "
              f"median words: question {shape.question.words[10]}, response {shape.response.words[10]}, "
              f"judge prompt {shape.judge_prompt.words[10]}, judge response {shape.judge_response.words[10]}; "
              + "; ".join(f"{k} from {v}" for k, v in shape.sources.items()))
    rows = []
    print(f"{'pairs':>9} {'judges':>6} {'scale':>5} {'input MB':>9} {'B/pair':>6} {'wall s':>7} {'CPU s':>7} "
          f"{'peak MB':>8} {'plain CPU s':>11} {'plain MB':>8} {'CPU ratio':>9}")
    for n in sorted(args.pairs):
        for scale in args.text_scale:
            with tempfile.TemporaryDirectory(dir=args.tmp) as d:
                folder = Path(d) / "outputs"
                folder.mkdir()
                if shape is None:
                    size = write_log(folder, n, args.judges, text_scale=scale)
                else:
                    size = write_real_log(folder, n, shape, text_scale=scale)
                judges = len(list(folder.glob("*.jsonl")))
                wall, cpu, rss, rc = run_audit(folder, Path(d) / "audit", args.resamples)
                if rc != 0:
                    raise SystemExit(f"judgelab audit failed on {n} pairs (rc {rc})")
                pcpu = prss = math.nan
                if not args.no_plain:
                    _, pcpu, prss, prc = run_child([sys.executable, __file__, "--plain-child", str(folder),
                                                   "--resamples", str(args.resamples)])
                    if prc != 0:
                        raise SystemExit(f"plain pass failed on {n} pairs (rc {prc})")
            rows.append((n, scale, cpu, rss))
            print(f"{n:>9} {judges:>6} {scale:>5} {size / 1e6:>9.1f} {size / n:>6.0f} {wall:>7.1f} {cpu:>7.1f} "
                  f"{rss:>8.0f} {pcpu:>11.1f} {prss:>8.0f} {cpu / pcpu:>9.2f}", flush=True)
    for scale in args.text_scale:
        sized = [(n, c, m) for n, s, c, m in rows if s == scale]
        for (n0, t0, m0), (n1, t1, m1) in itertools.pairwise(sized):
            k = math.log(n1 / n0)
            print(f"growth {n0} -> {n1} pairs (text x{scale}): CPU time ~ n^{math.log(t1 / t0) / k:.2f}, "
                  f"peak memory ~ n^{math.log(m1 / m0) / k:.2f}")
    if len(args.text_scale) > 1:
        base = min(args.text_scale)
        for n in sorted(args.pairs):
            peak = {s: m for nn, s, _, m in rows if nn == n}
            for s in args.text_scale:
                if s != base:
                    print(f"{n} pairs: peak memory with texts x{s} / x{base} = {peak[s] / peak[base]:.3f}")


if __name__ == "__main__":
    main()
