"""One worker of a share group (KIP-932): a queue over a Kafka topic, with confluent-kafka's
ShareConsumer (librdkafka 2.16; it logs that its share consumer is a "Preview").

Run it from `kafkalab shell` (inside the lab network), in as many terminals as you like:

    .venv/bin/python labs/12-share-groups/worker.py --name w1 --release job-3
    .venv/bin/python labs/12-share-groups/worker.py --name w2

Every worker of group `workers` reads the same partition; the broker hands each record to
one of them (acquired for 30 s). The worker acknowledges each record on its own: ACCEPT
(done), RELEASE (give it back: it is delivered again, to any worker, its delivery count one
higher) or REJECT (never deliver it again). It prints `w1 p0@7 job-8 delivery=1 ACCEPT`
per record and stops after --idle seconds without one.
"""

import argparse
import os
import time

from confluent_kafka import AcknowledgeType, ShareConsumer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="w1", help="shown before each line")
    ap.add_argument("--group", default="workers")
    ap.add_argument("--topic", default="jobs")
    ap.add_argument("--release", nargs="*", default=[], help="values to give back every time")
    ap.add_argument("--reject", nargs="*", default=[], help="values to refuse for good")
    ap.add_argument("--work", type=float, default=0.3, help="seconds of 'work' per record")
    ap.add_argument("--idle", type=float, default=14, help="stop after this long without one")
    args = ap.parse_args()
    consumer = ShareConsumer(
        {
            "bootstrap.servers": os.environ.get("KAFKALAB_BOOTSTRAP", "kafka1:9092"),
            "group.id": args.group,
            "share.acknowledgement.mode": "explicit",  # each record acknowledged on its own
            "max.poll.records": 4,  # a few at a time: the other workers get the rest
        }
    )
    consumer.subscribe([args.topic])
    handled, last = 0, time.monotonic()
    try:
        while time.monotonic() - last < args.idle:
            batch = consumer.poll(0.5)
            for msg in batch:
                if msg.error():
                    print(f"{args.name} error: {msg.error()}", flush=True)
                    continue
                value = (msg.value() or b"").decode()
                verdict = AcknowledgeType.ACCEPT
                if value in args.release:
                    verdict = AcknowledgeType.RELEASE
                elif value in args.reject:
                    verdict = AcknowledgeType.REJECT
                time.sleep(args.work)
                consumer.acknowledge(msg, verdict)
                handled += 1
                print(
                    f"{args.name} p{msg.partition()}@{msg.offset()} {value} "
                    f"delivery={msg.delivery_count()} {verdict.name}",
                    flush=True,
                )
            if batch:
                consumer.commit_sync()  # the acknowledgements go to the broker
                last = time.monotonic()
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    print(f"{args.name} handled {handled} deliveries, left the group", flush=True)


if __name__ == "__main__":
    main()
