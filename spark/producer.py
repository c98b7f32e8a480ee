"""Replay rides.csv into the `rides` topic, keyed by pickup location (seed 003's producer).

Run it inside the lab network (`kafkalab shell`, or a lab step):

    .venv/bin/python spark/producer.py                       # every ride, as fast as it can
    .venv/bin/python spark/producer.py --rate 100            # 100 rides a second
    .venv/bin/python spark/producer.py --first 1500          # only rides 0..1499
    .venv/bin/python spark/producer.py --skip 1500 --end-marker   # the rest, then close the windows

Each record: key = PULocationID, value = the Ride as JSON. The topic is created with 3
partitions when it does not exist. `--end-marker` adds one ride an hour after the last
one, at location 0 (no real zone): it moves the streaming job's watermark past every
window of the file, so the job emits the last windows too (the marker's own window stays
open and is never emitted).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from datetime import timedelta
from pathlib import Path

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ride import Ride

DATA = Path(__file__).resolve().parent / "data" / "rides.csv"
END_MARKER_LOCATION = 0


def read_rides(path: Path = DATA) -> list[Ride]:
    with path.open(newline="") as f:
        reader = csv.reader(f)
        next(reader)  # the header row
        return [Ride.from_row(row) for row in reader]


def end_marker(rides: list[Ride]) -> Ride:
    last = max(rides, key=lambda r: r.tpep_pickup_datetime)
    marker = Ride(**vars(last))
    marker.pu_location_id = END_MARKER_LOCATION
    marker.tpep_pickup_datetime = last.tpep_pickup_datetime + timedelta(hours=1)
    marker.tpep_dropoff_datetime = marker.tpep_pickup_datetime + timedelta(minutes=1)
    return marker


def ensure_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions)], operation_timeout=30
    )
    try:
        futures[topic].result(timeout=60)
        print(f"created topic {topic} ({partitions} partitions)")
    except KafkaException as exc:
        if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise


def publish(bootstrap: str, topic: str, rides: list[Ride], rate: float) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20})
    failed: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            failed.append(str(err))

    started = time.monotonic()
    for n, ride in enumerate(rides, start=1):
        producer.produce(
            topic,
            key=str(ride.pu_location_id),
            value=json.dumps(ride.to_dict()),
            on_delivery=delivered,
        )
        producer.poll(0)
        if rate > 0:
            ahead = n / rate - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)
        if n % 500 == 0:
            print(f"{n} rides sent (up to pickup {ride.tpep_pickup_datetime})", flush=True)
    left = producer.flush(60)
    if failed or left:
        raise SystemExit(f"{left} rides not delivered; errors: {failed[:3]}")
    return len(rides)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="kafka1:9092", help="bootstrap servers")
    parser.add_argument("--topic", default="rides")
    parser.add_argument("--partitions", type=int, default=3, help="when the topic is created")
    parser.add_argument("--csv", type=Path, default=DATA)
    parser.add_argument("--skip", type=int, default=0, help="start after this many rides")
    parser.add_argument("--first", type=int, default=None, help="send this many rides")
    parser.add_argument("--rate", type=float, default=0, help="rides per second (0: no limit)")
    parser.add_argument("--end-marker", action="store_true", help="close the last windows")
    args = parser.parse_args(argv)

    rides = read_rides(args.csv)
    chosen = rides[args.skip :][: args.first] if args.first is not None else rides[args.skip :]
    if args.end_marker:
        chosen.append(end_marker(rides))
    ensure_topic(args.bootstrap, args.topic, args.partitions)
    sent = publish(args.bootstrap, args.topic, chosen, args.rate)
    print(
        f"sent {sent} rides to {args.topic}"
        + (" (the last one is the end marker)" if args.end_marker else "")
    )


if __name__ == "__main__":
    main()
