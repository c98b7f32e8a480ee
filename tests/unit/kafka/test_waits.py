"""The one set of waits (kafkalab.kafka.waits) on hand-made metadata: when a topic is ready,
what keeps a cluster from being healthy, and how that reads."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kafkalab.kafka import waits


def part(pid: int, leader: int, replicas: list[int], isr: list[int]) -> Any:
    return SimpleNamespace(id=pid, leader=leader, replicas=replicas, isrs=isr)


def topic(*parts: Any) -> Any:
    return SimpleNamespace(error=None, partitions={p.id: p for p in parts}, topic="t")


def test_a_topic_is_ready_with_leaders_and_full_isrs():
    ready = topic(part(0, 2, [2, 1], [1, 2]), part(1, 1, [1, 2], [1, 2]))
    assert waits.topic_ready(ready)
    assert waits.topic_ready(ready, partitions=2)
    assert not waits.topic_ready(ready, partitions=3)
    assert not waits.topic_ready(topic(part(0, -1, [1, 2], [1, 2])))
    assert not waits.topic_ready(topic(part(0, 1, [1, 2], [1])))
    assert not waits.topic_ready(None)
    assert not waits.topic_ready(topic())


def test_preferred_leaders_are_the_first_replicas():
    moved = topic(part(0, 2, [1, 2], [1, 2]))
    assert waits.topic_ready(moved)
    assert not waits.topic_ready(moved, preferred=True)
    assert waits.topic_ready(topic(part(0, 1, [1, 2], [1, 2])), preferred=True)


class Admin:
    def __init__(self, brokers: list[int], topics: list[Any]) -> None:
        self.md = SimpleNamespace(
            brokers={b: object() for b in brokers}, topics={t.topic: t for t in topics}
        )

    def list_topics(self, timeout: float) -> Any:
        return self.md


BROKERS = {1: "kafka1", 2: "kafka2"}


def test_health_names_what_is_missing(monkeypatch):
    monkeypatch.setattr(waits, "not_listening", lambda hosts, addresses: [])
    short = topic(part(0, 1, [1, 2], [1]))
    health = waits.health(Admin([1], [short]), BROKERS, {}, full_isr=True)  # type: ignore[arg-type]
    assert not health.ok
    assert health.missing == [2] and health.short == ["t-0"]
    assert health.gone(BROKERS) == ["kafka2"]
    assert health.describe() == "brokers missing: [2] under-replicated: t-0"
    # without full_isr, an under-replicated partition is no problem
    assert waits.health(Admin([1, 2], [short]), BROKERS, {}).ok  # type: ignore[arg-type]


def test_a_broker_that_does_not_listen_is_not_back(monkeypatch):
    monkeypatch.setattr(waits, "not_listening", lambda hosts, addresses: ["kafka2"])
    health = waits.health(Admin([1, 2], []), BROKERS, {})  # type: ignore[arg-type]
    assert health.describe() == "not listening: kafka2"
    assert health.gone(BROKERS) == ["kafka2"]


def test_zookeeper_servers_that_do_not_serve(monkeypatch):
    monkeypatch.setattr(waits, "not_listening", lambda hosts, addresses: [])
    monkeypatch.setattr(waits, "zk_mode", lambda address: {"a": "leader"}.get(address))
    health = waits.health(
        Admin([1, 2], []),  # type: ignore[arg-type]
        BROKERS,
        {"kafka1": "a", "kafka2": "b"},
        zookeeper=["kafka1", "kafka2"],
    )
    assert health.zookeeper == ["kafka2"] and health.gone(BROKERS) == []
    assert "ZooKeeper not serving: kafka2" in health.describe()


def test_wait_healthy_gives_up_with_the_last_answer(monkeypatch):
    answers = iter([waits.Health(missing=[2]), waits.Health()])
    monkeypatch.setattr(waits, "health", lambda *a, **kw: next(answers))
    health, seconds = waits.wait_healthy(None, BROKERS, {}, timeout=5, tick=0)  # type: ignore[arg-type]
    assert health.ok and seconds < 5
    monkeypatch.setattr(waits, "health", lambda *a, **kw: waits.Health(missing=[2]))
    health, _ = waits.wait_healthy(None, BROKERS, {}, timeout=0, tick=0)  # type: ignore[arg-type]
    assert health.missing == [2]
