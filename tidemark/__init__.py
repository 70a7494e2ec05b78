"""tidemark: the distribution's top-level package.

In the repository, impl/, conformance/ and the folders that ship as package data stay at the top level;
this folder links them under the names they are imported by (tidemark.impl, tidemark.conformance) and
installed by (pyproject.toml's package-dir mapping). conformance/resources.py finds the data (spec/,
scenarios/, tests/models/ as models/) in a checkout or in the installed package.
"""
