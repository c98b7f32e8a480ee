"""A real VM: the box, `vagrant up` with the Vagrantfile's Ansible provisioner, testinfra.

The host checks are the embedded target's own: tests/infra runs against the inventory
Vagrant's Ansible provisioner generated (`--hosts=all --ansible-inventory=...`), as the
cluster tier runs it against the embedded lab's. The tests below add what only a VM
shows: that inventory has the contract's shape, a topic works end to end, and kafkalab's
verbs (a lab, a fault) work on the VM through that inventory.

`make test` runs the smoke: the inventory, the service, one JVM tool on the VM and the topic
through Python clients, a fault. Every JVM tool runs ~30 s under emulation, so the console
tools, lab 01's walk and the testinfra tier run with --vm-full (`make test-vm`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path
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


def test_libvirt_probes_qemu_once(vm_lab: Any) -> None:
    """libvirt keeps its probe of QEMU: asking for the domain capabilities again rewrites no
    file of its cache. With /dev/kvm root's alone (no udev), every such call probed QEMU again
    (4 to 64 s each: `vagrant up` spent over 2 min in them); scripts/setup-vm.sh gives it to
    group kvm as udev would."""
    cache = Path("/var/cache/libvirt/qemu/capabilities")

    def saved() -> dict[str, int]:
        return {p.name: p.stat().st_mtime_ns for p in cache.glob("*.xml")}

    before = saved()
    asked = subprocess.run(
        ["virsh", "-c", "qemu:///system", "domcapabilities", "--virttype", "qemu"],
        capture_output=True,
        text=True,
    )
    assert asked.returncode == 0, asked.stderr
    assert before, f"no probe of QEMU cached in {cache}"
    assert saved() == before, "libvirt probed QEMU again: run scripts/setup-vm.sh (/dev/kvm)"


@pytest.fixture
def kafka1(vm_lab: Any) -> Any:
    import testinfra

    return testinfra.get_host(f"ansible://kafka1?ansible_inventory={vm_lab.vagrant_inventory}")


def test_kafka_service_active_and_listening(kafka1: Any, vm_lab: Any) -> None:
    kafka = kafka1.service("kafka")
    assert kafka.is_running
    assert kafka.is_enabled
    hostvars = vm_lab.hosts["kafka1"]
    address = hostvars["kafkalab_address"]
    # kafka_broker_localhost (default on): every address, the lab one and the VM's localhost
    broker = "0.0.0.0" if hostvars.get("kafka_broker_localhost", True) else address
    assert kafka1.socket(f"tcp://{broker}:9092").is_listening
    assert kafka1.socket(f"tcp://{address}:9093").is_listening  # its KRaft controller


def test_private_network_address(kafka1: Any, vm_lab: Any) -> None:
    assert vm_lab.hosts["kafka1"]["kafkalab_address"] in kafka1.interface("eth1").addresses


def _tools(host: Any) -> Any:
    """Kafka's tools on the VM from a login shell, as a learner types them (tools on PATH)."""

    def run(cmd: str) -> Any:
        return host.run(f"bash -lc {shlex.quote(f'LOG_DIR=/tmp/kafkalab-tools {cmd}')}")

    return run


def test_topic_create_produce_consume(kafka1: Any, vm_lab: Any) -> None:
    """The smoke's end-to-end topic: kafka-topics on the VM creates it (one JVM tool under
    emulation, ~30 s), Python clients from this host (inside the VM network's namespace)
    write with acks=all and read back; the broker's own end offset says what it stored."""
    from tests import client

    bootstrap = f"{vm_lab.hosts['kafka1']['kafkalab_address']}:9092"
    topic = f"vm-{uuid.uuid4().hex[:8]}"
    created = _tools(kafka1)(
        f"kafka-topics.sh --bootstrap-server {bootstrap} --create --topic {topic} --partitions 1"
    )
    assert created.rc == 0, created.stderr
    acked = client.produce_keyed(bootstrap, topic, 3)
    assert sorted(offset for _, offset, _ in acked) == [0, 1, 2]
    assert client.end_offsets(bootstrap, topic, 1) == {0: 3}
    consumed = client.consume_all(bootstrap, topic, 3, group=f"{topic}-reader")
    assert [value for *_, value in consumed] == ["0", "1", "2"]


@pytest.mark.vm_full
def test_console_tools_on_the_vm(kafka1: Any, vm_lab: Any) -> None:
    """kafka-topics, the console producer and consumer on the VM (login shell: tools on PATH),
    as the course's first pages use them."""
    run, hostvars = _tools(kafka1), vm_lab.hosts["kafka1"]
    bootstrap = f"{hostvars['kafkalab_address']}:9092"
    topic = f"vm-{uuid.uuid4().hex[:8]}"
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


# -- every verb on the VM: the inventory Vagrant wrote is the cluster (issue 12) -----------


@pytest.fixture
def kafkalab(vm_lab: Any, tmp_path: Path) -> Any:
    """kafkalab from the session's thread (inside the VMs' namespace) given `-i` with the
    inventory Vagrant wrote: nothing of the embedded target on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKALAB_STATE", "KAFKALAB_NETNS")}
    env.update(COLUMNS="200", KAFKALAB_STATE_HOME=str(tmp_path / "home"))

    def run(*args: str, code: int = 0) -> str:
        argv = [sys.executable, "-m", "kafkalab", *args, "-i", str(vm_lab.vagrant_inventory)]
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1200)
        assert proc.returncode == code, f"kafkalab {' '.join(args)}:\n{proc.stdout}{proc.stderr}"
        return proc.stdout

    return run


@pytest.mark.vm_full
def test_lab_01_start_check_solve_on_the_vm(kafkalab: Any) -> None:
    """Lab 01 on the VM: started, its check fails, the reference solution makes it pass."""
    kafkalab("lab", "start", "01")
    try:
        assert "checks not passed yet" in kafkalab("lab", "check", "01", code=1)
        assert "lab 01 passed" in kafkalab("lab", "solve", "01")
        assert "lab 01 passed" in kafkalab("lab", "check", "01")
    finally:
        kafkalab("lab", "reset", "01")


def test_fault_kill_and_heal_on_the_vm(kafkalab: Any, kafka1: Any) -> None:
    """`fault kill` stops the VM's broker through systemd over ssh and keeps it down;
    `fault heal` starts it again."""
    hold = "/run/systemd/system/kafka.service.d/kafkalab-fault.conf"
    kafkalab("fault", "kill", "kafka1")
    try:
        assert not kafka1.service("kafka").is_running
        assert kafka1.file(hold).exists
    finally:
        healed = kafkalab("fault", "heal")
    assert "kafka1: started" in healed, healed
    assert kafka1.service("kafka").is_running
    assert not kafka1.file(hold).exists
