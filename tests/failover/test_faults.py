"""The fault commands on a real cluster: kill stays killed, isolate cuts both ways, heal
undoes it all. Each test leaves the cluster healthy for the next."""

from __future__ import annotations

import socket
import time

import pytest

from tests.failover.helpers import healthy, wait_healthy

pytestmark = [pytest.mark.cluster, pytest.mark.parametrize("cluster", ["kraft"], indirect=True)]

RESTART_SEC = 5  # the kafka unit's RestartSec: a restart would have happened by now


def service_state(cluster, host: str) -> str:
    proc = cluster.kafkalab("exec", host, "--", "systemctl", "is-active", "kafka", check=False)
    return proc.stdout.strip()


def reachable(address: str, port: int = 22, timeout: float = 2) -> bool:
    """From the lab side (the test's main thread is in the lab namespace)."""
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


def test_kill_keeps_the_broker_down_until_heal(cluster):
    wait_healthy(cluster.bootstrap)
    out = cluster.kafkalab("fault", "kill", "kafka2").stdout
    assert "killed" in out
    assert service_state(cluster, "kafka2") != "active"
    time.sleep(RESTART_SEC + 4)
    assert service_state(cluster, "kafka2") in ("failed", "inactive")

    out = cluster.kafkalab("fault", "heal").stdout
    assert "kafka2: started" in out
    assert service_state(cluster, "kafka2") in ("active", "activating")
    wait_healthy(cluster.bootstrap)
    # The hold is gone: systemd may restart the broker again after a crash.
    dropin = cluster.kafkalab(
        "exec", "kafka2", "--", "systemctl", "show", "-p", "Restart", "kafka"
    ).stdout
    assert "Restart=on-failure" in dropin


def test_isolate_cuts_both_directions_and_heal_reconnects(cluster):
    kafka3 = cluster.hosts["kafka3"]["kafkalab_address"]
    kafka1 = cluster.hosts["kafka1"]["kafkalab_address"]
    assert reachable(kafka3)
    cluster.kafkalab("fault", "isolate", "kafka3")
    try:
        assert not reachable(kafka3)  # lab side -> machine
        assert not reachable(kafka3, 9092)
        assert reachable(kafka1)  # the others are untouched
        # machine -> lab: kafka3 cannot reach kafka1 either (seen from the lab side, its
        # sshd is cut off too, so ask a broker on the other side: kafka1 cannot reach it)
        probe = cluster.kafkalab(
            "exec",
            "kafka1",
            "--",
            "timeout",
            "3",
            "bash",
            "-c",
            f"</dev/tcp/{kafka3}/9092",
            check=False,
        )
        assert probe.returncode != 0
        # Faults through ssh say clearly that the machine is out of reach.
        proc = cluster.kafkalab("fault", "kill", "kafka3", check=False)
        assert proc.returncode == 2
        assert "cannot reach it" in proc.stderr
    finally:
        out = cluster.kafkalab("fault", "heal").stdout
    assert "kafka3: reconnected" in out
    assert reachable(kafka3)
    wait_healthy(cluster.bootstrap)


def test_pause_for_resumes_by_itself(cluster):
    started = time.monotonic()
    out = cluster.kafkalab("fault", "pause", "kafka1", "--for", "3s").stdout
    assert time.monotonic() - started >= 3
    assert "resumed" in out
    state = cluster.kafkalab(
        "exec", "kafka1", "--", "bash", "-c",
        "ps -o stat= -p $(systemctl show -p MainPID --value kafka)",
    ).stdout  # fmt: skip
    assert "T" not in state
    wait_healthy(cluster.bootstrap)
    assert healthy(cluster.bootstrap)[0]


def test_fault_on_an_unknown_machine(cluster):
    proc = cluster.kafkalab("fault", "kill", "kafka9", check=False)
    assert proc.returncode == 2
    assert "no machine named 'kafka9'" in proc.stderr
    assert "Traceback" not in proc.stderr
