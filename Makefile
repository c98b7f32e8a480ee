# The two commands of README.md: `make up` and `make test`.
.PHONY: setup up test test-fast lint down

setup:
	./scripts/setup.sh

up: setup
	.venv/bin/kafkalab up

test: setup
	.venv/bin/pytest

test-fast: setup
	.venv/bin/pytest -m "not cluster and not molecule and not slow"

lint:
	.venv/bin/ruff check kafkalab tests bench labs spark
	cd ansible && ../.venv/bin/ansible-lint --profile production

down:
	.venv/bin/kafkalab down
