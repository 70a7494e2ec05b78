"""One mapping module per spec: abstract / concretize / apply / enabled between spec states and impl values."""
