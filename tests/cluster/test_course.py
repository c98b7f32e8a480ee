"""The course page as a learner types it (issue 13): seed 004's commands with
`localhost:9092` on kafka1, kafka-python in the machine's python3, lab 03 with each client.

Every command goes through `kafkalab exec kafka1 -- bash -lc '...'`: ssh as the lab's login
user, a login shell, as `kafkalab shell kafka1` gives a learner. Where the page types
input, the test pipes it (printf); where the page presses Ctrl-C, `--max-messages` ends the
consumer. The page starts its consumers before its producers and reads what arrives; here
they run after the producer and read from the beginning (a consumer started first would
race the producer), and the test asserts the records the page shows at the end of each
partition. The tests of this module run in order and share topic `test`, as the page does.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess

import pytest

from kafkalab.artifacts import kafka_python
from tests.labs.helpers import start_check_solve_reset

pytestmark = pytest.mark.cluster

PAGE = "--bootstrap-server localhost:9092"


def on_kafka1(cluster, script: str) -> subprocess.CompletedProcess[str]:
    return cluster.kafkalab("exec", "kafka1", "--", "bash", "-lc", script)


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def brokers(cluster) -> dict[int, str]:
    return {
        hv["kafka_node_id"]: hv["kafkalab_address"]
        for hv in cluster.hosts.values()
        if "kafka_broker" in hv["groups"]
    }


def test_api_versions_through_localhost_lists_every_broker_at_its_lab_address(cluster):
    on_kafka1(cluster, "kafka-topics.sh --delete --if-exists --topic test " + PAGE)
    out = on_kafka1(cluster, "kafka-broker-api-versions.sh --bootstrap-server localhost:9092")
    for node, address in brokers(cluster).items():
        # Kafka 4.x adds the broker's fencing: (id: 1 rack: null isFenced: false)
        line = rf"^{re.escape(address)}:9092 \(id: {node} rack: null( isFenced: false)?\) -> \($"
        assert re.search(line, out.stdout, re.MULTILINE), out.stdout
    assert "Produce(0): " in out.stdout and "localhost" not in out.stdout


def test_create_list_describe(cluster):
    out = on_kafka1(
        cluster, "kafka-topics.sh --create --topic test --bootstrap-server localhost:9092"
    )
    assert "Created topic test." in out.stdout
    out = on_kafka1(cluster, "kafka-topics.sh --list --bootstrap-server localhost:9092")
    assert "test" in lines(out.stdout)
    out = on_kafka1(
        cluster, "kafka-topics.sh --describe --topic test --bootstrap-server localhost:9092"
    )
    assert "PartitionCount: 1" in out.stdout and "ReplicationFactor: 3" in out.stdout


def test_send_then_offsets(cluster):
    on_kafka1(
        cluster,
        "printf 'hello\\nworld\\n!\\n' | "
        "kafka-console-producer.sh --topic test --bootstrap-server localhost:9092",
    )
    out = on_kafka1(cluster, "kafka-get-offsets.sh --bootstrap-server localhost:9092")
    assert "test:0:3" in lines(out.stdout)


def test_receive_from_the_beginning_and_from_an_offset(cluster):
    out = on_kafka1(
        cluster,
        "kafka-console-consumer.sh --topic test --bootstrap-server localhost:9092"
        " --from-beginning --max-messages 3",
    )
    assert lines(out.stdout) == ["hello", "world", "!"]
    assert "Processed a total of 3 messages" in out.stderr
    out = on_kafka1(
        cluster,
        "kafka-console-consumer.sh --topic test --bootstrap-server localhost:9092"
        " --partition 0 --offset 1 --max-messages 2",
    )
    assert lines(out.stdout) == ["world", "!"]


def test_multiple_consumers_get_the_same_messages(cluster):
    on_kafka1(
        cluster,
        "printf '1\\n2\\n3\\n4\\n5\\n' | "
        "kafka-console-producer.sh --topic test --bootstrap-server localhost:9092",
    )
    both = on_kafka1(
        cluster,
        "for c in 1 2; do kafka-console-consumer.sh --topic test"
        " --bootstrap-server localhost:9092 --from-beginning --max-messages 8"
        " > /tmp/consumer$c.out & done; wait; cat /tmp/consumer1.out; echo ---;"
        " cat /tmp/consumer2.out",
    )
    first, second = both.stdout.split("---\n")
    assert lines(first) == lines(second) == ["hello", "world", "!", "1", "2", "3", "4", "5"]


def test_two_partitions_and_keys_split_as_the_page_shows(cluster):
    on_kafka1(
        cluster,
        "kafka-topics.sh --alter --topic test --partitions 2 --bootstrap-server localhost:9092",
    )
    out = on_kafka1(cluster, "kafka-get-offsets.sh --bootstrap-server localhost:9092 | grep test")
    assert lines(out.stdout) == ["test:0:8", "test:1:0"]
    on_kafka1(
        cluster,
        "printf '1:hello1\\n2:hello2\\n3:hello3\\n4:hello4\\n5:hello5\\n' | "
        "kafka-console-producer.sh --topic test --bootstrap-server localhost:9092"
        ' --property "parse.key=true" --property key.separator=:',
    )
    zero = on_kafka1(
        cluster,
        "kafka-console-consumer.sh --topic test --bootstrap-server localhost:9092 --partition 0"
        " --from-beginning --max-messages 10",
    )
    one = on_kafka1(
        cluster,
        "kafka-console-consumer.sh --topic test --bootstrap-server localhost:9092 --partition 1"
        " --from-beginning --max-messages 3",
    )
    assert lines(zero.stdout)[-2:] == ["hello2", "hello5"]
    assert lines(one.stdout) == ["hello1", "hello3", "hello4"]
    out = on_kafka1(cluster, "kafka-get-offsets.sh --bootstrap-server localhost:9092 | grep test")
    assert lines(out.stdout) == ["test:0:10", "test:1:3"]


ROUND_TRIP = """
import json, kafka
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

KafkaAdminClient(bootstrap_servers="localhost:9092").create_topics(
    [NewTopic("kafka-python", num_partitions=3, replication_factor=3)]
)
producer = KafkaProducer(bootstrap_servers="localhost:9092", acks="all")
acked = [
    producer.send("kafka-python", key=str(i).encode(), value=f"record {i}".encode()).get(30)
    for i in range(30)
]
producer.close()
consumer = KafkaConsumer(
    "kafka-python",
    bootstrap_servers="localhost:9092",
    group_id="kafka-python-round-trip",
    auto_offset_reset="earliest",
    consumer_timeout_ms=20000,
)
got = []
for record in consumer:
    got.append([record.partition, record.offset, record.key.decode(), record.value.decode()])
    if len(got) == len(acked):
        break
consumer.close()
print(json.dumps({
    "version": kafka.__version__,
    "file": kafka.__file__,
    "acked": [[m.partition, m.offset] for m in acked],
    "got": got,
}))
"""


def test_kafka_python_round_trip_with_the_machines_python3(cluster):
    out = on_kafka1(cluster, f"python3 - <<'EOF'\n{ROUND_TRIP}\nEOF")
    data = json.loads(lines(out.stdout)[-1])
    assert data["version"] == kafka_python.VERSION
    assert data["file"].startswith("/usr/local/lib/python3")
    assert sorted(map(tuple, data["acked"])) == sorted((p, o) for p, o, _k, _v in data["got"])
    assert sorted(v for *_, v in data["got"]) == sorted(f"record {i}" for i in range(30))
    # three partitions, RF 3: their leaders are spread over the brokers, so the producer
    # reached brokers other than kafka1 through the lab addresses they advertise
    assert {p for p, _o in data["acked"]} == {0, 1, 2}
    described = on_kafka1(cluster, "kafka-topics.sh --describe --topic kafka-python " + PAGE).stdout
    assert (
        len(
            {
                line.split("Leader: ")[1].split()[0]
                for line in described.splitlines()
                if "Leader: " in line
            }
        )
        > 1
    ), described


def test_kafka_python_for_any_user(cluster):
    probe = "python3 -c 'import kafka; print(kafka.__version__)'"
    out = on_kafka1(cluster, f"sudo -n -u nobody -- {probe}")
    assert lines(out.stdout) == [kafka_python.VERSION]


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
@pytest.mark.parametrize("cluster", ["kraft"], indirect=True)
def test_lab_03_with_each_client(cluster, client):
    """Lab 03 walked with each client; confluent-kafka is the default, so its walk sets
    nothing (this is lab 03's only walk in the suite)."""
    env = {k: v for k, v in cluster.env.items() if k != "KAFKALAB_CLIENT"}
    if client != "confluent-kafka":
        env["KAFKALAB_CLIENT"] = client
    with_client = dataclasses.replace(cluster, env=env)
    solved = start_check_solve_reset(with_client, "03")
    assert f"sent 20 records to orders with {client}" in solved
    assert f"[c1] joining group billing with {client}" in solved
    assert "[c1] got partitions [0, 1, 2]" in solved
