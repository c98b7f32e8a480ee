"""Produce numbered records with acks=all for a while and note every acknowledged one.

Run it from `kafkalab shell` (inside the lab network) and stop a broker meanwhile:

    .venv/bin/python labs/05-broker-failover/producer.py --seconds 40

acks=all: the leader acknowledges a record once every in-sync replica has it. Idempotence:
retries after a failover write no duplicates. Each acknowledged record is appended to the
acked file; `kafkalab lab check 05` reads the topic back and compares (lost = acked -
consumed). librdkafka's lines about a broker being unreachable are expected meanwhile.
With --seconds 0 it runs until Ctrl-C, then waits for the records still unacknowledged.
"""

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import Producer


def default_acked() -> Path:
    """acked.txt in the lab's work dir: KAFKALAB_LAB_DIR (`lab solve` sets it), else
    <lab state dir>/labs/<the lab of the script run>/ (KAFKALAB_STATE, else .kafkalab):
    another lab's producer.py may run this one."""
    if os.environ.get("KAFKALAB_LAB_DIR"):
        return Path(os.environ["KAFKALAB_LAB_DIR"]) / "acked.txt"
    lab = Path(os.path.abspath(sys.argv[0])).parent  # a lab's link to another lab's script
    state = os.environ.get("KAFKALAB_STATE") or lab.parent.parent / ".kafkalab"
    return Path(state).expanduser().resolve() / "labs" / lab.name / "acked.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--bootstrap",
        default=os.environ.get("KAFKALAB_BOOTSTRAP", "kafka1:9092,kafka2:9092,kafka3:9092"),
        help="bootstrap.servers (default: $KAFKALAB_BOOTSTRAP, else kafka1..3:9092)",
    )
    parser.add_argument("--topic", default="ledger")
    parser.add_argument(
        "--seconds", type=float, default=40, help="how long to produce (0: until Ctrl-C)"
    )
    parser.add_argument("--rate", type=int, default=20, help="records per second")
    parser.add_argument("--acked", type=Path, default=default_acked(), help="acked file")
    args = parser.parse_args()

    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    args.acked.parent.mkdir(parents=True, exist_ok=True)
    run = int(time.time())  # values stay unique when you run it again
    stats = {"acked": 0, "failed": 0}

    with args.acked.open("a") as acked:

        def delivered(err, msg):
            if err is not None:
                stats["failed"] += 1
                print(f"NOT acknowledged: {msg.value().decode()}: {err}", flush=True)
                return
            stats["acked"] += 1
            acked.write(f"{msg.value().decode()} {msg.partition()} {msg.offset()}\n")

        # Ctrl-C only asks the loop to stop: raised inside a delivery callback (librdkafka
        # calls them from poll), KeyboardInterrupt left confluent-kafka's poll() returning
        # NULL without an exception (SystemError), and the summary was never printed.
        stopping = threading.Event()

        def interrupted(_signum, _frame):
            if stopping.is_set():  # a second Ctrl-C: do not wait for the rest
                raise KeyboardInterrupt
            stopping.set()

        signal.signal(signal.SIGINT, interrupted)
        start = time.monotonic()
        sent = 0
        next_report = start + 2
        try:
            while not stopping.is_set() and (
                (now := time.monotonic()) - start < args.seconds or not args.seconds
            ):
                while sent < (now - start) * args.rate:
                    producer.produce(
                        args.topic, key=str(sent), value=f"{run}-{sent}", on_delivery=delivered
                    )
                    sent += 1
                producer.poll(0.05)
                if now >= next_report:
                    waiting = sent - stats["acked"] - stats["failed"]
                    print(
                        f"{now - start:4.0f}s sent {sent:5d}  acknowledged "
                        f"{stats['acked']:5d}  waiting {waiting:4d}  failed {stats['failed']}",
                        flush=True,
                    )
                    next_report += 2
        finally:
            if stopping.is_set():
                print("stopped (Ctrl-C): waiting for the records not acknowledged yet", flush=True)
        left = producer.flush(120)
    print(
        f"done: sent {sent}, acknowledged {stats['acked']}, failed {stats['failed']}, "
        f"unknown {left}; acknowledged records noted in {args.acked}"
    )


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C twice: stopped without waiting
        sys.exit(130)
