"""The Vagrantfile defines the same machines and inventory as kafkalab's own topology code.

The Vagrantfile prints what it would define as JSON when KAFKALAB_VAGRANT_DUMP=1 (or when
plain `ruby` runs it): no Vagrant, no VM. Needs ruby (it comes with the vagrant package).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafkalab import inventory, topology
from kafkalab.artifacts import kafka_python
from kafkalab.labs.runner import too_new
from kafkalab.paths import repo_root
from kafkalab.targets import provision, vagrant
from kafkalab.topology import release

pytestmark = pytest.mark.skipif(
    shutil.which("ruby") is None, reason="ruby missing (scripts/setup-vm.sh installs vagrant)"
)

TOPOLOGIES = [
    {},
    {"brokers": 1},
    {"mode": "zookeeper"},
    {"mode": "zookeeper", "brokers": 5},
    {"brokers": 3, "controllers": 3},
    {"brokers": 2, "extra_hosts": ["spark", "ksqldb"]},
    {"brokers": 1, "extra_hosts": ["ksqldb", "spark"]},
    {"brokers": 4, "network": "10.88.0.0/24", "extra_hosts": ["ksqldb", "ksqldb"]},
    {"mode": "zookeeper", "brokers": 1, "kafka_heap_mb": 256, "memory_mb": 1024},
]


def dump(tmp_path: Path, settings: dict[str, Any], **env: str) -> dict[str, Any]:
    lab = tmp_path / "cluster.yml"
    lab.write_text(yaml.safe_dump(settings))
    environ = {"KAFKALAB_TOPOLOGY": str(lab), "KAFKALAB_CACHE": str(tmp_path / "cache"), **env}
    return vagrant.describe({**_clean_env(), **environ})


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("KAFKALAB_")}


@pytest.mark.parametrize(
    "settings", TOPOLOGIES, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default"
)
def test_machines_match_topology(tmp_path: Path, settings: dict[str, Any]) -> None:
    expected = topology.load(tmp_path / "none.yml", overrides=settings).machines()
    got = dump(tmp_path, settings)["machines"]
    assert got == [
        {"name": m.name, "address": m.address, "groups": m.groups, "node_id": m.node_id}
        for m in expected
    ]


@pytest.mark.parametrize(
    "settings", TOPOLOGIES, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default"
)
def test_inventory_matches_contract(tmp_path: Path, settings: dict[str, Any]) -> None:
    """Groups, host variables and the lab-wide variables equal inventory.build()'s."""
    topo = topology.load(tmp_path / "none.yml", overrides=settings)
    archive = tmp_path / "cache" / "artifacts" / f"kafka_2.13-{topo.kafka_version}-maven.tgz"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    connection = {
        "ansible_user": "vagrant",
        "ansible_become": True,
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
    }
    want = inventory.build(topo, connection, archive)
    got = dump(tmp_path, settings)["inventory"]
    assert got["vars"] == want["all"]["vars"]
    assert got["groups"] == {g: list(c["hosts"]) for g, c in want["all"]["children"].items()}
    want_hosts = inventory.hosts(want)
    for name, hv in got["host_vars"].items():
        expected = {
            k: v for k, v in want_hosts[name].items() if k not in ("groups", "ansible_host")
        }
        assert hv == expected


def test_official_tarball_preferred(tmp_path: Path) -> None:
    arts = tmp_path / "cache" / "artifacts"
    arts.mkdir(parents=True)
    for name in ("kafka_2.13-4.3.1-maven.tgz", "kafka_2.13-4.3.1.tgz"):
        (arts / name).write_bytes(b"")
    assert dump(tmp_path, {})["inventory"]["vars"]["kafka_archive"] == str(
        arts / "kafka_2.13-4.3.1.tgz"
    )


def test_no_archive_leaves_it_to_the_role(tmp_path: Path) -> None:
    assert "kafka_archive" not in dump(tmp_path, {})["inventory"]["vars"]
    assert "kafka_python_wheel" not in dump(tmp_path, {})["inventory"]["vars"]


def test_the_kafka_python_wheel_comes_from_the_cache(tmp_path: Path) -> None:
    wheel = kafka_python.wheel_path(tmp_path / "cache" / "artifacts")
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"")
    assert dump(tmp_path, {})["inventory"]["vars"]["kafka_python_wheel"] == str(wheel)


def test_box_from_env_or_file(tmp_path: Path) -> None:
    assert dump(tmp_path, {})["box"] == "debian/bookworm64"
    assert dump(tmp_path, {"box": "kafkalab/debian12"})["box"] == "kafkalab/debian12"
    assert (
        dump(tmp_path, {"box": "x/y"}, KAFKALAB_BOX="kafkalab/debian12")["box"]
        == "kafkalab/debian12"
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"mode": "kraftt"}, "mode: must be 'kraft' or 'zookeeper'"),
        ({"brokers": 10}, "brokers: must be 1 to 9"),
        ({"network": "8.8.8.0/24"}, "network: must be a private IPv4 network"),
        ({"network": "10.77.0.5/24"}, "network: must be a private IPv4 network"),
        ({"mode": "zookeeper", "controllers": 1}, "controllers is a KRaft setting"),
        ({"bogus": 1}, "bogus: unknown setting"),
        ({"kafka_version": "4.0.0"}, "kafka_version: supported"),
        ({"mode": "zookeeper", "kafka_version": "4.3.1"}, "Kafka 4.3.1 has no ZooKeeper mode"),
        ({"memory_mb": 1024, "kafka_heap_mb": 768}, "kafka_heap_mb: 768 is more than half"),
        ({"network": "127.0.0.0/24"}, "network: must be a private IPv4 network"),
    ],
)
def test_bad_topology_fails_in_one_line(
    tmp_path: Path, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(Exception, match=r"cluster\.yml: ") as err:
        dump(tmp_path, settings)
    assert message in str(err.value)
    # the CLI refuses the same files (except the VM-only `box` setting)
    with pytest.raises(Exception):  # noqa: B017
        topology.load(tmp_path / "none.yml", overrides=settings)


def test_root_cluster_yml_is_the_default() -> None:
    data = vagrant.describe({**_clean_env(), "KAFKALAB_CACHE": "/nonexistent"})
    assert [m["name"] for m in data["machines"]] == [m.name for m in topology.load().machines()]


def test_per_lab_vagrantfile_overrides(tmp_path: Path) -> None:
    """A lab folder's Vagrantfile sets its topology and loads the root one."""
    lab = tmp_path / "labs" / "99-test"
    lab.mkdir(parents=True)
    (lab / "Vagrantfile").write_text(
        '$kafkalab_topology = { "brokers" => 1, "mode" => "zookeeper" }\n'
        f'load "{repo_root() / "Vagrantfile"}"\n'
    )
    data = vagrant.describe({**_clean_env(), "KAFKALAB_CACHE": str(tmp_path)}, lab / "Vagrantfile")
    assert [(m["name"], m["groups"]) for m in data["machines"]] == [
        ("kafka1", ["kafka_broker", "zookeeper"])
    ]


def test_lab_vagrantfiles_bring_up_what_the_lab_needs(tmp_path: Path) -> None:
    """Every lab folder has a Vagrantfile; it renders the lab's `needs` (brokers, a mode it
    runs in) as machines the CLI's topology code agrees with."""
    labs = sorted(p for p in (repo_root() / "labs").iterdir() if (p / "lab.yml").exists())
    for lab in labs:
        path = lab / "Vagrantfile"
        assert path.exists(), (
            f"{lab.name} has no Vagrantfile (ln -s ../Vagrantfile.lab Vagrantfile in it)"
        )
        needs = (yaml.safe_load((lab / "lab.yml").read_text()) or {}).get("needs", {})
        for mode in ("kraft", "zookeeper"):
            root = tmp_path / f"{mode}.yml"
            root.write_text(f"mode: {mode}\n")
            env = {**_clean_env(), "KAFKALAB_CACHE": str(tmp_path), "KAFKALAB_TOPOLOGY": str(root)}
            data = vagrant.describe(env, path)
            topo = topology.Topology(**{k: v for k, v in data["topology"].items() if k != "box"})
            assert topo.brokers == needs.get("brokers", 1), lab.name
            modes = needs.get("modes", ["kraft", "zookeeper"])
            assert topo.mode == (mode if mode in modes else modes[0]), lab.name
            default = topology.default_kafka_version(topo.mode)
            newer = needs.get("kafka_min") and release(needs["kafka_min"]) > release(default)
            want = topology.SUPPORTED_KAFKA_VERSIONS[-1] if newer else default
            if needs.get("kafka_max") and too_new(want, needs["kafka_max"]):
                want = max(
                    (
                        v
                        for v in topology.SUPPORTED_KAFKA_VERSIONS
                        if not too_new(v, needs["kafka_max"])
                    ),
                    key=release,
                )
            assert topo.kafka_version == want, lab.name
            assert data["machines"] == [
                {"name": m.name, "address": m.address, "groups": m.groups, "node_id": m.node_id}
                for m in topo.machines()
            ], lab.name


@pytest.mark.skipif(shutil.which("vagrant") is None, reason="vagrant missing")
@pytest.mark.parametrize("folder", [None, "labs/04-replication-isr"])
def test_vagrant_validates(tmp_path: Path, folder: str | None) -> None:
    """Vagrant itself accepts the file with both providers' settings, at the root and in
    a lab folder (`make test-vm` brings up lab 04's)."""
    lab = tmp_path / "cluster.yml"
    lab.write_text("brokers: 2\nmode: zookeeper\n")
    cwd = repo_root() / folder if folder else None
    env = vagrant.env(lab, tmp_path / ".vagrant", box="kafkalab/debian12", driver="qemu", cwd=cwd)
    assert env["VAGRANT_CWD"] == str(cwd or repo_root())
    env["VAGRANT_HOME"] = str(tmp_path / "vagrant.d")
    proc = subprocess.run(
        ["vagrant", "validate"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("driver", ["kvm", "qemu"])
def test_ini_vars_read_back_with_their_types(tmp_path: Path, driver: str) -> None:
    """Vagrant writes lab-wide variables into an INI inventory: Ansible must read back the
    same values and types (2.13 stays a string, True a bool, the properties a mapping)."""
    data = dump(tmp_path, {"mode": "zookeeper"}, KAFKALAB_VM_DRIVER=driver)
    ini = tmp_path / "inventory"
    ini.write_text(
        "kafka1 ansible_host=192.168.121.5\n\n[all:vars]\n" + "\n".join(data["ini_vars"])
    )
    read_back = vagrant.contract_inventory(ini)
    assert read_back["all"]["vars"] == data["inventory"]["vars"]
    assert read_back["all"]["children"] == {}  # kafka1 is in no group of this file
    if driver == "qemu":
        assert "-XX:TieredStopAtLevel=1" in data["inventory"]["vars"]["kafka_opts"]
        assert data["inventory"]["vars"]["kafka_zookeeper_session_timeout_ms"] == 60000


@pytest.mark.parametrize(
    "settings", TOPOLOGIES, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()) or "default"
)
def test_the_inventory_vagrant_writes_is_a_cluster_layout(
    tmp_path: Path, settings: dict[str, Any]
) -> None:
    """The inventory Vagrant's Ansible provisioner writes from this Vagrantfile (machine lines
    with Vagrant's ssh settings and the host variables, the groups, [all:vars]) gives kafkalab
    the cluster back: the same machines, addresses, groups, node ids, mode and version."""
    from kafkalab.targets.cluster import VagrantCluster

    data = dump(tmp_path, settings)
    inv = data["inventory"]
    lines = ["# Generated by Vagrant", ""]
    for i, name in enumerate(inv["host_vars"]):
        hv = " ".join(f"{k}={v}" for k, v in inv["host_vars"][name].items())
        lines.append(
            f"{name} ansible_host=192.168.121.{10 + i} ansible_port=22 ansible_user='vagrant' "
            f"ansible_ssh_private_key_file='/x/{name}/private_key' {hv}"
        )
    for group, hosts in inv["groups"].items():
        lines += ["", f"[{group}]", *hosts]
    lines += ["", "[all:vars]", *data["ini_vars"]]
    path = tmp_path / ".vagrant" / vagrant.GENERATED_INVENTORY
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    layout = VagrantCluster(path).layout()
    topo = topology.load(tmp_path / "none.yml", overrides=settings)
    assert layout is not None
    assert layout.machines() == topo.machines()
    assert (layout.mode, layout.kafka_version) == (topo.mode, topo.kafka_version)


def test_the_vagrantfile_accepts_the_kafka_releases_the_cli_does(tmp_path: Path) -> None:
    assert dump(tmp_path, {"kafka_version": "4.3.1"})["topology"]["kafka_version"] == "4.3.1"
    vagrantfile = (repo_root() / "Vagrantfile").read_text()
    versions = re.search(r"VERSIONS = %w\[([^\]]*)\]", vagrantfile)
    assert versions is not None
    assert tuple(versions.group(1).split()) == topology.SUPPORTED_KAFKA_VERSIONS


def test_a_lab_that_needs_a_newer_kafka_gets_the_newest(tmp_path: Path) -> None:
    """needs.kafka_min above the topology's release: the lab's VMs run the newest one; a
    topology already new enough keeps its own."""
    lab = tmp_path / "labs" / "99-new"
    lab.mkdir(parents=True)
    (lab / "lab.yml").write_text("needs: {modes: [kraft], kafka_min: '4.0'}\n")
    (lab / "Vagrantfile").write_text(
        f'$kafkalab_lab = "{lab / "lab.yml"}"\nload "{repo_root() / "Vagrantfile"}"\n'
    )
    for given, expected in (("3.9.2", topology.SUPPORTED_KAFKA_VERSIONS[-1]), ("4.3.1", "4.3.1")):
        root = tmp_path / "cluster.yml"
        root.write_text(f"kafka_version: {given}\n")
        env = {**_clean_env(), "KAFKALAB_CACHE": str(tmp_path), "KAFKALAB_TOPOLOGY": str(root)}
        data = vagrant.describe(env, lab / "Vagrantfile")
        assert data["topology"]["kafka_version"] == expected, given


def test_the_vms_are_provisioned_with_the_strategy_the_cli_uses(tmp_path: Path) -> None:
    """Vagrant's provisioner gets kafkalab's Mitogen strategy when the repository's .venv has
    Mitogen, as kafkalab.targets.provision gives it to `kafkalab up`; KAFKALAB_MITOGEN=0
    turns both off."""
    env = {**_clean_env(), "KAFKALAB_CACHE": str(tmp_path)}
    expected = provision.strategy_env({})
    if (repo_root() / ".venv").resolve() != Path(sys.prefix).resolve():
        pytest.fail(f"this test needs the repository's .venv (runs in {sys.prefix})")
    got = vagrant.describe(env)["provisioner_env"]
    assert got.get("ANSIBLE_STRATEGY") == expected["ANSIBLE_STRATEGY"] == "kafkalab_linear"
    assert (
        Path(got["ANSIBLE_STRATEGY_PLUGINS"]).resolve()
        == Path(expected["ANSIBLE_STRATEGY_PLUGINS"]).resolve()
    )
    assert (Path(got["ANSIBLE_STRATEGY_PLUGINS"]) / "kafkalab_linear.py").is_file()
    assert vagrant.describe({**env, "KAFKALAB_MITOGEN": "0"})["provisioner_env"] == {}


@pytest.mark.parametrize("mode", ["kraft", "zookeeper"])
def test_the_vagrantfile_defaults_to_the_release_the_cli_does(tmp_path: Path, mode: str) -> None:
    """No kafka_version in the topology: the VMs run what `kafkalab up` would (4.x for
    KRaft, 3.9.2 for ZooKeeper)."""
    data = dump(tmp_path, {"mode": mode})
    assert data["topology"]["kafka_version"] == topology.default_kafka_version(mode)
    assert topology.Topology(mode=mode).kafka_version == topology.default_kafka_version(mode)
