"""inventory/example.yml, the inventory a user copies for their own hosts, keeps the
contract of docs/DESIGN.md: the groups and host variables kafkalab generates for its
machines, and what the roles' argument specs ask for (site.yml's first play, run on it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from kafkalab import inventory, topology
from kafkalab.paths import repo_root

BIN = Path(sys.executable).parent
EXAMPLE = repo_root() / "inventory" / "example.yml"
# all.vars every inventory of the contract has (the embedded one adds its ssh key and args)
CONTRACT_VARS = {
    "ansible_user",
    "ansible_become",
    "ansible_python_interpreter",
    "kafka_mode",
    "kafka_version",
    "kafka_scala_version",
    "kafka_archive",
}


def listed(path: Path) -> dict[str, Any]:
    """The inventory as Ansible reads it."""
    proc = subprocess.run(
        [str(BIN / "ansible-inventory"), "-i", str(path), "--list"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def example() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    return data


def argspec_default(role: str, name: str) -> Any:
    path = repo_root() / "ansible" / "roles" / role / "meta" / "argument_specs.yml"
    return yaml.safe_load(path.read_text())["argument_specs"]["main"]["options"][name]["default"]


def test_ansible_reads_brokers_with_their_contract_variables() -> None:
    data = listed(EXAMPLE)
    brokers = data["kafka_broker"]["hosts"]
    assert brokers
    hostvars = data["_meta"]["hostvars"]
    node_ids = []
    for host in brokers:
        hv = hostvars[host]
        assert set(hv) >= CONTRACT_VARS, (host, CONTRACT_VARS - set(hv))
        assert hv["kafkalab_address"] and hv["ansible_host"], host
        assert isinstance(hv["kafka_node_id"], int) and hv["kafka_node_id"] > 0, host
        node_ids.append(hv["kafka_node_id"])
        assert hv["ansible_become"] is True  # a user with sudo, as the roles need root
    assert len(set(node_ids)) == len(node_ids)
    assert {"kafka_controller", "zookeeper"} <= set(data["all"]["children"])


def test_same_shape_as_the_inventory_kafkalab_generates(tmp_path: Path) -> None:
    topo = topology.load(tmp_path / "none.yml", overrides={"brokers": 3})
    generated = inventory.build(topo, {}, Path("/cache/kafka.tgz"))
    mine = example()["all"]
    # every lab-wide variable kafkalab sets, but its own heap sizing of the lab machines
    assert set(generated["all"]["vars"]) - {"kafka_heap_opts"} <= set(mine["vars"])
    for group, child in generated["all"]["children"].items():
        assert group in mine["children"], group
        theirs = {name: set(hv) for name, hv in child["hosts"].items()}
        ours = {name: set(hv or {}) for name, hv in mine["children"][group]["hosts"].items()}
        assert ours == theirs, group


def test_versions_are_the_kafka_roles_defaults() -> None:
    mine = example()["all"]["vars"]
    assert mine["kafka_mode"] == argspec_default("kafka", "kafka_mode")
    assert mine["kafka_version"] == argspec_default("kafka", "kafka_version")
    assert mine["kafka_scala_version"] == argspec_default("kafka", "kafka_scala_version")
    assert mine["kafka_archive"].endswith(
        f"/kafka_{mine['kafka_scala_version']}-{mine['kafka_version']}.tgz"
    )


def validate(tmp_path: Path, inventory_path: Path) -> subprocess.CompletedProcess[str]:
    """Run site.yml's first play (the roles' argspecs against the inventory: no host is
    contacted) on an inventory."""
    ansible = repo_root() / "ansible"
    plays = yaml.safe_load((ansible / "site.yml").read_text())
    assert "Validate the inventory" in plays[0]["name"]
    playbook = tmp_path / "validate.yml"
    playbook.write_text(yaml.safe_dump(plays[:1], sort_keys=False))
    (tmp_path / "roles").symlink_to(ansible / "roles")  # the play reads roles/<role>/meta/
    return subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(inventory_path), str(playbook)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )


def test_site_yml_accepts_the_example(tmp_path: Path) -> None:
    proc = validate(tmp_path, EXAMPLE)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout


def test_site_yml_refuses_a_typo_in_a_copy_of_it(tmp_path: Path) -> None:
    """The check the example is run through bites: a mistyped mode stops it."""
    copy = tmp_path / "mycluster.yml"
    copy.write_text(EXAMPLE.read_text().replace("kafka_mode: kraft", "kafka_mode: kraftt"))
    proc = validate(tmp_path, copy)
    assert proc.returncode != 0
    assert "kafka_mode" in proc.stdout and "kraftt" in proc.stdout, proc.stdout[-3000:]
