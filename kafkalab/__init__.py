"""kafkalab: a real Apache Kafka cluster for learners, trainers and testers."""

__version__ = "0.1.0"
