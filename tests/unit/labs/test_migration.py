"""Labs 15 and 16 (a ZooKeeper cluster migrated to KRaft, and a migration rolled back) without
a cluster: the commands their steps give the learner, run on the broker config the kafka role
renders, make the configs Kafka's migration guide asks for; the rollback gives back exactly
what the role wrote; the migration controller's unit and storage agree with kafkalab. The
walk on a real cluster: tests/labs/test_lab_zookeeper_to_kraft.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from kafkalab.errors import KafkalabError
from kafkalab.kafka import quorum
from kafkalab.labs import catalog, checks
from kafkalab.labs.checks.migration import MIGRATION_DIR
from tests.unit.roles.templar import ROLES, properties, render

ZOOKEEPER = {"mode": "zookeeper"}


def zk_server(host: str) -> str:
    return render("kafka", "etc/kafka/server.properties.j2", host, [], ZOOKEEPER)


def steps_on(lab: str, host: str, after: str = "", until: str = "") -> list[str]:
    """The shell of the lab's `run` steps on `host` that edit server.properties, in order,
    from the step whose title has `after` to the one whose title has `until`."""
    spec = catalog.find(lab).spec
    titles = [s.title for s in spec.steps]
    first = next(i for i, t in enumerate(titles) if after in t) if after else 0
    last = next(i for i, t in enumerate(titles) if until in t) if until else len(titles)
    return [
        s.run
        for s in spec.steps[first:last]
        if s.run and s.machine == host and "server.properties" in s.run
    ]


def config_lines(script: str, config: Path) -> list[str]:
    """The lines of a step that write the config file (with the file at `config`, without
    sudo), and the here-documents they feed it: nothing else of the step runs here."""
    out: list[str] = []
    heredoc = False
    for line in script.replace("/etc/kafka/server.properties", str(config)).splitlines():
        line = line.replace("sudo ", "")
        if heredoc or str(config) in line:
            out.append(line)
            heredoc = (heredoc and line != "EOF") or "<<EOF" in line
    return out


def apply(scripts: list[str], config: Path, voters: str) -> str:
    """The learner's edits of server.properties, on the file at `config`."""
    for script in scripts:
        lines = config_lines(script, config)
        subprocess.run(
            ["bash", "-euc", "\n".join(lines)],
            check=True,
            env={"VOTERS": voters, "PATH": "/usr/bin:/bin"},
            stdout=subprocess.DEVNULL,
        )
    return config.read_text()


VOTERS = catalog.find("15").spec.env["VOTERS"]


@pytest.mark.parametrize(("host", "node"), [("kafka1", 1), ("kafka3", 3)])
def test_the_migration_steps_give_the_brokers_kafkas_configs(tmp_path, host, node):
    config = tmp_path / "server.properties"
    config.write_text(zk_server(host))

    dual = properties(apply(steps_on("15", host, until="on KRaft"), config, VOTERS))
    assert dual["broker.id"] == str(node)  # still a ZooKeeper broker, in migration mode
    assert dual["zookeeper.metadata.migration.enable"] == "true"
    assert dual["controller.quorum.voters"] == VOTERS
    assert dual["controller.listener.names"] == "CONTROLLER"
    assert "CONTROLLER:PLAINTEXT" in dual["listener.security.protocol.map"].split(",")
    assert dual["inter.broker.protocol.version"] == "3.9"

    kraft = properties(apply(steps_on("15", host, after="on KRaft"), config, VOTERS))
    assert kraft["node.id"] == str(node) and kraft["process.roles"] == "broker"
    assert not [k for k in kraft if k.startswith("zookeeper.") or k == "broker.id"]
    assert "inter.broker.protocol.version" not in kraft
    assert kraft["controller.quorum.voters"] == VOTERS
    # the listeners the brokers had are kept: clients notice nothing
    before = properties(zk_server(host))
    for key in ("listeners", "advertised.listeners", "log.dirs", "min.insync.replicas"):
        assert kraft[key] == before[key]


def test_the_rollback_gives_back_what_the_role_wrote(tmp_path):
    """After lab 16's rollback the file is the role's again, byte for byte: a later
    `kafkalab up` changes nothing."""
    config = tmp_path / "server.properties"
    original = zk_server("kafka2")
    config.write_text(original)
    apply(steps_on("16", "kafka2", until="roll back"), config, VOTERS)
    assert "zookeeper.metadata.migration.enable=true" in config.read_text()
    assert apply(steps_on("16", "kafka2", after="roll back"), config, VOTERS) == original


def test_only_the_config_edits_of_a_step_run_here(tmp_path):
    config = tmp_path / "server.properties"
    step = "sudo sed -i s/a/b/ /etc/kafka/server.properties\nsudo systemctl stop kafka\nrm -rf /x"
    assert config_lines(step, config) == [f"sed -i s/a/b/ {config}"]
    heredoc = "sudo tee -a /etc/kafka/server.properties <<EOF\na=1\nEOF\nsudo rm -rf /y"
    assert config_lines(heredoc, config) == [f"tee -a {config} <<EOF", "a=1", "EOF"]


def test_controller_node_ids_are_not_broker_ids():
    ids = [int(v.split("@")[0]) for v in VOTERS.split(",")]
    assert len(ids) == 3 and not set(ids) & {1, 2, 3}


def test_the_migration_storage_is_the_roles():
    defaults = yaml.safe_load((ROLES / "kafka" / "defaults" / "main.yml").read_text())
    assert defaults["kafka_migration_data_dir"] == MIGRATION_DIR
    for lab in ("15", "16"):
        assert MIGRATION_DIR in (catalog.find(lab).path / "lab.yml").read_text()


def test_the_controller_unit_runs_controller_properties_with_logs_of_its_own():
    unit = render(
        "kafka", "etc/systemd/system/kafka-controller.service.j2", "kafka1", [], ZOOKEEPER
    )
    assert "ConditionPathExists=/etc/kafka/controller.properties" in unit
    assert "kafka-server-start.sh /etc/kafka/controller.properties" in unit
    assert 'Environment="LOG_DIR=/var/log/kafka-controller"' in unit
    assert "User=kafka" in unit


def test_a_phase_outside_the_list_is_refused_when_the_lab_loads():
    with pytest.raises(KafkalabError, match="zookeeper_migration"):
        checks.validate("zookeeper_migration", {"phase": "halfway"}, "labs/99")


def test_the_quorum_is_asked_of_the_controllers_in_a_migration():
    asked: list[str] = []
    quorum.describe(lambda s: asked.append(s) or "", "kafka1:9093", controllers=True)
    assert "--bootstrap-controller kafka1:9093 describe --status" in asked[0]
    assert "--bootstrap-server" not in asked[0]
