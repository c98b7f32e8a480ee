"""The launchers kafkalab itself calls, on every Kafka line."""

# What the labs, the failover and streaming tiers and the role call (kafkalab/kafka/tools.py,
# labs/*/, ansible/roles/kafka/tasks/).
USED = {
    "kafka-run-class.sh",
    "kafka-server-start.sh",
    "kafka-server-stop.sh",
    "kafka-storage.sh",
    "kafka-topics.sh",
    "kafka-console-producer.sh",
    "kafka-console-consumer.sh",
    "kafka-consumer-groups.sh",
    "kafka-get-offsets.sh",
    "kafka-broker-api-versions.sh",
    "kafka-metadata-quorum.sh",
    "kafka-reassign-partitions.sh",
    "kafka-leader-election.sh",
    "kafka-producer-perf-test.sh",
    "kafka-consumer-perf-test.sh",
    "kafka-configs.sh",
    "kafka-dump-log.sh",
    "kafka-features.sh",
}
