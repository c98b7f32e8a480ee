# The two commands of README.md: `make up` and `make test`.
.PHONY: setup setup-vm up test test-fast test-vm lint down

setup:
	./scripts/setup.sh

setup-vm: setup
	./scripts/setup-vm.sh

up: setup
	.venv/bin/kafkalab up

test: setup setup-vm
	.venv/bin/pytest

test-vm: setup-vm
	.venv/bin/pytest tests/vm --vm-full

test-fast: setup
	.venv/bin/pytest -m "not cluster and not molecule and not slow and not vm"

lint:
	.venv/bin/ruff check kafkalab tests bench labs spark
	cd ansible && ../.venv/bin/ansible-lint --profile production

down:
	.venv/bin/kafkalab down
