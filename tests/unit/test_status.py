"""`kafkalab status` on a cluster kafkalab does not control: it says which target is in
use and what answers over ssh (a host on loopback whose ssh port is closed: unreachable)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_status_names_the_inventory_and_what_does_not_answer(tmp_path: Path) -> None:
    inventory = tmp_path / "mine.yml"
    inventory.write_text(
        "all:\n  vars: {kafka_mode: kraft, kafka_version: 3.9.2, ansible_user: nobody}\n"
        "  children:\n    kafka_broker:\n      hosts:\n"
        f"        kafka1: {{ansible_host: 127.0.0.1, ansible_port: {closed_port()}, "
        "kafkalab_address: 127.0.0.1, kafka_node_id: 1}\n"
    )
    env = dict(os.environ, COLUMNS="400", KAFKALAB_STATE_HOME=str(tmp_path / "home"))
    env["TMPDIR"] = str(tmp_path)  # its ssh socket dir goes there, not to /tmp
    run = [sys.executable, "-m", "kafkalab", "status", "-i", str(inventory)]
    table = subprocess.run(run, capture_output=True, text=True, env=env)
    assert table.returncode == 0, table.stderr
    assert f"hosts of {inventory} (kraft)" in table.stdout
    assert "unreachable" in table.stdout
    data = json.loads(subprocess.run([*run, "--json"], capture_output=True, env=env).stdout)
    assert data["target"]["target"] == "hosts"
    assert data["target"]["where"] == str(inventory) and data["target"]["netns"] is None
    assert data["machines"][0]["machine"] == "unreachable"
    assert data["machines"][0]["services"] == {"kafka": "unreachable"}
    assert data["lab"]["forwarded"] == {}  # your own hosts: reached at their addresses
    assert "from this host" not in table.stdout


def test_status_says_what_this_host_reaches_through_the_forwarded_ports() -> None:
    from kafkalab.cli.cluster import forwarded_lines

    forwarded = {
        "kafka1": "localhost:9092",
        "kafka2": "localhost:9093",
        "spark master UI": "http://127.0.0.1:8080",
    }
    assert forwarded_lines(forwarded) == [
        "from this host: bootstrap localhost:9092 (brokers: localhost:9092,localhost:9093)",
        "from this host: spark master UI http://127.0.0.1:8080",
    ]
    assert forwarded_lines({}) == []  # no forwarder running: nothing promised
