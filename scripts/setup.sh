#!/usr/bin/env bash
# Installs what the default lab (`make up`) needs on a fresh Debian/Ubuntu machine, and
# nothing twice: Debian packages (apt), the Python environment (.venv, pip), the Kafka
# artifact (Maven Central, or a tarball a trainer put into the cache) and the base image.
# Spark and the VM box are not fetched here: `kafkalab up --with spark` and `vagrant up`
# fetch them when a lab asks, and `make test` fetches them before its tests (setup-test).
# Offline classroom: with the packages present and the cache pre-filled it needs no network.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(systemd-container mmdebstrap iproute2 openssh-client openjdk-17-jdk-headless maven python3-venv)

# shellcheck source=lib/common.sh
. scripts/lib/common.sh

need_root "kafkalab needs root (network namespaces, machines): run with sudo"
apt_install "${APT_PACKAGES[@]}"

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.kafkalab-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  say "installing Python packages into .venv (pyproject.toml)"
  .venv/bin/pip install -q -U pip
  # One line per package as pip collects it: the first install takes minutes.
  .venv/bin/pip install --progress-bar off -e '.[dev]' |
    awk '/^Collecting/ { print "  [" ++n "] " $0; fflush() } /^Successfully installed/ { print "  " $0 }'
  touch "$stamp"
fi
# Byte-compile the project's own modules (pip does it for the packages it installs). Where
# PYTHONDONTWRITEBYTECODE is set, Python never writes them itself, and every kafkalab command,
# lab script and test process compiled the ~90 modules it imports again: 0.35 s of each
# kafkalab run on this machine. Up-to-date files are skipped; an edited module is compiled
# from source (the stale copy is ignored) until the next setup.
.venv/bin/python -m compileall -q kafkalab labs spark bench tests >/dev/null

say "fetching what the default lab needs (Kafka, base image) into the cache"
.venv/bin/kafkalab fetch
