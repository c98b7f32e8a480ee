"""The course page's JsonProducer (seed 003, kafka-python): every ride of rides.csv to the
topic `rides`, value = the ride as JSON, key = its pickup location (PULocationID).

Run it from `kafkalab shell` (inside the lab network):

    .venv/bin/python labs/09-rides-json/producer.py

It prints one line per ride and waits for each to be acknowledged (record.get()), as the
page does. Two changes to the page's code: JsonProducer does not also inherit from
KafkaProducer (the page never initialises that part, and kafka-python complains about it
at exit), and the last line counts what was sent.
"""

import csv
import json

from kafka import KafkaProducer
from kafka.errors import KafkaTimeoutError
from ride import Ride
from settings import BOOTSTRAP_SERVERS, INPUT_DATA_PATH, KAFKA_TOPIC


class JsonProducer:
    def __init__(self, props: dict):
        self.producer = KafkaProducer(**props)

    @staticmethod
    def read_records(resource_path: str):
        records = []
        with open(resource_path) as f:
            reader = csv.reader(f)
            header = next(reader)  # skip the header row  # noqa: F841
            for row in reader:
                records.append(Ride(arr=row))
        return records

    def publish_rides(self, topic: str, messages: list[Ride]):
        sent = 0
        for ride in messages:
            try:
                record = self.producer.send(topic=topic, key=ride.pu_location_id, value=ride)
                offset = record.get().offset
                print(f"Record {ride.pu_location_id} successfully produced at offset {offset}")
                sent += 1
            except KafkaTimeoutError as e:
                print(e.__str__())
        return sent


if __name__ == "__main__":
    # Config Should match with the KafkaProducer expectation
    config = {
        "bootstrap_servers": BOOTSTRAP_SERVERS,
        "key_serializer": lambda key: str(key).encode(),
        "value_serializer": lambda x: json.dumps(x.__dict__, default=str).encode("utf-8"),
    }
    producer = JsonProducer(props=config)
    rides = producer.read_records(resource_path=INPUT_DATA_PATH)
    sent = producer.publish_rides(topic=KAFKA_TOPIC, messages=rides)
    producer.producer.close()
    print(f"sent {sent} of {len(rides)} rides to {KAFKA_TOPIC}")
    if sent != len(rides):
        raise SystemExit(1)
