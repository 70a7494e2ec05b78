"""Clients of the harnesses that drive real systems (systems/<name>/, docs/real-ignite.md)."""
