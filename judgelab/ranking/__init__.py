"""Rankings from pairwise comparisons (Bradley-Terry, Elo, bias-aware models)."""
