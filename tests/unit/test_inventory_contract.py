"""inventory.check_contract: every way an inventory of your own hosts breaks the contract of
docs/DESIGN.md is one line that names the host (or the group, or `all`) and what is
missing; an inventory that keeps it (generated, example.yml) has no line."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafkalab import inventory, topology
from kafkalab.paths import repo_root

EXAMPLE = repo_root() / "inventory" / "example.yml"


def generated(**overrides: Any) -> dict[str, Any]:
    topo = topology.load(Path("/nonexistent/cluster.yml"), overrides=overrides)
    return inventory.build(topo, {"ansible_user": "vagrant"}, None)


def problems(data: dict[str, Any]) -> list[str]:
    return inventory.check_contract(inventory.Listing.from_data(data))


def hosts_of(data: dict[str, Any], group: str) -> dict[str, Any]:
    hosts: dict[str, Any] = data["all"]["children"][group]["hosts"]
    return hosts


def one_line(data: dict[str, Any]) -> str:
    found = problems(data)
    assert len(found) == 1, found
    assert "\n" not in found[0]
    return found[0]


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"mode": "zookeeper"},
        {"controllers": 3},
        {"brokers": 1, "extra_hosts": ["spark", "ksqldb"]},
    ],
)
def test_generated_inventories_keep_the_contract(overrides: dict[str, Any]) -> None:
    assert problems(generated(**overrides)) == []


def test_example_keeps_it_as_ansible_reads_it() -> None:
    """The same listing whether Ansible reads the file or kafkalab its YAML."""
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(EXAMPLE), "--list"],
        capture_output=True,
        text=True,
        check=True,
    )
    by_ansible = inventory.Listing.from_ansible(json.loads(proc.stdout))
    by_us = inventory.Listing.from_data(yaml.safe_load(EXAMPLE.read_text()))
    assert by_ansible.hostvars == by_us.hostvars
    assert by_ansible.hosts_of("kafka_broker") == by_us.hosts_of("kafka_broker")
    assert inventory.check_contract(by_ansible) == []


@pytest.mark.parametrize(
    ("group", "host", "var", "expected"),
    [
        ("kafka_broker", "kafka2", "kafkalab_address", "kafka2: kafkalab_address is missing"),
        ("kafka_broker", "kafka3", "kafka_node_id", "kafka3: kafka_node_id is missing"),
    ],
)
def test_a_missing_host_var(group: str, host: str, var: str, expected: str) -> None:
    data = generated()
    del hosts_of(data, group)[host][var]
    assert one_line(data).startswith(expected)


def test_a_missing_zookeeper_myid() -> None:
    data = generated(mode="zookeeper")
    del hosts_of(data, "zookeeper")["kafka2"]["zookeeper_myid"]
    assert one_line(data).startswith("kafka2: zookeeper_myid is missing")


def test_a_dedicated_controller_without_a_node_id() -> None:
    data = generated(controllers=3)
    del hosts_of(data, "kafka_controller")["controller2"]["kafka_node_id"]
    assert one_line(data).startswith("controller2: kafka_node_id is missing")


@pytest.mark.parametrize(
    ("var", "value", "expected"),
    [
        ("kafka_node_id", 0, "kafka1: kafka_node_id must be a positive whole number (got 0)"),
        ("kafka_node_id", "1", "kafka1: kafka_node_id must be a positive whole number (got '1')"),
        ("kafka_node_id", True, "kafka1: kafka_node_id must be a positive whole number (got True)"),
        ("kafkalab_address", "kafka1.lan", "kafka1: kafkalab_address 'kafka1.lan' is not an IP"),
    ],
)
def test_a_bad_host_var(var: str, value: Any, expected: str) -> None:
    data = generated()
    hosts_of(data, "kafka_broker")["kafka1"][var] = value
    assert one_line(data).startswith(expected)


def test_a_zookeeper_myid_out_of_range() -> None:
    data = generated(mode="zookeeper")
    hosts_of(data, "zookeeper")["kafka3"]["zookeeper_myid"] = 256
    assert one_line(data) == (
        "kafka3: zookeeper_myid must be a whole number from 1 to 255 (got 256)"
    )


@pytest.mark.parametrize(
    ("group", "var", "mode"),
    [
        ("kafka_broker", "kafka_node_id", "kraft"),
        ("kafka_broker", "kafkalab_address", "kraft"),
        ("zookeeper", "zookeeper_myid", "zookeeper"),
    ],
)
def test_duplicates_name_both_hosts(group: str, var: str, mode: str) -> None:
    data = generated(mode=mode)
    hosts = hosts_of(data, group)
    hosts["kafka3"][var] = hosts["kafka1"][var]
    assert one_line(data) == f"kafka3: {var} {hosts['kafka1'][var]} is kafka1's too"


def test_a_controller_may_not_take_a_brokers_node_id() -> None:
    data = generated(controllers=1)
    hosts_of(data, "kafka_controller")["controller1"]["kafka_node_id"] = 2
    assert one_line(data) == "controller1: kafka_node_id 2 is kafka2's too"


@pytest.mark.parametrize(
    ("var", "value", "expected"),
    [
        ("kafka_mode", "kraftt", "all: kafka_mode: Input should be 'kraft' or 'zookeeper'"),
        ("kafka_version", "3.8.0", "all: kafka_version: unknown Kafka version '3.8.0'"),
        ("kafka_version", 3.9, "all: kafka_version: Input should be a valid string (got 3.9)"),
        ("kafka_scala_version", "2.12", "all: kafka_scala_version 2.12: kafkalab's Kafka"),
    ],
)
def test_a_bad_all_var(var: str, value: Any, expected: str) -> None:
    data = generated()
    data["all"]["vars"][var] = value
    assert one_line(data).startswith(expected)


def test_zookeeper_mode_with_kafka_4_is_refused_on_the_version() -> None:
    data = generated(mode="zookeeper")
    data["all"]["vars"]["kafka_version"] = "4.3.1"
    assert one_line(data) == (
        "all: kafka_version: Kafka 4.3.1 has no ZooKeeper mode (Kafka 4.0 removed ZooKeeper):"
        " use KRaft mode, or kafka_version 3.9.2 to keep ZooKeeper"
    )


@pytest.mark.parametrize("var", ["kafka_mode", "kafka_version"])
def test_a_missing_all_var(var: str) -> None:
    data = generated()
    del data["all"]["vars"][var]
    assert one_line(data).startswith(f"all: {var} is missing")


def test_an_all_var_one_host_sets_otherwise() -> None:
    data = generated()
    hosts_of(data, "kafka_broker")["kafka2"]["kafka_version"] = "3.9.1"
    assert one_line(data) == (
        "all: kafka_version differs between hosts (kafka1 4.3.1, kafka2 3.9.1, kafka3 4.3.1); "
        "set it once in all.vars"
    )


def test_no_broker() -> None:
    data = generated(controllers=1)
    brokers = data["all"]["children"].pop("kafka_broker")
    data["all"]["children"]["other"] = brokers  # hosts elsewhere, so the line is about the group
    found = problems(data)
    assert found[0] == "kafka_broker: no hosts; the cluster needs at least one broker"


def test_zookeeper_mode_without_an_ensemble() -> None:
    data = generated(mode="zookeeper")
    del data["all"]["children"]["zookeeper"]
    assert one_line(data).startswith("zookeeper: no hosts; kafka_mode zookeeper needs")


def test_zookeeper_mode_with_a_dedicated_controller() -> None:
    data = generated(mode="zookeeper")
    data["all"]["children"]["kafka_controller"] = {
        "hosts": {"c1": {"kafkalab_address": "10.77.0.31", "kafka_node_id": 101}}
    }
    assert one_line(data).startswith("c1: a dedicated controller (kafka_controller) in ZooKeeper")


def test_kraft_mode_with_an_ensemble() -> None:
    data = generated(mode="zookeeper")
    data["all"]["vars"]["kafka_mode"] = "kraft"
    found = problems(data)
    assert found == [
        f"kafka{i}: in the zookeeper group, but kafka_mode is kraft; remove it from the group, "
        "or use kafka_mode: zookeeper"
        for i in (1, 2, 3)
    ]


def test_spark_needs_one_master_and_a_worker() -> None:
    data = generated(extra_hosts=["spark"])
    del data["all"]["children"]["spark_worker"]
    assert one_line(data) == "spark_worker: no hosts; Spark needs at least one worker"
    data = generated(extra_hosts=["spark"])
    del data["all"]["children"]["spark_master"]
    assert one_line(data) == "spark_master: Spark needs exactly one master host (now: none)"


def test_a_host_in_no_group_of_the_contract() -> None:
    data = generated()
    data["all"]["children"]["classroom"] = {"hosts": {"desk1": {"kafkalab_address": "10.0.0.9"}}}
    assert one_line(data).startswith("desk1: in none of the groups kafka_broker, ")


def test_many_problems_one_line_each_in_host_order() -> None:
    data = copy.deepcopy(generated())
    brokers = hosts_of(data, "kafka_broker")
    del brokers["kafka3"]["kafkalab_address"]
    del brokers["kafka1"]["kafka_node_id"]
    data["all"]["vars"]["kafka_mode"] = "kraftt"
    found = problems(data)
    assert [line.split(":", 1)[0] for line in found] == ["all", "kafka1", "kafka3"]
