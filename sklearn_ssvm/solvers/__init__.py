"""Solvers: pure functions over a packed Problem (no scikit-learn)."""
