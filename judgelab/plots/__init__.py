"""Figures. Every figure made from simulated judges carries a visible stamp."""

from judgelab.plots.stamp import save_figure, stamp

__all__ = ["save_figure", "stamp"]
