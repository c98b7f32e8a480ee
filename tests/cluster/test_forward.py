"""The cluster on the learner's desk (issue 13 item 2): seeds 000/001's notebook code, run
from the host's own network namespace (not `kafkalab shell`) against `localhost:<port>`,
through the ports kafkalab forwards, with confluent-kafka and with kafka-python.

The session's lab has host ports of its own (tests/host_side.py), not 9092: the seeds'
`localhost:9092` is that lab's `localhost:<host_kafka_port>`. Its topics have three
partitions led by different brokers, so a client on the host only gets every record if
every broker is advertised on a localhost port of its own (PLAINTEXT_HOST)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
import yaml

from kafkalab.targets import forward
from tests import client
from tests.host_side import on_host

pytestmark = pytest.mark.cluster

RECORDS = [b"Msg %d" % idx for idx in range(25)]
GROUPS = ("group1", "group3")


def forwarded(cluster) -> dict[str, str]:
    return json.loads(cluster.kafkalab("status", "--json").stdout)["lab"]["forwarded"]


def seed_topic(cluster, name: str) -> str:
    """The notebooks' topic, made with three partitions (the brokers' auto-create makes
    one): leaders on three brokers. Made from inside the lab, as kafkalab's clients are."""
    client.create_topic(cluster.bootstrap, name, partitions=3, rf=3)
    return name


def test_status_gives_the_bootstrap_of_every_broker_on_localhost(cluster):
    ports = sorted(int(url.split(":")[1]) for url in forwarded(cluster).values())
    assert len(ports) == 3 and ports == list(range(ports[0], ports[0] + 3))
    assert 9092 not in ports  # a test lab never takes a learner's port
    table = cluster.kafkalab("status").stdout
    assert f"from this host: bootstrap localhost:{ports[0]}" in table


def confluent_seed(bootstrap: str, topic: str) -> dict[str, object]:
    """Seeds 000/001 as the notebooks have them, bootstrap aside; each group reads until
    it has 25 records or 60 s passed (the notebook's 25 one-second polls are a demo)."""
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for idx in range(0, 25):
        producer.produce(topic, key=bytes(idx), value=b"Msg %d" % idx)
        producer.flush()
    brokers = producer.list_topics(timeout=10).brokers
    out: dict[str, object] = {"advertised": sorted(f"{b.host}:{b.port}" for b in brokers.values())}
    for group in GROUPS:
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
        )
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 25 and time.monotonic() < deadline:
            msg = consumer.consume(num_messages=1, timeout=1.0)
            if len(msg) > 0 and msg[0].error() is None:
                got.append(msg[0].value())
        consumer.close()
        out[group] = got
    return out


def kafka_python_seed(bootstrap: str, topic: str) -> dict[str, object]:
    """The same with kafka-python (seed 003's client)."""
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    partitions = set()
    for idx in range(0, 25):
        partitions.add(
            producer.send(topic, key=bytes(idx), value=b"Msg %d" % idx).get(30).partition
        )
    producer.close()
    out: dict[str, object] = {"partitions": sorted(partitions)}
    for group in GROUPS:
        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            consumer_timeout_ms=60000,
        )
        got: list[bytes] = []
        for msg in consumer:
            got.append(msg.value)
            if len(got) == 25:
                break
        consumer.close()
        out[group] = got
    return out


def test_seeds_000_001_from_the_host_with_confluent_kafka(cluster):
    urls = forwarded(cluster)
    topic = seed_topic(cluster, "some_topic")
    out = on_host(lambda: confluent_seed(urls["kafka1"], topic))
    assert out["advertised"] == sorted(urls[f"kafka{i}"] for i in (1, 2, 3))
    for group in GROUPS:
        assert sorted(out[group]) == sorted(RECORDS), group  # each group reads all 25


def test_seeds_000_001_from_the_host_with_kafka_python(cluster):
    urls = forwarded(cluster)
    topic = seed_topic(cluster, "some_topic_kafka_python")
    out = on_host(lambda: kafka_python_seed(urls["kafka1"], topic))
    assert out["partitions"] == [0, 1, 2]  # every leader reached, through its own port
    for group in GROUPS:
        assert sorted(out[group]) == sorted(RECORDS), group


def test_a_taken_host_port_is_one_line_and_the_lab_is_left_alone(cluster, tmp_path: Path):
    """`up` run on the host (as a learner runs it) with a port some program holds."""
    record = forward.running(cluster.state)
    assert record is not None
    inventory_before = cluster.inventory_path.read_text()

    def refused() -> tuple[int, list[str]]:
        with socket.socket() as held:  # a program of the learner's on the port
            held.bind(("127.0.0.1", 0))
            held.listen()
            taken = held.getsockname()[1]
            settings = {"mode": cluster.mode, "host_kafka_port": taken}
            (tmp_path / "cluster.yml").write_text(yaml.safe_dump(settings))
            proc = cluster.kafkalab("up", "-t", str(tmp_path / "cluster.yml"), check=False)
            assert proc.returncode != 0
            return taken, [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]

    taken, said = on_host(refused)
    assert said == [
        f"error: 127.0.0.1:{taken} (kafka1) is taken (Address already in use): set "
        "host_kafka_port in cluster.yml to a free port, or stop what listens there"
    ]
    assert forward.running(cluster.state) == record  # the forwarder kept its ports
    assert cluster.inventory_path.read_text() == inventory_before
