"""Read orders as a member of a consumer group, with confluent-kafka.

Run it from `kafkalab shell` (inside the lab network), in as many terminals as you like:

    .venv/bin/python labs/03-consumer-groups/consumer.py --group billing --name c1

Members of one group share the topic's partitions; every group reads everything once.
It prints when the group gives it partitions or takes them away (a rebalance), then
each record. Ctrl-C (or --seconds, --idle) ends it; closing commits the offsets read.
"""

import argparse
import os
import time

from confluent_kafka import Consumer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--bootstrap",
        default=os.environ.get("KAFKALAB_BOOTSTRAP", "kafka1:9092"),
        help="bootstrap.servers (default: $KAFKALAB_BOOTSTRAP, else kafka1:9092)",
    )
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--group", required=True, help="group.id")
    parser.add_argument("--name", default="consumer", help="a name for this member's lines")
    parser.add_argument(
        "--offset-reset",
        choices=["earliest", "latest"],
        default="earliest",
        help="where a group with no committed offset starts (auto.offset.reset)",
    )
    parser.add_argument("--seconds", type=float, help="stop after this many seconds")
    parser.add_argument("--idle", type=float, help="stop after this many seconds without records")
    args = parser.parse_args()

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "auto.offset.reset": args.offset_reset,
            "enable.auto.commit": True,  # commits what was read every 5 s and on close
        }
    )
    me = f"[{args.name}]"

    def assigned(_consumer, partitions):
        nonlocal last
        last = time.monotonic()  # --idle counts from here until the first record
        print(f"{me} got partitions {sorted(p.partition for p in partitions)}", flush=True)

    def revoked(_consumer, partitions):
        print(f"{me} gave back partitions {sorted(p.partition for p in partitions)}", flush=True)

    started = time.monotonic()
    last = None  # when a record (or the first partitions) came last
    count = 0
    consumer.subscribe([args.topic], on_assign=assigned, on_revoke=revoked)
    try:
        while True:
            now = time.monotonic()
            if args.seconds and now - started > args.seconds:
                break
            if args.idle and last is not None and now - last > args.idle:
                break
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                print(f"{me} error: {msg.error()}")
                continue
            count += 1
            last = now
            key = msg.key().decode() if msg.key() else None
            print(
                f"{me} partition {msg.partition()} offset {msg.offset()}: "
                f"{key} {msg.value().decode()}",
                flush=True,
            )
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()  # leaves the group (a rebalance for the others) and commits
    print(f"{me} read {count} records")


if __name__ == "__main__":
    main()
