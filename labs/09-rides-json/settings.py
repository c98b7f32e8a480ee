"""The course page's settings.py (seed 003), for the lab network: where Kafka is, which
file the producer reads, which topic both use.

From `kafkalab shell`, kafka1 resolves; a lab step passes the lab's brokers in
$KAFKALAB_BOOTSTRAP.
"""

import os
from pathlib import Path

BOOTSTRAP_SERVERS = os.environ.get("KAFKALAB_BOOTSTRAP", "kafka1:9092").split(",")
INPUT_DATA_PATH = str(Path(__file__).resolve().parents[2] / "spark" / "data" / "rides.csv")
KAFKA_TOPIC = "rides"
