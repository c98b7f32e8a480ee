"""kafkalab.targets.hosts without hosts: reading an inventory, the preflight's lines (an
unreachable host is a closed port on loopback), the extra vars `up -i` hands site.yml, and
`down -i`, which never touches anything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafkalab import inventory, topology
from kafkalab.errors import KafkalabError
from kafkalab.targets import hosts, provision
from tests.unit.cli.test_cli import kafkalab  # the command line with its own state dir

SSH_ARGS = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes"


def write_inventory(tmp_path: Path, **overrides: Any) -> Path:
    """A contract inventory whose hosts are closed ports on loopback (refused at once)."""
    topo = topology.load(tmp_path / "none.yml", overrides=overrides)
    data = inventory.build(
        topo, {"ansible_user": "nobody", "ansible_ssh_common_args": SSH_ARGS}, None
    )
    for child in data["all"]["children"].values():
        for hv in child["hosts"].values():
            hv.update(ansible_host="127.0.0.1", ansible_port=1)
    path = tmp_path / "mine.yml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKALAB_CACHE", str(tmp_path / "cache"))


def test_read_gives_what_ansible_lists(tmp_path: Path) -> None:
    listing = hosts.read(write_inventory(tmp_path, mode="zookeeper"))
    assert listing.hosts_of("kafka_broker") == ["kafka1", "kafka2", "kafka3"]
    assert listing.groups_of("kafka1") == ["kafka_broker", "zookeeper"]
    assert listing.hostvars["kafka2"]["kafka_mode"] == "zookeeper"  # all.vars merged in
    assert listing.hostvars["kafka2"]["zookeeper_myid"] == 2


def test_read_an_ini_inventory(tmp_path: Path) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text(
        "[kafka_broker]\nk1 kafkalab_address=10.1.0.1 kafka_node_id=1\n"
        "[all:vars]\nkafka_mode=kraft\nkafka_version=3.9.2\n"
    )
    listing = hosts.read(path)
    assert listing.hostvars["k1"]["kafka_node_id"] == 1
    assert inventory.check_contract(listing) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, "no such inventory"),
        ("all:\n  children: [kafka_broker\n", "not an inventory Ansible can read: "),
        ("", "no hosts in it"),
    ],
)
def test_read_refuses_with_one_line(tmp_path: Path, text: str | None, expected: str) -> None:
    path = tmp_path / "mine.yml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(KafkalabError) as err:
        hosts.read(path)
    assert str(err.value).startswith(f"{path}: {expected}")
    assert "\n" not in str(err.value)


def test_an_unreachable_host_is_one_line_with_ssh_s_reason(tmp_path: Path) -> None:
    path = write_inventory(tmp_path, brokers=2)
    found = hosts.unreachable(path, ["kafka1", "kafka2"])
    assert found == [
        f"kafka{i}: unreachable by ssh: ssh: connect to host 127.0.0.1 port 1: Connection refused"
        for i in (1, 2)
    ]


def test_ping_answers_are_read_for_what_they_say() -> None:
    assert hosts._ping_problem("k1", {"ping": "pong", "changed": False}) is None
    assert hosts._ping_problem("k1", None) == (
        f"k1: unreachable by ssh: no answer within {hosts.PING_DEADLINE}s"
    )
    sudo = {"failed": True, "msg": "Missing sudo password\nmore"}
    assert hosts._ping_problem("k1", sudo) == (
        "k1: answers ssh, but Ansible cannot work there: Missing sudo password"
    )
    key = {
        "unreachable": True,
        "msg": f"Task failed: ... {hosts.REACH}Warning: Permanently added '10.1.0.1' (ED25519) "
        "to the list of known hosts.\r\nnobody@10.1.0.1: Permission denied (publickey).",
    }
    assert hosts._ping_problem("k1", key) == (
        "k1: unreachable by ssh: nobody@10.1.0.1: Permission denied (publickey)."
    )


def test_preflight_says_every_problem_before_any_host_is_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_inventory(tmp_path)
    data = yaml.safe_load(path.read_text())
    del data["all"]["children"]["kafka_broker"]["hosts"]["kafka2"]["kafka_node_id"]
    path.write_text(yaml.safe_dump(data))

    def no_playbook(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("site.yml ran")

    monkeypatch.setattr(provision, "run_playbook", no_playbook)
    with pytest.raises(KafkalabError) as err:
        hosts.up(path, lambda _msg: None)
    lines = str(err.value).splitlines()
    assert lines[0] == f"{path}: refused before any host was touched:"
    assert lines[1].startswith("  kafka2: kafka_node_id is missing")
    assert [line.split(":")[0].strip() for line in lines[2:]] == ["kafka1", "kafka2", "kafka3"]
    assert all("unreachable by ssh" in line for line in lines[2:])
    assert not (hosts.work_dir(path) / "provision.log").exists()


def test_up_hands_site_yml_the_archives_as_extra_vars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_inventory(tmp_path, extra_hosts=["spark", "ksqldb"])
    monkeypatch.setattr(hosts, "unreachable", lambda _path, _hosts: [])
    monkeypatch.setattr(hosts.kafka_artifact, "resolve_kafka", lambda v, **_: Path(f"/c/k-{v}"))
    monkeypatch.setattr(
        hosts.kafka_python_artifact, "resolve_kafka_python", lambda **_: Path("/c/kp.whl")
    )
    monkeypatch.setattr(hosts.spark_artifact, "resolve_spark", lambda v, **_: Path(f"/c/s-{v}"))
    monkeypatch.setattr(hosts.ksqldb_artifact, "resolve_ksqldb", lambda v: Path(f"/c/q-{v}"))
    ran: dict[str, Any] = {}

    def playbook(inv: Path, log: Path, ns: str | None, **kwargs: Any) -> provision.Recap:
        ran.update(inventory=inv, log=log, ns=ns, extra=kwargs["extra"], env=kwargs["env"])
        kwargs["on_task"]("kafka : Install")
        return provision.Recap({"kafka1": {"ok": 3, "changed": 2, "unreachable": 0, "failed": 0}})

    monkeypatch.setattr(provision, "run_playbook", playbook)
    said: list[str] = []
    done = hosts.up(path, said.append)
    assert done.changed == 2
    assert ran["ns"] is None and ran["inventory"] == path.resolve()
    assert ran["log"].parent == hosts.work_dir(path)
    assert ran["extra"][0] == "--extra-vars"
    assert json.loads(ran["extra"][1]) == {
        "kafka_archive": "/c/k-4.3.1",  # a KRaft inventory of the default release
        "kafka_python_wheel": "/c/kp.whl",
        "spark_archive": "/c/s-4.0.0",
        "ksqldb_archive": "/c/q-7.9.0",
    }
    # ssh connections shared only by this inventory's runs from this network namespace
    assert ran["env"] == hosts.connection_env(path)
    sockets = ran["env"]["ANSIBLE_SSH_CONTROL_PATH_DIR"]
    assert sockets != hosts.connection_env(tmp_path / "other.yml")["ANSIBLE_SSH_CONTROL_PATH_DIR"]
    assert "  kafka : Install" in said
    assert any(line.startswith("provisioning with ansible/site.yml") for line in said)


def test_down_never_touches_hosts_it_did_not_make(tmp_path: Path) -> None:
    mine = write_inventory(tmp_path)
    embedded = tmp_path / "state" / "inventory" / "hosts.yml"
    assert "never stops or wipes hosts it did not make" in str(hosts.refuse_down(mine, embedded))
    assert "`kafkalab down` (without -i)" in str(hosts.refuse_down(embedded, embedded))
    vagrant = tmp_path / "lab" / ".vagrant/provisioners/ansible/inventory"
    said = str(hosts.refuse_down(vagrant / "vagrant_ansible_inventory", embedded))
    assert f"`vagrant halt` (or `vagrant destroy`) in {tmp_path / 'lab'}" in said


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["up", "--mode", "zookeeper"], "--mode does not go with -i"),
        (["up", "--no-provision"], "--no-provision does not go with -i"),
        (["up", "--kafka-version", "4.3.1"], "--kafka-version does not go with -i"),
        (["down", "--purge"], "never stops or wipes hosts it did not make"),
    ],
)
def test_cli_refuses_with_one_line_and_touches_nothing(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    path = write_inventory(tmp_path)
    proc = kafkalab(tmp_path, *args, "-i", str(path))
    assert proc.returncode == 2, proc.stderr
    assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "state").exists()
    assert not (tmp_path / "cache").exists()


def test_cli_up_names_each_unreachable_host(tmp_path: Path) -> None:
    path = write_inventory(tmp_path, brokers=1)
    proc = kafkalab(tmp_path, "up", "-i", str(path))
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[1:] == [
        "  kafka1: unreachable by ssh: ssh: connect to host 127.0.0.1 port 1: Connection refused"
    ]
    assert not (tmp_path / "state").exists()
