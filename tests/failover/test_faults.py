"""The fault commands on a real cluster: kill stays killed, isolate cuts the lab network both
ways and keeps ssh open, heal undoes it all. Each test leaves the cluster healthy for the next."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.client import create_topic
from tests.failover.helpers import healthy, wait_healthy, wait_isr

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


def can_connect(cluster, host: str, address: str, port: int = 9092) -> bool:
    """From a machine: a TCP connection to address:port within 2 s (netcat in the image)."""
    proc = cluster.kafkalab("exec", host, "--", "nc", "-z", "-w2", address, str(port), check=False)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr  # 255: ssh itself failed
    return proc.returncode == 0


def test_isolate_cuts_the_lab_network_both_ways_keeps_ssh_and_heal_reconnects(cluster):
    kafka3 = cluster.hosts["kafka3"]["kafkalab_address"]
    kafka1 = cluster.hosts["kafka1"]["kafkalab_address"]
    kafka2 = cluster.hosts["kafka2"]["kafkalab_address"]
    node3 = cluster.hosts["kafka3"]["kafka_node_id"]
    wait_healthy(cluster.bootstrap)
    create_topic(cluster.bootstrap, "isolate-isr", partitions=3, rf=3)
    wait_isr(cluster.bootstrap, "isolate-isr", node3, present=True)
    assert reachable(kafka3, 9092)
    started = time.monotonic()
    cluster.kafkalab("fault", "isolate", "kafka3")
    took = time.monotonic() - started
    try:
        assert not reachable(kafka3, 9092)  # lab side -> machine
        assert reachable(kafka3)  # ... but ssh stays open
        assert not can_connect(cluster, "kafka1", kafka3)  # another machine -> kafka3
        assert not can_connect(cluster, "kafka3", kafka1)  # kafka3 -> another machine
        assert can_connect(cluster, "kafka3", kafka3)  # itself, over loopback
        assert can_connect(cluster, "kafka1", kafka2)  # the others are untouched
        rules = cluster.kafkalab("exec", "kafka3", "--", "sudo", "nft", "list", "ruleset").stdout
        assert "table inet kafkalab_fault" in rules
        # The ISR loses kafka3 (seen from a broker on the other side only).
        wait_isr(f"{kafka1}:9092", "isolate-isr", node3, present=False)
        shrunk = time.monotonic() - started
        print(f"\nisolate: the command took {took:.1f}s, ISR shrank {shrunk:.1f}s after it began")
        # A fault through ssh reaches the isolated machine.
        assert "paused" in cluster.kafkalab("fault", "pause", "kafka3").stdout
    finally:
        out = cluster.kafkalab("fault", "heal").stdout
    assert "kafka3: reconnected, resumed" in out
    assert (
        "inet kafkalab_fault"
        not in cluster.kafkalab("exec", "kafka3", "--", "sudo", "nft", "list", "ruleset").stdout
    )
    assert reachable(kafka3, 9092)
    expand = wait_isr(cluster.bootstrap, "isolate-isr", node3, present=True)
    print(f"isolate: ISR full again {expand:.1f}s after heal returned")
    wait_healthy(cluster.bootstrap)


def broker_stopped(cluster, host: str) -> bool:
    state = cluster.kafkalab(
        "exec", host, "--", "bash", "-c",
        "ps -o stat= -p $(systemctl show -p MainPID --value kafka)",
    ).stdout  # fmt: skip
    return "T" in state


def test_pause_for_resumes_by_itself(cluster):
    started = time.monotonic()
    out = cluster.kafkalab("fault", "pause", "kafka1", "--for", "3s").stdout
    assert time.monotonic() - started >= 3
    # Timed on the machine: 3 s, not 3 s plus a second login (which on a busy host took
    # it past the broker's session timeout, and the controller fenced it).
    m = re.search(r"kafka1: broker resumed \(SIGCONT\) after ([\d.]+)s paused", out)
    assert m, out
    assert 3 <= float(m.group(1)) < 4.5
    assert not broker_stopped(cluster, "kafka1")
    wait_healthy(cluster.bootstrap)
    ok, detail = healthy(cluster.bootstrap)
    assert ok, detail


def test_an_interrupted_pause_for_still_ends_on_the_machine(cluster):
    """Ctrl-C during `pause --for`: the pause stays in force (the error says so) and the
    machine itself resumes the broker when its time is up."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkalab", "fault", "pause", "kafka2", "--for", "8s"],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(3)
    assert proc.poll() is None  # still pausing
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "fault heal" in err
    assert broker_stopped(cluster, "kafka2")  # kafkalab is gone, the pause is not
    deadline = started + 8 + 10  # its 8 s, counted from the SIGSTOP after the login
    while broker_stopped(cluster, "kafka2") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not broker_stopped(cluster, "kafka2")
    wait_healthy(cluster.bootstrap)


def test_fault_on_an_unknown_machine(cluster):
    proc = cluster.kafkalab("fault", "kill", "kafka9", check=False)
    assert proc.returncode == 2
    assert "no machine named 'kafka9'" in proc.stderr
    assert "Traceback" not in proc.stderr
