"""The kafka role's health check (files/kafka_health.py): its DescribeQuorum request on the
wire, the answer decoded, the under-replicated count, and when the role uses it (the live
check: tests/cluster/test_cluster.py::test_the_role_health_check_names_leader_and_strangers)."""

from __future__ import annotations

import struct
from io import BytesIO
from pathlib import Path

import pytest
from ansible.template import trust_as_template

from kafkalab.artifacts import kafka_python
from kafkalab.kafka import quorum
from tests.unit.roles.templar import host_context

health = quorum._role_health()
NAME = b"__cluster_metadata"


def test_the_describe_quorum_request_is_kafkas_flexible_v0():
    request = health.DescribeQuorumRequest_v0(
        topics=[(health._METADATA_TOPIC, [(0, {})], {})], tags={}
    )
    # compact array of 1 (0x02), compact string (length + 1), one partition (index 0), and an
    # empty tag buffer after the partition, the topic and the request
    want = b"\x02" + bytes([len(NAME) + 1]) + NAME + b"\x02" + b"\x00" * 4 + b"\x00\x00\x00"
    assert request.encode() == want
    assert (request.API_KEY, request.API_VERSION) == (55, 0)


def replica(node: int, offset: int) -> bytes:
    return struct.pack(">iq", node, offset) + b"\x00"


def test_the_answer_gives_leader_and_voters():
    part = (
        struct.pack(">ihiiq", 0, 0, 2, 7, 120)
        + b"\x04"
        + replica(1, 120)
        + replica(2, 120)
        + replica(3, 118)
        + b"\x02"
        + replica(4, 90)
        + b"\x00"
    )
    body = struct.pack(">h", 0) + b"\x02" + bytes([len(NAME) + 1]) + NAME + b"\x02" + part
    answer = health.DescribeQuorumResponse_v0.decode(BytesIO(body + b"\x00\x00"))
    leader, voters, observers = (
        answer.topics[0][1][0][2],
        answer.topics[0][1][0][5],
        answer.topics[0][1][0][6],
    )
    assert leader == 2
    assert [v[0] for v in voters] == [1, 2, 3]
    assert [o[0] for o in observers] == [4]


def test_a_partition_is_under_replicated_when_its_isr_is_smaller():
    # Metadata v1 topics: (error, name, internal, partitions); partitions:
    # (error, index, leader, replicas, isr)
    topics = [
        (0, "a", False, [(0, 0, 1, [1, 2, 3], [1, 2, 3]), (0, 1, 2, [1, 2, 3], [2, 3])]),
        (0, "b", False, [(0, 0, 3, [3], [3])]),
    ]
    assert health.under_replicated(topics) == ["a-1"]


@pytest.mark.parametrize(("wheel", "python"), [("", False), ("/c/kp.whl", True)])
def test_the_role_checks_with_kafka_python_only_when_it_installs_it(wheel, python):
    if wheel:
        wheel = str(kafka_python.wheel_path(Path("/cache")))
    templar = host_context("kafka", "kafka1", [], kafka_python_wheel=wheel)
    got = templar.template(trust_as_template("{{ _kafka_health_python }}"))
    assert got is python


def test_bad_broker_ids_are_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        health.main(["--bootstrap", "kafka1:9092", "--brokers", "1,x"])
    assert exc.value.code == 2
    assert "comma-separated ids" in capsys.readouterr().err


class Checks:
    """kafka_health's check_once and clock, faked: each try takes 0.1 s and is healthy from
    try number `healthy_from` on (never when 0); `tries` holds each try's connect timeout."""

    def __init__(self, healthy_from: int = 0) -> None:
        self.now = 100.0
        self.healthy_from = healthy_from
        self.tries: list[int] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def check_once(self, _args, _brokers, connect_ms):
        self.tries.append(connect_ms)
        self.now += 0.1
        if self.healthy_from and len(self.tries) >= self.healthy_from:
            return {"ok": True, "brokers": [[1, "kafka1", 9092]], "problems": []}
        return {"ok": False, "problems": [f"try {len(self.tries)}"]}


def fake_checks(monkeypatch, healthy_from: int = 0) -> Checks:
    checks = Checks(healthy_from)
    monkeypatch.setattr(health, "time", checks)
    monkeypatch.setattr(health, "check_once", checks.check_once)
    return checks


def test_wait_checks_again_until_the_cluster_is_healthy(monkeypatch, capsys):
    """--wait: a failing check is tried again every half second, and the first healthy one
    ends the wait; while waiting, a try gives up on a first connection after 2 s."""
    checks = fake_checks(monkeypatch, healthy_from=4)
    assert health.main(["--bootstrap", "kafka1:9092", "--brokers", "1", "--wait", "30"]) == 0
    assert checks.tries == [2000, 2000, 2000, 2000]
    assert checks.now == pytest.approx(100.0 + 4 * 0.1 + 3 * 0.5)
    assert '"ok": true' in capsys.readouterr().out


def test_wait_ends_with_the_last_problem_and_without_it_one_check_is_made(monkeypatch, capsys):
    checks = fake_checks(monkeypatch)
    assert health.main(["--bootstrap", "kafka1:9092", "--wait", "3"]) == 1
    assert 4 <= len(checks.tries) <= 6 and checks.now - 0.1 < 103.0  # the last try began in time
    assert f'"try {len(checks.tries)}"' in capsys.readouterr().out
    checks.tries.clear()
    assert health.main(["--bootstrap", "kafka1:9092"]) == 1
    assert checks.tries == [
        10000
    ]  # no --wait: one check, kafka-python's 10 s for a first connection
