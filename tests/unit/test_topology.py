from pathlib import Path

import pytest

from kafkalab import topology
from kafkalab.errors import KafkalabError


def test_default_lab_is_three_kraft_brokers():
    topo = topology.load()
    assert topo.mode == "kraft"
    names = [m.name for m in topo.machines()]
    assert names == ["kafka1", "kafka2", "kafka3"]
    assert [m.address for m in topo.machines()] == ["10.77.0.11", "10.77.0.12", "10.77.0.13"]
    assert topo.gateway() == "10.77.0.1/24"


def test_zookeeper_mode_puts_ensemble_on_first_three_brokers():
    topo = topology.load(overrides={"mode": "zookeeper", "brokers": 5})
    zk = [m.name for m in topo.machines() if "zookeeper" in m.groups]
    assert zk == ["kafka1", "kafka2", "kafka3"]


def test_dedicated_controllers_get_their_own_machines():
    topo = topology.load(overrides={"controllers": 3})
    ctl = [m for m in topo.machines() if "kafka_controller" in m.groups]
    assert [m.name for m in ctl] == ["controller1", "controller2", "controller3"]
    assert all("kafka_broker" not in m.groups for m in ctl)
    assert len({m.node_id for m in topo.machines() if m.node_id}) == 6


def test_extra_hosts():
    topo = topology.load(overrides={"extra_hosts": ["spark", "ksqldb", "spark"]})
    assert [m.name for m in topo.machines()][-2:] == ["spark1", "ksql1"]


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"mode": "kraftt"}, ["mode", "kraftt", "'kraft' or 'zookeeper'"]),
        ({"brokers": 0}, ["brokers", "greater than or equal to 1"]),
        ({"brokers": 12}, ["brokers", "less than or equal to 9"]),
        ({"kafka_version": "4.0.0"}, ["kafka_version", "4.0.0", "3.9.2"]),
        ({"mode": "zookeeper", "controllers": 3}, ["controllers", "KRaft"]),
        ({"network": "8.8.8.0/24"}, ["network", "private"]),
        ({"colour": "blue"}, ["colour", "unknown setting"]),
    ],
)
def test_bad_values_give_one_clear_line(overrides, words):
    with pytest.raises(KafkalabError) as exc:
        topology.load(overrides=overrides)
    msg = str(exc.value)
    assert "\n" not in msg
    for word in words:
        assert word in msg


def test_bad_yaml_file(tmp_path: Path):
    f = tmp_path / "lab.yml"
    f.write_text("mode: [kraft\n")
    with pytest.raises(KafkalabError, match="not valid YAML"):
        topology.load(f)
    f.write_text("- kraft\n")
    with pytest.raises(KafkalabError, match="mapping"):
        topology.load(f)


def test_file_values_and_flag_overrides(tmp_path: Path):
    f = tmp_path / "lab.yml"
    f.write_text("mode: zookeeper\nbrokers: 4\n")
    topo = topology.load(f, {"brokers": 3, "mode": None})
    assert (topo.mode, topo.brokers) == ("zookeeper", 3)


def test_replication_factor_above_brokers_is_refused():
    topo = topology.load(overrides={"brokers": 2})
    topo.check_replication_factor(2)
    with pytest.raises(KafkalabError, match="replication factor 3 is larger than the number of"):
        topo.check_replication_factor(3)
