import ipaddress
from pathlib import Path

import pytest

from kafkalab import topology
from kafkalab.artifacts import kafka as kafka_artifact
from kafkalab.errors import KafkalabError
from kafkalab.targets import image, netns
from kafkalab.targets.embedded import EmbeddedCluster


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


def test_zookeeper_on_kafka_4_is_refused_in_one_line_that_says_why_and_what_to_do():
    with pytest.raises(KafkalabError) as exc:
        topology.load(overrides={"mode": "zookeeper", "kafka_version": "4.3.1"})
    assert "\n" not in str(exc.value)
    assert str(exc.value).endswith(
        ": kafka_version: Kafka 4.3.1 has no ZooKeeper mode (Kafka 4.0 removed ZooKeeper): use"
        " KRaft mode, or kafka_version 3.9.2 to keep ZooKeeper"
    )


@pytest.mark.parametrize(
    ("mode", "version"), [("kraft", "4.3.1"), ("kraft", "3.9.2"), ("zookeeper", "3.9.2")]
)
def test_both_lines_are_accepted_where_they_have_the_mode(mode: str, version: str):
    topo = topology.load(overrides={"mode": mode, "kafka_version": version})
    assert (topo.mode, topo.kafka_version) == (mode, version)


def test_the_default_release_follows_the_mode(tmp_path: Path):
    """KRaft gets the newest 4.x, ZooKeeper the last release that has it; a release named in
    the file or by the lab already there stays."""
    assert topology.Topology().kafka_version == "4.3.1"
    assert topology.Topology(mode="zookeeper").kafka_version == "3.9.2"
    assert topology.load(tmp_path / "none.yml", {"mode": "zookeeper"}).kafka_version == "3.9.2"
    older = topology.Topology(kafka_version="3.9.2")
    assert topology.load(None, {"brokers": 3}, existing=older).kafka_version == "3.9.2"
    f = tmp_path / "cluster.yml"
    f.write_text("kafka_version: 3.9.1\n")
    assert topology.load(f).kafka_version == "3.9.1"


def test_bad_yaml_file(tmp_path: Path):
    f = tmp_path / "cluster.yml"
    f.write_text("mode: [kraft\n")
    with pytest.raises(KafkalabError, match="not valid YAML"):
        topology.load(f)
    f.write_text("- kraft\n")
    with pytest.raises(KafkalabError, match="mapping"):
        topology.load(f)


def test_file_values_and_flag_overrides(tmp_path: Path):
    f = tmp_path / "cluster.yml"
    f.write_text("mode: zookeeper\nbrokers: 4\n")
    topo = topology.load(f, {"brokers": 3, "mode": None})
    assert (topo.mode, topo.brokers) == ("zookeeper", 3)


def test_replication_factor_above_brokers_is_refused():
    topo = topology.load(overrides={"brokers": 2})
    topo.check_replication_factor(2)
    with pytest.raises(KafkalabError, match="replication factor 3 is larger than the number of"):
        topo.check_replication_factor(3)


# -- extra hosts: fixed addresses, kept by an existing lab (issue 10, item 6) --------------


@pytest.mark.parametrize(
    ("extra_hosts", "addresses"),
    [
        (["spark"], {"spark1": "10.77.0.21"}),
        (["ksqldb"], {"ksql1": "10.77.0.22"}),
        (["ksqldb", "spark"], {"spark1": "10.77.0.21", "ksql1": "10.77.0.22"}),
    ],
)
def test_each_extra_host_has_its_own_address(extra_hosts, addresses):
    topo = topology.load(overrides={"extra_hosts": extra_hosts, "controllers": 3})
    got = {m.name: m.address for m in topo.machines() if m.name in addresses}
    assert got == addresses
    assert len({m.address for m in topo.machines()}) == len(topo.machines())


def test_with_adds_to_the_extra_hosts_of_an_existing_lab():
    spark_lab = topology.Topology(extra_hosts=["spark"])
    topo = topology.load(overrides={"extra_hosts": ["ksqldb"]}, existing=spark_lab)
    assert topo.extra_hosts == ["spark", "ksqldb"]
    machines = {m.name: m.address for m in topo.machines()}
    assert (machines["spark1"], machines["ksql1"]) == ("10.77.0.21", "10.77.0.22")


def test_a_file_without_extra_hosts_keeps_those_of_an_existing_lab(tmp_path: Path):
    f = tmp_path / "cluster.yml"
    f.write_text("brokers: 4\nextra_hosts: []\n")
    existing = topology.Topology(brokers=3, extra_hosts=["ksqldb"])
    topo = topology.load(f, existing=existing, required=True)
    assert (topo.brokers, topo.extra_hosts) == (4, ["ksqldb"])  # the file's brokers, no drop
    f.write_text("brokers: 4\n")
    assert topology.load(f, existing=existing, required=True).extra_hosts == ["ksqldb"]


def test_an_existing_lab_is_the_start_without_a_file():
    existing = topology.Topology(mode="zookeeper", brokers=5, extra_hosts=["spark"])
    topo = topology.load(overrides={"brokers": 6}, existing=existing)
    assert (topo.mode, topo.brokers, topo.extra_hosts) == ("zookeeper", 6, ["spark"])


# -- bad input, one line each (issue 10, item 9) --------------------------------------------


def one_line_error(*args, **kwargs) -> str:
    with pytest.raises(KafkalabError) as exc:
        topology.load(*args, **kwargs)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_a_missing_file_asked_for_is_an_error(tmp_path: Path):
    missing = tmp_path / "missing.yml"
    assert "missing.yml: no such topology file" in one_line_error(missing, required=True)
    dangling = tmp_path / "dangling.yml"
    dangling.symlink_to(tmp_path / "nowhere.yml")
    assert "no such topology file" in one_line_error(dangling, required=True)
    # Not asked for (library callers): the defaults, as before.
    assert topology.load(missing).brokers == 3


def test_a_directory_is_not_a_topology_file(tmp_path: Path):
    assert "is a directory" in one_line_error(tmp_path, required=True)


def test_a_file_that_is_not_utf8(tmp_path: Path):
    f = tmp_path / "cluster.yml"
    f.write_bytes(b"mode: kraft\nbrokers: \xff3\n")
    msg = one_line_error(f, required=True)
    assert "not UTF-8 text (byte 0xff at offset 21)" in msg
    assert msg.startswith(str(f))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("mode: [kraft\n", ["not valid YAML: line 2, column 1"]),
        ("[" * 5000, ["not valid YAML: nested too deeply"]),
        ("1: kraft\n", ["cluster.yml: 1:"]),
        ("mode: !!python/object:os.system x\n", ["not valid YAML", "constructor"]),
    ],
)
def test_bad_yaml_is_one_line(tmp_path: Path, text: str, words: list[str]):
    f = tmp_path / "cluster.yml"
    f.write_text(text)
    msg = one_line_error(f, required=True)
    for word in words:
        assert word in msg


@pytest.mark.parametrize(
    "network",
    [
        "127.0.0.0/24",
        "169.254.0.0/24",
        "100.64.0.0/24",  # carrier-grade NAT: not RFC 1918
        "172.32.0.0/24",  # just past 172.16.0.0/12
        "192.0.0.0/24",
        "0.0.0.0/24",
        "fd00::/64",
        "10.77.0.0/27",
    ],
)
def test_network_outside_rfc1918_is_refused(network: str):
    msg = one_line_error(overrides={"network": network})
    assert "network: must be a private IPv4 network of /26 or larger (RFC 1918" in msg


def test_network_with_host_bits_says_so():
    msg = one_line_error(overrides={"network": "10.77.0.5/24"})
    assert "network: 10.77.0.5/24 has host bits set: must be a private IPv4 network" in msg


@pytest.mark.parametrize("network", ["10.0.0.0/8", "172.31.255.0/26", "192.168.56.0/24"])
def test_rfc1918_networks_are_accepted(network: str):
    topo = topology.load(overrides={"network": network})
    assert topo.machines()[0].address == str(ipaddress.ip_network(network)[11])


@pytest.mark.parametrize(
    ("yaml_text", "words"),
    [
        ("controllers: true\n", ["controllers: Input should be a valid integer (got True)"]),
        ("brokers: '3'\n", ["brokers: Input should be a valid integer (got '3')"]),
        ("brokers: 3.0\n", ["brokers: Input should be a valid integer (got 3.0)"]),
        ("memory_mb: 2g\n", ["memory_mb: Input should be a valid integer (got '2g')"]),
        ("kafka_heap_mb: yes\n", ["kafka_heap_mb: Input should be a valid integer (got True)"]),
    ],
)
def test_counts_and_sizes_are_whole_numbers_as_written(tmp_path: Path, yaml_text, words):
    f = tmp_path / "cluster.yml"
    f.write_text(yaml_text)
    msg = one_line_error(f, required=True)
    for word in words:
        assert word in msg


def test_heap_is_at_most_half_of_the_memory():
    msg = one_line_error(overrides={"memory_mb": 2048, "kafka_heap_mb": 1025})
    assert msg == (
        "cluster.yml: kafka_heap_mb: 1025 is more than half of memory_mb (2048): the broker heap "
        "may take at most half of a machine's memory; use kafka_heap_mb: 1024 or less, "
        "or memory_mb: 2050 or more"
    )
    assert "kafka_heap_mb" in one_line_error(overrides={"memory_mb": 1024, "kafka_heap_mb": 2048})
    assert topology.load(overrides={"memory_mb": 2048, "kafka_heap_mb": 1024}).kafka_heap_mb == 1024


# -- changes under an existing lab: refused before anything is touched (item 6) ------------


def lab_with(tmp_path: Path, **settings) -> EmbeddedCluster:
    lab = EmbeddedCluster(tmp_path / "state")
    lab._save(topology.Topology(**settings))
    return lab


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ({"mode": "zookeeper", "brokers": 1}, {"brokers": 3}, ["ZooKeeper ensemble", "first 1"]),
        ({"mode": "zookeeper", "brokers": 2}, {"brokers": 4}, ["ZooKeeper ensemble"]),
        ({"brokers": 3}, {"brokers": 4}, ["static voter set", "controllers: 0"]),
        ({"brokers": 1}, {"brokers": 3}, ["static voter set", "keep brokers: 1"]),
        ({"brokers": 3, "controllers": 3}, {"brokers": 2}, ["removing brokers"]),
        ({"extra_hosts": ["spark"]}, {"extra_hosts": ["ksqldb"]}, ["spark1", "never removes"]),
        ({"controllers": 1}, {"controllers": 3}, ["controllers=1"]),
        ({"mode": "zookeeper"}, {"mode": "kraft"}, ["mode=zookeeper"]),
        ({"network": "10.77.0.0/24"}, {"network": "10.88.0.0/24"}, ["network=10.77.0.0/24"]),
        ({"kafka_version": "4.3.1"}, {"kafka_version": "3.9.2"}, ["runs Kafka 4.3.1"]),
    ],
)
def test_unsafe_changes_are_refused_with_the_fix(tmp_path: Path, old, new, words):
    lab = lab_with(tmp_path, **old)
    asked = topology.Topology(**{**old, **new})
    with pytest.raises(KafkalabError) as exc:
        lab.check_compatible(asked)
    msg = str(exc.value)
    assert "\n" not in msg
    assert "kafkalab down --purge" in msg
    for word in words:
        assert word in msg


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"brokers": 3, "controllers": 3}, {"brokers": 5}),  # dedicated voters stay
        ({"mode": "zookeeper", "brokers": 3}, {"brokers": 5}),  # the ensemble stays kafka1..3
        ({"mode": "zookeeper", "brokers": 4}, {"brokers": 6}),
        ({"brokers": 3}, {"extra_hosts": ["spark", "ksqldb"]}),
        ({"kafka_version": "3.9.2"}, {"kafka_version": "3.9.0"}),  # same metadata version
        ({"kafka_version": "3.9.2"}, {"kafka_version": "4.3.1"}),  # an upgrade rolls
        ({"memory_mb": 2048}, {"memory_mb": 4096, "kafka_heap_mb": 1024}),
        ({"brokers": 3}, {}),
    ],
)
def test_safe_changes_are_allowed(tmp_path: Path, old, new):
    lab_with(tmp_path, **old).check_compatible(topology.Topology(**{**old, **new}))


def test_a_refused_change_touches_nothing(tmp_path: Path, monkeypatch):
    def touched(*_args, **_kwargs):
        raise AssertionError("touched before the change was checked")

    monkeypatch.setattr(kafka_artifact, "resolve_kafka", touched)
    monkeypatch.setattr(image, "ensure_image", touched)
    monkeypatch.setattr(netns, "ensure", touched)
    lab = lab_with(tmp_path, mode="zookeeper", brokers=1)
    before = {p: p.read_bytes() for p in lab.state.rglob("*") if p.is_file()}
    with pytest.raises(KafkalabError, match="ZooKeeper ensemble"):
        lab.up(topology.Topology(mode="zookeeper", brokers=3), lambda _msg: None)
    assert {p: p.read_bytes() for p in lab.state.rglob("*") if p.is_file()} == before
    assert not (lab.state / "machines").exists()


# -- host ports (issue 13 item 2): forwarded from 127.0.0.1 into the lab -----------------


def test_host_ports_default_to_the_seeds_and_follow_the_lab():
    topo = topology.load(overrides={"extra_hosts": ["spark", "ksqldb"]})
    assert topo.host_ports() == [
        (9092, "host_kafka_port"),
        (9093, "host_kafka_port"),
        (9094, "host_kafka_port"),
        (8080, "host_spark_ui_port"),
        (4040, "host_spark_job_ui_port"),
        (8788, "host_ksqldb_port"),
    ]
    assert [p for p, _ in topology.load(overrides={"brokers": 1}).host_ports()] == [9092]


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"host_kafka_port": 80}, ["host_kafka_port", "greater than or equal to 1024"]),
        ({"host_ksqldb_port": 70000}, ["host_ksqldb_port", "less than or equal to 65535"]),
        ({"host_kafka_port": "9092"}, ["host_kafka_port", "integer"]),
        ({"host_kafka_port": 65534}, ["host_kafka_port 65534 + 2", "lower host_kafka_port"]),
        (
            {"extra_hosts": ["ksqldb"], "host_ksqldb_port": 9093},
            ["host_ksqldb_port and host_kafka_port both use host port 9093", "9092..9094"],
        ),
        (
            {"extra_hosts": ["spark"], "host_spark_job_ui_port": 8080},
            ["host_spark_job_ui_port and host_spark_ui_port both use host port 8080"],
        ),
    ],
)
def test_bad_host_ports_give_one_clear_line(overrides, words):
    with pytest.raises(KafkalabError) as exc:
        topology.load(overrides=overrides)
    assert "\n" not in str(exc.value)
    for word in words:
        assert word in str(exc.value)


def test_ports_of_hosts_the_lab_does_not_have_do_not_collide():
    topo = topology.load(overrides={"host_ksqldb_port": 9093, "host_spark_ui_port": 9092})
    assert [p for p, _ in topo.host_ports()] == [9092, 9093, 9094]
