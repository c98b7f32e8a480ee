"""Write orders to Kafka with confluent-kafka, as in the course notebook.

Run it from `kafkalab shell` (inside the lab network, where kafka1 resolves):

    .venv/bin/python labs/03-consumer-groups/producer.py --count 20
    .venv/bin/python labs/03-consumer-groups/producer.py --count 5 --key vip

Each record has a key (customer-N, or the one you give) and a value py-order-N. Records
with the same key go to the same partition.
"""

import argparse
import os
import time

from confluent_kafka import Producer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--bootstrap",
        default=os.environ.get("KAFKALAB_BOOTSTRAP", "kafka1:9092"),
        help="bootstrap.servers (default: $KAFKALAB_BOOTSTRAP, else kafka1:9092)",
    )
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--count", type=int, default=20, help="how many records")
    parser.add_argument("--key", help="one key for all records (default: customer-0..5)")
    args = parser.parse_args()

    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all"})
    run = int(time.time()) % 100_000  # values stay unique when you run it again

    def delivered(err, msg):
        if err is not None:
            print(f"not delivered: {err}")
        else:
            key = msg.key().decode()
            print(f"{key:>11} -> partition {msg.partition()} offset {msg.offset()}")

    for i in range(args.count):
        key = args.key or f"customer-{i % 6}"
        producer.produce(args.topic, key=key, value=f"py-order-{run}-{i}", on_delivery=delivered)
        producer.poll(0)
    left = producer.flush(30)
    print(f"sent {args.count} records to {args.topic}", f"({left} NOT delivered)" if left else "")
    if left:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
