"""Put jobs on the queue: --count records `job-1`, `job-2`, ... to topic jobs, each sent on
its own (no batching), so that every worker of the share group gets some of them.

    .venv/bin/python labs/12-share-groups/jobs.py --count 20
"""

import argparse
import os

from confluent_kafka import Producer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--topic", default="jobs")
    args = ap.parse_args()
    producer = Producer(
        {"bootstrap.servers": os.environ.get("KAFKALAB_BOOTSTRAP", "kafka1:9092"), "acks": "all"}
    )
    for i in range(1, args.count + 1):
        producer.produce(args.topic, value=f"job-{i}")
        producer.flush()  # one record per request: a batch of its own
    print(f"sent {args.count} jobs to {args.topic}")


if __name__ == "__main__":
    main()
