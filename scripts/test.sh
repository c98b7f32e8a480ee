#!/usr/bin/env bash
# `make test`: the whole suite, in two streams where that leaves little idle.
#
# 1. The tiers on the session's two 3-machine labs (cluster, failover, labs): one pytest
#    session, which keeps the two cores only ~60 % busy (a suite run's CPU, read per
#    process and per machine cgroup: 2,770 CPU-s in 2,250 s): failover waits for session
#    timeouts and elections, the labs for their steps. Beside it, in a second pytest
#    session, the tiers that bring their own labs or none: streaming (its Spark lab),
#    targets (its own machines), then unit, lint, machines and molecule.
# 2. Then the VM smoke alone: under TCG the VM's one vCPU is one host thread, and anything
#    beside it slows its boot and provisioning (435 s alone, 646 s beside the side tiers).
#
# The second session's output is kept and shown after the first's.
# Arguments go to every pytest run (e.g. -x, -k). The exit status is the first failure's.
set -uo pipefail
cd "$(dirname "$0")/.."

PYTEST=(.venv/bin/pytest)
SIDE=(tests/streaming tests/targets tests/unit tests/lint tests/machines tests/molecule)
status=0

note() { printf '\n\033[1;36m•\033[0m %s\n' "$*"; }
keep() { # the first non-zero status wins
  if [ "$status" -eq 0 ] && [ "$1" -ne 0 ]; then status=$1; fi
}

side_log=$(mktemp "${TMPDIR:-/tmp}/kafkalab-test-side.XXXXXX")
trap 'rm -f "$side_log"' EXIT
note "make test, stream 1 of 2: the tiers on the session labs, beside ${SIDE[*]} (their output follows)"
ignore=()
for tier in "${SIDE[@]}" tests/vm; do ignore+=("--ignore=$tier"); done
# No cache plugin in the side run: two pytest sessions would write one .pytest_cache.
# `trap - INT`: bash starts a background command with SIGINT ignored, and a pytest that
# ignores it would go on (and keep its labs) after a Ctrl-C stopped the rest of make test.
( trap - INT; exec "${PYTEST[@]}" -p no:cacheprovider "${SIDE[@]}" "$@" ) >"$side_log" 2>&1 &
side=$!
"${PYTEST[@]}" tests "${ignore[@]}" "$@"
keep $?
wait "$side"
side_status=$?
note "make test: ${SIDE[*]} (run beside the session labs' tiers)"
cat "$side_log"
keep "$side_status"

note "make test, stream 2 of 2: the VM smoke"
"${PYTEST[@]}" tests/vm "$@"
keep $?
exit "$status"
