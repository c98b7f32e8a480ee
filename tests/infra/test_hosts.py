"""testinfra: written once, run against any inventory (embedded machines, VMs, molecule).

Every expectation (ports, ids, paths) comes from the inventory's variables; see
conftest.py beside this file for how to run it.
"""

from pathlib import Path

import pytest
import yaml


def var(host, name, default):
    """An inventory variable of the host, else the role's default."""
    return host.ansible.get_variables().get(name, default)


def server_properties(host):
    return props(host, var(host, "kafka_config_dir", "/etc/kafka") + "/server.properties")


def props(host, path):
    out = {}
    for line in host.file(path).content_string.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def listening(host, address, port):
    """Listening on the lab address itself, or on every address (which includes it)."""
    return any(host.socket(f"tcp://{a}:{port}").is_listening for a in (address, "0.0.0.0"))


def test_base_tools_and_kafka_user(host):
    assert host.package("openjdk-17-jre-headless").is_installed
    assert host.run("java -version").rc == 0
    assert host.user("kafka").exists


def test_lab_hosts_resolve(host, hostvars):
    hosts_file = host.file("/etc/hosts").content_string
    runner = host.backend.ansible_runner
    for name in hostvars["groups"]["all"]:
        address = runner.get_variables(name)["kafkalab_address"]
        assert f"{address} {name}" in hosts_file


def test_kafka_service_and_ports(host, hostvars):
    if not {"kafka_broker", "kafka_controller"} & set(hostvars["group_names"]):
        pytest.skip("no Kafka on this host in this topology")
    kafka = host.service("kafka")
    assert kafka.is_running
    assert kafka.is_enabled
    addr = hostvars["kafkalab_address"]
    port = var(host, "kafka_broker_port", 9092)
    if "kafka_broker" in hostvars["group_names"]:
        if var(host, "kafka_broker_localhost", True):
            # every address: the lab address and the machine's own localhost
            assert host.socket(f"tcp://0.0.0.0:{port}").is_listening
        else:
            assert host.socket(f"tcp://{addr}:{port}").is_listening
        host_port = int(var(host, "kafka_host_listener_port", 0))
        if host_port > 0:  # PLAINTEXT_HOST, on the lab address only (the forwarder's way in)
            assert host.socket(f"tcp://{addr}:{host_port}").is_listening
    if var(host, "kafka_mode", "kraft") == "kraft":
        assert host.socket(f"tcp://{addr}:9093").is_listening


def role_default(role, name):
    """A role's default, as its defaults/main.yml sets it (the repository's own roles)."""
    defaults = Path(__file__).resolve().parents[2] / "ansible" / "roles" / role / "defaults"
    return yaml.safe_load((defaults / "main.yml").read_text())[name]


def test_kafka_runs_with_its_jvm_options(host, hostvars):
    """The broker's JVM has kafka_jvm_performance_opts (the quick JIT by default), not
    kafka-run-class.sh's own default."""
    if not {"kafka_broker", "kafka_controller"} & set(hostvars["group_names"]):
        pytest.skip("no Kafka on this host in this topology")
    pid = host.check_output("systemctl show --property MainPID --value kafka.service")
    args = host.file(f"/proc/{pid}/cmdline").content_string.split("\0")
    opts = var(
        host, "kafka_jvm_performance_opts", role_default("kafka", "kafka_jvm_performance_opts")
    )
    assert [o for o in opts.split() if o not in args] == [], args


def test_the_broker_maps_the_class_archive(host, hostvars):
    """The broker starts with the tools' class archive (AppCDS): its JVM has the archive
    mapped. A JVM it does not fit ignores it silently, so only the mapping shows it is used."""
    if not {"kafka_broker", "kafka_controller"} & set(hostvars["group_names"]):
        pytest.skip("no Kafka on this host in this topology")
    pid = host.check_output("systemctl show --property MainPID --value kafka.service")
    maps = host.check_output(f"sudo -n cat /proc/{pid}/maps")
    assert "kafkalab-tools.jsa" in maps


def test_kafka_python_in_python3_for_every_login(host, hostvars):
    if not var(host, "kafka_python_wheel", ""):
        pytest.skip("no kafka_python_wheel in this inventory: python3 left as it is")
    if not {"kafka_broker", "kafka_controller"} & set(hostvars["group_names"]):
        pytest.skip("no Kafka on this host in this topology")
    version = var(host, "kafka_python_wheel", "").rsplit("/", 1)[-1].split("-")[1]
    probe = "python3 -c 'import kafka; print(kafka.__version__)'"
    # as whoever logs in, in a login shell too, and as a user with nothing of its own
    for cmd in (probe, f'bash -lc "{probe}"', f"sudo -n -u nobody -- {probe}"):
        out = host.run(cmd)
        assert out.rc == 0, f"{cmd}: {out.stderr}"
        assert out.stdout.strip() == version, cmd


def test_kafka_tools_on_path(host, hostvars):
    if not {"kafka_broker", "kafka_controller", "zookeeper"} & set(hostvars["group_names"]):
        pytest.skip("no Kafka installation on this host in this topology")
    out = host.run("bash -lc 'command -v kafka-topics.sh && kafka-topics.sh --version'")
    assert out.rc == 0, out.stderr
    assert var(host, "kafka_version", "") in out.stdout


def test_the_tools_map_their_class_archive(host, hostvars):
    """The tools start with the release's class archive (AppCDS) the host made: with
    -Xshare:on a JVM the archive does not fit (a jar changed since) fails to start."""
    if not {"kafka_broker", "kafka_controller", "zookeeper"} & set(hostvars["group_names"]):
        pytest.skip("no Kafka installation on this host in this topology")
    out = host.run(
        'bash -lc \'KAFKA_JVM_PERFORMANCE_OPTS="$KAFKA_JVM_PERFORMANCE_OPTS -Xshare:on" '
        "kafka-topics.sh --version'"
    )
    assert out.rc == 0, out.stdout + out.stderr
    assert "SharedArchiveFile" in host.run("bash -lc 'echo $KAFKA_JVM_PERFORMANCE_OPTS'").stdout


def test_node_id_everywhere(host, hostvars):
    if "kafka_node_id" not in hostvars:
        pytest.skip("no Kafka on this host")
    server = server_properties(host)
    logdir = server["log.dirs"].split(",")[0]
    meta = props(host, f"{logdir}/meta.properties")
    key = "node.id" if "node.id" in server else "broker.id"
    assert int(server[key]) == hostvars["kafka_node_id"]
    assert int(meta.get("node.id", meta.get("broker.id"))) == hostvars["kafka_node_id"]
    advertised = f"PLAINTEXT://{hostvars['kafkalab_address']}:9092"
    if int(var(host, "kafka_host_listener_port", 0)) > 0:  # the embedded lab's host clients
        advertised += f",PLAINTEXT_HOST://{var(host, 'kafka_host_listener_advertised', '')}"
    assert server["advertised.listeners"] == advertised


def test_zookeeper_member(host, hostvars):
    if "zookeeper" not in hostvars["group_names"]:
        pytest.skip("no ZooKeeper on this host in this topology")
    assert host.service("zookeeper").is_running
    assert host.service("zookeeper").is_enabled
    assert listening(host, hostvars["kafkalab_address"], 2181)
    myid = host.file(
        var(host, "zookeeper_data_dir", "/var/lib/zookeeper") + "/myid"
    ).content_string.strip()
    assert int(myid) == hostvars["zookeeper_myid"]
