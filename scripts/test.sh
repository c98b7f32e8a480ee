#!/usr/bin/env bash
# `make test`: the whole suite, in two streams where that leaves nothing idle.
#
# 1. The tiers that run 3-machine labs (cluster, failover, labs, streaming, targets): one
#    pytest session, on both cores. Its labs and brokers keep the machine ~75-90 % busy.
# 2. Then the VM smoke beside the unit, lint, machines and molecule tiers. Under TCG the
#    VM's one vCPU is one host thread, so the VM tier keeps one core busy and leaves the
#    other idle; the unit and lint tiers are one Python process, the machines tier waits on
#    the disk (its boots follow a dropped page cache), and molecule's scenarios are one
#    machine each. Side by side they take about the VM tier's time.
#    The side stream's output is kept and shown after the VM tier's.
#
# Arguments go to every pytest run (e.g. -x, -k). The exit status is the first failure's.
set -uo pipefail
cd "$(dirname "$0")/.."

PYTEST=(.venv/bin/pytest)
SIDE=(tests/unit tests/lint tests/machines tests/molecule)
status=0

note() { printf '\n\033[1;36m•\033[0m %s\n' "$*"; }
keep() { # the first non-zero status wins
  if [ "$status" -eq 0 ] && [ "$1" -ne 0 ]; then status=$1; fi
}

note "make test, stream 1 of 2: the tiers with embedded labs"
ignore=()
for tier in "${SIDE[@]}" tests/vm; do ignore+=("--ignore=$tier"); done
"${PYTEST[@]}" tests "${ignore[@]}" "$@"
keep $?

side_log=$(mktemp "${TMPDIR:-/tmp}/kafkalab-test-side.XXXXXX")
trap 'rm -f "$side_log"' EXIT
note "make test, stream 2 of 2: the VM smoke, beside ${SIDE[*]} (their output follows)"
# No cache plugin in the side run: two pytest sessions would write one .pytest_cache.
"${PYTEST[@]}" -p no:cacheprovider "${SIDE[@]}" "$@" >"$side_log" 2>&1 &
side=$!
"${PYTEST[@]}" tests/vm "$@"
keep $?
wait "$side"
side_status=$?
note "make test: ${SIDE[*]} (run beside the VM smoke)"
cat "$side_log"
keep "$side_status"
exit "$status"
