# The two commands of the README. Each bootstraps .venv (and Java) first.
VENV := .venv/bin

.PHONY: run test bootstrap lint

bootstrap:
	@scripts/bootstrap.sh

# The main job: model-check the specs and run conformance on each; exit 0 only if everything holds.
run: bootstrap
	$(VENV)/tidemark verify

# The test suite, with lint and type checks. pytest's exit 5 ("no tests ran") fails the target like any other.
test: bootstrap lint
	$(VENV)/python -m pytest

lint:
	$(VENV)/ruff check .
	$(VENV)/ruff format --check .
	$(VENV)/mypy
