"""The command line: `tidemark` (main.py), its parser and limits, consoles, outputs and the small
commands that only glue the rest together."""
