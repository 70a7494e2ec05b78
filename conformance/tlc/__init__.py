"""TLC tooling: locating and running TLC, and parsing what it prints (values, tool-mode output, dot dumps)."""
