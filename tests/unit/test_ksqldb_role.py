"""The ksqldb role's templates, rendered by Ansible's own templar against a lab inventory,
and the Confluent archive step (cache, checksum, the message when it is missing).

The live tier cannot run ksqlDB here (Confluent's archive is not downloadable from these
machines), so what the role writes on a host is checked in these unit tests.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template

from kafkalab import inventory, topology
from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.errors import KafkalabError
from kafkalab.paths import repo_root

ROLES = repo_root() / "ansible" / "roles"
init_plugin_loader()  # filters and lookups (env, file) as ansible-playbook has them


def _trusted(value: Any) -> Any:
    """Role defaults and vars are trusted templates in Ansible; mark them so here too."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: _trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trusted(v) for v in value]
    return value


def host_context(role: str, host: str, extra_hosts: list[str], **overrides: Any) -> Templar:
    """A templar with what Ansible would see for `host`: the role's defaults and vars, the
    inventory kafkalab generates for a default lab with these extra hosts, `overrides`."""
    topo = topology.load(overrides={"extra_hosts": extra_hosts})
    data = inventory.build(topo, {"ansible_user": "vagrant"}, None)
    hosts = inventory.hosts(data)
    loader = DataLoader()
    variables: dict[str, Any] = {}
    for part in ("defaults", "vars"):
        variables.update(_trusted(yaml.safe_load((ROLES / role / part / "main.yml").read_text())))
    groups: dict[str, list[str]] = {"all": list(hosts)}
    for name, hv in hosts.items():
        for g in hv["groups"]:
            groups.setdefault(g, []).append(name)
    hostvars = {name: {k: v for k, v in hv.items() if k != "groups"} for name, hv in hosts.items()}
    variables.update(data["all"]["vars"])
    variables.update(hostvars[host])
    variables.update(
        groups=groups,
        hostvars=hostvars,
        inventory_hostname=host,
        group_names=hosts[host]["groups"],
        ansible_managed="Ansible managed",
    )
    variables.update(overrides)
    return Templar(loader=loader, variables=variables)


def render(role: str, template: str, host: str, extra_hosts: list[str], **overrides: Any) -> str:
    templar = host_context(role, host, extra_hosts, **overrides)
    text = (ROLES / role / "templates" / template).read_text()
    return str(templar.template(trust_as_template(text)))


def properties(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


# --- ksql-server.properties ----------------------------------------------------------------

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


# --- the archive step ----------------------------------------------------------------------


def _archive(cache: Path, body: bytes = b"not really a tarball") -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / ksqldb_artifact.archive_name()
    path.write_bytes(body)
    return path


def test_missing_archive_names_the_file_and_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.delenv(ksqldb_artifact.MIRROR_ENV, raising=False)
    with pytest.raises(KafkalabError) as exc:
        ksqldb_artifact.resolve_ksqldb(cache=tmp_path)
    message = str(exc.value)
    assert "confluent-community-7.9.0.tar.gz" in message
    assert str(tmp_path) in message
    assert "packages.confluent.io/archive/7.9/" in message


def test_archive_is_checked_against_its_sha256(tmp_path):
    path = _archive(tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / (path.name + ".sha256")).write_text(f"{digest}  {path.name}\n")
    assert ksqldb_artifact.resolve_ksqldb(cache=tmp_path) == path
    (tmp_path / (path.name + ".sha256")).write_text("0" * 64 + "\n")
    with pytest.raises(KafkalabError, match="does not match"):
        ksqldb_artifact.resolve_ksqldb(cache=tmp_path)


def test_archive_without_checksum_is_refused(tmp_path):
    _archive(tmp_path)
    with pytest.raises(KafkalabError, match="no checksum file"):
        ksqldb_artifact.resolve_ksqldb(cache=tmp_path)


def test_mirror_download_is_verified_and_kept(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror" / "7.9"
    src = _archive(mirror, b"archive bytes")
    digest = hashlib.sha256(b"archive bytes").hexdigest()
    (mirror / (src.name + ".sha256")).write_text(digest + "\n")
    monkeypatch.setenv(ksqldb_artifact.MIRROR_ENV, (tmp_path / "mirror").as_uri())
    cache = tmp_path / "cache"
    got = ksqldb_artifact.resolve_ksqldb(cache=cache)
    assert got == cache / src.name and got.read_bytes() == b"archive bytes"
    assert (cache / (src.name + ".sha256")).exists()
