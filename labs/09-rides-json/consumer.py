"""The course page's JsonConsumer (seed 003, kafka-python): reads `rides` in group
`consumer.group.id.json-example.1` from the beginning and prints each ride as a Ride.

Run it from `kafkalab shell` (inside the lab network):

    .venv/bin/python labs/09-rides-json/consumer.py                    # as the page: Ctrl-C ends it
    .venv/bin/python labs/09-rides-json/consumer.py --until-caught-up  # ends once it has read all

The page's loop runs until Ctrl-C. `--until-caught-up` (for the lab's steps and the
tests) ends it once the consumer's position is at the end of every partition it was
given. Either way close() commits what was read (enable_auto_commit), so the group's
committed offsets are where it stopped. `--quiet` prints only the count at the end.

One fix to the page: it calls `poll(1.0)` meaning one second, but kafka-python's poll
takes milliseconds (`timeout_ms`), so the page's loop spins a CPU while nothing comes.
Here it is `poll(timeout_ms=1000)`.
"""

import argparse
from json import loads

from kafka import KafkaConsumer
from ride import Ride
from settings import BOOTSTRAP_SERVERS, KAFKA_TOPIC


class JsonConsumer:
    def __init__(self, props: dict):
        self.consumer = KafkaConsumer(**props)

    def consume_from_kafka(self, topics: list[str], until_caught_up=False, quiet=False):
        self.consumer.subscribe(topics)
        print("Consuming from Kafka started")
        print("Available topics to consume: ", self.consumer.subscription())
        count = 0
        while True:
            try:
                # SIGINT can't be handled when polling, limit timeout to 1 second.
                message = self.consumer.poll(timeout_ms=1000)
                for message_value in message.values():
                    for msg_val in message_value:
                        count += 1
                        if not quiet:
                            print(msg_val.key, msg_val.value)
                if until_caught_up and self.caught_up():
                    break
            except KeyboardInterrupt:
                break

        self.consumer.close()
        print(f"read {count} rides")

    def caught_up(self) -> bool:
        """The position is at the end of every partition this member has (none yet: no)."""
        mine = self.consumer.assignment()
        if not mine:
            return False
        ends = self.consumer.end_offsets(list(mine))
        return all(self.consumer.position(tp) >= ends[tp] for tp in mine)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--until-caught-up", action="store_true", help="stop once all is read")
    parser.add_argument("--quiet", action="store_true", help="print only the count")
    args = parser.parse_args()

    config = {
        "bootstrap_servers": BOOTSTRAP_SERVERS,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": True,
        "key_deserializer": lambda key: int(key.decode("utf-8")),
        "value_deserializer": lambda x: loads(
            x.decode("utf-8"), object_hook=lambda d: Ride.from_dict(d)
        ),
        "group_id": "consumer.group.id.json-example.1",
    }

    json_consumer = JsonConsumer(props=config)
    json_consumer.consume_from_kafka(
        topics=[KAFKA_TOPIC], until_caught_up=args.until_caught_up, quiet=args.quiet
    )
