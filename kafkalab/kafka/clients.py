"""The one place Kafka clients (confluent-kafka) are made: admin, producer, consumer.

A cluster's addresses exist only inside its network namespace, so a client is made only
from a thread in one (kafkalab.targets.netns.require_inside; threads it starts, such as
librdkafka's, inherit the namespace). librdkafka's own log lines (a broker is down, a
connection refused, ...) go to a quiet logger, not to the terminal: the caller says what
matters. Settings a caller passes win over the defaults here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from kafkalab.targets import netns

QUIET = logging.getLogger("kafkalab.rdkafka")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False

Settings = Mapping[str, Any]


def _config(bootstrap: str, defaults: Settings, settings: Settings | None) -> dict[str, Any]:
    netns.require_inside()
    return {"bootstrap.servers": bootstrap, "logger": QUIET, **defaults, **(settings or {})}


def admin(bootstrap: str, settings: Settings | None = None) -> AdminClient:
    """An admin client. Keep it alive until the futures it returned resolve (librdkafka
    fails them with _DESTROY otherwise)."""
    # Asking about a topic must never create it (brokers auto-create for learners).
    defaults = {"socket.timeout.ms": 10000, "allow.auto.create.topics": False}
    return AdminClient(_config(bootstrap, defaults, settings))


def producer(bootstrap: str, settings: Settings | None = None) -> Producer:
    return Producer(_config(bootstrap, {}, settings))


def consumer(bootstrap: str, group: str, settings: Settings | None = None) -> Consumer:
    return Consumer(_config(bootstrap, {"group.id": group}, settings))
