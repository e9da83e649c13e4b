"""judgelab: measuring and correcting the biases of LLM judges, reproducibly."""

__version__ = "0.1.0"
