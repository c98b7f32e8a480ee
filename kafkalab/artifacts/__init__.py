"""Artifacts: what the roles install, fetched or built once into the cache, checked each time.

`kafka` (the Kafka distribution), `kafka_python` (the kafka-python wheel for the machines'
python3), `spark` (Spark with its Kafka connector), `ksqldb`
(Confluent's community archive), `streams_app` (lab 10's Kafka Streams application, built
with Maven); what they share: `cache` (where, and the lock a builder
holds), `archive` (checksums, mirrors, packing and unpacking tarballs), `maven` (jars from
Maven Central). The base image and the Vagrant box are built under the same cache lock
(kafkalab.targets.image, .box).
"""
