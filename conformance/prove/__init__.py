"""Proofs with z3 about the implementation's algorithms, for unbounded values."""
