"""Seed 002's ksqlDB notebook against the lab's ksqlDB server, through its REST API.

Run it from `kafkalab shell` (inside the lab network, where ksql1 resolves):

    .venv/bin/python labs/08-ksqldb-riders/riders.py stream   # CREATE STREAM rider_locations
    .venv/bin/python labs/08-ksqldb-riders/riders.py tables   # the two CREATE TABLE ... AS
    .venv/bin/python labs/08-ksqldb-riders/riders.py push     # push query; six inserts meanwhile
    .venv/bin/python labs/08-ksqldb-riders/riders.py pull     # pull query, current state
    .venv/bin/python labs/08-ksqldb-riders/riders.py drop     # drop it all (and the topics)

The client is kafkalab.streaming.ksqldb_client.KsqlClient (httpx), not ksql-python: POST /ksql
for statements, POST /query-stream for push and pull queries.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

from kafkalab.artifacts import ksqldb as ksqldb_artifact
from kafkalab.errors import KafkalabError
from kafkalab.streaming.ksqldb_client import KsqlClient
from kafkalab.targets import resolve
from kafkalab.targets.cluster import InventoryCluster

CREATE_STREAM = """
    CREATE STREAM rider_locations (profileId VARCHAR, latitude DOUBLE, longitude DOUBLE)
    WITH (kafka_topic='locations', value_format='json', partitions=1)
"""
CURRENT_LOCATION = """
    CREATE TABLE current_location AS
        SELECT profileId,
               LATEST_BY_OFFSET(latitude) AS la,
               LATEST_BY_OFFSET(longitude) AS lo
        FROM rider_locations
        GROUP BY profileId
"""
RIDERS_NEAR_MOUNTAIN_VIEW = """
    CREATE TABLE riders_near_mountain_view AS
        SELECT ROUND(GEO_DISTANCE(la, lo, 37.4133, -122.1162), -1) AS distanceInMiles,
               COLLECT_LIST(profileId) AS riders,
               COUNT(*) AS count
        FROM current_location
        GROUP BY ROUND(GEO_DISTANCE(la, lo, 37.4133, -122.1162), -1)
"""
SEED = [  # the seed's six INSERT INTO rider_locations ... VALUES
    ("c2309eec", 37.7877, -122.4205),
    ("18f4ea86", 37.3903, -122.0643),
    ("4ab5cbad", 37.3952, -122.0813),
    ("8b6eae59", 37.3944, -122.0813),
    ("4a7c7b41", 37.4049, -122.0822),
    ("4ddad000", 37.7857, -122.4011),
]
INSERTS = "\n".join(
    "INSERT INTO rider_locations (profileId, latitude, longitude)"
    f" VALUES ('{profile}', {lat}, {lon});"
    for profile, lat, lon in SEED
)
PUSH = """
    SELECT * FROM rider_locations
        WHERE GEO_DISTANCE(latitude, longitude, 37.4133, -122.1162) <= 5
        EMIT CHANGES
"""
PULL = "SELECT * FROM riders_near_mountain_view WHERE distanceInMiles <= 10"
DROP = [
    "DROP TABLE IF EXISTS riders_near_mountain_view DELETE TOPIC",
    "DROP TABLE IF EXISTS current_location DELETE TOPIC",
    "DROP STREAM IF EXISTS rider_locations DELETE TOPIC",
]


def server_url(cluster: InventoryCluster | None = None) -> str:
    """The cluster's ksqlDB REST endpoint (by default the cluster kafkalab.targets.resolve
    picks, as `lab solve` names it); a clear error when it has none."""
    topo = (cluster or resolve.cluster()).layout()
    hosts = [m for m in (topo.machines() if topo else []) if "ksqldb" in m.groups]
    if hosts:
        return f"http://{hosts[0].address}:8088"
    if ksqldb_artifact.cached() is None:
        raise KafkalabError(ksqldb_artifact.missing_message())
    raise KafkalabError("this lab has no ksqlDB host: run `kafkalab up --with ksqldb`")


def stream(client: KsqlClient) -> None:
    client.ksql(CREATE_STREAM)
    print("stream rider_locations over topic locations")


def tables(client: KsqlClient) -> None:
    client.ksql(CURRENT_LOCATION)
    client.ksql(RIDERS_NEAR_MOUNTAIN_VIEW)
    print("tables current_location and riders_near_mountain_view (persistent queries)")


def insert(client: KsqlClient) -> None:
    client.ksql(INSERTS)
    print("inserted six rider locations")


def push(client: KsqlClient, rows: int, insert_after: float) -> list[dict[str, object]]:
    """The seed's push query, with the inserts made from a thread while it listens."""
    if insert_after >= 0:

        def later() -> None:
            time.sleep(insert_after)
            insert(client)

        threading.Thread(target=later, daemon=True).start()
    found = client.push(PUSH, rows, {"ksql.streams.auto.offset.reset": "earliest"})
    for row in found:
        print(row)
    return found


def pull(client: KsqlClient, timeout: float = 60) -> list[dict[str, object]]:
    """The pull query, retried until the table has rows (it fills within seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        rows = client.pull(PULL)
        if rows or time.monotonic() > deadline:
            break
        time.sleep(2)
    for row in rows:
        print(row)
    return rows


def drop(client: KsqlClient) -> None:
    for statement in DROP:
        client.ksql(statement)
    print("dropped riders_near_mountain_view, current_location, rider_locations and their topics")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["stream", "tables", "insert", "push", "pull", "drop"])
    parser.add_argument("--url", help="ksqlDB REST endpoint (default: the lab's ksql1:8088)")
    parser.add_argument("--rows", type=int, default=3, help="push: rows to wait for")
    parser.add_argument(
        "--insert-after", type=float, default=10, help="push: insert after this many s (-1: no)"
    )
    args = parser.parse_args()
    try:
        with KsqlClient(args.url or server_url()) as client:
            client.wait_running()
            if args.what == "push":
                push(client, args.rows, args.insert_after)
            elif args.what == "pull":
                pull(client)
            else:
                steps = {"stream": stream, "tables": tables, "insert": insert, "drop": drop}
                steps[args.what](client)
    except KafkalabError as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
