"""Kafka helpers: talking to a running cluster with confluent-kafka and Kafka's own tools.

`clients` makes every Kafka client (admin, producer, consumer), only from inside the
cluster's network namespace and with librdkafka's log lines kept quiet; `topics` creates,
deletes and reads topics back; `waits` waits until a topic is ready or the cluster
healthy; `quorum` says who leads the metadata (KRaft quorum, ZooKeeper ensemble,
controller); `tools` runs Kafka's command-line tools on a machine; `partitioner` is
Java's default partitioner.
"""
