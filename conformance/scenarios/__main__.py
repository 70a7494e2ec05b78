"""`python -m tidemark.conformance.scenarios` rewrites conformance/schemas/scenario.schema.json from the
format."""

from tidemark.conformance.scenarios.format import SCHEMA_PATH, schema_text

SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
