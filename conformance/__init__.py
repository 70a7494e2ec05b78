"""Everything that connects spec/ and impl/: TLC tooling, mappings, replay, Spark jobs and the CLI."""
