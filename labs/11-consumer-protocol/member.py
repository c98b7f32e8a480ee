"""One member of a consumer group, on the group protocol you name (confluent-kafka).

Run it from `kafkalab shell` (inside the lab network), in as many terminals as you like:

    .venv/bin/python labs/11-consumer-protocol/member.py --group dispatch --protocol consumer
    .venv/bin/python labs/11-consumer-protocol/member.py --group legacy --protocol classic

It prints each change of its partitions with the time since it started: `+[3, 4]` when the
group gives it partitions, `-[0, 1, 2]` when it takes some away. On the classic protocol
with the default (eager) assignors a rebalance takes every partition from every member
first; on the new protocol (KIP-848) the broker moves only the partitions that change
owner, and the other members read on. Ctrl-C (or --seconds) ends it; closing commits
what it read and leaves the group.
"""

import argparse
import os
import time

from confluent_kafka import Consumer, TopicPartition


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", required=True)
    ap.add_argument("--protocol", choices=["consumer", "classic"], default="consumer")
    ap.add_argument("--name", default="m1", help="shown before each line")
    ap.add_argument("--topic", default="trips")
    ap.add_argument("--seconds", type=float, default=30, help="stop after this long")
    args = ap.parse_args()
    start = time.monotonic()

    def say(text: str) -> None:
        print(f"{args.name} {time.monotonic() - start:5.1f}s {text}", flush=True)

    def changed(sign: str, parts: list[TopicPartition]) -> None:
        if parts:
            say(f"{sign}{sorted(p.partition for p in parts)}")

    consumer = Consumer(
        {
            "bootstrap.servers": os.environ.get("KAFKALAB_BOOTSTRAP", "kafka1:9092"),
            "group.id": args.group,
            "group.protocol": args.protocol,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(
        [args.topic],
        on_assign=lambda _c, parts: changed("+", parts),
        on_revoke=lambda _c, parts: changed("-", parts),
    )
    read = 0
    try:
        while time.monotonic() - start < args.seconds:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                read += 1
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    say(f"read {read} records, left the group")


if __name__ == "__main__":
    main()
