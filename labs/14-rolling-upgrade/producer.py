"""Lab 14's producer: lab 05's (numbered records, acks=all, every acknowledged one noted in
acked.txt of this lab's work dir), to the topic payments, until you press Ctrl-C.

Run it from `kafkalab shell` (inside the lab network) while the cluster is upgraded:

    .venv/bin/python labs/14-rolling-upgrade/producer.py
"""

import runpy
import sys
from pathlib import Path

sys.argv[1:1] = ["--topic", "payments", "--seconds", "0"]  # your own options come after
runpy.run_path(
    str(Path(__file__).resolve().parent.parent / "05-broker-failover" / "producer.py"),
    run_name="__main__",
)
