"""The ksqldb role's templates, rendered by Ansible's own templar against a cluster's inventory.

The live tier cannot run ksqlDB here (Confluent's archive is not downloadable from these
machines), so what the role writes on a host is checked in these unit tests (the archive
step: tests/unit/artifacts/test_ksqldb.py).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from ansible.template import trust_as_template

from kafkalab import topology
from kafkalab.artifacts import ksqldb as ksqldb_artifact
from tests.unit.roles.templar import ROLES, host_context, properties, render

SERVER = "etc/ksqldb/ksql-server.properties.j2"


def test_server_properties_point_at_every_broker_and_listen_on_8088():
    props = properties(render("ksqldb", SERVER, "ksql1", ["ksqldb"]))
    assert props["bootstrap.servers"] == "10.77.0.11:9092,10.77.0.12:9092,10.77.0.13:9092"
    assert props["listeners"] == "http://10.77.0.22:8088"
    assert props["advertised.listener"] == "http://10.77.0.22:8088"
    assert props["ksql.service.id"] == "kafkalab_"
    assert props["ksql.streams.state.dir"] == "/var/lib/ksqldb"
    assert props["ksql.streams.auto.offset.reset"] == "earliest"


def test_address_is_after_spark1_in_any_order_of_extra_hosts():
    # spark1 is .21, ksql1 .22 (topology.EXTRA_HOSTS order, not the order of --with)
    for extras in (["spark", "ksqldb"], ["ksqldb", "spark"]):
        props = properties(render("ksqldb", SERVER, "ksql1", extras))
        assert props["listeners"] == "http://10.77.0.22:8088"


def test_replication_of_internal_topics_fits_the_brokers():
    props = properties(render("ksqldb", SERVER, "ksql1", ["ksqldb"]))
    for key in (
        "ksql.internal.topic.replicas",
        "ksql.streams.replication.factor",
        "ksql.logging.processing.topic.replication.factor",
    ):
        assert props[key] == "3", key
    small = topology.load(overrides={"extra_hosts": ["ksqldb"], "brokers": 1})
    one_broker = {"kafka_broker": [m.name for m in small.machines() if m.node_id]}
    props = properties(
        render("ksqldb", SERVER, "ksql1", ["ksqldb"], groups={**one_broker, "ksqldb": ["ksql1"]})
    )
    assert props["ksql.internal.topic.replicas"] == "1"
    assert props["bootstrap.servers"] == "10.77.0.11:9092"


def test_listener_port_and_extra_properties():
    text = render(
        "ksqldb",
        SERVER,
        "ksql1",
        ["ksqldb"],
        ksqldb_listener_port=8089,
        ksqldb_extra_properties={"ksql.streams.num.stream.threads": 2, "ksql.x.enabled": True},
    )
    props = properties(text)
    assert props["listeners"] == "http://10.77.0.22:8089"
    assert props["ksql.streams.num.stream.threads"] == "2"
    assert props["ksql.x.enabled"] == "true"


def test_unit_runs_the_server_with_that_config():
    unit = render("ksqldb", "etc/systemd/system/ksqldb.service.j2", "ksql1", ["ksqldb"])
    assert (
        "ExecStart=/opt/confluent/bin/ksql-server-start /etc/ksqldb/ksql-server.properties" in unit
    )
    assert "User=ksql" in unit
    assert 'Environment="KSQL_HEAP_OPTS=-Xmx512m -Xms512m"' in unit
    assert "http://10.77.0.22:8088" in unit


def test_archive_default_is_the_cache_path(monkeypatch, tmp_path):
    monkeypatch.setenv("KAFKALAB_CACHE", str(tmp_path))
    templar = host_context("ksqldb", "ksql1", ["ksqldb"])
    archive = templar.template(trust_as_template("{{ ksqldb_archive }}"))
    assert archive == str(tmp_path / "artifacts" / "confluent-community-7.9.0.tar.gz")
    assert Path(archive).name == ksqldb_artifact.archive_name()


def test_argument_specs_cover_every_default():
    specs = yaml.safe_load((ROLES / "ksqldb" / "meta" / "argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    defaults = yaml.safe_load((ROLES / "ksqldb" / "defaults" / "main.yml").read_text())
    assert set(defaults) <= set(options)
    readme = (ROLES / "ksqldb" / "README.md").read_text()
    for name in defaults:
        assert f"`{name}`" in readme, f"README lacks {name}"
