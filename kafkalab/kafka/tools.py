"""Kafka's own command-line tools (kafka-metadata-quorum.sh, kafka-dump-log.sh, ...) run on
a machine of the cluster, where they are on the login shell's PATH."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from kafkalab.targets import class_archive
from kafkalab.targets.cluster import InventoryCluster

# The tools kafkalab and the labs start live for seconds: C1 only and the serial GC start
# them in about half the time of the launchers' server defaults, with the same behaviour.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true"
# Shell that exports them for the tools of a script, with the release's class archive
# (AppCDS, which the kafka_common role makes) when the machine has it: a tool's start took
# 1.2 s of CPU without it, 0.7-0.8 s with it (4.3.1). Only then: a JVM told of an archive
# that is not there runs without any, even the JDK's own.
JVM_EXPORT = (
    f'o="{QUICK_JVM}"; a="${{KAFKA_HOME:-}}/{class_archive.NAME}"; '
    '[ -n "${KAFKA_HOME:-}" ] && [ -r "$a" ] && '
    'o="$o -XX:SharedArchiveFile=$a -Xlog:cds=off -Xlog:cds+dynamic=off"; '
    'export KAFKA_JVM_PERFORMANCE_OPTS="$o"; unset o a; '
)


def run(
    cluster: InventoryCluster, host: str, script: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """A shell script that runs Kafka tools on `host`, with the quick JVM settings."""
    return cluster.sh(host, JVM_EXPORT + script, timeout)


def printed(cluster: InventoryCluster, host: str, timeout: float = 60) -> Callable[[str], str]:
    """What a script of Kafka tools prints on `host` ("" when it takes over `timeout`): how
    kafkalab.kafka.quorum runs kafka-metadata-quorum.sh."""

    def run_script(script: str) -> str:
        try:
            return run(cluster, host, script, timeout).stdout
        except subprocess.TimeoutExpired:
            return ""

    return run_script
