"""The Elo recursion of :mod:`judgelab.uda.elo` as a torch autograd Function (kept apart so that
analysis steps read Elo code without importing torch)."""

from __future__ import annotations

import torch

from judgelab.uda.elo import EloConfig, Schedule, elo_adjoint, elo_forward


class EloRecursion(torch.autograd.Function):
    """Final ratings of the adaptive Elo update as a differentiable function of K and s.

    ``K`` and ``s`` are (S, M, H) tensors (K already zero where there is no comparison);
    returns (M, N) final ratings.  Gradients are the exact adjoint (see :mod:`judgelab.uda.elo`).
    """

    @staticmethod
    def forward(ctx, K: torch.Tensor, s: torch.Tensor, sched: Schedule, cfg: EloConfig) -> torch.Tensor:
        Kn = K.detach().cpu().double().numpy()
        sn = s.detach().cpu().double().numpy()
        R, P, _ = elo_forward(Kn, sn, sched, cfg.c, cfg.initial, Kn.shape[1], keep_p=True, trajectory=False)
        ctx.np_state = (Kn, sn, P, sched, cfg.c)
        ctx.dtype = K.dtype
        return torch.from_numpy(R).to(K.dtype)

    @staticmethod
    def backward(ctx, gR: torch.Tensor):
        Kn, sn, P, sched, c = ctx.np_state
        gK, gs = elo_adjoint(gR.detach().cpu().double().numpy(), Kn, sn, P, sched, c)
        return torch.from_numpy(gK).to(ctx.dtype), torch.from_numpy(gs).to(ctx.dtype), None, None


def elo_final(K: torch.Tensor, s: torch.Tensor, sched: Schedule, cfg: EloConfig) -> torch.Tensor:
    return EloRecursion.apply(K, s, sched, cfg)
