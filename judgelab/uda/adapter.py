"""The UDA adapter f_theta: R^(6D+9) -> R^3, (K_ij, s_i, s_j) = f_theta(phi_ij^(k)) (paper 000, Eq. 2).

A 3-layer MLP (three linear layers, two nonlinearities; widths ``hidden``, default 128 and
32: the paper does not publish them).  Outputs: K_ij = 2 K0 sigma(z_0), positive as the
paper requires and bounded by 2 K0 (an unbounded K lets ratings on unseen prompts oscillate
and diverge), K0 at z_0 = 0, K0 = the baseline's K unless configured; and the pair of soft
labels (s_i, s_j) = (1 - eps, eps) for the winner-first presentation, with

    eps = gate * softmax(z_1, z_2)[1],   gate = clamp(gamma, 0, 1),

a sum-to-one pair as the paper's softmax output, whose loser share is gated by a learned
scalar gamma (ReZero-style).

**Starting point = plain Elo.**  The last layer starts at zero weights, so every input gives
the same output: z_0 = 0 (K = K0) and, by default (``init_label`` = 1), gamma = 0, i.e. the
hard label s_i = 1 -- an untrained adapter *is* the baseline Elo (Eq. 1), and anything UDA
does beyond it is learned (a test checks the untrained adapter reproduces the baseline's
scores exactly).  The gate is what makes the hard label a starting point with a gradient: a
plain softmax reaches 1 only at infinite logits, where its gradient vanishes.  gamma gets
the gradient -softmax(z)[1] dL/ds_i from the first step; the clamp's gradient passes at the
bound, so a step towards softer labels opens the gate, one towards harder ones stays at the
hard label.  ``init_label`` < 1 starts at that soft label instead (gate open, output biases
set so 1 - eps = init_label): the earlier default, 0.88 = sigma(2), is label-smoothed Elo,
which already lowers the inter-judge std without any training (``label_smoothing`` in
:mod:`judgelab.uda.training` is that control, fitted).

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

import math
from collections.abc import Sequence

import torch
from torch import nn

from judgelab.uda.features import FEATURE_VARIANTS, FeatureVariant

ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU, "tanh": nn.Tanh}


class UDAAdapter(nn.Module):
    #: column indices of each feature block, registered as buffers in ``__init__`` (ik, jk: the full variant)
    cols_pair: torch.Tensor
    cols_ik: torch.Tensor
    cols_jk: torch.Tensor

    def __init__(self, dim: int, variant: str | FeatureVariant = "full", hidden: Sequence[int] = (128, 32),
                 k0: float = 32.0, activation: str = "gelu", init_label: float = 1.0) -> None:
        super().__init__()
        self.variant = FEATURE_VARIANTS.get(variant, where="uda adapter") if isinstance(variant, str) else variant
        self.dim = int(dim)
        self.k0 = float(k0)
        self.init_label = float(init_label)
        if len(hidden) != 2:
            raise ValueError("the adapter is a 3-layer MLP: give two hidden widths")
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; known: {sorted(ACTIVATIONS)}")
        if not 0.5 < self.init_label <= 1.0:
            raise ValueError(f"init_label must be in (0.5, 1], got {init_label!r}")
        h1, h2 = (int(h) for h in hidden)
        self.first = nn.Linear(self.variant.input_dim(self.dim), h1)
        self.act1 = ACTIVATIONS[activation]()
        self.second = nn.Linear(h1, h2)
        self.act2 = ACTIVATIONS[activation]()
        self.out = nn.Linear(h2, 3)
        hard = self.init_label >= 1.0
        # the loser's share at the start: 1 - init_label (any value for a hard label: the gate is shut)
        lo = 0.5 if hard else 1.0 - self.init_label
        self.gate = nn.Parameter(torch.tensor(0.0 if hard else 1.0))
        with torch.no_grad():
            self.out.weight.zero_()
            half = 0.5 * math.log(lo / (1.0 - lo))  # softmax(z_1, z_2)[1] = sigma(z_2 - z_1) = lo
            self.out.bias.copy_(torch.tensor([0.0, -half, half]))
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
        eps = torch.clamp(self.gate, 0.0, 1.0) * torch.sigmoid(z[..., 2] - z[..., 1])  # softmax(z_1, z_2)[1], gated
        return K, 1.0 - eps

    def config(self) -> dict:
        return {"dim": self.dim, "variant": self.variant.name, "hidden": [self.second.in_features, self.second.out_features],
                "k0": self.k0, "activation": type(self.act1).__name__.lower(), "init_label": self.init_label}
