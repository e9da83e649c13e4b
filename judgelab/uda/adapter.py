"""The UDA adapter f_theta: R^(6D+9) -> R^3, (K_ij, s_i, s_j) = f_theta(phi_ij^(k)) (paper 000, Eq. 2).

A 3-layer MLP (three linear layers, two nonlinearities; widths ``hidden``, default 128 and
32: the paper does not publish them).  Outputs: K_ij = 2 K0 sigma(z_0), positive as the
paper requires and bounded by 2 K0 = 64 (an unbounded K lets ratings on unseen prompts
oscillate and diverge), K0 = 32 at z_0 = 0; and (s_i, s_j) = softmax(z_1, z_2), so
s_i + s_j = 1.  The last layer starts near zero with biases (0, +1, -1): an untrained
adapter is the baseline Elo with K = 32 and the winner's label softened to sigma(2) = 0.88.

**How the judge's verdict enters.**  The feature vector has no verdict component (6D+9, and
2D+3 after the ablation), yet the ablated adapter of Table 3 still leaves the judges apart,
so the verdict must enter through the comparison itself.  We present the pair to the
network in the judge's verdict order -- winner first, as an Elo match record is written --
so s_i is the network's corrected version of "i won" (r_ij = 1).  A loss is the same match
with j first, and a tie ([[C]], r_ij = 0.5) the average of both presentations.  In one
formula, with g(phi) the winner's soft label for a given presentation:

    s_i = r g(phi_ij) + (1 - r) (1 - g(phi_ji)),     K = r K(phi_ij) + (1 - r) K(phi_ji),

which reduces to the baseline (s_i = r) when g = 1, K = K0.

**Blockwise first layer.**  ``first_blocks`` multiplies the pair and self tables of
:mod:`judgelab.uda.features` by the matching column blocks of the first layer's weight;
:meth:`UDAAdapter.head_from_preact` continues from the summed pre-activation.
:meth:`UDAAdapter.forward` applies the whole network to explicit phi rows (tests check the
two paths agree).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from judgelab.uda.features import FEATURE_VARIANTS, FeatureVariant

ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU, "tanh": nn.Tanh}


class UDAAdapter(nn.Module):
    def __init__(self, dim: int, variant: str | FeatureVariant = "full", hidden: Sequence[int] = (128, 32),
                 k0: float = 32.0, activation: str = "gelu") -> None:
        super().__init__()
        self.variant = FEATURE_VARIANTS.get(variant, where="uda adapter") if isinstance(variant, str) else variant
        self.dim = int(dim)
        self.k0 = float(k0)
        if len(hidden) != 2:
            raise ValueError("the adapter is a 3-layer MLP: give two hidden widths")
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; known: {sorted(ACTIVATIONS)}")
        h1, h2 = (int(h) for h in hidden)
        self.first = nn.Linear(self.variant.input_dim(self.dim), h1)
        self.act1 = ACTIVATIONS[activation]()
        self.second = nn.Linear(h1, h2)
        self.act2 = ACTIVATIONS[activation]()
        self.out = nn.Linear(h2, 3)
        with torch.no_grad():
            self.out.weight.mul_(0.01)
            self.out.bias.copy_(torch.tensor([0.0, 1.0, -1.0]))
        for name, idx in self.variant.column_blocks(self.dim).items():
            self.register_buffer(f"cols_{name}", torch.as_tensor(idx, dtype=torch.long), persistent=False)

    # -- explicit path --------------------------------------------------------------
    def forward(self, phi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(K, s_i) for explicit feature rows phi (n, 6D+9 or 2D+3)."""
        return self.head_from_preact(phi @ self.first.weight.T)

    # -- blockwise path -------------------------------------------------------------
    def first_blocks(self, X_pair: torch.Tensor, X_self: torch.Tensor | None) -> dict[str, torch.Tensor]:
        """Pre-activation contributions of the pair table rows and (if used) the self table rows."""
        W = self.first.weight
        out = {"pair": X_pair @ W[:, self.cols_pair].T}
        if self.variant.self_features:
            if X_self is None:
                raise ValueError("the full adapter needs the self table")
            out["ik"] = X_self @ W[:, self.cols_ik].T
            out["jk"] = X_self @ W[:, self.cols_jk].T
        return out

    def head_from_preact(self, z1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Everything after the first layer's matrix product: bias, two layers, output transform."""
        h = self.act1(z1 + self.first.bias)
        h = self.act2(self.second(h))
        z = self.out(h)
        K = 2.0 * self.k0 * torch.sigmoid(z[..., 0])
        s = torch.sigmoid(z[..., 1] - z[..., 2])  # softmax over (s_i, s_j), first entry
        return K, s

    def config(self) -> dict:
        return {"dim": self.dim, "variant": self.variant.name, "hidden": [self.second.in_features, self.second.out_features],
                "k0": self.k0, "activation": type(self.act1).__name__.lower()}
