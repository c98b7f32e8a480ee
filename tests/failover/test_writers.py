"""kafkalab.failover.forensics on a real broker: kafka-dump-log.sh tells who wrote each
record, which the failover verdict uses to explain a duplicate
(tests/unit/failover/test_forensics.py has the arithmetic on a dump from a real duplicate)."""

from __future__ import annotations

import pytest

from kafkalab.failover import forensics
from kafkalab.targets.embedded import EmbeddedCluster
from tests import client

pytestmark = [pytest.mark.cluster, pytest.mark.parametrize("cluster", ["kraft"], indirect=True)]


def test_the_log_names_the_producer_epoch_and_sequence_of_each_record(cluster):
    topic = "writers-check"
    client.create_topic(cluster.bootstrap, topic, 1, 3)
    idempotent = client.produce_keyed(
        cluster.bootstrap, topic, 5, {"enable.idempotence": True, "linger.ms": 0}
    )
    plain = client.produce_keyed(cluster.bootstrap, topic, 2, {"enable.idempotence": False})
    leader = client.describe(cluster.bootstrap, topic)[0].leader
    host = next(h for h, hv in cluster.hosts.items() if hv.get("kafka_node_id") == leader)

    offsets = [o for _p, o, _k in idempotent + plain]
    writers = forensics.read_writers(EmbeddedCluster(cluster.state), host, topic, 0, offsets)

    first = [writers[o] for _p, o, _k in idempotent]
    assert first[0].producer_id >= 0
    assert {w.producer_id for w in first} == {first[0].producer_id}
    assert {w.epoch for w in first} == {0}
    assert [w.sequence for w in first] == list(range(5))
    assert all(writers[o] == forensics.Writer(-1, -1, -1) for _p, o, _k in plain)
    # Two records of one producer epoch are not an epoch-bump re-send.
    assert not forensics.resent_after_epoch_bump(first[:2])
