"""The bug zoo: known bug classes as spec variants and implementation mutants, each caught on both
sides (entries.py runs them; the *mutants.py modules hold the mutants per protocol)."""
