"""A real VM: the box, `vagrant up` with the Vagrantfile's Ansible provisioner, testinfra.

The host checks are the embedded target's own: tests/infra runs against the inventory
Vagrant's Ansible provisioner generated (`--hosts=all --ansible-inventory=...`), as the
cluster tier runs it against the embedded lab's. The tests below add what only a VM
shows: that inventory has the contract's shape, and a topic works end to end.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.testinfra_tier import assert_testinfra_passes

pytestmark = pytest.mark.vm

CONTRACT_VARS = {
    "ansible_user",
    "ansible_become",
    "ansible_python_interpreter",
    "ansible_ssh_common_args",
    "kafka_mode",
    "kafka_version",
    "kafka_scala_version",
    "kafka_archive",
}


@pytest.mark.vm_full
def test_testinfra_tier_passes_on_the_vm(vm_lab: Any) -> None:
    assert_testinfra_passes(vm_lab.vagrant_inventory)


def test_generated_inventory_has_the_contract_shape(vm_lab: Any) -> None:
    data = vm_lab.inventory
    assert set(data["all"]["vars"]) >= CONTRACT_VARS
    assert data["all"]["vars"]["kafka_scala_version"] == "2.13"  # a string, not 2.13
    assert data["all"]["vars"]["ansible_become"] is True
    brokers = data["all"]["children"]["kafka_broker"]["hosts"]
    assert list(brokers) == ["kafka1"]
    kafka1 = brokers["kafka1"]
    assert kafka1["kafkalab_address"] == "10.77.0.11"
    assert kafka1["kafka_node_id"] == 1
    # Ansible reaches the VM over Vagrant's management network, the lab over the private one.
    assert kafka1["ansible_host"] != kafka1["kafkalab_address"]
    assert kafka1["ansible_ssh_private_key_file"].endswith("private_key")


@pytest.fixture
def kafka1(vm_lab: Any) -> Any:
    import testinfra

    return testinfra.get_host(f"ansible://kafka1?ansible_inventory={vm_lab.vagrant_inventory}")


def test_kafka_service_active_and_listening(kafka1: Any, vm_lab: Any) -> None:
    kafka = kafka1.service("kafka")
    assert kafka.is_running
    assert kafka.is_enabled
    address = vm_lab.hosts["kafka1"]["kafkalab_address"]
    assert kafka1.socket(f"tcp://{address}:9092").is_listening
    assert kafka1.socket(f"tcp://{address}:9093").is_listening  # its KRaft controller


def test_private_network_address(kafka1: Any, vm_lab: Any) -> None:
    assert vm_lab.hosts["kafka1"]["kafkalab_address"] in kafka1.interface("eth1").addresses


def test_topic_create_produce_consume(kafka1: Any, vm_lab: Any) -> None:
    """kafka-topics, the console producer and consumer on the VM (login shell: tools on PATH)."""
    host, hostvars = kafka1, vm_lab.hosts["kafka1"]
    bootstrap = f"{hostvars['kafkalab_address']}:9092"
    topic = f"vm-{uuid.uuid4().hex[:8]}"
    tools = "LOG_DIR=/tmp/kafkalab-tools"

    def run(cmd: str) -> Any:
        return host.run(f"bash -lc {_quote(f'{tools} {cmd}')}")

    created = run(
        f"kafka-topics.sh --bootstrap-server {bootstrap} --create --topic {topic} --partitions 1"
    )
    assert created.rc == 0, created.stderr
    produced = run(
        f"printf 'one\\ntwo\\nthree\\n' | kafka-console-producer.sh --bootstrap-server {bootstrap} "
        f"--topic {topic} --producer-property acks=all"
    )
    assert produced.rc == 0, produced.stderr
    # The broker's own log end offset, not the producer's word for it: three records stored.
    offsets = run(f"kafka-get-offsets.sh --bootstrap-server {bootstrap} --topic {topic}")
    assert offsets.rc == 0, offsets.stderr
    assert offsets.stdout.split() == [f"{topic}:0:3"], offsets.stdout
    consumed = run(
        f"kafka-console-consumer.sh --bootstrap-server {bootstrap} --topic {topic} "
        "--from-beginning --max-messages 3 --timeout-ms 120000"
    )
    assert consumed.rc == 0, consumed.stderr
    assert consumed.stdout.split() == ["one", "two", "three"]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
