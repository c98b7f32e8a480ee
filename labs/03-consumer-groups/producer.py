"""Write orders to Kafka with the course's Python clients: confluent-kafka or kafka-python.

Run it from `kafkalab shell` (inside the lab network, where kafka1 resolves):

    .venv/bin/python labs/03-consumer-groups/producer.py --count 20
    .venv/bin/python labs/03-consumer-groups/producer.py --count 5 --key vip
    .venv/bin/python labs/03-consumer-groups/producer.py --count 20 --client kafka-python

Each record has a key (customer-N, or the one you give) and a value py-order-N. Records
with the same key go to the same partition.
"""

import argparse
import os
import time

CLIENTS = ("confluent-kafka", "kafka-python")


def delivered(key: str, partition: int, offset: int) -> None:
    print(f"{key:>11} -> partition {partition} offset {offset}")


def send_confluent(bootstrap: str, topic: str, records: list[tuple[str, str]]) -> int:
    """confluent-kafka, as in the course notebook: produce, callbacks, flush. Returns how
    many records were not delivered."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})

    def on_delivery(err, msg):
        if err is not None:
            print(f"not delivered: {err}")
        else:
            delivered(msg.key().decode(), msg.partition(), msg.offset())

    for key, value in records:
        producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
        producer.poll(0)
    return producer.flush(30)


def send_kafka_python(bootstrap: str, topic: str, records: list[tuple[str, str]]) -> int:
    """kafka-python, as in the course pages (seed 003): send() returns a future."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks="all")
    futures = [
        (key, producer.send(topic, key=key.encode(), value=value.encode()))
        for key, value in records
    ]
    producer.flush(30)
    left = 0
    for key, future in futures:
        try:
            meta = future.get(timeout=0)
        except KafkaError as err:
            print(f"not delivered: {err}")
            left += 1
        else:
            delivered(key, meta.partition, meta.offset)
    producer.close()
    return left


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
    parser.add_argument(
        "--client",
        choices=CLIENTS,
        default=os.environ.get("KAFKALAB_CLIENT", CLIENTS[0]),
        help="which Python client (default: $KAFKALAB_CLIENT, else confluent-kafka)",
    )
    args = parser.parse_args()

    run = int(time.time()) % 100_000  # values stay unique when you run it again
    records = [(args.key or f"customer-{i % 6}", f"py-order-{run}-{i}") for i in range(args.count)]
    send = send_confluent if args.client == "confluent-kafka" else send_kafka_python
    left = send(args.bootstrap, args.topic, records)
    print(
        f"sent {args.count} records to {args.topic} with {args.client}",
        f"({left} NOT delivered)" if left else "",
    )
    if left:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
