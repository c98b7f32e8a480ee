"""The cluster as a whole: ids, quorum/ensemble, replication, data, idempotence.

Tests in this module run in order and share the topic they create: the last ones
re-provision and restart the lab and prove the data is still there.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from kafkalab.kafka import quorum
from kafkalab.targets import class_archive, image
from tests import client
from tests.infra.test_hosts import props, server_properties

pytestmark = pytest.mark.cluster

TOPIC = "backbone"
RECORDS = 1000


def meta(cluster, name):
    import testinfra

    host = testinfra.get_host(f"ansible://{name}?ansible_inventory={cluster.inventory_path}")
    server = server_properties(host)
    return props(host, server["log.dirs"].split(",")[0] + "/meta.properties")


def test_every_broker_registered(cluster):
    registered = client.brokers(cluster.bootstrap)
    expected = {
        hv["kafka_node_id"]: hv["kafkalab_address"]
        for hv in cluster.hosts.values()
        if "kafka_broker" in hv["groups"]
    }
    assert {i: a.split(":")[0] for i, a in registered.items()} == expected


def test_one_cluster_id_on_all_brokers(cluster):
    ids = {
        meta(cluster, n)["cluster.id"] for n, hv in cluster.hosts.items() if "kafka_node_id" in hv
    }
    assert len(ids) == 1


def test_leadership(cluster):
    if cluster.mode == "zookeeper":
        zk = [
            hv["kafkalab_address"] for hv in cluster.hosts.values() if "zookeeper" in hv["groups"]
        ]
        modes = sorted(quorum.zk_mode(a) or "down" for a in zk)
        assert modes == ["follower", "follower", "leader"]
        assert client.controller_id(cluster.bootstrap) in {1, 2, 3}
    else:
        data = json.loads(cluster.kafkalab("status", "--json").stdout)
        assert data["lab"]["active_controller"] in {1, 2, 3}


def test_the_role_health_check_names_leader_and_strangers(cluster):
    """The health gate's one kafka-python process (the role's files/kafka_health.py), run on
    a machine: it names the quorum leader status names, and refuses a broker id that is not
    in the cluster (that is how it makes the role wait)."""
    quorum_flag = ["--quorum"] if cluster.mode == "kraft" else []
    script = ["python3", "/usr/local/share/kafkalab/kafka_health.py", "--bootstrap", "kafka1:9092"]
    ok = cluster.kafkalab(
        "exec", "kafka1", "--", *script, "--brokers", "1,2,3", "--in-sync", *quorum_flag
    )
    report = json.loads(ok.stdout.strip().splitlines()[-1])
    assert report["ok"], report
    assert sorted(b[0] for b in report["brokers"]) == [1, 2, 3]
    if cluster.mode == "kraft":
        status = json.loads(cluster.kafkalab("status", "--json").stdout)
        assert report["leader"] == status["lab"]["active_controller"]
        assert report["voters"] == [1, 2, 3]
    bad = cluster.kafkalab("exec", "kafka1", "--", *script, "--brokers", "1,2,3,9", check=False)
    assert bad.returncode == 1
    assert "brokers not registered (or fenced): [9]" in bad.stdout


def test_status_table_shows_every_machine(cluster):
    out = cluster.kafkalab("status").stdout
    for name in cluster.hosts:
        assert name in out
    assert out.count("kafka: active") == 3


def test_replicated_topic_has_full_isr(cluster):
    client.create_topic(cluster.bootstrap, TOPIC, partitions=3, rf=3)
    parts = client.describe(cluster.bootstrap, TOPIC)
    assert len(parts) == 3
    for p in parts:
        assert sorted(p.replicas) == [1, 2, 3]
        assert sorted(p.isr) == [1, 2, 3]
    assert len({p.leader for p in parts}) == 3  # leaders spread over the brokers


def test_keyed_records_round_trip(cluster):
    acked = client.produce_keyed(cluster.bootstrap, TOPIC, RECORDS)
    assert len(acked) == RECORDS
    got = client.consume_all(cluster.bootstrap, TOPIC, RECORDS, group="backbone-test")
    assert len(got) == RECORDS
    assert sorted(int(v) for *_, v in got) == list(range(RECORDS))
    # one key, one partition: that is what keys are for
    partition_of: dict[str, set[int]] = {}
    for partition, _offset, key, _v in got:
        partition_of.setdefault(key, set()).add(partition)
    assert all(len(ps) == 1 for ps in partition_of.values())


def test_exec_runs_kafka_tools_on_a_machine(cluster):
    out = cluster.kafkalab(
        "exec",
        "kafka2",
        "--",
        "kafka-topics.sh",
        "--bootstrap-server",
        "kafka1:9092",
        "--describe",
        "--topic",
        TOPIC,
    ).stdout
    assert "PartitionCount: 3" in out
    assert "ReplicationFactor: 3" in out


def test_the_next_lab_copies_this_labs_class_archive(cluster):
    """The cache keeps one tools' class archive per base image and release: made by the first
    lab's machines, copied by a later lab's from their share (not dumped again)."""
    brokers = {n: hv for n, hv in cluster.hosts.items() if "kafka_broker" in hv["groups"]}
    hv = {**cluster.inventory["all"].get("vars", {}), **next(iter(brokers.values()))}
    kept = class_archive.cached(image.image_dir(), Path(hv["kafka_archive"]))
    assert kept is not None and kept.read_bytes()[:4] == class_archive.MAGIC
    digest = hashlib.sha256(kept.read_bytes()).hexdigest()
    path = "/" + class_archive.on_machine(hv["kafka_version"])
    sums = {
        n: cluster.kafkalab("exec", n, "--", "sha256sum", path).stdout.split()[0] for n in brokers
    }
    if hv.get("kafka_tools_cds_archive_on_host"):  # offered one: every machine copied it
        assert set(sums.values()) == {digest}, sums
    else:  # this lab's machines made theirs: the cache keeps one of them
        assert digest in sums.values(), sums


def test_second_up_changes_nothing(cluster):
    out = cluster.kafkalab("up").stdout
    assert re.search(r"changed=0\b", out), out


def test_down_then_up_keeps_data(cluster):
    before = client.end_offsets(cluster.bootstrap, TOPIC, 3)
    ids_before = meta(cluster, "kafka1")["cluster.id"]
    cluster.kafkalab("down")
    out = cluster.kafkalab("up").stdout
    assert re.search(r"changed=0\b", out), out
    assert meta(cluster, "kafka1")["cluster.id"] == ids_before
    assert client.end_offsets(cluster.bootstrap, TOPIC, 3) == before
    got = client.consume_all(cluster.bootstrap, TOPIC, RECORDS, group="backbone-after-restart")
    assert len(got) == RECORDS
