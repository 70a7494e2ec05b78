"""Pure, deterministic implementations of the protocols that spec/ describes (no I/O, no threads)."""
