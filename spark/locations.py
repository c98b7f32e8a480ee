"""Write rider locations to the `locations` topic: seed 002's six riders, then some moves.

    .venv/bin/python spark/locations.py             # the seed's six INSERTs
    .venv/bin/python spark/locations.py --moves     # then two riders move

Key: profileId; value: {"profileId", "latitude", "longitude"} as JSON, one partition,
like the seed's `CREATE STREAM rider_locations ... WITH (kafka_topic='locations',
value_format='json', partitions=1)`.
"""

from __future__ import annotations

import argparse
import json

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

# INSERT INTO rider_locations (profileId, latitude, longitude) VALUES ... (seed 002)
SEED = [
    ("c2309eec", 37.7877, -122.4205),
    ("18f4ea86", 37.3903, -122.0643),
    ("4ab5cbad", 37.3952, -122.0813),
    ("8b6eae59", 37.3944, -122.0813),
    ("4a7c7b41", 37.4049, -122.0822),
    ("4ddad000", 37.7857, -122.4011),
]
# Later positions: 4ab5cbad drives to San Francisco, c2309eec comes to Mountain View.
MOVES = [
    ("4ab5cbad", 37.7749, -122.4194),
    ("c2309eec", 37.3861, -122.0839),
]


def send(bootstrap: str, topic: str, rows: list[tuple[str, float, float]]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=1)], operation_timeout=30)
    try:
        futures[topic].result(timeout=60)
    except KafkaException as exc:
        if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for profile, lat, lon in rows:
        value = {"profileId": profile, "latitude": lat, "longitude": lon}
        producer.produce(topic, key=profile, value=json.dumps(value))
        print(f"{profile}: {lat}, {lon}")
    if producer.flush(60):
        raise SystemExit("some locations were not delivered")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="kafka1:9092")
    parser.add_argument("--topic", default="locations")
    parser.add_argument("--moves", action="store_true", help="also send the later positions")
    parser.add_argument("--only-moves", action="store_true", help="send the later positions only")
    args = parser.parse_args()
    rows = MOVES if args.only_moves else SEED + (MOVES if args.moves else [])
    send(args.bootstrap, args.topic, rows)


if __name__ == "__main__":
    main()
