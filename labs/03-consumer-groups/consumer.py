"""Read orders as a member of a consumer group, with confluent-kafka or kafka-python.

Run it from `kafkalab shell` (inside the lab network), in as many terminals as you like:

    .venv/bin/python labs/03-consumer-groups/consumer.py --group billing --name c1
    .venv/bin/python labs/03-consumer-groups/consumer.py --group billing --name c2 \
        --client kafka-python

Members of one group share the topic's partitions; every group reads everything once.
It prints when the group gives it partitions or takes them away (a rebalance), then
each record. Ctrl-C (or --seconds, --idle) ends it; closing commits the offsets read.
"""

import argparse
import os
import time
from collections.abc import Callable

CLIENTS = ("confluent-kafka", "kafka-python")
Record = tuple[int, int, bytes | None, bytes]  # partition, offset, key, value
Moved = Callable[[str, list[int]], None]  # "got" or "gave back", partition numbers


class ConfluentMember:
    """confluent-kafka, as in the course notebook: Consumer, subscribe with callbacks, poll."""

    def __init__(self, bootstrap: str, group: str, reset: str, topic: str, moved: Moved):
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": reset,
                "enable.auto.commit": True,  # commits what was read every 5 s and on close
            }
        )
        self.consumer.subscribe(
            [topic],
            on_assign=lambda _c, ps: moved("got", [p.partition for p in ps]),
            on_revoke=lambda _c, ps: moved("gave back", [p.partition for p in ps]),
        )

    def poll(self, seconds: float) -> list[Record]:
        msg = self.consumer.poll(seconds)
        if msg is None:
            return []
        if msg.error():
            print(f"error: {msg.error()}")
            return []
        return [(msg.partition(), msg.offset(), msg.key(), msg.value())]

    def close(self) -> None:
        self.consumer.close()  # leaves the group (a rebalance for the others) and commits


class KafkaPythonMember:
    """kafka-python, as in the course pages (seed 003): KafkaConsumer, a rebalance listener,
    poll(timeout_ms) returning records per partition.

    kafka-python's auto-commit commits its position on every partition it has, also where
    it read nothing (for a group that starts at `latest`: the end of each partition), while
    confluent-kafka commits only where it read. So that both clients leave the same
    committed offsets (step 6 looks at them), this member commits itself, what it read:
    every 5 s, before it gives partitions back, and when it stops."""

    def __init__(self, bootstrap: str, group: str, reset: str, topic: str, moved: Moved):
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        member = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_assigned(self, assigned):
                moved("got", [p.partition for p in assigned])

            def on_partitions_revoked(self, revoked):
                if revoked:  # kafka-python calls it with nothing before the first assignment
                    member.commit(set(revoked))  # the next owner resumes after what was read
                    moved("gave back", [p.partition for p in revoked])

        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap.split(","),
            group_id=group,
            auto_offset_reset=reset,
            enable_auto_commit=False,  # commit() below: what was read, every 5 s and on close
        )
        self.read: dict = {}  # TopicPartition -> the offset after the last record read
        self.committed = time.monotonic()
        self.consumer.subscribe([topic], listener=Listener())

    def poll(self, seconds: float) -> list[Record]:
        batches = self.consumer.poll(timeout_ms=int(seconds * 1000))
        for tp, records in batches.items():
            self.read[tp] = records[-1].offset + 1
        if time.monotonic() - self.committed > 5:
            self.commit()
        return [(r.partition, r.offset, r.key, r.value) for rs in batches.values() for r in rs]

    def commit(self, partitions: set | None = None) -> None:
        """Commit the offsets read since the last commit (of `partitions`, default all)."""
        from kafka.structs import OffsetAndMetadata

        self.committed = time.monotonic()
        done = {tp: off for tp, off in self.read.items() if partitions is None or tp in partitions}
        if done:
            self.consumer.commit({tp: OffsetAndMetadata(off, "", -1) for tp, off in done.items()})
        for tp in done:
            del self.read[tp]

    def close(self) -> None:
        self.commit()
        self.consumer.close(autocommit=False)  # leaves the group (a rebalance for the others)


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
    parser.add_argument(
        "--client",
        choices=CLIENTS,
        default=os.environ.get("KAFKALAB_CLIENT", CLIENTS[0]),
        help="which Python client (default: $KAFKALAB_CLIENT, else confluent-kafka)",
    )
    args = parser.parse_args()
    me = f"[{args.name}]"
    started = time.monotonic()
    last = None  # when a record (or the first partitions) came last

    def moved(what: str, partitions: list[int]) -> None:
        nonlocal last
        if what == "got":
            last = time.monotonic()  # --idle counts from here until the first record
        print(f"{me} {what} partitions {sorted(partitions)}", flush=True)

    kind = ConfluentMember if args.client == "confluent-kafka" else KafkaPythonMember
    print(f"{me} joining group {args.group} with {args.client}", flush=True)
    member = kind(args.bootstrap, args.group, args.offset_reset, args.topic, moved)
    count = 0
    try:
        while True:
            now = time.monotonic()
            if args.seconds and now - started > args.seconds:
                break
            if args.idle and last is not None and now - last > args.idle:
                break
            for partition, offset, key, value in member.poll(0.5):
                count += 1
                last = now
                print(
                    f"{me} partition {partition} offset {offset}: "
                    f"{key.decode() if key else None} {value.decode()}",
                    flush=True,
                )
    except KeyboardInterrupt:
        pass
    finally:
        member.close()
    print(f"{me} read {count} records")


if __name__ == "__main__":
    main()
