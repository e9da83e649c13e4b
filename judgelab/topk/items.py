"""Controlled item pools with known quality (paper 002, Sec. 6 and Technical Appendix).

Each *pool* (one "oracle" in the paper: a random item draw) answers one question, "Give an
accurate and informative overview of <topic>.", from a statement bank of 12 true and 12
false statements (``data/topk/statements.json``, written for this project).  An item holds
``C`` statements; its quality is ``theta = #true - #false``.  The true top-k are the
fully-correct items: every pool has exactly ``k`` of them and the other items have fewer true
statements (``other_true_counts``), so the top-k set is unique.

Verbosity is binary and independent of quality by construction: the *terse* form lists the
chosen statements, the *elaborated* form appends to each a content-free,
authoritative-sounding clause (same facts, about 2.8x the words).  It is assigned by a
balanced shuffle (half the items verbose), rejected unless ``|corr(theta, verbose)| <
max_corr`` (paper: 0.12).  An optional *format* contrast does the same for a markdown layout
(a bold heading and a bullet list) to exercise a second bias covariate.

Items table (``results/topk/items.parquet``), one row per pool x item:

=============== ==============================================================
oracle          pool index (0..n_oracles-1); the pool's topic cycles through the banks
item            item index within the pool (0..N-1)
topic, question the bank's topic and the question every item answers
n_true, n_false statement counts; ``theta = n_true - n_false`` is the true quality
top_k           True for the k fully-correct items (the target set)
verbose         1 for the elaborated form, 0 for the terse form
markdown        1 for the markdown layout (format contrast), 0 for plain prose
statements      JSON list of bank statement ids (``T3`` = true #3, ``F7`` = false #7)
text            the item as shown to judges
words           word count of ``text`` (judgelab.datasets.features.word_count)
=============== ==============================================================

Covariates for the bias-aware model are computed from this table by name
(:data:`COVARIATES`): ``verbosity`` (the binary indicator, the paper's main covariate),
``length_std`` (standardised word count, Table 1's covariate), ``log2_length``
(``log2(words + 1)``, the scale the simulated panel reads), ``markdown``
(judgelab.datasets.features.markdown_score) and ``self_family`` (resemblance to the judge family's
signature phrases).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from judgelab.config import ConfigError
from judgelab.datasets.features import family_signature_score, markdown_score, word_count
from judgelab.io import InputError
from judgelab.registry import Registry

BANK_SIZE = 12  # true and false statements per topic (paper: 12 + 12)

ITEM_COLUMNS = ["oracle", "item", "topic", "question", "n_true", "n_false", "theta", "top_k", "verbose",
                "markdown", "statements", "text", "words"]


@dataclass(frozen=True)
class StatementBank:
    topic: str
    question: str
    true: tuple[str, ...]
    false: tuple[str, ...]


@dataclass(frozen=True)
class Banks:
    topics: tuple[StatementBank, ...]
    clauses: tuple[str, ...]


def load_banks(path: str | Path) -> Banks:
    """Read and validate the statement banks; errors name the file and the topic."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{p}: statement bank file not found") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    clauses = data.get("clauses")
    if not isinstance(clauses, list) or not clauses or not all(isinstance(c, str) and c.strip() for c in clauses):
        raise InputError(f"{p}: 'clauses' must be a non-empty list of texts")
    topics = []
    for i, t in enumerate(data.get("topics") or []):
        where = f"{p} topics[{i}]"
        for key in ("topic", "question", "true", "false"):
            if key not in t:
                raise InputError(f"{where}: missing key {key!r}")
        where = f"{p} topic {t['topic']!r}"
        for key in ("true", "false"):
            vals = t[key]
            if not isinstance(vals, list) or len(vals) != BANK_SIZE:
                raise InputError(f"{where}: {key!r} must list exactly {BANK_SIZE} statements, got "
                                 f"{len(vals) if isinstance(vals, list) else type(vals).__name__}")
            for j, s in enumerate(vals):
                if not isinstance(s, str) or not s.strip().endswith("."):
                    raise InputError(f"{where}: {key}[{j}] must be a sentence ending with '.'")
        if len(set(t["true"]) | set(t["false"])) != 2 * BANK_SIZE:
            raise InputError(f"{where}: statements must be distinct")
        topics.append(StatementBank(str(t["topic"]), str(t["question"]), tuple(t["true"]), tuple(t["false"])))
    if not topics:
        raise InputError(f"{p}: no topics")
    return Banks(tuple(topics), tuple(clauses))


@dataclass(frozen=True)
class PoolDesign:
    """How pools are drawn (config ``topk.items``)."""

    n_items: int = 30
    k: int = 5
    n_statements: int = 6
    other_true_counts: tuple[int, ...] = (2, 3, 4, 5)
    max_corr: float = 0.12
    format_contrast: bool = False
    max_tries: int = 100_000

    def __post_init__(self) -> None:
        c = self.n_statements
        if not 0 < self.k < self.n_items:
            raise ConfigError(f"topk.items: need 0 < k < n_items (k={self.k}, n_items={self.n_items})")
        if c > BANK_SIZE:
            raise ConfigError(f"topk.items.n_statements={c} exceeds the bank size {BANK_SIZE}")
        bad = [t for t in self.other_true_counts if not (max(0, c - BANK_SIZE) <= t < c)]
        if bad or not self.other_true_counts:
            raise ConfigError(f"topk.items.other_true_counts {list(self.other_true_counts)} must lie in "
                              f"[{max(0, c - BANK_SIZE)}, {c - 1}] (fewer true statements than a top item)")


def elaborate(statement: str, clause: str) -> str:
    """The statement with a content-free authoritative clause appended (same facts, more words)."""
    return f"{statement.rstrip().rstrip('.')}, {clause}."


def render(statements: Sequence[str], *, topic: str, markdown: bool) -> str:
    if markdown:
        return f"**Overview of {topic}**\n\n" + "\n".join(f"- {s}" for s in statements)
    return " ".join(statements)


def balanced_assignment(theta: np.ndarray, rng: np.random.Generator, max_corr: float, max_tries: int,
                        also_uncorrelated_with: Sequence[np.ndarray] = ()) -> np.ndarray:
    """Half the items get 1, by shuffling, until |corr| with quality (and the given
    covariates) is below ``max_corr`` -- the paper's rejection rule."""
    n = len(theta)
    base = np.zeros(n)
    base[: n // 2] = 1.0
    for _ in range(max_tries):
        x = rng.permutation(base)
        cors = [abs(np.corrcoef(theta, x)[0, 1])] + [abs(np.corrcoef(o, x)[0, 1]) for o in also_uncorrelated_with]
        if all(np.isfinite(c) and c < max_corr for c in cors):
            return x
    raise ConfigError(f"topk.items.max_corr={max_corr}: no balanced assignment found in {max_tries} shuffles")


def build_pool(bank: StatementBank, clauses: Sequence[str], design: PoolDesign, rng: np.random.Generator,
               oracle: int) -> pd.DataFrame:
    """One pool of ``n_items`` items (see module docstring)."""
    c = design.n_statements
    n_true = np.array([c] * design.k + list(rng.choice(design.other_true_counts, design.n_items - design.k)))
    seen: set[frozenset[str]] = set()
    chosen: list[list[str]] = []
    for t in n_true:
        for _ in range(design.max_tries):
            ids = [f"T{i}" for i in rng.choice(BANK_SIZE, t, replace=False)]
            ids += [f"F{i}" for i in rng.choice(BANK_SIZE, c - t, replace=False)]
            key = frozenset(ids)
            if key not in seen:
                seen.add(key)
                chosen.append([ids[i] for i in rng.permutation(c)])
                break
        else:
            raise ConfigError(f"topic {bank.topic!r}: cannot draw {design.n_items} distinct items")
    theta = (2 * n_true - c).astype(float)
    verbose = balanced_assignment(theta, rng, design.max_corr, design.max_tries)
    md = (balanced_assignment(theta, rng, design.max_corr, design.max_tries, (verbose,))
          if design.format_contrast else np.zeros(design.n_items))
    rows = []
    for i, ids in enumerate(chosen):
        sents = [bank.true[int(s[1:])] if s[0] == "T" else bank.false[int(s[1:])] for s in ids]
        if verbose[i]:
            sents = [elaborate(s, clauses[int(j)]) for s, j in zip(sents, rng.choice(len(clauses), c), strict=True)]
        text = render(sents, topic=bank.topic, markdown=bool(md[i]))
        rows.append({
            "oracle": oracle, "item": i, "topic": bank.topic, "question": bank.question,
            "n_true": int(n_true[i]), "n_false": int(c - n_true[i]), "theta": float(theta[i]),
            "top_k": bool(n_true[i] == c), "verbose": int(verbose[i]), "markdown": int(md[i]),
            "statements": json.dumps(ids), "text": text, "words": word_count(text),
        })
    return pd.DataFrame(rows, columns=ITEM_COLUMNS)


def build_items(banks: Banks, design: PoolDesign, n_oracles: int, seed: int) -> pd.DataFrame:
    """All pools; pool ``o`` uses topic ``o mod n_topics`` and its own seeded generator."""
    pools = []
    for o in range(n_oracles):
        rng = np.random.default_rng([int(seed), 2, o])
        pools.append(build_pool(banks.topics[o % len(banks.topics)], banks.clauses, design, rng, o))
    return pd.concat(pools, ignore_index=True)


def pools(items: pd.DataFrame) -> list[pd.DataFrame]:
    """The items table split per pool, each sorted by item index."""
    return [g.sort_values("item").reset_index(drop=True) for _, g in items.groupby("oracle", sort=True)]


# ---------------------------------------------------------------------------------
# covariates by name

CovariateFn = Callable[[pd.DataFrame, str], np.ndarray]
COVARIATES: Registry[CovariateFn] = Registry("top-k covariate")


@COVARIATES.register("verbosity")
def _verbosity(pool: pd.DataFrame, family: str) -> np.ndarray:
    return pool["verbose"].to_numpy(dtype=float)


@COVARIATES.register("length_std")
def _length_std(pool: pd.DataFrame, family: str) -> np.ndarray:
    w = pool["words"].to_numpy(dtype=float)
    sd = w.std()
    return (w - w.mean()) / sd if sd > 0 else np.zeros_like(w)


@COVARIATES.register("log2_length")
def _log2_length(pool: pd.DataFrame, family: str) -> np.ndarray:
    return np.log2(pool["words"].to_numpy(dtype=float) + 1.0)


@COVARIATES.register("markdown")
def _markdown(pool: pd.DataFrame, family: str) -> np.ndarray:
    return np.array([markdown_score(t) for t in pool["text"]])


@COVARIATES.register("self_family")
def _self_family(pool: pd.DataFrame, family: str) -> np.ndarray:
    return np.array([family_signature_score(t, family) for t in pool["text"]])


def covariate_matrix(pool: pd.DataFrame, names: Sequence[str], family: str = "unknown") -> np.ndarray:
    """The N x d covariate matrix of one pool (columns in the order of ``names``)."""
    if not names:
        return np.zeros((len(pool), 0))
    return np.column_stack([COVARIATES.get(n, where="topk.covariates")(pool, family) for n in names])
