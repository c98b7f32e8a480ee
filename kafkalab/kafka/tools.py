"""Kafka's own command-line tools (kafka-metadata-quorum.sh, kafka-dump-log.sh, ...) run on
a machine of the cluster, where they are on the login shell's PATH."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from kafkalab.targets.cluster import InventoryCluster

# The tools kafkalab and the labs start live for seconds: C1 only and the serial GC start
# them in about half the time of the launchers' server defaults, with the same behaviour.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true"


def run(
    cluster: InventoryCluster, host: str, script: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """A shell script that runs Kafka tools on `host`, with the quick JVM settings."""
    return cluster.sh(host, f"export KAFKA_JVM_PERFORMANCE_OPTS='{QUICK_JVM}'; {script}", timeout)


def printed(cluster: InventoryCluster, host: str, timeout: float = 60) -> Callable[[str], str]:
    """What a script of Kafka tools prints on `host` ("" when it takes over `timeout`): how
    kafkalab.kafka.quorum runs kafka-metadata-quorum.sh."""

    def run_script(script: str) -> str:
        try:
            return run(cluster, host, script, timeout).stdout
        except subprocess.TimeoutExpired:
            return ""

    return run_script
