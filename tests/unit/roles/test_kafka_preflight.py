"""The kafka role's preflight checks (tasks/preflight.yml), run by ansible-playbook with a
local connection: each host of a made-up inventory wrong in one way fails with the line that
names what is wrong, and a right one passes; then the cluster checks, one inventory each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from kafkalab.paths import repo_root
from kafkalab.targets import provision

PLAY = """
- hosts: kafka_broker
  gather_facts: false
  tasks:
    - name: Run the kafka role's preflight
      ansible.builtin.include_role:
        name: kafka
        tasks_from: preflight
    - name: Passed
      ansible.builtin.debug:
        msg: "preflight passed on {{ inventory_hostname }}"
"""


def preflight(tmp_path: Path, brokers: dict[str, dict[str, Any]], **common: Any) -> str:
    """ansible-playbook's output for the preflight of `brokers` (host -> its vars)."""
    inventory = {
        "all": {
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "kafka_mode": "kraft",
                **common,
            },
            "children": {"kafka_broker": {"hosts": brokers}},
        }
    }
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(PLAY)
    env = {
        **provision.ansible_env(),
        **provision.strategy_env({}),
        "ANSIBLE_ROLES_PATH": str(repo_root() / "ansible" / "roles"),
        "ANSIBLE_LOCALHOST_WARNING": "0",
    }
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "hosts.yml", "play.yml"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    return proc.stdout + proc.stderr


def failed_with(out: str, host: str) -> str:
    """The message of `host`'s failed task on one line ('' when it did not fail): the
    yaml callback prints it over the indented lines after `fatal: [host]`."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"fatal: [{host}]"):
            block = [line]
            for more in lines[i + 1 :]:
                if not more.startswith(" "):
                    break
                block.append(more)
            return " ".join(" ".join(block).split())
    return ""


def test_each_node_fails_with_what_is_wrong_with_it(tmp_path):
    migrating = tmp_path / "kraft-controller"
    migrating.mkdir()
    (migrating / "meta.properties").write_text("node.id=3004\n")
    out = preflight(
        tmp_path,
        {
            "good": {"kafkalab_address": "10.77.0.11", "kafka_node_id": 1},
            "no_id": {"kafkalab_address": "10.77.0.12", "kafka_node_id": 0},
            "listener": {
                "kafkalab_address": "10.77.0.13",
                "kafka_node_id": 3,
                "kafka_host_listener_port": 9092,
                "kafka_host_listener_advertised": "localhost:19092",
            },
            # ZooKeeper mode, its migration's controller storage there (lab 15, by hand)
            "migrating": {
                "kafkalab_address": "10.77.0.14",
                "kafka_node_id": 4,
                "kafka_mode": "zookeeper",
                "kafka_version": "3.9.2",
                "kafka_migration_data_dir": str(migrating),
            },
        },
    )
    assert "preflight passed on good" in out, out[-3000:]
    assert failed_with(out, "good") == ""
    assert "no_id needs kafkalab_address and a positive kafka_node_id" in failed_with(out, "no_id")
    said = failed_with(out, "listener")
    assert "listener: kafka_host_listener_port 9092 needs" in said, out[-3000:]
    assert "a port of its own" in said
    said = failed_with(out, "migrating")
    assert "migrating is being migrated from ZooKeeper to KRaft by hand" in said, out[-3000:]
    assert "kafkalab down --purge" in said


def test_the_cluster_checks_name_the_mode_and_the_layout(tmp_path):
    node = {"kafkalab_address": "10.77.0.11", "kafka_node_id": 1}
    out = preflight(tmp_path, {"kafka1": node}, kafka_mode="zookeeper", kafka_version="4.1.1")
    assert "Kafka 4.1.1 has no ZooKeeper mode (Kafka 4.0 removed ZooKeeper)" in failed_with(
        out, "kafka1"
    ), out[-3000:]
    out = preflight(
        tmp_path, {"kafka1": node, "kafka2": {**node, "kafkalab_address": "10.77.0.12"}}
    )
    said = failed_with(out, "kafka1")
    assert "unique kafka_node_id values" in said, out[-3000:]
    assert "preflight passed" not in out
