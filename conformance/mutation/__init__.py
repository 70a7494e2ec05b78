"""The mutation campaign: single-point mutants of impl/ modules against conformance (docs/mutation.md)."""
