#!/usr/bin/env python3
"""kafkalab's health check of a Kafka cluster, in one Python process (kafka-python).

    kafka_health.py --bootstrap kafka1:9092 [--brokers 1,2,3] [--quorum] [--in-sync] [--wait S]

It does the work of three JVM tools (kafka-broker-api-versions.sh, kafka-metadata-quorum.sh
describe --status, kafka-topics.sh --describe --under-replicated-partitions), each of which
takes about a second to start, and prints one JSON object:

    {"ok": true, "brokers": [[1, "kafka1", 9092], ...], "leader": 1, "voters": [1, 2, 3],
     "under_replicated": [], "problems": []}

--brokers: these broker ids are registered, unfenced (a broker's metadata lists only those)
           and answer an ApiVersions request themselves;
--quorum:  the KRaft quorum has a leader (DescribeQuorum, which a broker forwards to the
           active controller; kafka-python has no request class for it, so it is below);
--in-sync: no partition has fewer in-sync replicas than replicas;
--wait:    check again every half second, up to S seconds, until every condition holds (the
           report is the last check's). While no broker listens yet, each try gives up
           after 2 s: kafka-python's own wait for a first connection (10 s, with reconnects
           backing off towards 30 s) outlasted the brokers' start by seconds.
Exit status 0 when every asked condition holds, 1 when one does not (see "problems"), 2 on
bad arguments. Runs on the machine's python3 (3.9 and later) with the role's kafka-python.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from kafka.client_async import KafkaClient
from kafka.protocol.api import Request, Response
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.types import (
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)

_TIMEOUT_MS = 10000
_WAITING_CONNECT_MS = 2000
_INTERVAL_S = 0.5
_METADATA_TOPIC = "__cluster_metadata"


class DescribeQuorumResponse_v0(Response):
    API_KEY = 55
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    _REPLICA = (("replica_id", Int32), ("log_end_offset", Int64), ("tags", TaggedFields))
    SCHEMA = Schema(
        ("error_code", Int16),
        (
            "topics",
            CompactArray(
                ("topic_name", CompactString("utf-8")),
                (
                    "partitions",
                    CompactArray(
                        ("partition_index", Int32),
                        ("error_code", Int16),
                        ("leader_id", Int32),
                        ("leader_epoch", Int32),
                        ("high_watermark", Int64),
                        ("current_voters", CompactArray(*_REPLICA)),
                        ("observers", CompactArray(*_REPLICA)),
                        ("tags", TaggedFields),
                    ),
                ),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class DescribeQuorumRequest_v0(Request):
    API_KEY = 55
    API_VERSION = 0
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = DescribeQuorumResponse_v0
    SCHEMA = Schema(
        (
            "topics",
            CompactArray(
                ("topic_name", CompactString("utf-8")),
                ("partitions", CompactArray(("partition_index", Int32), ("tags", TaggedFields))),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


def _send(client: KafkaClient, node_id: Any, request: Any) -> Any:
    """One request to one node, waited for; raises what the future failed with."""
    if not client.await_ready(node_id, timeout_ms=_TIMEOUT_MS):
        raise ConnectionError(f"node {node_id} does not answer")
    future = client.send(node_id, request)
    client.poll(future=future, timeout_ms=_TIMEOUT_MS)
    if not future.is_done:
        raise TimeoutError(f"node {node_id} did not answer in {_TIMEOUT_MS} ms")
    if future.failed():
        raise future.exception
    return future.value


def describe_quorum(client: KafkaClient, node_id: Any) -> tuple[int, list[int]]:
    """The KRaft quorum's leader id and voter ids (DescribeQuorum, asked of a broker, which
    forwards it to the active controller); raises RuntimeError without a leader."""
    request = DescribeQuorumRequest_v0(topics=[(_METADATA_TOPIC, [(0, {})], {})], tags={})
    answer = _send(client, node_id, request)
    part = answer.topics[0][1][0]
    error = answer.error_code or part[1]
    if error:
        raise RuntimeError(f"DescribeQuorum answered error code {error}")
    if part[2] < 0:
        raise RuntimeError("the KRaft quorum has no leader")
    return part[2], sorted(v[0] for v in part[5])


def connect(bootstrap: str, connect_ms: int = _TIMEOUT_MS) -> KafkaClient:
    """A kafka-python client of the cluster (raises when no bootstrap server answers within
    connect_ms)."""
    return KafkaClient(
        bootstrap_servers=bootstrap.split(","),
        client_id="kafkalab-health",
        request_timeout_ms=_TIMEOUT_MS,
        api_version_auto_timeout_ms=connect_ms,
        reconnect_backoff_max_ms=min(connect_ms, 1000),
    )


def under_replicated(topics: list[Any]) -> list[str]:
    """topic-partition names whose ISR is smaller than their replica set (Metadata v1+)."""
    out = []
    for topic in topics:
        name, partitions = topic[1], topic[3]
        for part in partitions:
            index, replicas, isr = part[1], part[3], part[4]
            if len(isr) < len(replicas):
                out.append(f"{name}-{index}")
    return sorted(out)


def check(client: KafkaClient, brokers: list[int], quorum: bool, in_sync: bool) -> dict[str, Any]:
    """The cluster's state and every problem with it, as the JSON the role reads."""
    report: dict[str, Any] = {
        "brokers": [],
        "leader": None,
        "voters": [],
        "under_replicated": [],
        "problems": [],
    }
    problems: list[str] = report["problems"]
    bootstrap = client.least_loaded_node()
    meta = _send(client, bootstrap, MetadataRequest[1](topics=None))
    listed = sorted((b[0], b[1], b[2]) for b in meta.brokers)
    report["brokers"] = [list(b) for b in listed]
    ids = {b[0] for b in listed}
    missing = [b for b in brokers if b not in ids]
    if missing:
        problems.append(f"brokers not registered (or fenced): {missing}")
    client.cluster.update_metadata(meta)
    for broker_id in sorted(ids & set(brokers)):
        try:
            _send(client, broker_id, MetadataRequest[1](topics=[]))
        except Exception as exc:
            problems.append(f"broker {broker_id} does not answer: {exc!r}")
    if quorum:
        try:
            report["leader"], report["voters"] = describe_quorum(client, bootstrap)
        except Exception as exc:
            problems.append(f"{exc}")
    if in_sync:
        report["under_replicated"] = under_replicated(meta.topics)
        if report["under_replicated"]:
            problems.append(f"under-replicated partitions: {report['under_replicated']}")
    report["ok"] = not problems
    return report


def check_once(args: argparse.Namespace, brokers: list[int], connect_ms: int) -> dict[str, Any]:
    try:
        client = connect(args.bootstrap, connect_ms)
    except Exception as exc:  # no broker answers yet
        return {"ok": False, "problems": [f"no broker answers at {args.bootstrap}: {exc!r}"]}
    try:
        return check(client, brokers, args.quorum, args.in_sync)
    except Exception as exc:
        return {"ok": False, "problems": [f"{exc!r}"]}
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--brokers", default="", help="comma-separated broker ids")
    parser.add_argument("--quorum", action="store_true")
    parser.add_argument("--in-sync", action="store_true")
    parser.add_argument("--wait", type=float, default=0.0, metavar="SECONDS")
    args = parser.parse_args(argv)
    try:
        brokers = [int(b) for b in args.brokers.split(",") if b]
    except ValueError:
        parser.error(f"--brokers takes comma-separated ids, not {args.brokers!r}")
    deadline = time.monotonic() + args.wait
    connect_ms = _WAITING_CONNECT_MS if args.wait > 0 else _TIMEOUT_MS
    report = check_once(args, brokers, connect_ms)
    while not report["ok"] and time.monotonic() + _INTERVAL_S < deadline:
        time.sleep(_INTERVAL_S)
        report = check_once(args, brokers, connect_ms)
    print(json.dumps(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
