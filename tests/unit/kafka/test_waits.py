"""The one set of waits (kafkalab.kafka.waits) on hand-made metadata: when a topic is ready,
what keeps a cluster from being healthy, and how that reads."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kafkalab.kafka import views, waits


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


BROKERS = {1: "kafka1", 2: "kafka2"}
ADDRESSES = {"kafka1": "a1", "kafka2": "a2"}


def reader(seen: dict[str, views.View]) -> Any:
    """Each broker's own answer, by address; a missing address does not answer."""

    def read(address: str, timeout: float) -> views.View:
        if address not in seen:
            raise OSError(f"{address}: no connection within {timeout:g}s")
        return seen[address]

    return read


def view(brokers: list[int], short: tuple[str, ...] = ()) -> views.View:
    return views.View(frozenset(brokers), short)


WHOLE = view([1, 2])


def test_health_names_what_is_missing(monkeypatch):
    monkeypatch.setattr(waits, "not_listening", lambda hosts, addresses: [])
    seen = {"a1:9092": view([1], ("t-0",)), "a2:9092": view([1], ("t-0",))}
    health = waits.health(BROKERS, ADDRESSES, full_isr=True, read=reader(seen))
    assert not health.ok
    assert health.missing == [2] and health.short == ["t-0"]
    assert health.gone(BROKERS) == ["kafka2"]
    assert health.describe() == "brokers missing: [2] under-replicated: t-0"
    # without full_isr, an under-replicated partition is no problem
    seen = {"a1:9092": view([1, 2], ("t-0",)), "a2:9092": view([1, 2], ("t-0",))}
    assert waits.health(BROKERS, ADDRESSES, read=reader(seen)).ok


def test_one_broker_behind_is_enough_to_wait(monkeypatch):
    """A broker just resumed from a pause still has its old cache: whole. The others know
    better. The cluster is healthy only when every broker says so."""
    monkeypatch.setattr(waits, "not_listening", lambda hosts, addresses: [])
    stale, knows = WHOLE, view([2], ("t-0", "t-1"))
    health = waits.health(
        BROKERS, ADDRESSES, full_isr=True, read=reader({"a1:9092": stale, "a2:9092": knows})
    )
    assert not health.ok and health.missing == [1] and health.short == ["t-0", "t-1"]
    both = reader({"a1:9092": WHOLE, "a2:9092": WHOLE})
    assert waits.health(BROKERS, ADDRESSES, full_isr=True, read=both).ok


def test_a_broker_that_does_not_answer_is_missing(monkeypatch):
    monkeypatch.setattr(waits, "not_listening", lambda hosts, addresses: [])
    health = waits.health(BROKERS, ADDRESSES, read=reader({"a1:9092": WHOLE}))
    assert not health.ok and health.missing == [2]
    assert health.describe() == "kafka2: a2:9092: no connection within 5s"


def test_a_broker_that_does_not_listen_is_not_back(monkeypatch):
    monkeypatch.setattr(waits, "not_listening", lambda hosts, addresses: ["kafka2"])
    health = waits.health(BROKERS, ADDRESSES, read=reader({}))
    assert health.describe() == "not listening: kafka2"
    assert health.gone(BROKERS) == ["kafka2"]


def test_zookeeper_servers_that_do_not_serve(monkeypatch):
    monkeypatch.setattr(waits, "not_listening", lambda hosts, addresses: [])
    monkeypatch.setattr(waits, "zk_mode", lambda address: {"a1": "leader"}.get(address))
    both = reader({"a1:9092": WHOLE, "a2:9092": WHOLE})
    health = waits.health(BROKERS, ADDRESSES, zookeeper=["kafka1", "kafka2"], read=both)
    assert health.zookeeper == ["kafka2"] and health.gone(BROKERS) == []
    assert "ZooKeeper not serving: kafka2" in health.describe()


def test_wait_healthy_gives_up_with_the_last_answer(monkeypatch):
    answers = iter([waits.Health(missing=[2]), waits.Health()])
    monkeypatch.setattr(waits, "health", lambda *a, **kw: next(answers))
    health, seconds = waits.wait_healthy(BROKERS, {}, timeout=5, tick=0)
    assert health.ok and seconds < 5
    monkeypatch.setattr(waits, "health", lambda *a, **kw: waits.Health(missing=[2]))
    health, _ = waits.wait_healthy(BROKERS, {}, timeout=0, tick=0)
    assert health.missing == [2]
