"""testinfra: the Spark standalone hosts (spark role). Skips hosts outside the spark groups,
so it runs against any inventory like the rest of tests/infra."""

import json

import pytest


def var(host, name, default):
    """An inventory variable of the host, else the role's default."""
    return host.ansible.get_variables().get(name, default)


def groups_of(hostvars):
    return set(hostvars["group_names"])


def master_address(host, hostvars):
    master = hostvars["groups"]["spark_master"][0]
    return host.backend.ansible_runner.get_variables(master)["kafkalab_address"]


def master_json(host, hostvars):
    port = var(host, "spark_master_webui_port", 8080)
    url = f"http://{master_address(host, hostvars)}:{port}/json/"
    fetch = (
        f"import urllib.request; print(urllib.request.urlopen('{url}', timeout=10).read().decode())"
    )
    out = host.run(f'python3 -c "{fetch}"')
    assert out.rc == 0, out.stderr
    return json.loads(out.stdout)


SERVICES = {  # group -> (unit, its ports as (variable, default))
    "spark_master": (
        "spark-master",
        (("spark_master_port", 7077), ("spark_master_webui_port", 8080)),
    ),
    "spark_worker": (
        "spark-worker",
        (("spark_worker_port", 7078), ("spark_worker_webui_port", 8081)),
    ),
}


@pytest.mark.parametrize("group", sorted(SERVICES))
def test_spark_service_and_ports(host, hostvars, group):
    if group not in groups_of(hostvars):
        pytest.skip(f"no {group} on this host in this topology")
    unit, ports = SERVICES[group]
    service = host.service(unit)
    assert service.is_running
    assert service.is_enabled
    addr = hostvars["kafkalab_address"]
    for variable, default in ports:
        assert host.socket(f"tcp://{addr}:{var(host, variable, default)}").is_listening


def test_worker_registered_with_the_master(host, hostvars):
    if "spark_worker" not in groups_of(hostvars):
        pytest.skip("no Spark worker on this host in this topology")
    state = master_json(host, hostvars)
    assert state["status"] == "ALIVE"
    alive = {w["host"]: w for w in state["workers"] if w["state"] == "ALIVE"}
    assert hostvars["kafkalab_address"] in alive, state["workers"]
    worker = alive[hostvars["kafkalab_address"]]
    assert worker["cores"] == var(host, "spark_worker_cores", 2)
    # Room for one executor of the jobs' size (450 MB is the least Spark accepts).
    assert worker["memory"] >= 450


def test_spark_release_with_the_kafka_connector(host, hostvars):
    if not {"spark_master", "spark_worker"} & groups_of(hostvars):
        pytest.skip("no Spark on this host in this topology")
    home = var(host, "spark_home", "/opt/spark")
    version = var(host, "spark_version", "4.0.0")
    assert host.file(home).is_symlink
    assert host.file(f"{home}/bin/spark-class").mode & 0o111
    jars = host.run(f"ls {home}/jars").stdout.split()
    assert f"spark-core_2.13-{version}.jar" in jars
    assert f"spark-sql-kafka-0-10_2.13-{version}.jar" in jars
    assert f"spark-token-provider-kafka-0-10_2.13-{version}.jar" in jars
    assert any(j.startswith("kafka-clients-") for j in jars)
    # Executors run PySpark code: Python 3 and pyspark.zip from SPARK_HOME.
    assert host.file(f"{home}/python/lib/pyspark.zip").exists
    assert host.run(f"{var(host, 'spark_python', '/usr/bin/python3')} --version").rc == 0


def test_spark_config_points_at_master_and_kafka(host, hostvars):
    if not {"spark_master", "spark_worker"} & groups_of(hostvars):
        pytest.skip("no Spark on this host in this topology")
    conf = host.file(var(host, "spark_conf_dir", "/etc/spark") + "/spark-defaults.conf")
    settings = {}
    for line in conf.content_string.splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.strip().partition(" ")
            settings[name] = value.strip()  # empty: no brokers (the spark molecule scenario)
    port = var(host, "spark_master_port", 7077)
    assert settings["spark.master"] == f"spark://{master_address(host, hostvars)}:{port}"
    runner = host.backend.ansible_runner
    brokers = [
        f"{runner.get_variables(b)['kafkalab_address']}:9092"
        for b in hostvars["groups"].get("kafka_broker", [])
    ]
    assert [b for b in settings["spark.kafkalab.bootstrap.servers"].split(",") if b] == brokers
    out = host.run("bash -lc 'command -v spark-submit'")
    assert out.rc == 0 and out.stdout.strip().endswith("/bin/spark-submit")
