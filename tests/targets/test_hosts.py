"""`kafkalab up -i` on hosts kafkalab did not provision: embedded machines booted without
provisioning (`up --no-provision`) and addressed only through a static inventory (the lab
addresses, user vagrant and the machines' key; nothing about a namespace), with kafkalab run
from inside the namespace as Ansible would be on a controller that reaches the hosts.

One set of machines for all of it: bad input first (a host var removed, an unreachable host)
is refused with its one line while the machines are still bare, then the first run serves an
RF-3 topic, and a second run changes nothing."""

from __future__ import annotations

import copy
import ipaddress
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafkalab import topology
from kafkalab.paths import repo_root
from kafkalab.targets import hosts, netns
from kafkalab.targets.embedded import EmbeddedCluster
from tests import client, host_side
from tests.conftest import PREFIX

pytestmark = pytest.mark.cluster

NS = f"{PREFIX}-h"
STATE = repo_root() / ".kafkalab-test" / NS
ENV = dict(os.environ, KAFKALAB_STATE=str(STATE), KAFKALAB_NETNS=NS, COLUMNS="200")
TOPIC = "hosts-rf3"
RECORDS = 300


def kafkalab(*args: str, inside: bool = False) -> subprocess.CompletedProcess[str]:
    """The command line with this test's cluster; `inside`: run from within its namespace."""
    if not inside:  # up and down are the host's to run, whichever lab the main thread is in
        return host_side.kafkalab(ENV, *args, check=False)
    cmd = [sys.executable, "-m", "kafkalab", *args]
    return subprocess.run(netns.wrap(NS, cmd), capture_output=True, text=True, env=ENV)


@pytest.fixture(scope="module")
def machines() -> Iterator[topology.Topology]:
    """Three KRaft brokers' machines, booted and not provisioned."""
    kafkalab("down", "--purge")  # leftovers of an interrupted run
    try:
        up = kafkalab("up", "--no-provision")
        assert up.returncode == 0, up.stdout + up.stderr
        booted = EmbeddedCluster(STATE).topology()
        assert booted is not None
        yield booted
    finally:
        kafkalab("down", "--purge")


@pytest.fixture(scope="module")
def static(machines: topology.Topology, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The machines as anyone's hosts: written by hand, not kafkalab's generated inventory."""
    brokers = {
        m.name: {
            "ansible_host": m.address,
            "kafkalab_address": m.address,
            "kafka_node_id": m.node_id,
        }
        for m in machines.machines()
    }
    data = {
        "all": {
            "vars": {
                "ansible_user": "vagrant",
                "ansible_become": True,
                "ansible_python_interpreter": "/usr/bin/python3",
                "ansible_ssh_private_key_file": str(STATE / "ssh" / "id_ed25519"),
                "ansible_ssh_common_args": (
                    "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
                ),
                "kafka_mode": "kraft",
                "kafka_version": machines.kafka_version,
            },
            "children": {"kafka_broker": {"hosts": brokers}},
        }
    }
    path = tmp_path_factory.mktemp("hosts") / "static.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    yield path
    for written in path.parent.glob("*.yml"):
        shutil.rmtree(hosts.work_dir(written), ignore_errors=True)


def variant(path: Path, name: str, change: Any) -> Path:
    data = yaml.safe_load(path.read_text())
    changed = copy.deepcopy(data)
    change(changed["all"]["children"]["kafka_broker"]["hosts"])
    out = path.with_name(f"{name}.yml")
    out.write_text(yaml.safe_dump(changed, sort_keys=False))
    return out


def etc_hosts(name: str) -> str:
    proc = kafkalab("exec", name, "--", "cat", "/etc/hosts")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_bad_input_is_refused_with_one_line_before_any_host_is_touched(
    machines: topology.Topology, static: Path
) -> None:
    before = {name: etc_hosts(name) for name in ("kafka1", "kafka2", "kafka3")}
    assert not any("managed by ansible" in text for text in before.values())  # bare machines
    unused = str(ipaddress.ip_network(machines.network).network_address + 99)

    def drop_node_id(brokers: dict[str, Any]) -> None:
        del brokers["kafka2"]["kafka_node_id"]

    def add_unused_address(brokers: dict[str, Any]) -> None:
        # on the lab network, and nobody there: ssh gets no route to it
        brokers["kafka4"] = {"ansible_host": unused, "kafkalab_address": unused, "kafka_node_id": 4}

    cases = [
        (variant(static, "no-node-id", drop_node_id), "kafka2: kafka_node_id is missing"),
        (variant(static, "unreachable", add_unused_address), "kafka4: unreachable by ssh: ssh: "),
    ]
    for path, line in cases:
        started = time.monotonic()
        proc = kafkalab("up", "-i", str(path), inside=True)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        problems = proc.stderr.splitlines()[1:]
        assert len(problems) == 1 and problems[0].strip().startswith(line), proc.stderr
        assert "provisioning" not in proc.stdout
        print(f"\n{path.name}: refused in {time.monotonic() - started:.0f}s: {problems[0].strip()}")
    assert {name: etc_hosts(name) for name in before} == before
    assert not (hosts.work_dir(cases[0][0]) / "provision.log").exists()


def test_up_provisions_the_hosts_and_a_second_run_changes_nothing(
    machines: topology.Topology, static: Path
) -> None:
    started = time.monotonic()
    first = kafkalab("up", "-i", str(static), inside=True)
    first_seconds = time.monotonic() - started
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr
    assert "provisioning with ansible/site.yml" in first.stdout
    assert "Check that every broker is registered and every partition in sync" in first.stdout
    changed = re.search(
        r"cluster up on your hosts \(kraft, 3 brokers\) in \d+s, changed=(\d+)", first.stdout
    )
    assert changed and int(changed[1]) > 0, first.stdout[-2000:]

    bootstrap = ",".join(f"{m.address}:9092" for m in machines.machines())
    with netns.inside(NS):
        client.create_topic(bootstrap, TOPIC, partitions=3, rf=3)
        assert all(sorted(p.isr) == [1, 2, 3] for p in client.describe(bootstrap, TOPIC))
        assert len(client.produce_keyed(bootstrap, TOPIC, RECORDS)) == RECORDS
        got = client.consume_all(bootstrap, TOPIC, RECORDS, group="hosts-test")
        assert sorted(int(v) for *_, v in got) == list(range(RECORDS))

    started = time.monotonic()
    second = kafkalab("up", "-i", str(static), inside=True)
    second_seconds = time.monotonic() - started
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr
    assert re.search(r"changed=0\b", second.stdout), second.stdout[-2000:]
    print(
        f"\nup -i: first run {first_seconds:.0f}s changed={changed[1]}, "
        f"second run {second_seconds:.0f}s changed=0"
    )


def test_down_leaves_the_hosts_alone(static: Path) -> None:
    proc = kafkalab("down", "--purge", "-i", str(static), inside=True)
    assert proc.returncode == 2
    assert "never stops or wipes hosts it did not make" in proc.stderr
    status = kafkalab("exec", "kafka1", "--", "systemctl", "is-active", "kafka")
    assert status.stdout.strip() == "active"
