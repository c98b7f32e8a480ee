# The two commands of README.md: `make up` and `make test`, as root or as a user with sudo.
# The steps that need root (apt-get, network namespaces, machines) run under sudo only
# when make itself is not root: a root shell without sudo works as written too.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: setup setup-vm setup-test up test test-fast test-vm lint down

# What `make up` needs: Debian packages, .venv, the Kafka artifact and the base image.
setup:
	$(SUDO) ./scripts/setup.sh

# The VM tier's tools and the kafkalab box.
setup-vm: setup
	$(SUDO) ./scripts/setup-vm.sh

# Everything `make test` uses, fetched before pytest: also Spark (streaming tier), lab 10's
# Kafka Streams application, the box, and the ZooKeeper tiers' Kafka 3.9.
setup-test: setup setup-vm
	$(SUDO) .venv/bin/kafkalab fetch --with spark --streams
	$(SUDO) .venv/bin/kafkalab fetch --mode zookeeper

up: setup
	$(SUDO) .venv/bin/kafkalab up

# The suite in two streams (scripts/test.sh says which tiers run side by side, and why).
test: setup-test
	$(SUDO) ./scripts/test.sh

test-vm: setup-vm
	$(SUDO) .venv/bin/pytest tests/vm --vm-full

test-fast: setup
	.venv/bin/pytest -m "not cluster and not molecule and not slow and not vm"

lint:
	.venv/bin/ruff check kafkalab tests bench labs spark scripts
	cd ansible && ../.venv/bin/ansible-lint --profile production

down:
	$(SUDO) .venv/bin/kafkalab down
