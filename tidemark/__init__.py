"""tidemark: the installed distribution's top-level package.

In the repository this folder holds links to the folders that ship as package data (spec/, scenarios/,
tests/models/ as models/); conformance/resources.py finds them in a checkout or in an installed wheel.
"""
