"""Algorithm 1 of paper 000: the feature vector phi_ij^(k) in R^(6D+9), built without materialising it.

For answers e_i, e_j and the judge's own answer e_k (all in R^D), Algorithm 1 concatenates

    |e_i - e_j|, |e_i - e_k|, |e_j - e_k|,                         (3 x D)
    e_i*e_j/(n_i n_j + eps), e_i*e_k/(n_i n_k + eps), e_j*e_k/(...), (3 x D, element-wise)
    cos(i,j), cos(i,k), cos(j,k),                                   (3 scalars)
    KL(p_j||p_i), KL(p_i||p_k), KL(p_j||p_k)  with p = softmax(e),  (3 scalars)
    |n_i - n_j|, |n_i - n_k|, |n_j - n_k|                           (3 scalars)

Every component depends on two of the three vectors only, so phi splits into a *pair*
part x(i, j) = [|e_i-e_j|, np_ij, cos_ij, KL(p_j||p_i), |n_i-n_j|] and two *self* parts
x(i, k), x(j, k) of the same form.  The first layer of the adapter is linear, so
W phi = W_pair x(i, j) + W_ik x(i, k) + W_jk x(j, k): we build the pair table once per
(prompt, ordered model pair) and the self table once per (prompt, model, judge), multiply
each by its block of W, and add three H-vectors per comparison.  A P N^2 M x (6D+9) matrix
(4.2 GB at the paper's scale for D = 384) is never formed; :func:`algorithm1` builds phi
explicitly for a few comparisons, for tests and inspection.

The *ablated* variant (paper 000, Table 3: "all features related to the judge's own answer
embedding removed", 4617 -> 1539 dimensions for D = 768) keeps the pair part only: 2D + 3.

Inputs are standardised per dimension with the training prompts' table statistics (stored
with the adapter, so a transferred adapter uses its own training statistics); the sd has a
floor of a tenth of the median sd and standardised values are clipped at +-8, so a feature
that barely varies on the training prompts cannot explode on others.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judgelab.registry import Registry

EPS = 1e-8
CLIP = 8.0


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    z = x - m
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def kl_softmax(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """KL(softmax(a) || softmax(b)) over the last axis."""
    la, lb = _log_softmax(a.astype(np.float64)), _log_softmax(b.astype(np.float64))
    return (np.exp(la) * (la - lb)).sum(axis=-1)


def _block(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[|a-b|, a*b/(|a||b|+eps), cos(a,b), KL(softmax(b)||softmax(a)), ||a|-|b||] broadcast over leading axes.

    Note the KL direction: for the pair part (a, b) = (e_i, e_j) Algorithm 1 uses KL(p_j||p_i);
    for the self parts (a, b) = (e_k, e_i) gives KL(p_i||p_k).  Callers pass the order.
    """
    a = a.astype(np.float32)
    b = b.astype(np.float32)
    na = np.linalg.norm(a, axis=-1, keepdims=True)
    nb = np.linalg.norm(b, axis=-1, keepdims=True)
    prod = a * b
    denom = na * nb + EPS
    cos = prod.sum(axis=-1, keepdims=True) / denom
    kl = kl_softmax(b, a)[..., None].astype(np.float32)
    return np.concatenate([np.abs(a - b), prod / denom, cos, kl, np.abs(na - nb)], axis=-1)


def algorithm1(e_i: np.ndarray, e_j: np.ndarray, e_k: np.ndarray) -> np.ndarray:
    """phi_ij^(k) exactly as listed in Algorithm 1 (rows of e_* are comparisons): (n, 6D+9)."""
    D = e_i.shape[-1]
    ij, ik, jk = _block(e_i, e_j), _block(e_k, e_i), _block(e_k, e_j)
    v = slice(0, D)
    npd = slice(D, 2 * D)
    return np.concatenate([
        ij[..., v], ik[..., v], jk[..., v],
        ij[..., npd], ik[..., npd], jk[..., npd],
        ij[..., 2 * D : 2 * D + 1], ik[..., 2 * D : 2 * D + 1], jk[..., 2 * D : 2 * D + 1],
        ij[..., 2 * D + 1 : 2 * D + 2], ik[..., 2 * D + 1 : 2 * D + 2], jk[..., 2 * D + 1 : 2 * D + 2],
        ij[..., 2 * D + 2 :], ik[..., 2 * D + 2 :], jk[..., 2 * D + 2 :],
    ], axis=-1)


def algorithm1_ablated(e_i: np.ndarray, e_j: np.ndarray) -> np.ndarray:
    """The pair part only, in Algorithm 1's order: [|e_i-e_j|, np_ij, cos_ij, KL(p_j||p_i), |n_i-n_j|]."""
    return _block(e_i, e_j)


@dataclass(frozen=True)
class FeatureVariant:
    """Which parts of phi the adapter reads; ``input_dim(D)`` is its first layer's width."""

    name: str
    self_features: bool

    def input_dim(self, dim: int) -> int:
        return 6 * dim + 9 if self.self_features else 2 * dim + 3

    def column_blocks(self, dim: int) -> dict[str, np.ndarray]:
        """Columns of the first-layer weight that multiply the pair / (i,k) / (j,k) parts.

        A part is laid out as [vector diff (D), norm product (D), cos, KL, norm diff];
        the indices place those entries where Algorithm 1 puts them in phi.
        """
        D = dim
        if not self.self_features:
            return {"pair": np.arange(2 * D + 3)}

        def cols(slot: int) -> np.ndarray:  # slot 0 = ij, 1 = ik, 2 = jk
            return np.concatenate([
                np.arange(slot * D, (slot + 1) * D),
                np.arange((3 + slot) * D, (4 + slot) * D),
                [6 * D + slot, 6 * D + 3 + slot, 6 * D + 6 + slot],
            ])

        return {"pair": cols(0), "ik": cols(1), "jk": cols(2)}


FEATURE_VARIANTS: Registry[FeatureVariant] = Registry("UDA feature variant")
FEATURE_VARIANTS.add("full", FeatureVariant("full", self_features=True))
FEATURE_VARIANTS.add("ablated", FeatureVariant("ablated", self_features=False))


def pair_table(E: np.ndarray) -> np.ndarray:
    """x(i, j) for every prompt and ordered model pair: (P, N, N, 2D+3) from answer embeddings (P, N, D)."""
    return _block(E[:, :, None, :], E[:, None, :, :])


def self_table(E: np.ndarray, E_judge: np.ndarray) -> np.ndarray:
    """x(m, k) for every prompt, model and judge: (P, N, M, 2D+3) from (P, N, D) and (P, M, D)."""
    return _block(E_judge[:, None, :, :], E[:, :, None, :])


@dataclass
class Standardizer:
    """Per-dimension mean and sd of the pair and self tables of the training tournament."""

    pair_mean: np.ndarray
    pair_std: np.ndarray
    self_mean: np.ndarray
    self_std: np.ndarray

    @classmethod
    def fit(cls, X_pair: np.ndarray, X_self: np.ndarray) -> Standardizer:
        N = X_pair.shape[1]
        off = ~np.eye(N, dtype=bool)
        xp = X_pair[:, off, :].reshape(-1, X_pair.shape[-1])
        xs = X_self.reshape(-1, X_self.shape[-1])

        def stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            mean = x.mean(0, dtype=np.float64)
            std = x.std(0, dtype=np.float64)
            # a dimension (almost) constant on the training prompts must not explode elsewhere
            floor = max(1e-6, 0.1 * float(np.median(std)))
            return mean.astype(np.float32), np.maximum(std, floor).astype(np.float32)

        pm, ps = stats(xp)
        sm, ss = stats(xs)
        return cls(pair_mean=pm, pair_std=ps, self_mean=sm, self_std=ss)

    def apply(self, X_pair: np.ndarray, X_self: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Standardise, then clip to +-CLIP standard deviations (unseen prompts stay in range)."""
        return (np.clip((X_pair - self.pair_mean) / self.pair_std, -CLIP, CLIP),
                np.clip((X_self - self.self_mean) / self.self_std, -CLIP, CLIP))

    def to_dict(self) -> dict[str, list[float]]:
        return {k: getattr(self, k).tolist() for k in ("pair_mean", "pair_std", "self_mean", "self_std")}

    @classmethod
    def from_dict(cls, d: dict[str, list[float]]) -> Standardizer:
        return cls(**{k: np.asarray(v, dtype=np.float32) for k, v in d.items()})
